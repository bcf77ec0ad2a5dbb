"""``flagtrace callgraph --format json`` (the default): flagtrace's call-graph document.

The document is written in pieces and never held whole. Why: on SGLang 0.5.23
the call graph has 1.1M per-site edges; as dicts and then as one string they
took several GiB on top of the graph itself. Here each edge becomes text and
is written before the next is made, and the text is exactly
``json.dumps(document(report), indent=2) + "\\n"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from flagtrace.report import json_pieces

if TYPE_CHECKING:
    from flagtrace.callgraph import CallGraph
    from flagtrace.model import CallEdge, Diagnostic
    from flagtrace.report import CallGraphReport, RenderOptions

VERSION = 1


def render(report: CallGraphReport, options: RenderOptions) -> Iterator[str]:
    return json_pieces.render(_parts(report))


def document(report: CallGraphReport) -> dict[str, Any]:
    """The same document as one dict (small graphs, tests)."""
    return json_pieces.document(_parts(report))


def _parts(report: CallGraphReport) -> Iterator[tuple[str, Any]]:
    """Top-level keys in order; the long lists as iterators."""
    graph = report.graph
    yield "version", VERSION
    yield "nodes", (_node(graph, node) for node in graph.nodes())
    yield "edges", (_edge(e) for e in graph.edges())
    yield (
        "unresolved",
        [
            {"caller": u.caller, "file": u.location.path, "line": u.location.line, "call": u.text}
            for u in graph.unresolved
        ],
    )
    stats = graph.stats()
    yield (
        "stats",
        {
            "nodes": stats.nodes,
            "edges": stats.edges,
            "call_sites_by_resolution": dict(stats.by_resolution),
            "call_sites_by_approximation": dict(stats.by_approximation),
            "unresolved": stats.unresolved,
            "jedi_queries": stats.jedi_queries,
            "jedi_edges": stats.jedi_edges,
        },
    )
    yield "errors", [_error(d) for d in report.errors]


def _node(graph: CallGraph, node: str) -> dict[str, Any]:
    location = graph.location(node)
    return {
        "name": node,
        "analysed": graph.is_analysed(node),
        "kind": graph.kind(node),
        "file": location.path if location else None,
        "line": location.line if location else None,
    }


def _edge(e: CallEdge) -> dict[str, Any]:
    return {
        "caller": e.caller,
        "callee": e.callee,
        "file": e.location.path,
        "line": e.location.line,
        "column": e.location.column,
        "resolution": e.resolution.value,
        "approximation": e.approximation.value if e.approximation is not None else None,
        "guards": [g.render() for g in e.guards],
        "call": e.text,
    }


def _error(d: Diagnostic) -> dict[str, Any]:
    return {"file": d.path, "line": d.line, "message": d.message}
