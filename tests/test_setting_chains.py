"""Setting chains and nearest setters found with a distance bound are what the plain
searches find.

``SettingProofs._cheapest`` searches, from a setter, the cheapest chain of calls
down to a write of the flag. After a few searches it computes every function's
cost to the cheapest write once and only follows calls that stay on a cheapest
chain (vLLM: 1,648 searches, 5M functions popped, 39 s before). The bound must not
change which chain is found, ties included (the first write by name, each hop
from the first caller popped). These tests search from every function that may
change the flag, with the bound from the first search and without it, on the flag
fixtures and on generated programs, and compare the chains hop by hop. The same
for ``setby._find_nearest_setter`` (whose write a witness observes), bounded the same
way by every function's distance to a setter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace import setby, setting
from flagtrace.api import build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.effects import FlagEffects, find_flags
from flagtrace.interpret import Interpreter
from flagtrace.setting import SettingProofs
from tests.flag_cases import CASES, case_flags, flags_of, found_flags
from tests.soundness.programs import FLAG_QUALNAME, random_program


def chains(
    graph: CallGraph, flag_spec: str, unbounded: int, monkeypatch: pytest.MonkeyPatch
) -> dict[str, tuple[object, ...]]:
    """Every writer's chain, with ``unbounded`` plain searches before the bound."""
    monkeypatch.setattr(setting, "UNBOUNDED_SEARCHES", unbounded)
    interp = Interpreter(FlagEffects(graph, find_flags(graph.program, flag_spec)))
    proofs = SettingProofs(interp)
    return {qn: proofs._cheapest(qn) for qn in sorted(interp.writers)}


def nearest_setters(
    graph: CallGraph, flag_spec: str, unbounded: int, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str | None]:
    """Every writer's nearest setter, with ``unbounded`` plain searches before the bound."""
    monkeypatch.setattr(setby, "UNBOUNDED_SEARCHES", unbounded)
    interp = Interpreter(FlagEffects(graph, find_flags(graph.program, flag_spec)))
    searches = setby._SetterSearches()
    found = {qn: setby._find_nearest_setter(interp, searches, qn) for qn in sorted(interp.writers)}
    return {qn: s.function if s is not None else None for qn, s in found.items()}


def assert_same_chains(root: Path, flags: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Returns how many chains of at least two hops were compared."""
    graph = build_callgraph(load_project([str(root)], jobs=1))
    long_chains = 0
    for spec in found_flags(graph.program, flags):
        plain = chains(graph, spec, 1 << 30, monkeypatch)
        assert chains(graph, spec, 0, monkeypatch) == plain, spec
        setters = nearest_setters(graph, spec, 1 << 30, monkeypatch)
        assert nearest_setters(graph, spec, 0, monkeypatch) == setters, spec
        long_chains += sum(1 for c in plain.values() if len(c) >= 2)
    return long_chains


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_fixture_chains_do_not_depend_on_the_bound(
    case: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flags = case_flags(case)
    assert_same_chains(case.parent, flags, monkeypatch)


@pytest.mark.parametrize("seed", range(30))
def test_generated_program_chains_do_not_depend_on_the_bound(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = random_program(seed, frozenset()).write(tmp_path)
    assert_same_chains(root, [FLAG_QUALNAME], monkeypatch)


def test_the_comparison_covers_chains_of_several_hops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: the story fixture's setters reach the write through helpers."""
    total = 0
    for case in CASES:
        flags = flags_of(case)
        if flags:
            total += assert_same_chains(case.parent, flags, monkeypatch)
    assert total >= 10
