"""flagtrace: find global flags that leak across calls, by static analysis alone.

This module is kept trivial on purpose: importing ``flagtrace`` (for example to
print ``--version``) must not pull in libcst, networkx or jedi, and must never
touch the code being analysed.
"""

from __future__ import annotations

__version__ = "0.1.0"
