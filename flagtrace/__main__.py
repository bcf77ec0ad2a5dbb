"""``python -m flagtrace`` runs the CLI."""

import sys

from flagtrace.cli import main

sys.exit(main())
