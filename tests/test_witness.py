"""The witness is a cheapest path: checked against a plain forward Dijkstra.

``Reach.witness`` reads the path off distances computed backwards once for the
whole graph (a search per entry was too slow for entry-point discovery on large
codebases). These tests keep it honest: for every function of every flag
fixture taken as an entry, from both start states, the witness exists exactly
when a forward search from that entry finds a read with the flag set, its cost
(weak evidence, hops) is the forward search's, and it is a real path of the
searched graph, hop by hop.
"""

from __future__ import annotations

import heapq
import itertools
from pathlib import Path

import pytest

from flagtrace.api import build_callgraph, load_project
from flagtrace.effects import FlagEffects, FlagLookupError, find_flags
from flagtrace.interpret import Interpreter
from flagtrace.model import ScopeKind
from flagtrace.reach import Node, Reach, Witness
from tests.flag_cases import CASES, case_flags
from tests.registry import REPO

STARTS = ((True, False), (True, True))


def forward_cost(reach: Reach, entry: str, start: tuple[bool, bool]) -> tuple[int, int] | None:
    """Reference: Dijkstra from the entry to the first node with a read of the set flag."""
    counter = itertools.count()
    best: dict[Node, tuple[int, int]] = {(entry, start): (0, 0)}
    heap = [((0, 0), next(counter), (entry, start))]
    while heap:
        cost, _, node = heapq.heappop(heap)
        if best[node] < cost:
            continue
        edges, hits = reach.expand(node)
        if hits:
            return cost
        for nxt, _, step in reach._costed(node, edges):
            candidate = (cost[0] + step, cost[1] + 1)
            if candidate < best.get(nxt, (1 << 30, 0)):
                best[nxt] = candidate
                heapq.heappush(heap, (candidate, next(counter), nxt))
    return None


def witness_cost(
    reach: Reach, entry: str, start: tuple[bool, bool], witness: Witness
) -> tuple[int, int]:
    """Walk the witness through the searched graph, checking every hop is an edge."""
    node: Node = (entry, start)
    weak = 0
    for hop in witness.hops:
        edges = reach._costed(node, reach.expand(node)[0])
        match = next(((nxt, step) for nxt, h, step in edges if h == hop), None)
        assert match is not None, (
            f"{entry}: hop {hop.caller} -> {hop.callee} is not an edge of {node}"
        )
        node, step = match
        weak += step
    _, hits = reach.expand(node)
    assert witness.read in hits, f"{entry}: the witness ends at {node} without its read"
    return weak, len(witness.hops)


def check_all_entries(root: Path, flags: list[str], limit: int | None = None) -> int:
    project = load_project([str(root)], jobs=1)
    graph = build_callgraph(project)
    checked = 0
    for spec in flags:
        try:
            flag = find_flags(graph.program, spec)
        except FlagLookupError:
            continue  # the error fixtures name missing and ambiguous flags on purpose
        reach = Reach(Interpreter(FlagEffects(graph, flag)))
        entries = sorted(
            qn for qn, s in graph.program.scopes.items() if s.kind is not ScopeKind.CLASS
        )
        for entry in entries[:limit]:
            for start in STARTS:
                want = forward_cost(reach, entry, start)
                got = reach.witness(entry, start)
                if want is None:
                    assert got is None, f"{entry} {start}: a witness where no read is reachable"
                    continue
                assert got is not None, f"{entry} {start}: no witness, forward search costs {want}"
                assert witness_cost(reach, entry, start, got) == want, f"{entry} {start}"
                checked += 1
    return checked


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_witness_cost_equals_a_forward_search(case: Path) -> None:
    flags = case_flags(case)
    check_all_entries(case.parent, flags)


def test_the_comparison_covers_real_witnesses() -> None:
    """Not vacuous: the fixtures give many entries with a witness."""
    story = REPO / "fixtures" / "flags" / "sglang_story"
    assert check_all_entries(story, ["_in_piecewise_cuda_graph"]) >= 10
