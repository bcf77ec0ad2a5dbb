"""The pre-commit hook, tried for real: ``pre-commit try-repo`` installs this checkout's
committed hook (``.pre-commit-hooks.yaml``) into pre-commit's own environment and runs it
on a fresh git repository holding ``fixtures/precommit`` (a package and a
``[tool.flagtrace]`` section).

Slow: pre-commit builds the hook's virtualenv and installs flagtrace and its dependencies
from the package registry. Why a real run and not a call of the CLI: the hook's manifest
(its entry, ``args``, ``pass_filenames``) is only exercised by pre-commit itself, and a
typo there breaks every user's commit while every other test stays green.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "precommit"

#: The setter as a careless edit leaves it: the reset is not in ``finally`` (FT101).
LEAKY_SETTER = '''"""The flag and its context manager: the reset is skipped when the body raises."""

from contextlib import contextmanager

_tracing = False


@contextmanager
def tracing():
    global _tracing
    prev = _tracing
    _tracing = True
    yield
    _tracing = prev


def is_tracing() -> bool:
    return _tracing
'''

pytestmark = pytest.mark.slow


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, encoding="utf-8"
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's cache (the hook's installed environment), shared by the runs below."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository holding the fixture package, committed."""
    repo = tmp_path / "project"
    shutil.copytree(FIXTURE, repo)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "config", "user.name", "flagtrace test")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    return repo


def run_hook(project: Path, hook_home: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo <this checkout> flagtrace --all-files`` in ``project``, at this
    checkout's committed HEAD (what a user's ``rev:`` would pin), after staging every change."""
    _git(project, "add", "-A")
    env = dict(
        os.environ,
        PRE_COMMIT_HOME=str(hook_home),
        FLAGTRACE_CACHE_DIR=str(tmp_path / "flagtrace-cache"),
        NO_COLOR="1",
    )
    ref = _git(REPO, "rev-parse", "HEAD")
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "flagtrace"]
    command += ["--ref", ref, "--all-files", "--color", "never", "--verbose"]
    return subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, encoding="utf-8"
    )


def test_hook_fails_on_a_new_ft101_and_passes_once_the_setter_uses_finally(
    project: Path, hook_home: Path, tmp_path: Path
) -> None:
    clean = run_hook(project, hook_home, tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert re.search(r"^flagtrace\.+Passed$", clean.stdout, re.MULTILINE), clean.stdout

    setter = project / "pkg" / "flags.py"
    fixed = setter.read_text(encoding="utf-8")
    setter.write_text(LEAKY_SETTER, encoding="utf-8")
    leaky = run_hook(project, hook_home, tmp_path)
    assert leaky.returncode == 1, leaky.stdout + leaky.stderr
    assert re.search(r"^flagtrace\.+Failed$", leaky.stdout, re.MULTILINE), leaky.stdout
    # the finding is one concise line at the setter's reset, not a table or a tree
    findings = [line for line in leaky.stdout.splitlines() if re.match(r"\S+:\d+:\d+: FT", line)]
    assert findings == [
        "pkg/flags.py:13:5: FT101 an exception after the flag is set skips the reset and "
        "leaves the flag set: _tracing stays set if the `with` body raises "
        "(in pkg.flags.tracing)"
    ], leaky.stdout
    assert not re.search("[┃━│└├]", leaky.stdout)

    setter.write_text(fixed, encoding="utf-8")
    again = run_hook(project, hook_home, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr


#: A second setter of the same flag, as leaky as the first: a finding the baseline does not hold.
SECOND_LEAKY_SETTER = """

@contextmanager
def tracing_again():
    global _tracing
    prev = _tracing
    _tracing = True
    yield
    _tracing = prev
"""


def test_hook_passes_with_a_baseline_that_holds_the_finding_and_fails_on_a_new_one(
    project: Path, hook_home: Path, tmp_path: Path
) -> None:
    setter = project / "pkg" / "flags.py"
    setter.write_text(LEAKY_SETTER, encoding="utf-8")
    # today's findings accepted: the CLI as a user runs it, the file committed beside
    # pyproject.toml and named there
    written = subprocess.run(
        [sys.executable, "-m", "flagtrace", "check", ".", "--quiet"]
        + ["--write-baseline", "flagtrace-baseline.json"],
        cwd=project,
        env=dict(os.environ, FLAGTRACE_CACHE_DIR=str(tmp_path / "writer-cache")),
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert written.returncode == 0, written.stdout + written.stderr
    assert "FT101" in (project / "flagtrace-baseline.json").read_text(encoding="utf-8")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text(encoding="utf-8") + 'baseline = "flagtrace-baseline.json"\n',
        encoding="utf-8",
    )
    accepted = run_hook(project, hook_home, tmp_path)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert re.search(r"^flagtrace\.+Passed$", accepted.stdout, re.MULTILINE), accepted.stdout

    # a line inserted above moves the baselined finding: still matched
    setter.write_text(
        setter.read_text(encoding="utf-8").replace('"""\n', '"""\n\n# moved down\n', 1)
        + SECOND_LEAKY_SETTER,
        encoding="utf-8",
    )
    new = run_hook(project, hook_home, tmp_path)
    assert new.returncode == 1, new.stdout + new.stderr
    findings = [line for line in new.stdout.splitlines() if re.match(r"\S+:\d+:\d+: FT", line)]
    assert len(findings) == 1 and "pkg.flags.tracing_again" in findings[0], new.stdout
