"""Bad input never stops a run: one line per problem, the rest is analysed.

Each test puts one bad input beside the good module set of ``fixtures/bad_input/good`` (see
``fixtures/bad_input/README.md``) and runs ``flagtrace.cli.main`` with ``--format json -o FILE``,
with one worker and with two. It checks:

* the exit code: 2 when an input error occurred, else 1 (the good module's finding);
* stderr (the run is ``--quiet``) is exactly one line ``flagtrace: error: FILE[:LINE]: problem``
  naming the bad input, its line where known, and what is wrong; never a traceback;
* the JSON report lists that one error, and still has the good module's findings.

Small bad files are committed under ``fixtures/bad_input/files``; big, binary and unusual ones
(20 MB, NUL and non-UTF-8 bytes, deep nesting, unreadable paths, symlink loops) are made in
``tmp_path``. The tests run as root, who can read anything, so unreadable files and directories
are simulated by making ``open`` and ``os.scandir`` refuse that one path (worker processes are
forked, so they inherit the refusal).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import flagtrace.index
from flagtrace.cli import check_cmd, main
from tests.registry import REPO

HERE = REPO / "fixtures" / "bad_input"
GOOD = HERE / "good"
FILES = HERE / "files"

FLAG = "goodpkg.flags._tracing"
ENTRY = "goodpkg.app.run"
GOOD_FILES = 4  # goodpkg/__init__.py, flags.py, model.py, app.py
# index_many() indexes fewer than 8 files in-process whatever --jobs says; padding the tree
# makes ``--jobs 2`` really index in worker processes.
PADDING = 6

_OPTIONS = {opt for param in check_cmd.params for opt in param.opts}
# No summary cache (it would answer the second run from the first), no jedi time budget
# (the good module set has nothing for jedi to settle): both only if this flagtrace has them.
QUIET = (
    ["--quiet"]
    + (["--no-cache"] if "--no-cache" in _OPTIONS else [])
    + (["--jedi-budget", "0"] if "--jedi-budget" in _OPTIONS else [])
)

JOBS = pytest.mark.parametrize("jobs", [1, 2], ids=["jobs1", "jobs2"])
FORK_ONLY = pytest.mark.skipif(
    not sys.platform.startswith("linux"),  # index_many() forks its workers on Linux only
    reason="worker processes inherit the test's monkeypatching only when forked",
)


# --------------------------------------------------------------------------
# Running flagtrace


@dataclass(frozen=True)
class Run:
    code: int
    report: dict[str, Any]
    stderr: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.stderr.splitlines()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A fresh copy of the good module set, padded to enough files for two workers."""
    root = tmp_path / "tree"
    shutil.copytree(GOOD, root)
    for i in range(PADDING):
        (root / f"padding_{i}.py").write_text(
            f"def helper_{i}(x):\n    return x + {i}\n", encoding="utf-8"
        )
    return root


def run_check(
    capsys: pytest.CaptureFixture[str],
    paths: Sequence[Path | str],
    jobs: int,
    *extra: str,
    entries: Sequence[str] = (ENTRY,),
) -> Run:
    out = Path(os.fspath(paths[0])).parent / "report.json"  # paths[0] is the tree
    args = [os.fspath(p) for p in paths]
    args += ["--flag", "_tracing", *extra]
    for entry in entries:
        args += ["--entry", entry]
    args += ["--format", "json", "-o", str(out), "--jobs", str(jobs), *QUIET]
    capsys.readouterr()
    start = time.perf_counter()
    code = main(args)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    report = json.loads(out.read_text(encoding="utf-8"))
    return Run(code, report, captured.err, seconds)


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert "internal error" not in run.stderr, run.stderr


def assert_good_findings(run: Run) -> None:
    """The good module set was analysed: its entry observes the flag set; the setter's hazards."""
    flags = {flag["qualname"]: flag for flag in run.report["flags"]}
    assert FLAG in flags, run.report
    flag = flags[FLAG]
    entries = {entry["entry"]: entry for entry in flag["entries"]}
    assert entries[ENTRY]["observes_set"] is True, flag
    assert [step["function"] for step in entries[ENTRY]["witness"]][-1] == "goodpkg.model.forward"
    assert {hazard["kind"] for hazard in flag["hazards"]} == {"exception-leak", "non-reentrant"}


