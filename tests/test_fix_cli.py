"""``flagtrace fix`` through the command line: options, exit codes, one-line errors.

The behaviour itself is tested through :func:`flagtrace.fix.run_fix` in
``tests/test_fix.py``; here only what the click command adds: option parsing,
``--diff``/``--write``, and that a usage error is one line and exit 2, also in
a real process (no traceback).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flagtrace.cli import main
from tests.test_fix import FIXED, LEAKY


def _project(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(LEAKY)
    return pkg / "state.py"


def test_diff_is_the_default_then_write_applies_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "pkg", "--flag", "FLAG"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("--- a/pkg/state.py\n+++ b/pkg/state.py\n")
    assert "+    finally:\n" in out and "would fix 1 setter in 1 file" in err
    assert path.read_text() == LEAKY

    assert main(["fix", "pkg", "--flag", "FLAG", "--write", "-q"]) == 0
    assert capsys.readouterr() == ("", "")
    assert path.read_text() == FIXED
    assert main(["fix", "pkg", "--flag", "FLAG", "--diff"]) == 0
    assert "nothing to fix" in capsys.readouterr().err


def test_select_limits_the_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "pkg", "--flag", "FLAG", "--select", "ft101", "--write"]) == 0
    text = path.read_text()
    assert "finally:\n        FLAG = False\n" in text and "prev" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--flag", "FLAG", "--select", "FT103"], "repairs FT101 and FT102"),
        ([], "no flag to fix"),
        (["--flag", "NOPE"], "NOPE"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2_in_a_real_process(
    tmp_path: Path, args: list[str], message: str
) -> None:
    _project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "flagtrace", "fix", "pkg", "--no-cache", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr
    assert "Traceback" not in done.stderr
