"""Call graph: a thin, read-only wrapper over ``networkx.DiGraph``.

Nodes are functions by qualified name (``pkg.mod.Class.method``; module code is
``pkg.mod``; builtins are ``<builtin>.name``; names outside the analysed code
keep their dotted import path). Every edge keeps the list of call sites that
produce it (``CallEdge``: file/line, guards, resolution layer), so a witness
path can show *where* each hop happens and how strong its evidence is.

Class bodies run when their module (or enclosing function) runs, so their calls
are attributed to the nearest enclosing function or module, as PyCG does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

import networkx as nx

from flagtrace.model import (
    CallEdge,
    GraphStats,
    Location,
    Resolution,
    ScopeKind,
    UnresolvedCall,
)
from flagtrace.resolve import Callee, Resolver


class CallGraph:
    """Query verbs over the resolved calls (``callees``, ``callers``, ``shortest_path``)."""

    def __init__(
        self, graph: nx.DiGraph, unresolved: tuple[UnresolvedCall, ...], jedi_queries: int = 0
    ) -> None:
        self._g = graph
        self.unresolved = unresolved
        self.jedi_queries = jedi_queries

    # -- construction

    @classmethod
    def build(cls, resolver: Resolver, extra: Iterable[CallEdge] = ()) -> CallGraph:
        g: nx.DiGraph = nx.DiGraph()
        p = resolver.p
        unresolved: list[UnresolvedCall] = []
        for qn, scope in p.scopes.items():
            if scope.kind is not ScopeKind.CLASS:
                g.add_node(qn, analysed=True, kind=scope.kind.value, location=scope.location)
        sites: dict[tuple[str, str], list[CallEdge]] = {}  # built first, added in bulk
        external: set[str] = set()
        for (qn, index), callees in resolver.site_callees.items():
            caller = owner_of(resolver, qn)
            site = p.scopes[qn].calls[index]
            if not callees:
                if (qn, index) in resolver.resolved_empty:
                    continue
                unresolved.append(UnresolvedCall(caller, site.location, site.text, index, qn))
                continue
            for callee in callees:
                edge = CallEdge(
                    caller=caller,
                    callee=callee.qualname,
                    location=site.location,
                    resolution=callee.resolution,
                    guards=site.guards,
                    site=index,
                    text=site.text,
                )
                pair = (caller, callee.qualname)
                listed = sites.get(pair)
                if listed is None:
                    sites[pair] = [edge]
                    if not callee.analysed:
                        external.add(callee.qualname)
                else:
                    listed.append(edge)
        for name in sorted(external - set(g)):
            g.add_node(name, analysed=False, kind="external")
        for (caller, callee_qn), listed in sites.items():
            if callee_qn not in g:  # analysed, yet not a scope (a class called by name)
                g.add_node(callee_qn, analysed=True, kind="function")
        g.add_edges_from(
            (caller, callee_qn, {"sites": listed}) for (caller, callee_qn), listed in sites.items()
        )
        for edge in extra:
            _add_edge(g, edge, Callee(edge.callee, edge.resolution, edge.callee in g))
        unresolved.sort(key=lambda u: (u.location.path, u.location.line, u.location.column))
        return cls(g, tuple(unresolved))

    def add_settled(
        self, edges: Iterable[CallEdge], settled: set[tuple[str, int]], queries: int
    ) -> None:
        """Add edges settled by jedi; their sites are no longer unresolved."""
        for edge in edges:
            _add_edge(self._g, edge, Callee(edge.callee, edge.resolution, True))
        self.unresolved = tuple(u for u in self.unresolved if (u.scope, u.site) not in settled)
        self.jedi_queries += queries

    # -- queries

    @property
    def nx(self) -> nx.DiGraph:
        """The underlying graph (read it, do not mutate it)."""
        return self._g

    def __contains__(self, node: object) -> bool:
        return node in self._g

    def nodes(self) -> list[str]:
        return sorted(self._g.nodes)

    def is_analysed(self, node: str) -> bool:
        return bool(self._g.nodes[node].get("analysed")) if node in self._g else False

    def kind(self, node: str) -> str:
        """``module``, ``function`` or ``lambda`` for analysed code, else ``external``."""
        return str(self._g.nodes[node].get("kind", "external"))

    def location(self, node: str) -> Location | None:
        """Where an analysed scope is defined; None for names outside the analysed code."""
        location: Location | None = self._g.nodes[node].get("location")
        return location

    def callees(self, node: str) -> list[str]:
        return sorted(self._g.successors(node)) if node in self._g else []

    def callers(self, node: str) -> list[str]:
        return sorted(self._g.predecessors(node)) if node in self._g else []

    def edges(self) -> Iterator[CallEdge]:
        for _, _, data in sorted(self._g.edges(data=True), key=lambda e: (e[0], e[1])):
            yield from data["sites"]

    def sites(self, caller: str, callee: str) -> tuple[CallEdge, ...]:
        data = self._g.get_edge_data(caller, callee)
        return tuple(data["sites"]) if data else ()

    def has_edge(self, caller: str, callee: str) -> bool:
        return bool(self._g.has_edge(caller, callee))

    def shortest_path(self, source: str, target: str) -> list[str] | None:
        try:
            return list(nx.shortest_path(self._g, source, target))
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return None

    def reachable(self, source: str) -> set[str]:
        if source not in self._g:
            return set()
        return set(nx.descendants(self._g, source)) | {source}

    def stats(self) -> GraphStats:
        counts: Counter[str] = Counter()
        for edge in self.edges():
            counts[edge.resolution.value] += 1
        return GraphStats(
            nodes=self._g.number_of_nodes(),
            edges=self._g.number_of_edges(),
            by_resolution=tuple(sorted(counts.items())),
            unresolved=len(self.unresolved),
            jedi_queries=self.jedi_queries,
            jedi_edges=counts.get(Resolution.JEDI.value, 0),
        )


def owner_of(resolver: Resolver, qn: str) -> str:
    """The graph node a scope's calls belong to (class bodies -> enclosing scope)."""
    p = resolver.p
    scope = p.scopes.get(qn)
    while scope is not None and scope.kind is ScopeKind.CLASS and scope.parent is not None:
        scope = p.scopes.get(scope.parent)
    return scope.qualname if scope is not None else qn


def _add_edge(g: nx.DiGraph, edge: CallEdge, callee: Callee) -> None:
    if edge.callee not in g:
        g.add_node(
            edge.callee,
            analysed=callee.analysed,
            kind="function" if callee.analysed else "external",
        )
    data = g.get_edge_data(edge.caller, edge.callee)
    if data is None:
        g.add_edge(edge.caller, edge.callee, sites=[edge])
    else:
        data["sites"].append(edge)
