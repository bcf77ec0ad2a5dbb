"""``flagtrace callgraph --format pycg``: PyCG's JSON format, for comparing with PyCG."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flagtrace.callgraph import CallGraph
    from flagtrace.report import CallGraphReport, RenderOptions


def pycg(graph: CallGraph) -> dict[str, list[str]]:
    """Every node, analysed or not, with its callees, both sorted."""
    return {node: graph.callees(node) for node in graph.nodes()}


def render(report: CallGraphReport, options: RenderOptions) -> Iterable[str]:
    return [json.dumps(pycg(report.graph), indent=2) + "\n"]
