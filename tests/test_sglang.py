"""flagtrace on the real SGLang 0.5.9 source, downloaded from the registry once.

One index + resolution of the whole package (~1,400 files, ~540k lines) is
shared by the call-graph checks (the foundation issue) and the flag checks
(the flag-engine issue): both are what a user runs on SGLang.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace.api import Project, analyze_project, build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.model import FlagReport, StickyScope
from flagtrace.report.callgraph_pycg import pycg

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

Indexed = tuple[Project, CallGraph]

pytestmark = pytest.mark.slow

VERIFY = "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"
ALL_REDUCE = "sglang.srt.distributed.parallel_state.GroupCoordinator.all_reduce"
PCM = "sglang.srt.compilation.piecewise_context_manager"


@pytest.fixture(scope="module")
def sglang(registry: PytestRegistry) -> Indexed:
    root: Path = registry.download("sglang==0.5.9")
    project = load_project([str(root / "sglang")])
    graph = build_callgraph(project)
    return project, graph


def test_the_whole_package_is_indexed_without_errors(sglang: Indexed) -> None:
    project, graph = sglang
    assert len(project.summaries) >= 1400
    assert project.lines > 500_000
    assert project.diagnostics == ()
    assert graph.stats().edges > 100_000


@pytest.mark.parametrize(
    ("caller", "callee"),
    [
        (VERIFY, "sglang.srt.managers.tp_worker.TpModelWorker.forward_batch_generation"),
        ("sglang.srt.distributed.communication_op.tensor_model_parallel_all_reduce", ALL_REDUCE),
    ],
)
def test_the_call_graph_has_the_edges_the_regression_hunt_needed(
    sglang: Indexed, caller: str, callee: str
) -> None:
    _, graph = sglang
    assert graph.has_edge(caller, callee), graph.callees(caller)


@pytest.fixture(scope="module")
def piecewise(sglang: Indexed) -> FlagReport:
    project, graph = sglang
    report, _ = analyze_project(
        project, graph, ["_in_piecewise_cuda_graph"], [VERIFY], reads=[ALL_REDUCE]
    )
    assert report.errors == ()
    return report.flags[0]


def test_verify_observes_the_piecewise_flag_set_at_the_all_reduce(piecewise: FlagReport) -> None:
    (verdict,) = piecewise.entries
    assert verdict.observes_set
    functions = [s.function for s in verdict.witness]
    assert functions[0] == VERIFY
    steps = [(s.step, s.function, s.callee) for s in verdict.witness]
    forward_extend = "sglang.srt.model_executor.model_runner.ModelRunner.forward_extend"
    replay = "sglang.srt.model_executor.piecewise_cuda_graph_runner.PiecewiseCudaGraphRunner.replay"
    assert ("call", forward_extend, replay) in steps
    assert ("enter", replay, f"{PCM}.enable_piecewise_cuda_graph") in steps
    read = verdict.witness[-1]
    assert read.step == "read" and read.function == ALL_REDUCE
    assert read.location.path.endswith("sglang/srt/distributed/parallel_state.py")
    guards = [s.guard or "" for s in verdict.witness]
    assert any(
        "self.piecewise_cuda_graph_runner is not None"
        " and self.piecewise_cuda_graph_runner.can_run(forward_batch)" in g
        for g in guards
    ), guards


def test_the_seed_witness_lists_the_conditions_between_forward_extend_and_the_read(
    piecewise: FlagReport,
) -> None:
    """Issue 20: besides the ``if`` around each call (``can_run_graph``, shown
    expanded), the witness names the early exits of ``all_reduce`` above its read
    of the flag (through ``is_in_piecewise_cuda_graph()``), the ``elif`` arms
    before it, and an ``assert`` in ``verify``; each condition once."""
    (verdict,) = piecewise.entries
    forward_extend = "sglang.srt.model_executor.model_runner.ModelRunner.forward_extend"
    (into_replay,) = [s for s in verdict.witness if s.function == forward_extend]
    assert into_replay.guard == (
        "self.piecewise_cuda_graph_runner is not None"
        " and self.piecewise_cuda_graph_runner.can_run(forward_batch)"
    )
    assert [(g.kind.value, g.text) for g in into_replay.guards] == [("if", "can_run_graph")]
    read = verdict.witness[-1]
    assert read.step == "read" and read.callee is not None
    assert read.callee.endswith("is_in_piecewise_cuda_graph")
    exits = [g.text for g in read.guards if g.kind.value == "exit"]
    assert exits == [
        "self.world_size == 1",
        "input_.is_cpu",
        "self.hpu_communicator is not None and not self.hpu_communicator.disabled",
        "self.xpu_communicator is not None and not self.xpu_communicator.disabled",
        "self.npu_communicator is not None and not self.npu_communicator.disabled",
        "self.pynccl_comm is not None and self.is_symmetric_memory_enabled()",
    ]
    assert all(g.negated for g in read.guards)
    assert [g.kind.value for g in read.guards].count("else") == 4  # the elif arms before
    assert read.guard is not None and read.guard.startswith("not (self.world_size == 1) and ")
    (verify,) = [s for s in verdict.witness if s.function == VERIFY]
    assert [(g.kind.value, g.text) for g in verify.guards] == [
        ("assert", "model_worker_batch.capture_hidden_mode == spec_info.capture_hidden_mode")
    ]
    for step in verdict.witness:
        keys = [(g.text, g.negated) for g in step.guards]
        assert len(keys) == len(set(keys)), step


def test_enable_piecewise_cuda_graph_leaks_on_exceptions_and_is_not_reentrant(
    piecewise: FlagReport,
) -> None:
    kinds = {
        h.kind for h in piecewise.hazards if h.function == f"{PCM}.enable_piecewise_cuda_graph"
    }
    assert {"exception-leak", "non-reentrant"} <= kinds


def test_set_forward_context_resets_in_finally_but_not_to_the_previous_value(
    sglang: Indexed,
) -> None:
    project, graph = sglang
    report, _ = analyze_project(project, graph, [f"{PCM}._forward_context"], [VERIFY])
    assert report.errors == ()
    kinds = {h.kind for h in report.flags[0].hazards if h.function == f"{PCM}.set_forward_context"}
    assert "non-reentrant" in kinds
    assert "exception-leak" not in kinds


def test_the_bare_forward_context_name_is_ambiguous_in_sglang(sglang: Indexed) -> None:
    project, graph = sglang
    report, _ = analyze_project(project, graph, ["_forward_context"], [VERIFY])
    assert report.flags == ()
    assert "several modules" in report.errors[0].message


#: Writes the PyCG-format call graph of argv[1] to stdout, through the library
#: API (no CLI, so nothing fixes the hash seed but the environment).
_PYCG_SCRIPT = """
import json, sys
from flagtrace.api import build_callgraph, load_project
from flagtrace.cache import SummaryCache
from flagtrace.report.callgraph_pycg import pycg
project = load_project([sys.argv[1]], cache=SummaryCache(None))
print(json.dumps(pycg(build_callgraph(project)), sort_keys=True))
"""


def test_the_call_graph_does_not_depend_on_the_hash_seed(sglang: Indexed) -> None:
    """Sets of names iterate in per-process hash order; resolution visits values
    in a fixed order, so two processes with different seeds (and this one)
    build the same graph. Before, ~12 of 153,739 edges differed between seeds."""
    project, graph = sglang
    root = str(Path(project.files[0].root) / "sglang")
    here = json.dumps(pycg(graph), sort_keys=True)
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _PYCG_SCRIPT, root],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == here, f"PYTHONHASHSEED={seed} gives another call graph"


def test_the_discovery_report_reads_in_about_150_lines_at_80_columns(sglang: Indexed) -> None:
    """Issue 11: the command the project exists for, with no entry named, printed 7,918
    lines; now the answer comes first, the entries come grouped, and a few complete
    witnesses follow (what `flagtrace sglang --flag _in_piecewise_cuda_graph` prints into
    an 80-column log)."""
    from flagtrace.report import CHECK, RenderOptions

    project, graph = sglang
    report, _ = analyze_project(project, graph, ["_in_piecewise_cuda_graph"], [])
    (flag,) = report.flags
    observing = sum(e.observes_set for e in flag.entries)
    assert observing > 50
    text = "".join(CHECK["rich"].render(report, RenderOptions(width=80)))
    lines = text.splitlines()
    # 159 lines before issue 15; its grade marks in the listings ("(inferred)") and the
    # setting hops of the sticky setter (one folded row per example witness) make 190
    assert len(lines) <= 200, len(lines)
    assert max(len(line) for line in lines) <= 80
    assert lines[0].startswith(f"{observing} entry points can run a read of _in_piecewise")
    assert "entries that observe it set, by read and setter" in text
    assert text.count("OBSERVES SET") == 3  # complete witnesses, each down to its read
    # the label column widens when a witness has setting rows ("2-9  call")
    assert len(re.findall(r" read +reads the flag", text)) == 3
    assert "FT101 exception-leak" in text and "FT102 non-reentrant" in text
    # issue 14: program roots. SGLang's __main__ modules are roots; none reaches the
    # scheduler's sticky write (run_scheduler_process runs in processes launch_server
    # starts through multiprocessing), so launch_server no longer observes it set, and the
    # entries that still start with it set are those no root reaches ("anywhere")
    assert len(report.roots) > 100
    by_entry = {e.entry: e for e in flag.entries}
    assert "sglang.launch_server" not in by_entry
    scoped = [e for e in flag.entries if e.sticky_scope is not None]
    assert scoped and all(e.sticky_scope is StickyScope.ANYWHERE and not e.roots for e in scoped)


# ------------------------------------------------------------------ --assume (issue 14)

NO_PCG = "server_args.enable_piecewise_cuda_graph=False"
MODEL_RUNNER = "sglang.srt.model_executor.model_runner.ModelRunner"
PCG_RUNNER = "sglang.srt.model_executor.piecewise_cuda_graph_runner.PiecewiseCudaGraphRunner"


def test_verify_never_observes_the_flag_with_piecewise_cuda_graphs_off(sglang: Indexed) -> None:
    """The seed question: can verify see the flag set *when piecewise CUDA graphs are off*?
    No: the only construction of PiecewiseCudaGraphRunner (the only code that enters the
    setter) is below the early exit of ModelRunner.init_piecewise_cuda_graphs that the
    assumption takes. Without the assumption the verdict and its witness are today's."""
    project, graph = sglang
    plain, _ = analyze_project(project, graph, ["_in_piecewise_cuda_graph"], [VERIFY])
    (seen,) = plain.flags[0].entries
    assert seen.observes_set and seen.pruned is None
    assert [
        (s.step.value, s.function.rpartition(".")[2], s.location.line) for s in seen.witness
    ] == [
        ("call", "verify", 716),
        ("call", "forward_batch_generation", 456),
        ("call", "forward", 2401),
        ("call", "_forward_raw", 2500),
        ("call", "forward_extend", 2330),
        ("enter", "replay", 694),
        ("call", "replay", 696),
        ("read", "init_forward_metadata", 327),
    ]
    assumed, _ = analyze_project(
        project, graph, ["_in_piecewise_cuda_graph"], [VERIFY], assume=[NO_PCG]
    )
    (never,) = assumed.flags[0].entries
    assert not never.observes_set
    hop = never.pruned
    assert hop is not None and hop.kind.value == "not-instantiated"
    assert (hop.function, hop.callee) == (f"{MODEL_RUNNER}.forward_extend", f"{PCG_RUNNER}.replay")
    assert hop.cls == PCG_RUNNER and hop.facts == (NO_PCG,)
    assert hop.guard_location is not None
    assert hop.guard_location.path.endswith("model_executor/model_runner.py")
    assert hop.guard_location.line == 2170  # `not self.server_args.enable_piecewise_cuda_graph`
    assert "init_piecewise_cuda_graphs" in hop.reason
    (use,) = assumed.assumptions
    assert use.fact == NO_PCG
    assert any(g.line == 2170 and g.path.endswith("model_runner.py") for g in use.guards)


def test_no_discovered_entry_observes_the_flag_with_piecewise_cuda_graphs_off(
    sglang: Indexed,
) -> None:
    project, graph = sglang
    report, _ = analyze_project(project, graph, ["_in_piecewise_cuda_graph"], [], assume=[NO_PCG])
    assert report.flags[0].entries == ()
