"""Run a small program of our own for real and record who called whom.

The resolution tests compare flagtrace's callees with what a real run calls.
The programs are generated or written by the tests themselves (never the
analysed projects': flagtrace must not run the code it analyses), and run in a
fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

#: prepended to the test's driver: ``traced()`` starts recording calls as
#: (caller's function name, callee's function name), ``untraced()`` stops
_PRELUDE = """
import json, sys
sys.path.insert(0, sys.argv[1])
calls = set()
def _profile(frame, event, arg):
    if event == "call" and frame.f_back is not None:
        calls.add((frame.f_back.f_code.co_name, frame.f_code.co_name))
def traced():
    sys.setprofile(_profile)
def untraced():
    sys.setprofile(None)
"""


def calls_made(root: Path, driver: str) -> set[tuple[str, str]]:
    """The (caller, callee) pairs of function names the calls ``driver``
    makes between ``traced()`` and ``untraced()`` recorded; ``root`` is put
    first on ``sys.path``."""
    script = _PRELUDE + textwrap.dedent(driver) + "\nprint(json.dumps(sorted(calls)))\n"
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True
    )
    last = done.stdout.strip().splitlines()[-1]
    return {(caller, callee) for caller, callee in json.loads(last)}
