"""By-name hubs: the call graph stores a site's by-name callees through one hub
node per set of methods, and answers every question exactly as the graph with
one edge per caller and method (the one ``CallGraph.build(..., hubs=False)``
still builds): the same callees, callers, sites in the same order, the same
shortest paths, closures and counts; pruned alike, and alike after jedi's edges.

Each comparison fails if a verb forgets a hub (a method missing from
``callees``), leaks one (a ``<by-name>`` node in ``nodes`` or a path), orders a
pair's sites by edge rather than by resolution, or prunes a hub's method for
every site when only one site lost it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace.api import load_project, resolve_project
from flagtrace.callgraph import HUB_PREFIX, CallGraph
from flagtrace.model import CallEdge, Resolution, RootKind, UnresolvedCall
from flagtrace.programs import ProgramRoot, RootIndex
from flagtrace.prune import Pruning

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "flags"
SOURCE = """\
class A:
    def run(self):
        return helper()

    def stop(self):
        pass


class B:
    def run(self):
        pass

    def stop(self):
        pass


class C:
    def run(self):
        pass


def helper():
    pass


def unknown(thing, other):
    thing.run()
    other.stop()
    A().run()
    thing.run()


def main():
    unknown(None, None)
    B().stop()
"""


def _assert_alike(hubbed: CallGraph, plain: CallGraph, rng: random.Random, paths: int) -> None:
    """Every verb of ``hubbed`` answers as ``plain`` does."""
    assert not plain.hubs
    nodes = plain.nodes()
    assert hubbed.nodes() == nodes
    assert not any(n.startswith(HUB_PREFIX) for n in nodes)
    for node in nodes:
        assert hubbed.callees(node) == plain.callees(node), node
        assert hubbed.callers(node) == plain.callers(node), node
        for callee in plain.callees(node):
            assert hubbed.has_edge(node, callee)
            assert hubbed.sites(node, callee) == plain.sites(node, callee), (node, callee)
    assert list(hubbed.edges()) == list(plain.edges())
    assert hubbed.stats() == plain.stats()
    for _ in range(paths):
        a, b = rng.choice(nodes), rng.choice(nodes)
        assert hubbed.shortest_path(a, b) == plain.shortest_path(a, b), (a, b)
        assert hubbed.reachable(a) == plain.reachable(a), a
        assert hubbed.has_edge(a, b) == plain.has_edge(a, b), (a, b)
    # every module as a root: which of them reach what, through hubs or not
    roots = [ProgramRoot(m, RootKind.CONFIGURED, "test") for m in sorted(plain.program.modules)]
    index, plain_index = RootIndex(hubbed, roots), RootIndex(plain, roots)
    assert index.reach == plain_index.reach
    assert index.below == plain_index.below
    assert index.import_time == plain_index.import_time


def _assert_site_hubs(graph: CallGraph) -> None:
    """The hub ``build`` noted for each site is the one its callees name, and a
    graph whose sites were edited (pruning's) asks the callees again."""
    for (scope, site), callees in graph.call_sites():
        assert graph.site_hub(scope, site) == graph.hub_at(callees), (scope, site)


def _check(paths: list[Path], n_paths: int = 300) -> tuple[CallGraph, CallGraph]:
    resolved = resolve_project(load_project([str(p) for p in paths], jobs=1))
    hubbed, plain = CallGraph.build(resolved), CallGraph.build(resolved, hubs=False)
    _assert_site_hubs(hubbed)
    _assert_site_hubs(plain)
    _assert_site_hubs(Pruning(hubbed).graph)
    rng = random.Random(16)
    _assert_alike(hubbed, plain, rng, n_paths)
    # instantiation pruning cuts a hub's methods for every site of the hub
    _assert_alike(Pruning(hubbed).graph, Pruning(plain).graph, rng, n_paths)
    # jedi's answers make a copy with new edges (here: each unresolved call
    # settled as a call of some function), then pruned again
    settled = [
        ((u.scope, u.site), _settle(u, rng.choice(plain.nodes()))) for u in plain.unresolved[:50]
    ]
    keys = {key for key, _ in settled}
    hubbed, plain = hubbed.with_settled(settled, keys, 1), plain.with_settled(settled, keys, 1)
    _assert_site_hubs(hubbed)
    _assert_alike(hubbed, plain, rng, n_paths)
    _assert_alike(Pruning(hubbed).graph, Pruning(plain).graph, rng, n_paths)
    return hubbed, plain


def _settle(u: UnresolvedCall, callee: str) -> CallEdge:
    return CallEdge(u.caller, callee, u.location, Resolution.JEDI, (), u.site, u.text)


def test_by_name_dispatch_goes_through_one_hub_per_method_set(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE)
    hubbed, plain = _check([tmp_path / "pkg"])
    unknown = "pkg.mod.unknown"
    assert hubbed.callees(unknown) == [
        "pkg.mod.A.run",
        "pkg.mod.A.stop",
        "pkg.mod.B.run",
        "pkg.mod.B.stop",
        "pkg.mod.C.run",
    ]
    # the two thing.run() and the typed A().run(), in the order of the source;
    # each by-name edge names the method, not the hub
    sites = hubbed.sites(unknown, "pkg.mod.A.run")
    assert [(e.location.line, e.resolution.value) for e in sites] == [
        (27, "by-name"),
        (29, "typed"),
        (30, "by-name"),
    ]
    assert all(e.callee == "pkg.mod.A.run" for e in sites)
    # thing.run() twice and other.stop(): a hub per set of methods, shared by sites
    assert sorted(hubbed.hubs) == ["<by-name>.run", "<by-name>.stop"]
    # unknown's 5 pairs are stored as 2 hub edges, the typed A.run and the hubs'
    # 5 (a hub saves edges once sites share it: SGLang's are counted below)
    assert hubbed.stored_edges() == plain.stored_edges() + 3
    assert hubbed.shortest_path("pkg.mod.main", "pkg.mod.helper") == [
        "pkg.mod.main",
        "pkg.mod.unknown",
        "pkg.mod.A.run",
        "pkg.mod.helper",
    ]
    # pruning (no instance of C) takes C.run out of the run hub: for every site
    pruned = Pruning(hubbed).graph
    assert "pkg.mod.C.run" not in pruned.callees(unknown)
    assert "pkg.mod.C.run" in hubbed.callees(unknown)
    assert pruned.callers("pkg.mod.C.run") == []


@pytest.mark.parametrize("case", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_each_fixture_graph_answers_as_without_hubs(case: str) -> None:
    _check([FIXTURES / case / "pkg"], n_paths=100)


@pytest.mark.slow
def test_sglang_graph_answers_as_without_hubs(registry: PytestRegistry) -> None:
    root: Path = registry.download("sglang==0.5.9")
    hubbed, plain = _check([root / "sglang"], n_paths=200)
    assert len(hubbed.hubs) > 100
    assert hubbed.stored_edges() < 0.9 * plain.stored_edges()
