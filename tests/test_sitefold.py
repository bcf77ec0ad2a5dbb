"""A call site's folded callees give what joining them one by one gives.

``Interpreter.apply_call`` and ``raised_at`` read a ``SiteFold`` (the callees'
transfers joined once and updated as they grow) instead of joining every callee
at every run: on vLLM that took a flag from 586 s to 40 s. These tests check the
fold against the definition, written out here as the plain loop it replaced:
join, in the site's order, the state itself when an analysed callee cannot change
the flag, each callee's transfer from the entry state, each parameterised
setter's value; the first origin joined is the one kept. Checked at every call
site of the fixture packages and of generated programs (cycles, setters called
through wrappers, exceptions), from every entry state, after the transfers were
computed in different orders (so the folds grew in different orders too).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from flagtrace.api import build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.effects import FlagEffects, find_flags
from flagtrace.flagstate import SET, UNSET, SetEvent, State, join
from flagtrace.interpret import Interpreter
from flagtrace.model import Location, Scope, ScopeKind, StepKind
from tests.flag_cases import CASES, case_flags, found_flags
from tests.registry import REPO
from tests.soundness.programs import FLAG_QUALNAME, random_program

_EARLIER = SetEvent(StepKind.SET, "caller", Location("f.py", 1, 0), "setter", "setter()")
#: every entry state, with and without an origin inherited from earlier in the function
STATES = (
    UNSET,
    SET,
    State(True, True),
    State(False, True, _EARLIER),
    State(True, True, _EARLIER),
    State(False, False),
)


def joined_call(interp: Interpreter, scope: Scope, site: int, state: State) -> State:
    """The state after the call, callee by callee."""
    passive, active, _ = interp._site_callees(scope.qualname, site)
    if not active:
        return state
    call = scope.calls[site]
    result: State | None = state if passive else None
    for qn in active:
        param = interp._parameter_write(qn)
        if param is not None:
            result = join(result, interp._param_setter(scope, call, qn, param, state))
            continue
        outs = [
            interp.transfer[(qn, entered)]
            for entered, on in ((False, state.unset), (True, state.set))
            if on
        ]
        unset, set_ = any(o[0] for o in outs), any(o[1] for o in outs)
        origin = state.origin
        if set_ and not state.set and interp.transfer[(qn, False)][1]:
            origin = SetEvent(StepKind.SET, scope.qualname, call.location, qn, call.text)
        result = join(result, State(unset, set_, origin if set_ else None))
    assert result is not None
    return result


def joined_raise(interp: Interpreter, scope: Scope, site: int, state: State) -> State | None:
    """The state an exception from a callee leaves the site with, callee by callee."""
    call = scope.calls[site]
    exc: State | None = None
    for qn in interp._site_callees(scope.qualname, site)[2]:
        table = interp.raise_transfer
        outs = [
            table[(qn, entered)] for entered, on in ((False, state.unset), (True, state.set)) if on
        ]
        unset, set_ = any(o[0] for o in outs), any(o[1] for o in outs)
        if set_ and not state.set:
            event = SetEvent(StepKind.SET, scope.qualname, call.location, qn, call.text)
            exc = join(exc, State(unset, True, event))
        elif unset or set_:
            exc = join(exc, State(unset, set_, state.origin))
    return exc


def check_sites(graph: CallGraph, flag_spec: str, seed: int) -> int:
    """Compare every site from every state; returns how many sites have callees
    whose transfers differ (so that a test can show it was not vacuous)."""
    fx = FlagEffects(graph, find_flags(graph.program, flag_spec))
    interp = Interpreter(fx)
    functions = sorted(
        qn for qn, s in graph.program.scopes.items() if s.kind is not ScopeKind.CLASS
    )
    random.Random(seed).shuffle(functions)
    for qn in functions:  # folds are made and grow while transfers are computed
        interp.may_leave_set(qn)
    checked = 0
    for qn in sorted(functions):
        scope = graph.program.scopes[qn]
        for site in range(len(scope.calls)):
            _, active, raising = interp._site_callees(qn, site)
            if not active and not raising:
                continue
            transfers = {interp.transfer[(c, False)] for c in active}
            transfers |= {interp.raise_transfer[(c, False)] for c in raising}
            checked += len(transfers) > 1
            for state in STATES:
                where = (qn, site, state)
                assert interp.apply_call(scope, site, state) == joined_call(
                    interp, scope, site, state
                ), where
                assert interp.raised_at(scope, site, state) == joined_raise(
                    interp, scope, site, state
                ), where
    return checked


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_fixture_sites_fold_as_their_callees_join(case: Path) -> None:
    flags = case_flags(case)
    graph = build_callgraph(load_project([str(case.parent)], jobs=1))
    for spec in found_flags(graph.program, flags):
        for seed in (0, 1):
            check_sites(graph, spec, seed)


@pytest.mark.parametrize("seed", range(30))
def test_generated_program_sites_fold_as_their_callees_join(seed: int, tmp_path: Path) -> None:
    root = random_program(seed, frozenset()).write(tmp_path)
    graph = build_callgraph(load_project([str(root)], jobs=1))
    check_sites(graph, FLAG_QUALNAME, seed)


def test_the_comparison_covers_sites_whose_callees_disagree() -> None:
    """Not vacuous: in the by-name fan-out fixture one ``item.step(...)`` may leave
    the flag as it was, set it, reset it, set it and raise, or write its argument."""
    root = REPO / "fixtures" / "flags" / "by_name_fanout"
    graph = build_callgraph(load_project([str(root)], jobs=1))
    assert check_sites(graph, "_mode", 0) >= 3