def assert_one_error(run: Run, where: Path | str, line: int | None, *words: str) -> str:
    """Exactly one stderr line, naming ``where`` (and ``line``) and the problem; exit code 2;
    the same single error in the report; and the good findings still there."""
    assert_no_traceback(run)
    assert len(run.lines) == 1, f"expected one line on stderr, got:\n{run.stderr}"
    message = run.lines[0]
    prefix = f"flagtrace: error: {where}:" + (f"{line}:" if line is not None else "")
    assert message.startswith(prefix + " "), f"{message!r} does not start with {prefix!r}"
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert run.code == 2, (run.code, message)
    errors = run.report["errors"]
    assert len(errors) == 1, errors
    assert errors[0]["file"] == str(where)
    assert errors[0]["line"] == line
    assert (
        message
        == f"flagtrace: error: {where}{'' if line is None else f':{line}'}: {errors[0]['message']}"
    )
    assert_good_findings(run)
    return message


def assert_clean(run: Run, files: int) -> None:
    """No error at all: exit code 1 (the good finding), silent stderr, ``files`` files analysed."""
    assert_no_traceback(run)
    assert run.stderr == "", run.stderr
    assert run.report["errors"] == []
    assert run.code == 1
    assert run.report["stats"]["files"] == files
    assert_good_findings(run)


ALL_GOOD = GOOD_FILES + PADDING


# --------------------------------------------------------------------------
# Files that do not parse, or parse although they look odd


@JOBS
def test_a_syntax_error_is_one_line_with_its_file_and_line_and_the_rest_is_still_analysed(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    bad = tree / "syntax_error.py"
    shutil.copy(FILES / "syntax_error.py", bad)
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, bad, 1, "syntax error", "invalid syntax")


