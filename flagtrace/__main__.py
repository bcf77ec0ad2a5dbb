"""``python -m flagtrace`` runs the CLI."""

from flagtrace.cli import run

run()
