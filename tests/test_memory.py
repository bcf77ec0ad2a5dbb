"""The cyclic collector around the stages (``flagtrace.memory``).

The flag stages run with the collector paused and must give it back, without
freezing what they leave: a process asking many questions (``scan``, the sweep)
would otherwise keep each question's cyclic garbage for good.
"""

from __future__ import annotations

import gc

import pytest

import flagtrace.verdicts as verdicts
from flagtrace.api import analyze_project, build_callgraph, load_project
from tests.registry import REPO

STORY = REPO / "fixtures" / "flags" / "sglang_story"


def test_the_flag_stages_pause_the_collector_and_give_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = load_project([str(STORY)], jobs=1)
    graph = build_callgraph(project)
    seen: list[bool] = []
    analyse = verdicts.analyse_flag

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return analyse(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(verdicts, "analyse_flag", watched)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    report, _ = analyze_project(project, graph, ["_in_piecewise_cuda_graph"], [])
    assert seen == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # nothing the question made is frozen
    assert report.flags and any(e.observes_set for e in report.flags[0].entries)