@JOBS
def test_python_2_code_is_one_line_that_says_it_looks_like_python_2(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    bad = tree / "python2.py"
    shutil.copy(FILES / "python2.py", bad)
    run = run_check(capsys, [tree], jobs)
    assert_one_error(
        run, bad, 5, "syntax error", "Missing parentheses in call to 'print'", "Python 2"
    )


@JOBS
def test_a_non_utf8_file_without_a_coding_cookie_is_one_line_naming_the_line_and_the_byte(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    bad = tree / "latin1_no_cookie.py"
    bad.write_bytes(b'"""Latin-1 text and no coding cookie."""\n\nNAME = "caf\xe9"\n')
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, bad, 3, "not valid UTF-8", "0xe9", "no coding declaration")


@JOBS
def test_a_latin1_file_with_a_coding_cookie_is_analysed_without_error(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    odd = tree / "latin1_cookie.py"
    odd.write_bytes(b'# -*- coding: latin-1 -*-\n"""Caf\xe9."""\n\nNAME = "caf\xe9"\n')
    run = run_check(capsys, [tree], jobs)
    assert_clean(run, ALL_GOOD + 1)


@JOBS
def test_a_utf8_file_that_starts_with_a_bom_is_analysed_without_error(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    assert (FILES / "utf8_bom.py").read_bytes().startswith(b"\xef\xbb\xbf"), (
        "the fixture lost its BOM"
    )
    shutil.copy(FILES / "utf8_bom.py", tree / "utf8_bom.py")
    run = run_check(capsys, [tree], jobs)
    assert_clean(run, ALL_GOOD + 1)


@JOBS
def test_an_unknown_encoding_in_the_coding_cookie_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    bad = tree / "unknown_encoding.py"
    shutil.copy(FILES / "unknown_encoding.py", bad)
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, bad, 1, "unknown encoding 'no-such-codec'")


@JOBS
def test_nul_bytes_are_one_line_naming_the_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    bad = tree / "nul_bytes.py"
    bad.write_bytes(b"x = 1\ny = 2\x00\x00\nz = 3\n")
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, bad, 2, "NUL byte")


@JOBS
def test_an_empty_file_is_analysed_without_error(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    assert (FILES / "empty.py").read_bytes() == b""
    shutil.copy(FILES / "empty.py", tree / "empty.py")
    run = run_check(capsys, [tree], jobs)
    assert_clean(run, ALL_GOOD + 1)


# --------------------------------------------------------------------------
# Size and depth


def write_20_mb_module(path: Path) -> int:
    """About 200,000 lines of simple assignments and functions, just over 20 MB."""
    parts: list[str] = []
    size = i = 0
    while size < 20_000_000:
        if i % 10 == 0:
            part = (
                f"def function_{i:07d}(a, b=None):\n    value = a + {i}\n    return helper(value)\n"
            )
        else:
            part = f"variable_{i:07d} = compute({i}, 'a string literal number {i:07d}', key={i})\n"
        parts.append(part)
        size += len(part)
        i += 1
    path.write_text("".join(parts), encoding="utf-8")
    return sum(part.count("\n") for part in parts)


@JOBS
def test_a_20_mb_module_is_one_line_saying_it_is_too_large_within_seconds(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    big = tree / "huge_generated.py"
    lines = write_20_mb_module(big)
    assert big.stat().st_size >= 20_000_000 and lines >= 200_000
    run = run_check(capsys, [tree], jobs)
    assert_one_error(
        run, big, None, "file too large to analyse", "20.0 MB", "FLAGTRACE_MAX_FILE_MB"
    )
    assert run.seconds < 30, f"took {run.seconds:.1f}s"


@JOBS
def test_the_size_limit_can_be_changed_and_files_under_it_are_analysed(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.setenv("FLAGTRACE_MAX_FILE_MB", "0.02")  # 20 kB: the good files are far smaller
    big = tree / "table.py"
    big.write_text("".join(f"ROW_{i} = ({i}, {i * i})\n" for i in range(2000)), encoding="utf-8")
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, big, None, "file too large to analyse", "the limit is 0.02 MB")


DEEP = 1000


def deep_source(kind: str) -> str:
    """A module whose expression on line 3 nests ``kind`` 1,000 (or more) deep."""
    expression = {
        "brackets": "(" * DEEP + "1" + ")" * DEEP,
        "calls": "f(" * DEEP + "1" + ")" * DEEP,
        "lists": "[" * DEEP + "]" * DEEP,
        "operators": "+".join(["1"] * (DEEP + 1)),
        "unary_operators": "-" * DEEP + "1",
        "operators_5000": "+".join(["1"] * 5001),
        "operators_100000": "+".join(["1"] * 100_001),
        "brackets_100000": "(" * 100_000 + "1" + ")" * 100_000,
        "attributes": "a" + ".b" * DEEP,
        "subscripts": "a" + "[0]" * DEEP,
        "conditionals": "1 if c else " * DEEP + "1",
    }[kind]
    return f'"""Nested {kind}."""\n\nx = {expression}\n'


# kind -> (line of the one error, words in it), or None when the file is analysed
DEEP_CASES: dict[str, tuple[int, tuple[str, ...]] | None] = {
    "brackets": (3, ("nesting too deep to analyse", "1000 levels of brackets")),
    "calls": (3, ("nesting too deep to analyse", "1000 levels of brackets")),
    "lists": (3, ("nesting too deep to analyse", "1000 levels of brackets")),
    "operators": None,
    "unary_operators": None,
    "operators_5000": (3, ("nesting too deep to analyse", "the limit is 2000")),
    "operators_100000": (3, ("nesting too deep to analyse", "the limit is 2000")),
    "brackets_100000": (3, ("nesting too deep to analyse", "100000 levels of brackets")),
    "attributes": (3, ("nesting too deep to analyse", "more than 150 levels")),
    "subscripts": (3, ("nesting too deep to analyse", "more than 150 levels")),
    "conditionals": (3, ("nesting too deep to analyse", "more than 150 levels")),
}


@JOBS
@pytest.mark.parametrize("kind", list(DEEP_CASES))
def test_expressions_nested_1000_deep_are_analysed_or_one_line_and_never_a_recursion_error(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int, kind: str
) -> None:
    deep = tree / f"deep_{kind}.py"
    deep.write_text(deep_source(kind), encoding="utf-8")
    run = run_check(capsys, [tree], jobs)
    assert "RecursionError" not in run.stderr
    expected = DEEP_CASES[kind]
    if expected is None:
        assert_clean(run, ALL_GOOD + 1)
    else:
        line, words = expected
        assert_one_error(run, deep, line, *words)
    assert run.seconds < 60, f"{kind}: took {run.seconds:.1f}s"


# --------------------------------------------------------------------------
# Files and directories that cannot be read, or are not what they seem


@pytest.fixture
def refuse(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    """``refuse(path)`` makes ``path`` unreadable to this process and its forked workers.

    ``chmod 000`` does that for ordinary users but not for root, so ``open``, ``io.open``,
    ``os.open`` and ``os.scandir`` are also made to raise ``PermissionError`` for that path.
    """
    refused: dict[str, int] = {}
    real_open, real_os_open, real_scandir = builtins.open, os.open, os.scandir

    def check(file: Any) -> None:
        if (
            isinstance(file, (str, bytes, os.PathLike))
            and os.path.abspath(os.fsdecode(file)) in refused
        ):
            raise PermissionError(13, "Permission denied", os.fsdecode(file))

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        check(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        check(path)
        return real_os_open(path, *args, **kwargs)

    def fake_scandir(path: Any = ".") -> Any:
        check(path)
        return real_scandir(path)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "scandir", fake_scandir)

    def add(path: Path) -> None:
        refused[os.path.abspath(path)] = path.stat().st_mode
        path.chmod(0)

    yield add
    for name, mode in refused.items():
        os.chmod(name, mode)


@JOBS
def test_an_unreadable_file_is_one_line_and_the_rest_is_analysed(
    tree: Path, capsys: pytest.CaptureFixture[str], refuse: Callable[[Path], None], jobs: int
) -> None:
    bad = tree / "secret.py"
    bad.write_text("TOKEN = 1\n", encoding="utf-8")
    refuse(bad)
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, bad, None, "cannot read file", "permission denied")


@JOBS
def test_an_unreadable_directory_is_one_line_and_the_rest_is_analysed(
    tree: Path, capsys: pytest.CaptureFixture[str], refuse: Callable[[Path], None], jobs: int
) -> None:
    bad = tree / "private"
    bad.mkdir()
    (bad / "inside.py").write_text("X = 1\n", encoding="utf-8")
    refuse(bad)
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, bad, None, "permission denied")


@JOBS
def test_a_directory_named_like_a_python_file_inside_the_tree_is_skipped_quietly(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    odd = tree / "looks_like_a_module.py"
    odd.mkdir()
    (odd / "inner.py").write_text("X = 1\n", encoding="utf-8")
    run = run_check(capsys, [tree], jobs)
    assert_clean(run, ALL_GOOD)  # Python cannot import it either


@JOBS
def test_a_directory_named_like_a_python_file_given_on_the_command_line_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    odd = tree.parent / "x.py"
    odd.mkdir()
    run = run_check(capsys, [tree, odd], jobs)
    assert_one_error(run, odd, None, "a directory, not a Python file", "no Python files")


@JOBS
def test_an_empty_directory_inside_the_tree_is_not_an_error(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    (tree / "empty_dir").mkdir()
    (tree / "goodpkg" / "empty_subpackage").mkdir()
    run = run_check(capsys, [tree], jobs)
    assert_clean(run, ALL_GOOD)


@JOBS
def test_an_empty_directory_given_on_the_command_line_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    empty = tree.parent / "nothing_here"
    empty.mkdir()
    run = run_check(capsys, [tree, empty], jobs)
    assert_one_error(run, empty, None, "no Python files")


@JOBS
def test_a_python_file_that_is_a_symlink_loop_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    loop = tree / "loop.py"
    loop.symlink_to("loop.py")
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, loop, None, "symbolic link loop")


@JOBS
def test_directory_symlink_loops_end_quietly(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    (tree / "goodpkg" / "again").symlink_to(
        tree, target_is_directory=True
    )  # a cycle through the tree
    (tree / "itself").symlink_to("itself")  # a link to itself: ELOOP
    run = run_check(capsys, [tree], jobs)
    assert_clean(run, ALL_GOOD)


@JOBS
def test_a_symlink_loop_given_on_the_command_line_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    loop = tree.parent / "loop.py"
    loop.symlink_to("loop.py")
    run = run_check(capsys, [tree, loop], jobs)
    assert_one_error(run, loop, None, "symbolic link loop")


@JOBS
def test_a_broken_python_file_symlink_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    broken = tree / "gone.py"
    broken.symlink_to("removed_long_ago.py")
    run = run_check(capsys, [tree], jobs)
    assert_one_error(run, broken, None, "broken symbolic link", "removed_long_ago.py")


@JOBS
def test_a_path_that_does_not_exist_is_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    missing = tree.parent / "no_such_dir"
    run = run_check(capsys, [tree, missing], jobs)
    assert_one_error(run, missing, None, "no such file or directory")


# --------------------------------------------------------------------------
# Flags and entry points that name nothing


@JOBS
def test_a_flag_that_does_not_exist_is_one_line_and_the_other_flag_is_still_analysed(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    run = run_check(capsys, [tree], jobs, "--flag", "_no_such_flag")
    assert_one_error(run, "<flag>", None, "'_no_such_flag'")


@JOBS
def test_an_ambiguous_flag_is_one_line_listing_every_candidate(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    for name in ("first", "second"):
        (tree / f"{name}.py").write_text(
            "_mode = None\n\n\ndef set_mode(value):\n    global _mode\n    _mode = value\n",
            encoding="utf-8",
        )
    run = run_check(capsys, [tree], jobs, "--flag", "_mode")
    assert_one_error(
        run, "<flag>", None, "'_mode'", "first._mode", "second._mode", "qualified name"
    )


@JOBS
def test_an_entry_point_that_does_not_exist_is_one_line_with_a_suggestion(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    run = run_check(capsys, [tree], jobs, entries=(ENTRY, "goodpkg.app.runn"))
    assert_one_error(run, "<entry>", None, "'goodpkg.app.runn'", "goodpkg.app.run")


# --------------------------------------------------------------------------
# Everything at once, workers, and the call graph


def add_every_bad_input(tree: Path) -> dict[Path, int | None]:
    """Every file-level bad input in one tree, plus the odd-but-fine ones; returns
    each bad file and the line its error names."""
    for name in ("syntax_error.py", "python2.py", "unknown_encoding.py", "utf8_bom.py", "empty.py"):
        shutil.copy(FILES / name, tree / name)
    (tree / "latin1_no_cookie.py").write_bytes(b'NAME = "caf\xe9"\n')
    (tree / "latin1_cookie.py").write_bytes(b'# -*- coding: latin-1 -*-\nNAME = "caf\xe9"\n')
    (tree / "nul_bytes.py").write_bytes(b"x = 1\x00\n")
    (tree / "deep_brackets.py").write_text(deep_source("brackets"), encoding="utf-8")
    (tree / "deep_operators.py").write_text(deep_source("operators"), encoding="utf-8")
    (tree / "deep_attributes.py").write_text(deep_source("attributes"), encoding="utf-8")
    (tree / "loop.py").symlink_to("loop.py")
    (tree / "gone.py").symlink_to("removed_long_ago.py")
    return {
        tree / "syntax_error.py": 1,
        tree / "python2.py": 5,
        tree / "unknown_encoding.py": 1,
        tree / "latin1_no_cookie.py": 1,
        tree / "nul_bytes.py": 1,
        tree / "deep_brackets.py": 3,
        tree / "deep_attributes.py": 3,
        tree / "loop.py": None,
        tree / "gone.py": None,
    }


def test_every_bad_input_at_once_gives_one_line_each_and_the_same_lines_with_one_or_two_workers(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = add_every_bad_input(tree)
    runs = [run_check(capsys, [tree], jobs) for jobs in (1, 2)]
    for run in runs:
        assert_no_traceback(run)
        assert run.code == 2
        assert len(run.lines) == len(bad), run.stderr
        for path, line in bad.items():
            where = f"flagtrace: error: {path}:" + (f"{line}:" if line is not None else "")
            assert sum(message.startswith(where + " ") for message in run.lines) == 1, (
                where,
                run.stderr,
            )
        assert_good_findings(run)
        assert (
            run.report["stats"]["files"] == ALL_GOOD + 4
        )  # bom, empty, latin-1 with cookie, deep operators
    assert runs[0].lines == runs[1].lines
    assert runs[0].report["errors"] == runs[1].report["errors"]
    assert runs[0].report["flags"] == runs[1].report["flags"]


@JOBS
def test_the_callgraph_command_reports_every_bad_input_in_one_line_and_still_writes_the_graph(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    bad = add_every_bad_input(tree)
    out = tree.parent / "callgraph.json"
    capsys.readouterr()
    code = main(
        ["callgraph", str(tree), "--format", "pycg", "-o", str(out), "--jobs", str(jobs), *QUIET]
    )
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert code == 2
    assert len(stderr.splitlines()) == len(bad), stderr
    for path in bad:
        assert sum(f"flagtrace: error: {path}:" in message for message in stderr.splitlines()) == 1
    graph = json.loads(out.read_text(encoding="utf-8"))
    assert "goodpkg.model.forward" in graph["goodpkg.app.run"]


@FORK_ONLY
def test_a_worker_process_that_dies_costs_only_the_file_it_was_indexing(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A native crash in the parser (simulated: the worker exits on one file) must not end the
    run: that file gets its line, every other file is indexed."""
    real_index_file = flagtrace.index.index_file

    def crashing_index_file(source: Any, data: Any = None) -> Any:
        if source.path.endswith("crashes_the_parser.py"):
            os._exit(70)
        return real_index_file(source, data)

    bad = tree / "crashes_the_parser.py"
    bad.write_text("X = 1\n", encoding="utf-8")
    monkeypatch.setattr(flagtrace.index, "index_file", crashing_index_file)
    run = run_check(capsys, [tree], 2)
    assert_one_error(run, bad, None, "crashed")
    assert run.report["stats"]["files"] == ALL_GOOD


@JOBS
def test_a_bug_in_flagtrace_on_one_file_is_one_line_and_the_rest_is_analysed(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    if jobs > 1 and FORK_ONLY.args[0]:
        pytest.skip("worker processes inherit the test's monkeypatching only when forked")
    real = flagtrace.index.summarize_source

    def buggy(source: Any, data: bytes) -> Any:
        if source.path.endswith("triggers_a_bug.py"):
            raise TypeError("simulated bug")
        return real(source, data)

    bad = tree / "triggers_a_bug.py"
    bad.write_text("X = 1\n", encoding="utf-8")
    monkeypatch.delenv("FLAGTRACE_DEBUG", raising=False)
    monkeypatch.setattr(flagtrace.index, "summarize_source", buggy)
    run = run_check(capsys, [tree], jobs)
    assert "Traceback" not in run.stderr
    assert len(run.lines) == 1, run.stderr
    assert run.lines[0].startswith(
        f"flagtrace: error: {bad}: internal error in flagtrace on this file: "
    )
    assert "TypeError: simulated bug" in run.lines[0] and "FLAGTRACE_DEBUG=1" in run.lines[0]
    assert run.code == 2
    assert_good_findings(run)


def test_the_checks_before_parsing_accept_every_module_of_the_standard_library() -> None:
    """No false alarms: decoding and the nesting limits pass real code (the top-level
    modules of the running Python's standard library)."""
    import sysconfig

    from flagtrace import parseguard

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))
    assert len(files) > 100
    refused = {}
    for path in files:
        try:
            parseguard.check(path.read_bytes())
        except parseguard.SourceProblem as exc:
            refused[path.name] = exc.message
    assert refused == {}
