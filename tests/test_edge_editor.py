"""A pruned graph, and one with jedi's edges, are edited copies: the graph they
came from answers every later question as before.

Why this matters: pruning is shared by later questions on the same graph
(``prune.pruning_for``) and each is made from ``Pruning.full``; the copy shares
the edges' attribute dicts with it (``callgraph.EdgeEditor``), so an edit in
place would narrow an edge of the full graph for every question after.
"""

from __future__ import annotations

from pathlib import Path

from flagtrace.api import analyze_project, build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.model import CallEdge, Resolution

WORK = "pkg.work.work"
HELPER = "pkg.work.helper"


def _project(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(
        "import contextlib\n_on = False\n\n@contextlib.contextmanager\ndef enabled():\n"
        "    global _on\n    _on = True\n    yield\n    _on = False\n"
    )
    (pkg / "work.py").write_text(
        "from pkg import state\n\ndef helper():\n    return state._on\n\n"
        "def after():\n    return None\n\n"
        "def work(cfg):\n    helper()\n    if cfg.fast:\n        with state.enabled():\n"
        "            helper()\n    after()\n    return cfg\n"
    )
    return tmp_path


def _edges(graph: CallGraph) -> list[tuple[str, str, tuple[int, ...]]]:
    """Every edge with the lines of its sites, in the adjacency's own order."""
    return [(u, v, tuple(e.location.line for e in graph.sites(u, v))) for u, v in graph.nx.edges]


def test_pruning_narrows_a_copy_and_keeps_the_order(tmp_path: Path) -> None:
    project = load_project([str(_project(tmp_path))], jobs=1)
    graph = build_callgraph(project)
    before = _edges(graph)
    assert len(graph.sites(WORK, HELPER)) == 2

    fast_off, pruned = analyze_project(
        project, graph, ["pkg.state._on"], [WORK], assume=["cfg.fast=False"]
    )
    # the guarded call is cut in the pruned graph only
    assert [e.location.line for e in pruned.sites(WORK, HELPER)] == [10]
    assert _edges(graph) == before
    # the pruned graph is the full one without the cut site, in the same order
    narrowed = [(u, v, (10,) if (u, v) == (WORK, HELPER) else lines) for u, v, lines in before]
    assert _edges(pruned) == [edge for edge in narrowed if edge[:2] != (WORK, "pkg.state.enabled")]
    assert not fast_off.flags[0].entries[0].observes_set

    # a question without the fact, on the same graph, sees both calls again
    plain, _ = analyze_project(project, graph, ["pkg.state._on"], [WORK])
    assert plain.flags[0].entries[0].observes_set


def test_jedi_edges_are_added_to_a_copy(tmp_path: Path) -> None:
    project = load_project([str(_project(tmp_path))], jobs=1)
    graph = build_callgraph(project)
    before = _edges(graph)
    site = graph.sites(WORK, HELPER)[0]
    extra = CallEdge(WORK, HELPER, site.location, Resolution.JEDI, (), site.site, site.text)
    settled = graph.with_settled([((WORK, site.site), extra)], set(), 1)
    assert [e.resolution for e in settled.sites(WORK, HELPER)] == [
        Resolution.DIRECT,
        Resolution.DIRECT,
        Resolution.JEDI,
    ]
    assert _edges(graph) == before
    assert settled.jedi_queries == 1 and graph.jedi_queries == 0
