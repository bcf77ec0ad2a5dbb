"""Evidence that never overclaims, on the real SGLang 0.5.9 (issue 15, item 1).

Before the ``inferred`` grade, some witnesses of the seed flag's discovered
entries were marked ``resolved`` while a hop went from one model's ``forward``
into the lambda another model's ``__init__`` passes to its layer factory
(``make_layers(..., lambda idx, prefix: Layer(...))``): value flow reported with
the confidence of a declaration. Here every hop of a ``resolved`` witness must be
direct, or typed by a declaration a reader can check at the call: no lambda, no
call of an unannotated parameter, no call of what a container holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace.api import analyze_project, build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.model import (
    Evidence,
    FlagReport,
    NameExpr,
    Resolution,
    StepKind,
    SubscriptExpr,
    WitnessStep,
)
from flagtrace.resolve.values import root_of
from flagtrace.setting import evidence_of

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

pytestmark = pytest.mark.slow

FLAG = "_in_piecewise_cuda_graph"
VERIFY = "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"
ALL_REDUCE = "sglang.srt.distributed.parallel_state.GroupCoordinator.all_reduce"
PCM = "sglang.srt.compilation.piecewise_context_manager"


@pytest.fixture(scope="module")
def sglang(registry: PytestRegistry) -> tuple[CallGraph, FlagReport, FlagReport]:
    root: Path = registry.download("sglang==0.5.9")
    project = load_project([str(root / "sglang")])
    graph = build_callgraph(project)
    discovered, _ = analyze_project(project, graph, [FLAG], [])
    seed, _ = analyze_project(project, graph, [FLAG], [VERIFY], reads=[ALL_REDUCE])
    return graph, discovered.flags[0], seed.flags[0]


def _value_flow_callee(graph: CallGraph, step: WitnessStep) -> str | None:
    """Why this call's callee rests on value flow, read off the call as written (None:
    it does not): a lambda, a parameter without annotation, an item of a container."""
    if step.callee is not None and "<lambda" in step.callee:
        return "calls a lambda"
    scope = graph.program.scopes.get(step.function)
    if scope is None:
        return None
    for call in scope.calls:
        if call.location != step.location:
            continue
        func = call.func
        if isinstance(root_of(func), SubscriptExpr) or isinstance(func, SubscriptExpr):
            return f"calls an item of a container: {call.text}"
        root = root_of(func)
        if isinstance(root, NameExpr):
            params = {p.name: p for p in scope.params}
            first = scope.params[0].name if scope.params else None
            param = params.get(root.name)
            is_self = root.name == first and graph.program.method_class(scope.qualname)
            if param is not None and param.annotation is None and not is_self:
                return f"calls through the unannotated parameter {root.name!r}: {call.text}"
    return None


def test_no_resolved_witness_rests_on_value_flow(
    sglang: tuple[CallGraph, FlagReport, FlagReport],
) -> None:
    graph, flag, _ = sglang
    resolved = [e for e in flag.entries if e.evidence is Evidence.RESOLVED]
    assert resolved, "some entries keep a fully declared witness"
    for verdict in resolved:
        for step in verdict.witness:
            assert step.resolution in (None, Resolution.DIRECT, Resolution.TYPED), step
            if step.step is StepKind.CALL:
                why = _value_flow_callee(graph, step)
                assert why is None, f"{verdict.entry}: {step.function} {why}"


def test_the_factory_lambda_hop_is_inferred_not_typed(
    sglang: tuple[CallGraph, FlagReport, FlagReport],
) -> None:
    """The hop of the issue: a layer factory calling the lambda it was given."""
    _, flag, _ = sglang
    hops = [
        (v.evidence, s)
        for v in flag.entries
        for s in v.witness
        if s.step is StepKind.CALL and s.callee is not None and "<lambda" in s.callee
    ] + [
        (v.evidence, s)
        for v in flag.entries
        for s in v.witness
        if s.function == "sglang.srt.utils.common.make_layers"
    ]
    assert hops, "the discovered witnesses still go through make_layers' layer function"
    for evidence, step in hops:
        assert step.resolution is Resolution.INFERRED, step
        assert evidence is not Evidence.RESOLVED


def test_every_verdict_takes_the_grade_of_its_weakest_step(
    sglang: tuple[CallGraph, FlagReport, FlagReport],
) -> None:
    _, flag, seed = sglang
    grades = {e.evidence for e in flag.entries}
    assert grades == {Evidence.RESOLVED, Evidence.INFERRED, Evidence.BY_NAME}
    for verdict in (*flag.entries, *seed.entries):
        assert verdict.evidence is evidence_of(verdict.witness), verdict.entry


def test_the_seed_answer_still_holds(sglang: tuple[CallGraph, FlagReport, FlagReport]) -> None:
    """verify -> ... -> replay enters enable_piecewise_cuda_graph -> ... -> all_reduce."""
    _, _, seed = sglang
    (verdict,) = seed.entries
    assert verdict.observes_set
    steps = [(s.step, s.function, s.callee) for s in verdict.witness]
    replay = "sglang.srt.model_executor.piecewise_cuda_graph_runner.PiecewiseCudaGraphRunner.replay"
    assert steps[0][1] == VERIFY
    assert (StepKind.ENTER, replay, f"{PCM}.enable_piecewise_cuda_graph") in steps
    enter = next(s for s in verdict.witness if s.step is StepKind.ENTER)
    assert enter.resolution is Resolution.DIRECT  # `with enable_piecewise_cuda_graph():`
    assert not any(s.setting for s in verdict.witness)  # the context manager writes the flag
    read = verdict.witness[-1]
    assert read.step is StepKind.READ and read.function == ALL_REDUCE
    assert verdict.evidence is Evidence.INFERRED
