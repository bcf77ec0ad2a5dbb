"""The sweep benchmark's own machinery on a fixture package (the real packages run
in ``benchmarks/sweep.py``; here we check it measures and reports what it should)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.registry import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import sweep  # noqa: E402

STORY = REPO / "fixtures" / "flags" / "sglang_story"


@pytest.fixture
def args() -> object:
    return sweep.parse_args(["--max-flags", "10", "--timeout", "300", "--jobs", "1"])


def test_sweep_runs_both_steps_on_a_package(tmp_path: Path, args: object) -> None:
    result = sweep.PackageResult("sglang_story", paths=[str(STORY)])
    sweep.run_reference(result, tmp_path, args)
    sweep.run_callgraph(result, tmp_path, args)
    sweep.run_flags(result, tmp_path, args)

    assert result.problems == []
    assert result.reference_seconds is not None and result.reference_seconds > 0
    assert result.slowest_flag is not None
    line = sweep.times_b(result.slowest_flag[1], result.reference_seconds)
    assert line == f"{result.slowest_flag[1] / result.reference_seconds:.1f} x B"
    assert result.finished
    assert result.files == len(list(STORY.rglob("*.py")))
    assert result.callgraph_stats["edges"] > 0
    # the story's flag is written from inside a function, so it is a candidate
    assert any(r["flag"].endswith("._in_piecewise_cuda_graph") for r in result.flag_results)
    assert result.flags_done == result.flags_chosen > 0
    assert result.hazards.get("exception-leak", 0) >= 1
    assert result.observing_entries >= 1


def test_times_without_a_reference_are_not_ratios() -> None:
    assert sweep.times_b(3.0, None) == "-"
    assert sweep.times_b(None, 2.0) == "-"
    assert sweep.times_b(3.0, 0.0) == "-"
    assert sweep.times_b(3.0, 2.0) == "1.5 x B"


def test_a_crashing_callgraph_is_one_line(tmp_path: Path) -> None:
    stderr = (
        "flagtrace: error: pkg/bad.py:3: invalid syntax\n"
        "flagtrace: internal error: IndexError: tuple index out of range "
        "(set FLAGTRACE_DEBUG=1 for a traceback, and please report it)\n"
    )
    assert sweep.internal_error(stderr) == "IndexError: tuple index out of range"
    assert sweep.internal_error("Killed\n") == "Killed"
    assert sweep.internal_error("") is None


def test_events_cut_short_keep_what_was_done(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"event": "indexed", "seconds": 1.0, "files": 3, "modules": 3, "lines": 30,'
        ' "diagnostics": 0, "diagnostic_samples": [], "internal_errors": []}\n'
        '{"event": "flag_start", "flag": "pkg.a._x"}\n'
        '{"event": "flag", "flag": "pkg.a._x", "seconds": 0.5, "exception": null,'
        ' "observes_set": 2, "by_name": 1, "hazards": {"sticky": 1}}\n'
        '{"event": "flag_start", "flag": "pkg.b._y"}\n'
        '{"event": "flag", "flag": "pkg.b._y", "sec',  # killed mid-line
        encoding="utf-8",
    )
    result = sweep.PackageResult("demo")
    sweep.collect(result, sweep.read_events(events))
    assert (result.files, result.lines, result.flags_done) == (3, 30, 1)
    assert (result.observing_entries, result.observing_by_name) == (2, 1)
    assert result.hazards == {"sticky": 1}
    assert not result.finished
