"""Reads stay inside the analysed paths (issue 13, item 2).

A pull request can add ``pkg/x.py -> /home/runner/...`` or link a directory
from outside the repository; flagtrace would read it and might quote its lines
in a witness, i.e. in a public comment. ``fixtures/symlinks`` holds a tree and
an ``outside`` directory whose files carry the marker ``SECRETMARK`` in the
names, guards and strings a report or call graph would quote; the links are
made here, in ``tmp_path``. Every output format of ``check`` and ``callgraph``
is searched for the marker, on stdout, stderr and output files alike; so is every
format of ``review`` when a change adds such links.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from flagtrace.cli import main
from flagtrace.discover import Discovery, discover
from tests.registry import REPO

FIXTURE = REPO / "fixtures" / "symlinks"
MARKER = "SECRETMARK"
CHECK = ["--flag", "_enabled", "--entry", "pkg.main.run"]
OUTSIDE = "symbolic link to a target outside the analysed paths"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``tmp/repo`` (the analysed path) with links into ``tmp/outside`` and one inside."""
    shutil.copytree(FIXTURE / "repo", tmp_path / "repo")
    shutil.copytree(FIXTURE / "outside", tmp_path / "outside")
    pkg = tmp_path / "repo" / "pkg"
    (pkg / "leak.py").symlink_to(Path("..", "..", "outside", "leak.py"))
    (pkg / "vendored").symlink_to(Path("..", "..", "outside", "leakdir"), target_is_directory=True)
    (pkg / "kept.py").symlink_to(Path("..", "my-data", "kept_impl.py"))
    return tmp_path / "repo"


def _run(
    argv: list[str], capsys: pytest.CaptureFixture[str], out: Path | None = None
) -> tuple[int, str, str]:
    """Exit code, everything written (stdout and the output file), and stderr."""
    if out is not None and out.exists():
        out.unlink()
    code = main(argv)
    captured = capsys.readouterr()
    written = captured.out + (out.read_text() if out is not None and out.exists() else "")
    return code, written, captured.err


def _outputs(tree: Path, tmp_path: Path) -> dict[str, tuple[list[str], Path | None]]:
    """Every way to get a report or a graph: name -> (argv, output file or None)."""
    out = tmp_path / "out.txt"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    return {
        "check rich, stdout": ([str(tree), *CHECK, *cache], None),
        "check rich, file": ([str(tree), *CHECK, *cache, "-o", str(out)], out),
        "check json, stdout": ([str(tree), *CHECK, *cache, "--format", "json"], None),
        "check json, file": ([str(tree), *CHECK, *cache, "--format", "json", "-o", str(out)], out),
        "check concise": ([str(tree), *CHECK, *cache, "--format", "concise"], None),
        "check sarif": ([str(tree), *CHECK, *cache, "--format", "sarif", "-o", str(out)], out),
        "check rdjson": ([str(tree), *CHECK, *cache, "--format", "rdjson"], None),
        "callgraph json": (["callgraph", str(tree), *cache, "--format", "json"], None),
        "callgraph pycg": (
            ["callgraph", str(tree), *cache, "--format", "pycg", "-o", str(out)],
            out,
        ),
        "callgraph dot": (["callgraph", str(tree), *cache, "--format", "dot"], None),
    }


