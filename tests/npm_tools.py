"""npm packages the tests run under node (validators), installed once into ``.cache/npm``.

``.ci/run`` installs them before the tests; a test that finds one missing installs it the same
way (``npm install --prefix .cache/npm NAME@VERSION``), so a fresh clone works either way. A
package that cannot be installed fails the test, as a registry download does
(``tests/conftest.py``); ``FLAGTRACE_OFFLINE=1`` skips instead. Nothing of them is committed:
``.cache/`` is git-ignored.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.registry import REPO

PREFIX = REPO / ".cache" / "npm"
#: The validators, pinned: a new release's rules must not change a test's verdict unseen.
#: ``.ci/run`` installs the same versions.
SARIF_MULTITOOL = "@microsoft/sarif-multitool@5.7.0"
RDFORMAT_VALIDATOR = "@umbrelladocs/rdformat-validator@1.0.1"


def package_dir(spec: str) -> Path:
    """``node_modules/NAME`` of ``spec`` under ``PREFIX``, installed if it is not there."""
    name = spec.rpartition("@")[0]
    where = PREFIX / "node_modules" / name
    if (where / "package.json").is_file():
        return where
    npm = shutil.which("npm")
    if npm is None or os.environ.get("FLAGTRACE_OFFLINE") == "1":
        pytest.skip(f"{spec} is not installed in {PREFIX} and npm cannot install it here")
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(PREFIX), spec],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or not (where / "package.json").is_file():
        pytest.fail(f"npm install {spec} failed:\n{done.stderr[-2000:]}", pytrace=False)
    return where


def sarif_multitool() -> Path:
    """The SARIF multitool's own executable (a self-contained .NET program in the package
    for this platform). Called directly, not through the package's ``bin.js``, which passes
    its arguments through a shell."""
    package_dir(SARIF_MULTITOOL)
    exe = PREFIX / "node_modules" / "@microsoft" / "sarif-multitool-linux" / "Sarif.Multitool"
    if not exe.is_file():
        pytest.skip(f"no Linux build of the SARIF multitool at {exe} (this platform has none)")
    if not os.access(exe, os.X_OK):
        exe.chmod(exe.stat().st_mode | 0o100)  # what its postinstall script does
    return exe
