"""Questions asked one after another on one graph answer as on a fresh graph.

The entry points discovery finds, the program roots' reach and the thread
targets do not depend on the flag, so ``flagtrace.pergraph`` computes them once
per call graph (the sweep, ``scan`` and API scripts ask about many flags on one
graph). Sharing must not carry anything from one question into the next: every
flag of every flag fixture is asked with entry discovery after all the others
(in both orders) and compared with the answer on a graph built for it alone.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from flagtrace import pergraph
from flagtrace.api import analyze_project, build_callgraph, load_project
from flagtrace.model import AnalysisReport
from tests.flag_cases import CASES, case_flags, found_flags
from tests.registry import REPO


def without_time(report: AnalysisReport) -> AnalysisReport:
    return dataclasses.replace(report, seconds=0.0)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_flags_asked_in_turn_answer_as_alone(case: Path) -> None:
    project = load_project([str(case.parent)], jobs=1)
    shared = build_callgraph(project)
    flags = list(found_flags(shared.program, case_flags(case)))
    if not flags:
        pytest.skip("no flag of this case exists")
    for order in (flags, flags[::-1]):
        for flag in order:
            asked = analyze_project(project, shared, [flag], [])[0]
            alone = analyze_project(project, build_callgraph(project), [flag], [])[0]
            assert without_time(asked) == without_time(alone), flag


def test_the_shared_answers_are_computed_once() -> None:
    """Not vacuous: the second question on a graph reuses the first one's entries."""
    root = REPO / "fixtures" / "flags" / "entry_discovery"
    project = load_project([str(root)], jobs=1)
    graph = build_callgraph(project)
    flag = case_flags(root / "case.json")[0]
    analyze_project(project, graph, [flag], [])
    answers = dict(pergraph._ANSWERS[graph])
    assert any(isinstance(k, tuple) and k[0] == "entries" for k in answers)
    analyze_project(project, graph, [flag], [])
    assert all(pergraph._ANSWERS[graph][k] is v for k, v in answers.items())
