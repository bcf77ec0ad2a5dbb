"""The ``flagtrace`` command leaves through ``cli.run``: output flushed, then ``os._exit``.

Skipping interpreter shutdown saves the teardown of a loaded program, but it
also skips the flush Python would do at exit: these run the real command in a
child process, with its stdout a pipe (block-buffered), and check that every
byte arrives and the exit code is what ``main`` decided.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _project(root: Path, functions: int) -> Path:
    """A package whose call graph as JSON is far larger than a pipe's buffer."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    body = ["def f0():\n    return 0\n"]
    body += [f"def f{i}():\n    return f{i - 1}()\n" for i in range(1, functions)]
    (pkg / "chain.py").write_text("\n".join(body))
    return pkg


def _flagtrace(*args: str | Path, cwd: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, FLAGTRACE_CACHE_DIR=str(cwd / "cache"))
    env.pop("PYTHONUNBUFFERED", None)  # block-buffered, as in a user's pipe
    return subprocess.Popen(
        [sys.executable, "-m", "flagtrace", *map(str, args)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,  # type: ignore[call-overload]
    )


def test_every_byte_written_to_a_pipe_arrives(tmp_path: Path) -> None:
    pkg = _project(tmp_path, 3000)
    written = tmp_path / "graph.json"
    proc = _flagtrace(
        "callgraph", pkg, "--quiet", "--jedi-budget", "0", "-o", written, cwd=tmp_path
    )
    proc.communicate()
    assert proc.returncode == 0
    proc = _flagtrace("callgraph", pkg, "--quiet", "--jedi-budget", "0", cwd=tmp_path)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert len(out) > 20 * 65536  # several pipe buffers, many stdout buffers
    assert out == written.read_bytes()
    assert len(json.loads(out)["edges"]) == 2999


def test_findings_and_their_exit_code_come_through(tmp_path: Path) -> None:
    fixture = FIXTURES / "flags" / "cm_no_finally" / "pkg"
    proc = _flagtrace(
        "check",
        fixture,
        "--flag",
        "_no_grad",
        "--format",
        "json",
        "--jedi-budget",
        "0",
        cwd=tmp_path,
    )
    out, err = proc.communicate()
    assert proc.returncode == 1, err  # findings
    (flag,) = json.loads(out)["flags"]
    assert flag["setters"][0]["hazards"] == ["exception-leak", "non-reentrant"]
    assert b"flagtrace: " in err  # the summary line on stderr, flushed too


@pytest.mark.skipif(sys.platform == "win32", reason="SIGPIPE semantics")
def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    pkg = _project(tmp_path, 3000)
    proc = _flagtrace("callgraph", pkg, "--quiet", "--jedi-budget", "0", cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)
    proc.stdout.close()  # ``flagtrace callgraph ... | head -c 10``
    err = proc.stderr.read()
    assert proc.wait() == 2  # ExitCode.ERROR: not everything was written
    assert b"Traceback" not in err
    assert b"Exception ignored" not in err
