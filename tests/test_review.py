"""``flagtrace review`` on fixture repositories made with real git (``tests/reviewrepo.py``).

Every kind of change has a case under ``fixtures/review/`` with its expected review;
the rest checks what a review must never do: leave a checkout behind, touch the user's
work tree, hand git an option, print a traceback for a user error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from flagtrace import review as review_module
from flagtrace.gitrepo import parse_diff
from flagtrace.model import Change
from flagtrace.report import REVIEW, RenderOptions
from flagtrace.review import ReviewError, review
from tests.registry import REPO
from tests.reviewrepo import compact, git, make_repo

CASES = REPO / "fixtures" / "review"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of this test's own for the review's checkouts."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def _run_cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "flagtrace", "review", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("case", CASE_NAMES)
def test_fixture_case(case: str, tmp_path: Path, private_tmp: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / case)
    report = review(["."], "HEAD~1", "HEAD", cwd=repo)
    expected = json.loads((CASES / case / "expected.json").read_text())
    assert compact(report) == expected
    assert not report.errors
    # both sides were checked out into the private temporary directory, and both are gone
    assert list(private_tmp.iterdir()) == []
    assert git(repo, "worktree", "list").count("\n") == 1


def test_new_leak_has_the_entry_the_set_and_the_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "read_added")
    (finding,) = review(["pkg"], "HEAD~1", "HEAD", cwd=repo).findings
    assert finding.change is Change.NEW and finding.anchored
    assert [(r.role, r.location.path, r.location.line) for r in finding.related] == [
        ("entry", "pkg/api.py", 8),
        ("set", "pkg/api.py", 8),
        ("read", "pkg/work.py", 11),
    ]
    assert finding.verdict is not None and finding.verdict.entry == "pkg.api.run"
    assert "can now run a read of _fast in pkg.work.compute" in finding.message


def test_unrelated_line_shift_changes_no_fingerprint(tmp_path: Path) -> None:
    """The line_shift case moves every line of every file (its expected review is empty);
    here the fingerprints themselves are compared."""
    repo = make_repo(tmp_path / "repo", CASES / "line_shift")
    base = review(["."], "HEAD~1", "HEAD~1", cwd=repo)
    assert not base.findings
    moved = make_repo(tmp_path / "moved", CASES / "read_added")
    # one more commit that only inserts lines above the read: nothing new, nothing fixed
    work = moved / "pkg" / "work.py"
    work.write_text("# one\n# two\n" + work.read_text())
    git(moved, "commit", "-qam", "shift")
    assert compact(review(["."], "HEAD~1", cwd=moved))["findings"] == []
    assert len(review(["."], "HEAD~2", cwd=moved).new) == 1


def test_dirty_and_untracked_work_tree_is_the_head(tmp_path: Path, private_tmp: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "read_added", commit_head=False)
    (repo / "pkg" / "cli.py").write_text(
        "from pkg import flags\nfrom pkg.flags import fast_mode\n\n\n"
        "def main():\n    with fast_mode():\n        return flags._fast\n"
    )
    status_before = git(repo, "status", "--porcelain")
    stat_before = (repo / ".git" / "index").stat().st_mtime_ns
    report = review(["."], "HEAD", cwd=repo)
    found = {(f.function, f.location.path, f.location.line, f.anchored) for f in report.new}
    assert found == {
        ("pkg.api.run", "pkg/work.py", 11, True),  # modified, not committed
        ("pkg.cli.main", "pkg/cli.py", 7, True),  # untracked: every line is new
    }
    assert report.head is None and report.head_commit is None
    assert git(repo, "status", "--porcelain") == status_before
    assert (repo / ".git" / "index").stat().st_mtime_ns == stat_before
    assert list(private_tmp.iterdir()) == []


def test_checkout_is_removed_when_interrupted(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "read_added")

    def interrupted(*args: object, **kwargs: object) -> None:
        assert git(repo, "worktree", "list").count("\n") == 3  # the repo, base and head
        raise KeyboardInterrupt

    monkeypatch.setattr(review_module, "compare", interrupted)
    with pytest.raises(KeyboardInterrupt):
        review(["."], "HEAD~1", "HEAD", cwd=repo)
    assert git(repo, "worktree", "list").count("\n") == 1
    assert list(private_tmp.iterdir()) == []
    assert not (repo / ".git" / "worktrees").exists() or not any(
        (repo / ".git" / "worktrees").iterdir()
    )


@pytest.mark.parametrize(
    ("base", "message"),
    [
        ("no-such-branch", "--base 'no-such-branch': no such commit"),
        ("--output=/tmp/x", "--base '--output=/tmp/x': not a revision"),
        ("-p", "--base '-p': not a revision"),
        ("HEAD:pkg", "--base 'HEAD:pkg': no such commit"),  # a tree, not a commit
    ],
)
def test_bad_base_is_a_usage_error(tmp_path: Path, base: str, message: str) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "read_added")
    with pytest.raises(ReviewError, match="^" + message.replace("(", r"\(")):
        review(["."], base, cwd=repo)
    assert git(repo, "worktree", "list").count("\n") == 1


def test_cli_exit_codes_and_one_line_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "read_added")
    for args in (["--base", "nope"], ["--base=-x"], ["--base", "HEAD", "--head", "-x"]):
        done = _run_cli(repo, ".", *args, "-q")
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("flagtrace: error: ")
        assert "Traceback" not in done.stderr
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "a.py").write_text("x = 1\n")
    done = _run_cli(outside, ".", "--base", "HEAD", "-q")
    assert done.returncode == 2
    assert done.stderr == f"flagtrace: error: {outside.resolve()}: not inside a git work tree\n"


def test_cli_concise_and_json(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "hazard_fixed")
    done = _run_cli(repo, ".", "--base", "HEAD~1", "--format", "concise", "-q")
    assert done.returncode == 0, done.stderr  # only a fix: nothing new
    assert done.stdout.startswith("pkg/flags.py:13:5: FT101 [fixed] an exception after")
    repo = make_repo(tmp_path / "repo2", CASES / "read_added")
    done = _run_cli(repo, "pkg", "--base", "HEAD~1", "--format", "json", "-q")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["summary"] == {"new": 1, "fixed": 0}
    (finding,) = data["findings"]
    assert (finding["change"], finding["code"], finding["file"], finding["line"]) == (
        "new",
        "FT001",
        "pkg/work.py",
        11,
    )
    assert finding["verdict"]["witness"][-1]["step"] == "read"
    assert data["changes"][0]["readers_added"][0]["function"] == "pkg.work.compute"


def test_cli_github_comment_links_lines_under_the_actions_head(tmp_path: Path) -> None:
    """In a GitHub Actions job the comment links each line under the reviewed head commit
    (GITHUB_SERVER_URL, GITHUB_REPOSITORY); --link-base overrides that."""
    repo = make_repo(tmp_path / "repo", CASES / "hazard_new")
    head = git(repo, "rev-parse", "HEAD").strip()
    env = {"GITHUB_SERVER_URL": "https://github.example", "GITHUB_REPOSITORY": "o/r"}
    os.environ.update(env)
    try:
        done = _run_cli(repo, "pkg", "--base", "HEAD~1", "--head", "HEAD", "--format", "github")
    finally:
        for key in env:
            del os.environ[key]
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("<!-- flagtrace -->\n")
    assert f"(https://github.example/o/r/blob/{head}/pkg/flags.py#L13)" in done.stdout
    done = _run_cli(
        repo, "pkg", "--base", "HEAD~1", "--format", "github", "--link-base", "https://x.test/b/c"
    )
    assert "(https://x.test/b/c/pkg/flags.py#L13)" in done.stdout, done.stdout


def test_cli_rich_touches_no_flag(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "no_flags")
    done = _run_cli(repo, ".", "--base", "HEAD~1", "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "this change touches no flag"


def test_rich_summary_first_and_names_whole_at_80_columns(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "setter_removed")
    report = review(["."], "HEAD~1", cwd=repo)
    text = "".join(REVIEW["rich"].render(report, RenderOptions(width=80)))
    lines = text.splitlines()
    assert lines[0] == "1 leak fixed, 1 hazard fixed"
    assert all(len(line) <= 80 for line in lines)
    for name in ("pkg.flags.fast_mode", "pkg.api.run", "pkg.work.compute"):
        assert any(name in line for line in lines)
    report = review(["."], "HEAD~1", cwd=make_repo(tmp_path / "r2", CASES / "setter_added"))
    first = "".join(REVIEW["rich"].render(report, RenderOptions(width=80))).splitlines()[0]
    assert first == "1 new leak, 1 new hazard"


def test_path_outside_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CASES / "read_added")
    with pytest.raises(ReviewError, match="not inside the repository"):
        review([str(tmp_path)], "HEAD~1", cwd=repo)


def test_parse_diff_renames_deletions_and_removed_lines() -> None:
    text = """diff --git a/old.py b/new.py
similarity index 90%
rename from old.py
rename to new.py
index 1..2 100644
--- a/old.py
+++ b/new.py
@@ -3 +3,2 @@ def f():
-    x = 1
+    x = 2
+    y = 3
@@ -10,2 +11,0 @@ def g():
-    a
-    b
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 3..0
--- a/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
diff --git "a/sp ace\\303\\251.py" "b/sp ace\\303\\251.py"
new file mode 100644
--- /dev/null
+++ "b/sp ace\\303\\251.py"
@@ -0,0 +1 @@
+x = 1
"""
    renamed, deleted, added = parse_diff(text)
    assert (renamed.old_path, renamed.path) == ("old.py", "new.py")
    assert renamed.added == {3, 4} and renamed.near_removed == {11, 12}
    assert (deleted.old_path, deleted.path, deleted.added) == ("gone.py", None, frozenset())
    assert (added.old_path, added.path, added.added) == (None, "sp ace\u00e9.py", {1})