def test_no_output_format_shows_what_an_outside_link_points_to(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, (argv, out) in _outputs(tree, tmp_path).items():
        code, written, err = _run(argv, capsys, out)
        assert MARKER not in written and MARKER not in err, name
        assert code == 2, name  # an input problem, like an unreadable file; the report is written
        expected = [
            f"{tree / 'pkg' / 'leak.py'}: {OUTSIDE} "
            f"({os.path.join('..', '..', 'outside', 'leak.py')}); "
            "not read (--follow-external-symlinks reads it)",
            f"{tree / 'pkg' / 'vendored'}: {OUTSIDE} "
            f"({os.path.join('..', '..', 'outside', 'leakdir')}); "
            "not read (--follow-external-symlinks reads it)",
        ]
        if name == "check rich, stdout":  # the errors are part of the report, wrapped
            squeezed = "".join(written.split())
            assert all("".join(e.split()) in squeezed for e in expected), name
        else:
            errors = [line for line in err.splitlines() if line.startswith("flagtrace: error:")]
            assert errors == [f"flagtrace: error: {e}" for e in expected], name
        if name != "check concise":  # one line per finding, and there is none without the links
            assert written.strip(), name  # the report is still written for everything else
        if name.startswith("check json"):
            report = json.loads(written)
            assert [e["file"] for e in report["errors"]] == [
                str(tree / "pkg" / "leak.py"),
                str(tree / "pkg" / "vendored"),
            ]


def test_with_follow_external_symlinks_every_format_reads_them(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The twin of the test above: the marker does reach every output when the
    links are followed, so its absence there means something."""
    for name, (argv, out) in _outputs(tree, tmp_path).items():
        code, written, err = _run([*argv, "--follow-external-symlinks"], capsys, out)
        assert MARKER in written, name
        assert OUTSIDE not in err, name
        assert code == (1 if name.startswith("check") else 0), name  # 1: run observes the flag


def test_a_report_stored_while_following_is_not_served_without(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tree), *CHECK, "--format", "json", "--cache-dir", str(tmp_path / "cache")]
    assert _run([*argv, "--follow-external-symlinks"], capsys)[0] == 1
    code, written, err = _run(argv, capsys)
    assert code == 2 and MARKER not in written and OUTSIDE in err


def test_a_link_that_stays_inside_the_analysed_path_is_read(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "graph.json"
    _run(["callgraph", str(tree), "--format", "pycg", "-o", str(out)], capsys, out)
    graph = json.loads(out.read_text())
    assert "pkg.kept.inside" in graph
    assert "pkg.kept.inside" in graph["pkg.main.run"]


# --------------------------------------------------------------------------
# The rule, in discovery


def _modules(found: Discovery) -> dict[str, str]:
    return {source.path: source.module for source in found.files}


def _messages(found: Discovery) -> list[str]:
    return [str(diagnostic) for diagnostic in found.diagnostics]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(root: Path, *relative: str) -> None:
    for name in relative:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def test_a_link_to_a_file_or_directory_outside_is_one_diagnostic_and_not_read(
    in_tmp: Path,
) -> None:
    _write(in_tmp, "tree/pkg/__init__.py", "tree/pkg/mod.py", "elsewhere/secret.py")
    _write(in_tmp, "elsewhere/lib/__init__.py", "elsewhere/lib/inner.py")
    (in_tmp / "tree/pkg/secret.py").symlink_to(in_tmp / "elsewhere/secret.py")
    (in_tmp / "tree/pkg/lib").symlink_to(in_tmp / "elsewhere/lib", target_is_directory=True)
    found = discover(["tree"])
    assert _modules(found) == {"tree/pkg/__init__.py": "pkg", "tree/pkg/mod.py": "pkg.mod"}
    assert _messages(found) == [
        f"tree/pkg/lib: {OUTSIDE} ({in_tmp / 'elsewhere/lib'}); "
        "not read (--follow-external-symlinks reads it)",
        f"tree/pkg/secret.py: {OUTSIDE} ({in_tmp / 'elsewhere/secret.py'}); "
        "not read (--follow-external-symlinks reads it)",
    ]
    followed = discover(["tree"], follow_external_symlinks=True)
    assert _modules(followed) == {
        "tree/pkg/__init__.py": "pkg",
        "tree/pkg/mod.py": "pkg.mod",
        "tree/pkg/secret.py": "pkg.secret",
        "tree/pkg/lib/__init__.py": "pkg.lib",
        "tree/pkg/lib/inner.py": "pkg.lib.inner",
    }
    assert followed.diagnostics == ()


def test_a_link_up_and_out_of_the_given_directory_is_not_walked(in_tmp: Path) -> None:
    _write(in_tmp, "home/notes.py", "home/tree/app.py")
    (in_tmp / "home/tree/up").symlink_to("..", target_is_directory=True)
    found = discover(["home/tree"])
    assert _modules(found) == {"home/tree/app.py": "app"}
    assert _messages(found) == [
        f"home/tree/up: {OUTSIDE} (..); not read (--follow-external-symlinks reads it)"
    ]


def test_links_between_given_paths_and_through_inside_links_are_read(in_tmp: Path) -> None:
    _write(in_tmp, "a/own.py", "b/shared.py", "b/deep/impl.py")
    (in_tmp / "a/alias.py").symlink_to(Path("..", "b", "shared.py"))
    (in_tmp / "b/hop").symlink_to("deep", target_is_directory=True)  # inside, to a real dir
    (in_tmp / "a/chain.py").symlink_to(Path("..", "b", "hop", "impl.py"))  # via a link in b
    found = discover(["a", "b"])
    assert found.diagnostics == ()
    assert _modules(found)["a/alias.py"] == "alias"
    assert _modules(found)["a/chain.py"] == "chain"


def test_a_link_through_an_inside_link_that_ends_outside_is_outside(in_tmp: Path) -> None:
    _write(in_tmp, "tree/ok.py", "outside/far.py")
    (in_tmp / "tree/step.py").symlink_to(in_tmp / "outside/far.py")
    (in_tmp / "tree/via.py").symlink_to("step.py")  # inside by its text, outside by its end
    found = discover(["tree"])
    assert _modules(found) == {"tree/ok.py": "ok"}
    assert [d.path for d in found.diagnostics] == ["tree/step.py", "tree/via.py"]


def test_a_dangling_link_outside_says_outside_whether_or_not_the_target_exists(
    in_tmp: Path,
) -> None:
    """The report must not tell a stranger which files exist on the machine."""
    _write(in_tmp, "tree/ok.py", "outside/exists.py")
    (in_tmp / "tree/present.py").symlink_to(in_tmp / "outside/exists.py")
    (in_tmp / "tree/absent.py").symlink_to(in_tmp / "outside/absent.py")
    (in_tmp / "tree/broken.py").symlink_to("missing.py")  # inside: still "broken"
    found = discover(["tree"])
    assert _messages(found) == [
        f"tree/absent.py: {OUTSIDE} ({in_tmp / 'outside/absent.py'}); "
        "not read (--follow-external-symlinks reads it)",
        "tree/broken.py: broken symbolic link (to missing.py); ignored",
        f"tree/present.py: {OUTSIDE} ({in_tmp / 'outside/exists.py'}); "
        "not read (--follow-external-symlinks reads it)",
    ]


def test_loops_keep_their_handling(in_tmp: Path) -> None:
    _write(in_tmp, "tree/pkg/__init__.py", "tree/pkg/mod.py")
    (in_tmp / "tree/pkg/self.py").symlink_to("self.py")
    (in_tmp / "tree/pkg/back").symlink_to("..", target_is_directory=True)  # the given path
    found = discover(["tree"])
    assert _modules(found) == {"tree/pkg/__init__.py": "pkg", "tree/pkg/mod.py": "pkg.mod"}
    assert _messages(found) == ["tree/pkg/self.py: symbolic link loop; ignored"]


def test_links_that_would_not_be_read_anyway_stay_quiet(in_tmp: Path) -> None:
    _write(in_tmp, "tree/ok.py", "outside/data/x.py", "outside/README")
    (in_tmp / "tree/README").symlink_to(in_tmp / "outside/README")  # not Python
    (in_tmp / "tree/my-data").symlink_to(in_tmp / "outside/data", target_is_directory=True)
    (in_tmp / "tree/.venv").symlink_to(in_tmp / "outside/data", target_is_directory=True)
    (in_tmp / "tree/excluded").symlink_to(in_tmp / "outside/data", target_is_directory=True)
    found = discover(["tree"], exclude=["excluded"])
    assert _modules(found) == {"tree/ok.py": "ok"}
    assert found.diagnostics == ()


def test_a_link_target_cannot_break_the_one_line_diagnostic(in_tmp: Path) -> None:
    _write(in_tmp, "tree/ok.py")
    forged = "/nowhere\nflagtrace: error: forged.py: all clear\x1b[2J"
    (in_tmp / "tree/evil.py").symlink_to(forged)
    (message,) = _messages(discover(["tree"]))
    assert "\n" not in message and "\x1b" not in message
    assert "(/nowhere\\nflagtrace: error: forged.py: all clear\\x1b[2J)" in message


def test_a_given_path_is_followed_wherever_it_leads(in_tmp: Path) -> None:
    """The command line is the caller's, not the tree's: naming a link is asking for it."""
    _write(in_tmp, "elsewhere/pkg/__init__.py", "elsewhere/pkg/mod.py")
    (in_tmp / "named").symlink_to(in_tmp / "elsewhere/pkg", target_is_directory=True)
    found = discover(["named"])
    assert found.diagnostics == ()
    assert sorted(_modules(found).values()) == ["named", "named.mod"]


def test_no_review_format_shows_what_a_link_added_by_the_change_points_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review bot's case: a pull request adds links to files outside the repository.
    Neither the head (the work tree) nor any review format reads or quotes them."""
    from flagtrace.report import REVIEW
    from tests.reviewrepo import git

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE / "repo", repo)
    shutil.copytree(FIXTURE / "outside", tmp_path / "outside")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    pkg = repo / "pkg"
    (pkg / "leak.py").symlink_to(Path("..", "..", "outside", "leak.py"))
    (pkg / "vendored").symlink_to(Path("..", "..", "outside", "leakdir"), target_is_directory=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a change that links outside")
    monkeypatch.chdir(repo)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    out = tmp_path / "review.out"
    for fmt in REVIEW.names():
        for head in ([], ["--head", "HEAD"]):  # the work tree, and the commit
            argv = ["review", "pkg", "--base", "HEAD~1", *head, *CHECK, *cache, "--format", fmt]
            code, written, err = _run([*argv, "-o", str(out)], capsys, out)
            assert MARKER not in written and MARKER not in err, (fmt, head)
            assert code == 2, (fmt, head, err)  # the links are input errors of the head
            assert OUTSIDE in err or OUTSIDE in "".join(written.split("\n")), (fmt, head)
