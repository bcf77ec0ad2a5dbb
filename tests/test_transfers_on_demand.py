"""Transfers computed on demand give the answers an eager fixpoint gives.

``Interpreter`` computes a function's transfer (what it leaves the flag as) only
when something asks for it, with the functions it depends on: ``scan`` judges every
flag of a program and asks about a few functions per flag. The least fixpoint on a
set closed under "reads the transfer of" equals the fixpoint over every function,
so the order of the questions must not change any answer. These tests ask in
different orders (callers first, callees first, a random subset first) and compare
every transfer, on the fixture packages and on generated programs whose calls form
cycles (recursion), enter context managers through constructors and raise.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from flagtrace.api import build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.effects import FlagEffects, find_flags
from flagtrace.interpret import Interpreter
from flagtrace.model import ScopeKind
from tests.flag_cases import CASES, case_flags, found_flags
from tests.registry import REPO
from tests.soundness.programs import FLAG_QUALNAME, random_program

Answers = dict[tuple[str, bool], tuple[tuple[bool, bool] | None, bool]]


def answers(graph: CallGraph, flag_spec: str, order: list[str] | None, seed: int) -> Answers:
    """Every function's transfer from both entry states, asked in the given order
    (None: a shuffled order drawn from ``seed``), plus whether it may leave the flag set."""
    fx = FlagEffects(graph, find_flags(graph.program, flag_spec))
    interp = Interpreter(fx)
    functions = sorted(
        qn for qn, s in graph.program.scopes.items() if s.kind is not ScopeKind.CLASS
    )
    if order is None:
        order = functions[:]
        random.Random(seed).shuffle(order)
    out: Answers = {}
    for qn in order:
        for entry_set in (False, True):
            out[(qn, entry_set)] = (interp.returns(qn, entry_set), interp.may_leave_set(qn))
    return out


def assert_order_free(root: Path, flags: list[str]) -> int:
    """The answers in four orders are equal; returns how many functions can change the flag."""
    graph = build_callgraph(load_project([str(root)], jobs=1))
    changing = 0
    for spec in found_flags(graph.program, flags):
        functions = sorted(
            qn for qn, s in graph.program.scopes.items() if s.kind is not ScopeKind.CLASS
        )
        reference = answers(graph, spec, functions, 0)
        assert answers(graph, spec, functions[::-1], 0) == reference, spec
        for seed in (1, 2):
            assert answers(graph, spec, None, seed) == reference, (spec, seed)
        changing += sum(1 for (_, e), (t, _) in reference.items() if t is not None and not e)
    return changing


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_fixture_transfers_do_not_depend_on_the_order_of_questions(case: Path) -> None:
    flags = case_flags(case)
    assert_order_free(case.parent, flags)


@pytest.mark.parametrize("seed", range(40))
def test_generated_program_transfers_do_not_depend_on_the_order(seed: int, tmp_path: Path) -> None:
    root = random_program(seed, frozenset()).write(tmp_path)
    assert_order_free(root, [FLAG_QUALNAME])


def test_the_comparison_covers_functions_that_change_the_flag() -> None:
    """Not vacuous: the story fixture has callers of setters whose transfer is asked."""
    story = REPO / "fixtures" / "flags" / "sglang_story"
    assert assert_order_free(story, ["_in_piecewise_cuda_graph"]) >= 5


def test_a_question_computes_only_what_it_depends_on() -> None:
    """Asking about one setter's caller leaves unrelated callers uncomputed: the
    reason ``scan`` answers in seconds where it took minutes per flag."""
    story = REPO / "fixtures" / "flags" / "sglang_story"
    graph = build_callgraph(load_project([str(story)], jobs=1))
    fx = FlagEffects(graph, find_flags(graph.program, "_in_piecewise_cuda_graph"))
    interp = Interpreter(fx)
    assert not interp.transfer  # nothing is computed before a question
    setter = next(iter(sorted(fx.setters)))
    interp.returns(setter)
    asked = {qn for qn, _ in interp.transfer}
    assert setter in asked
    assert asked < interp.writers  # the setter's callers were not needed


def test_a_component_runs_callees_first() -> None:
    """Inside a cycle the worklist runs members callees first where it can: a
    member run before what it calls runs again once their transfers grow."""
    import networkx as nx

    from flagtrace.interpret import _callees_first

    graph = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("b", "d"), ("d", "b")])
    assert _callees_first(graph, {"a", "b", "c", "d"}) == ["c", "d", "b", "a"]
    assert _callees_first(graph, {"x"}) == ["x"]


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_transfers_do_not_depend_on_the_order_inside_a_cycle(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order inside a strongly connected component changes the cost only:
    members by name, reversed, give every transfer the callees-first order gives."""
    import flagtrace.interpret as interpret

    root = random_program(seed, frozenset()).write(tmp_path)
    graph = build_callgraph(load_project([str(root)], jobs=1))
    functions = sorted(
        qn for qn, s in graph.program.scopes.items() if s.kind is not ScopeKind.CLASS
    )
    reference = answers(graph, FLAG_QUALNAME, functions, 0)
    with monkeypatch.context() as patched:
        patched.setattr(interpret, "_callees_first", lambda _, members: sorted(members)[::-1])
        assert answers(graph, FLAG_QUALNAME, functions, 0) == reference
        assert answers(graph, FLAG_QUALNAME, functions[::-1], 0) == reference
