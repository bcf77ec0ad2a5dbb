"""Stored whole-run reports (``flagtrace.results``): reused exactly when nothing
they depend on changed, and never when something did."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.cache import SummaryCache, load_entry
from flagtrace.cli import main
from flagtrace.model import AnalysisReport, IndexResult
from flagtrace.results import KIND, report_types
from tests.registry import REPO

STORY = REPO / "fixtures" / "flags" / "sglang_story"
FLAG = "_in_piecewise_cuda_graph"
VERIFY = "pkg.speculative.eagle_worker.EAGLEWorker.verify"
SETTER = Path("pkg/compilation/piecewise_context_manager.py")


class Run:
    """One ``analyze`` call and what it indexed or reused."""

    def __init__(self, tree: Path, cache_dir: Path, entries: tuple[str, ...] = (VERIFY,)) -> None:
        self.indexed: list[IndexResult] = []
        self.reused: list[tuple[int, int]] = []
        self.report = analyze(
            [str(tree)],
            [FLAG],
            entries,
            jobs=1,
            jedi_budget=0.0,
            cache=SummaryCache(cache_dir),
            on_result=self.indexed.append,
            on_reused=lambda files, lines: self.reused.append((files, lines)),
        )

    @property
    def parsed(self) -> list[str]:
        """Files parsed in this run (not read from the summary cache)."""
        return sorted(Path(r.source.path).name for r in self.indexed if not r.cached)


def without_time(report: AnalysisReport) -> AnalysisReport:
    return replace(report, seconds=0.0)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(STORY / "pkg", tmp_path / "src" / "pkg")
    return tmp_path / "src"


def test_an_unchanged_tree_reuses_the_report_without_indexing(tree: Path, tmp_path: Path) -> None:
    cold = Run(tree, tmp_path / "cache")
    files = len(list(tree.rglob("*.py")))
    assert len(cold.parsed) == files and cold.reused == []
    assert cold.report.flags[0].entries[0].observes_set

    warm = Run(tree, tmp_path / "cache")
    assert warm.indexed == []  # not even a summary was read
    assert warm.reused == [(files, cold.report.lines)]
    assert without_time(warm.report) == without_time(cold.report)


def test_an_edit_that_changes_no_summary_indexes_one_file(tree: Path, tmp_path: Path) -> None:
    cold = Run(tree, tmp_path / "cache")
    with (tree / SETTER).open("a", encoding="utf-8") as fh:
        fh.write("# a comment line at the end\n")

    touched = Run(tree, tmp_path / "cache")
    assert touched.parsed == [SETTER.name]
    files = len(list(tree.rglob("*.py")))
    assert touched.reused == [(files - 1, cold.report.lines - 24)]  # all but the setter's 24 lines
    assert touched.report.lines == cold.report.lines + 1
    assert without_time(touched.report) == replace(
        without_time(cold.report), lines=cold.report.lines + 1
    )

    again = Run(tree, tmp_path / "cache")  # and the new state is the exact one now
    assert again.indexed == [] and again.report.lines == cold.report.lines + 1


def test_an_edit_that_changes_a_summary_is_analysed_again(tree: Path, tmp_path: Path) -> None:
    cold = Run(tree, tmp_path / "cache")
    assert {h.kind for h in cold.report.flags[0].hazards} == {"exception-leak", "non-reentrant"}
    setter = tree / SETTER
    setter.write_text(
        setter.read_text(encoding="utf-8").replace(
            "    yield\n\n    _in_piecewise_cuda_graph = False",
            "    try:\n        yield\n    finally:\n        _in_piecewise_cuda_graph = False",
        ),
        encoding="utf-8",
    )

    fixed = Run(tree, tmp_path / "cache")
    assert fixed.parsed == [SETTER.name] and fixed.reused == []
    assert {h.kind for h in fixed.report.flags[0].hazards} == {"non-reentrant"}  # the leak is gone


def test_other_options_are_other_reports(tree: Path, tmp_path: Path) -> None:
    Run(tree, tmp_path / "cache")
    other = "pkg.model_executor.model_runner.ModelRunner.forward_decode"
    decode = Run(tree, tmp_path / "cache", entries=(other,))
    # analysed afresh, on the stored resolved program (flagtrace.program_store): no file
    # is indexed again, but the report is this question's, not the stored one
    assert decode.indexed == []
    assert [e.entry for e in decode.report.flags[0].entries] == [other]


def test_a_corrupt_stored_report_is_a_miss_and_is_rewritten(tree: Path, tmp_path: Path) -> None:
    cold = Run(tree, tmp_path / "cache")
    stored = sorted((tmp_path / "cache" / "results").rglob("??/*.pkl"))
    assert stored
    for path in stored:
        path.write_bytes(path.read_bytes()[:40])  # cut short
    again = Run(tree, tmp_path / "cache")  # analysed again, on the stored resolved program
    assert without_time(again.report) == without_time(cold.report)
    assert all(isinstance(load_entry(KIND, p.read_bytes(), report_types()), tuple) for p in stored)


def test_no_cache_neither_reads_nor_writes_reports(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        str(tree),
        "--flag",
        FLAG,
        "--entry",
        VERIFY,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--format",
        "json",
    ]
    assert main([*args, "--no-cache"]) == 1  # 1: an entry observes the flag set
    assert not (tmp_path / "cache" / "results").exists()
    assert main(args) == 1
    assert main(args) == 1
    err = capsys.readouterr().err
    files = len(list(tree.rglob("*.py")))
    assert f"{files} files ({files} cached)" in err.splitlines()[-1]


def test_cache_info_counts_reports_and_clear_removes_them(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Run(tree, tmp_path / "cache")
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert (
        "reports:   2" in capsys.readouterr().out
    )  # one run, stored by its exact and its summary key
    assert main(["cache", "clear", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert not (tmp_path / "cache" / "results").exists()
    again = Run(tree, tmp_path / "cache")
    assert again.reused == [] and len(again.parsed) == len(list(tree.rglob("*.py")))


def test_the_analysis_digest_covers_subpackages_and_leaves_out_the_reporters(
    tmp_path: Path,
) -> None:
    """A stored report is stale when any analysis module changes, ``resolve/`` included (an
    edit there alone used to keep serving reports of the old resolver); a reporter's edit
    changes how a report looks, not what it says, and keeps it."""
    import shutil

    import flagtrace
    from flagtrace.results import analysis_digest

    package = tmp_path / "flagtrace"
    shutil.copytree(Path(flagtrace.__file__).parent, package)
    digest = analysis_digest.__wrapped__  # memoised per run; here the files change under it
    before = digest(package)
    values = package / "resolve" / "values.py"
    values.write_text(values.read_text() + "\n# an edit\n")
    after_resolver = digest(package)
    assert after_resolver != before
    rich = package / "report" / "check_rich.py"
    rich.write_text(rich.read_text() + "\n# an edit\n")
    assert digest(package) == after_resolver
