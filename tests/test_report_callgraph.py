"""The call-graph reporters read the graph through its query verbs only.

A hand-built graph: one pair of functions called from two sites of different strength, a
by-name call, and a name outside the analysed code (test_callgraph_json.py checks the
streamed JSON of real fixtures against the whole document).
"""

from __future__ import annotations

import json

import networkx as nx

from flagtrace.callgraph import CallGraph
from flagtrace.model import CallEdge, Diagnostic, Guard, Location, Resolution, UnresolvedCall
from flagtrace.report import CALLGRAPH, CallGraphReport, RenderOptions
from flagtrace.report.callgraph_json import document
from flagtrace.resolve import resolve


def sample_graph() -> CallGraph:
    g: nx.DiGraph = nx.DiGraph()
    here = Location("pkg/a.py", 1)
    g.add_node("pkg.a", analysed=True, kind="module", location=here)
    g.add_node("pkg.a.f", analysed=True, kind="function", location=Location("pkg/a.py", 3))
    g.add_node('pkg.a.g"q', analysed=True, kind="function", location=Location("pkg/a.py", 9))
    g.add_node("os.getcwd", analysed=False, kind="external")

    def edge(caller: str, callee: str, line: int, res: Resolution) -> CallEdge:
        guard = (Guard("x", line, negated=True),)
        return CallEdge(caller, callee, Location("pkg/a.py", line, 2), res, guard, 0, "f()")

    g.add_edge(
        "pkg.a",
        "pkg.a.f",
        sites=[edge("pkg.a", "pkg.a.f", 20, Resolution.BY_NAME)]
        + [edge("pkg.a", "pkg.a.f", 21, Resolution.TYPED)],
    )
    g.add_edge("pkg.a.f", 'pkg.a.g"q', sites=[edge("pkg.a.f", 'pkg.a.g"q', 5, Resolution.JEDI)])
    g.add_edge("pkg.a.f", "os.getcwd", sites=[edge("pkg.a.f", "os.getcwd", 6, Resolution.DIRECT)])
    unresolved = (UnresolvedCall("pkg.a.f", Location("pkg/a.py", 7), "h()", 3, "pkg.a.f"),)
    return CallGraph(g, resolve([]), unresolved)  # no program: the reporters never ask it


def _render(name: str, report: CallGraphReport) -> str:
    return "".join(CALLGRAPH[name].render(report, RenderOptions()))


def test_dot_labels_each_pair_with_its_strongest_site() -> None:
    assert _render("dot", CallGraphReport(sample_graph())) == (
        "digraph callgraph {\n"
        "  rankdir=LR;\n"
        '  node [shape=box, fontname="monospace"];\n'
        '  "os.getcwd" [label="os.getcwd", style=dashed];\n'
        '  "pkg.a" [label="pkg.a"];\n'
        '  "pkg.a.f" [label="pkg.a.f"];\n'
        '  "pkg.a.g\\"q" [label="pkg.a.g\\"q"];\n'
        '  "pkg.a" -> "pkg.a.f" [label="typed"];\n'
        '  "pkg.a.f" -> "os.getcwd" [label="direct"];\n'
        '  "pkg.a.f" -> "pkg.a.g\\"q" [label="jedi", style=dotted];\n'
        "}\n"
    )


def test_pycg_lists_every_node_with_its_callees() -> None:
    assert json.loads(_render("pycg", CallGraphReport(sample_graph()))) == {
        "os.getcwd": [],
        "pkg.a": ["pkg.a.f"],
        "pkg.a.f": ["os.getcwd", 'pkg.a.g"q'],
        'pkg.a.g"q': [],
    }


def test_json_streams_the_document() -> None:
    report = CallGraphReport(sample_graph(), (Diagnostic("pkg/b.py", 1, "invalid syntax"),))
    text = _render("json", report)
    assert text == json.dumps(document(report), indent=2) + "\n"
    doc = json.loads(text)
    assert doc["nodes"][0] == {
        "name": "os.getcwd",
        "analysed": False,
        "kind": "external",
        "file": None,
        "line": None,
    }
    assert doc["nodes"][1] == {
        "name": "pkg.a",
        "analysed": True,
        "kind": "module",
        "file": "pkg/a.py",
        "line": 1,
    }
    assert [(e["line"], e["resolution"], e["guards"]) for e in doc["edges"]] == [
        (20, "by-name", ["not (x)"]),
        (21, "typed", ["not (x)"]),
        (6, "direct", ["not (x)"]),
        (5, "jedi", ["not (x)"]),
    ]
    assert doc["unresolved"] == [
        {"caller": "pkg.a.f", "file": "pkg/a.py", "line": 7, "call": "h()"}
    ]
    assert doc["stats"]["call_sites_by_resolution"] == {
        "by-name": 1,
        "direct": 1,
        "jedi": 1,
        "typed": 1,
    }
    assert doc["errors"] == [{"file": "pkg/b.py", "line": 1, "message": "invalid syntax"}]
