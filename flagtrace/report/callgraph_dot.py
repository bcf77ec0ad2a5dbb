"""``flagtrace callgraph --format dot``: Graphviz, one edge per caller/callee pair.

Nodes outside the analysed code are dashed; an edge is labelled with the
strongest resolution among its call sites and dotted when even that is weak
(by-name or jedi).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from flagtrace.model import Resolution

if TYPE_CHECKING:
    from flagtrace.report import CallGraphReport, RenderOptions

_STRONGEST_FIRST = tuple(Resolution)  # strongest first, as declared


def render(report: CallGraphReport, options: RenderOptions) -> Iterator[str]:
    graph = report.graph
    yield 'digraph callgraph {\n  rankdir=LR;\n  node [shape=box, fontname="monospace"];\n'
    for node in graph.nodes():
        style = "" if graph.is_analysed(node) else ", style=dashed"
        yield f'  "{_escape(node)}" [label="{_escape(node)}"{style}];\n'
    for caller in graph.nodes():
        for callee in graph.callees(caller):
            sites = graph.sites(caller, callee)
            res = min((s.resolution for s in sites), key=_STRONGEST_FIRST.index)
            style = ", style=dotted" if res.weak else ""
            yield f'  "{_escape(caller)}" -> "{_escape(callee)}" [label="{res.value}"{style}];\n'
    yield "}\n"


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')
