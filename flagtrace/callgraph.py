"""Call graph: a thin, read-only wrapper over ``networkx.DiGraph``.

Nodes are functions by qualified name (``pkg.mod.Class.method``; module code is
``pkg.mod``; builtins are ``<builtin>.name``; names outside the analysed code
keep their dotted import path). Every edge keeps the list of call sites that
produce it (``CallEdge``: file/line, guards, resolution layer), so a witness
path can show *where* each hop happens and how strong its evidence is. The
graph stores each as a ``SiteRef`` and makes the ``CallEdge`` when asked: one
per site and callee was most of the cost of building the graph (1.6M of them on
transformers 5.25.0), and few are ever asked for.

Class bodies run when their module (or enclosing function) runs, so their calls
are attributed to the nearest enclosing function or module, as PyCG does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence

import networkx as nx

from flagtrace.generators import runs_body
from flagtrace.model import (
    CallEdge,
    Callee,
    GraphStats,
    Location,
    Resolution,
    ScopeKind,
    UnresolvedCall,
)
from flagtrace.resolve import Program, ResolvedProgram, ValueQuery

#: one call site of an edge: (the scope whose ``calls[index]`` it is, the index,
#: the callee); or a ``CallEdge`` made elsewhere (jedi's, which carry no guards)
SiteRef = tuple[str, int, Callee] | CallEdge


class CallGraph:
    """Query verbs over the resolved calls (``callees``, ``callers``, ``shortest_path``).

    Built from a ``ResolvedProgram``, which it keeps (``resolved``): the flag
    stages ask it both the function-level questions (callers, paths) and the
    site-level ones (what does call site ``i`` of this scope call?). It is not
    changed once built; settling calls with jedi makes a new graph.
    """

    def __init__(
        self,
        graph: nx.DiGraph,
        resolved: ResolvedProgram,
        unresolved: tuple[UnresolvedCall, ...],
        jedi_queries: int = 0,
    ) -> None:
        self._g = graph
        self.resolved = resolved
        self.unresolved = unresolved
        self.jedi_queries = jedi_queries
        self._scope_callers: dict[str, frozenset[str]] | None = None

    # -- construction

    @classmethod
    def build(cls, resolved: ResolvedProgram) -> CallGraph:
        g: nx.DiGraph = nx.DiGraph()
        p = resolved.program
        unresolved: list[UnresolvedCall] = []
        for qn, scope in p.scopes.items():
            if scope.kind is not ScopeKind.CLASS:
                g.add_node(qn, analysed=True, kind=scope.kind.value, location=scope.location)
        sites: dict[tuple[str, str], list[SiteRef]] = {}  # built first, added in bulk
        external: set[str] = set()
        owners: dict[str, str] = {}
        for (qn, index), callees in resolved.sites():
            caller = owners.get(qn)
            if caller is None:
                caller = owners[qn] = owner_of(p, qn)
            if not callees:
                if (qn, index) in resolved.resolved_empty:
                    continue
                site = p.scopes[qn].calls[index]
                unresolved.append(UnresolvedCall(caller, site.location, site.text, index, qn))
                continue
            for callee in callees:
                pair = (caller, callee.qualname)
                listed = sites.get(pair)
                if listed is None:
                    sites[pair] = [(qn, index, callee)]
                    if not callee.analysed:
                        external.add(callee.qualname)
                else:
                    listed.append((qn, index, callee))
        for name in sorted(external - set(g)):
            g.add_node(name, analysed=False, kind="external")
        for _, callee_qn in sites:
            if callee_qn not in g:  # analysed, yet not a scope (a class called by name)
                g.add_node(callee_qn, analysed=True, kind="function")
        g.add_edges_from(
            (caller, callee_qn, {"sites": listed}) for (caller, callee_qn), listed in sites.items()
        )
        unresolved.sort(key=lambda u: (u.location.path, u.location.line, u.location.column))
        return cls(g, resolved, tuple(unresolved))

    def with_settled(
        self,
        settled: Sequence[tuple[tuple[str, int], CallEdge]],
        settled_sites: set[tuple[str, int]],
        queries: int,
    ) -> CallGraph:
        """A new graph with the edges jedi settled (each with the call site it
        settles: its scope and index); their sites are no longer unresolved.
        This graph is unchanged."""
        added: dict[tuple[str, int], list[Callee]] = {}
        editor = EdgeEditor(self._g)
        g = editor.graph
        for key, edge in settled:
            added.setdefault(key, []).append(
                Callee(edge.callee, edge.resolution, True, edge.approximation)
            )
            if edge.callee not in g:
                g.add_node(edge.callee, analysed=True, kind="function")
            before = editor.refs(edge.caller, edge.callee) or []
            editor.set_refs(edge.caller, edge.callee, [*before, edge])
        unresolved = tuple(u for u in self.unresolved if (u.scope, u.site) not in settled_sites)
        return CallGraph(
            g, self.resolved.with_callees(added), unresolved, self.jedi_queries + queries
        )

    # -- queries

    @property
    def nx(self) -> nx.DiGraph:
        """The underlying graph (read it, do not mutate it)."""
        return self._g

    @property
    def program(self) -> Program:
        """The summaries of the analysed code, indexed (scopes, modules)."""
        return self.resolved.program

    @property
    def values(self) -> ValueQuery:
        return self.resolved.values

    def site_callees(self, scope: str, site: int) -> tuple[Callee, ...]:
        """What call site ``site`` of ``scope`` calls (a class body's sites are
        its own, not its module's)."""
        return self.resolved.site_callees.get((scope, site), ())

    def running_callees(self, scope: str, site: int) -> tuple[Callee, ...]:
        """The callees of a site whose bodies run there: all of them but the
        generator functions it only calls (building a generator object runs
        none of its body; the sites that resume the object run it; see
        ``flagtrace.generators``)."""
        callees = self.site_callees(scope, site)
        resumed = self.resolved.resumed.get((scope, site), frozenset())
        scopes = self.resolved.program.scopes
        return tuple(c for c in callees if runs_body(scopes.get(c.qualname), c.qualname, resumed))

    def runs_at(self, scope: str, site: int, callee: str) -> bool:
        """Does ``callee``, one of the site's callees, run its body there (see
        ``running_callees``)? For a search that filters the callees on cheaper
        questions first."""
        resumed = self.resolved.resumed.get((scope, site), frozenset())
        return runs_body(self.resolved.program.scopes.get(callee), callee, resumed)

    def call_sites(self) -> Iterator[tuple[tuple[str, int], tuple[Callee, ...]]]:
        """Every resolved call site, by (scope, index), with its callees."""
        return self.resolved.sites()

    def scope_callers(self, qn: str) -> frozenset[str]:
        """The scopes with a call site that calls ``qn`` (class bodies as
        themselves, unlike ``callers``, which attributes them to the code that
        runs them). Built once, on first use."""
        index = self._scope_callers
        if index is None:
            callers: dict[str, set[str]] = {}
            for (scope, _), callees in self.resolved.sites():
                for c in callees:
                    callers.setdefault(c.qualname, set()).add(scope)
            index = self._scope_callers = {k: frozenset(v) for k, v in callers.items()}
        return index.get(qn, frozenset())

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
        for caller, _, data in sorted(self._g.edges(data=True), key=lambda e: (e[0], e[1])):
            for ref in data["sites"]:
                yield self._edge(caller, ref)

    def sites(self, caller: str, callee: str) -> tuple[CallEdge, ...]:
        data = self._g.get_edge_data(caller, callee)
        return tuple(self._edge(caller, ref) for ref in data["sites"]) if data else ()

    def _edge(self, caller: str, ref: SiteRef) -> CallEdge:
        return site_edge(self.resolved.program, caller, ref)

    def has_edge(self, caller: str, callee: str) -> bool:
        return bool(self._g.has_edge(caller, callee))

    def shortest_path(self, source: str, target: str) -> list[str] | None:
        """A path of fewest calls from ``source`` to ``target``; of several, the
        one a search from both ends finds taking callees and callers by name.

        Why by name, not in the order the edges were made (as ``networkx``'s
        search would): that order is an accident of resolution, and a witness
        must not change when an edit elsewhere reorders it."""
        if source not in self or target not in self:
            return None
        if source == target:
            return [source]
        ahead: dict[str, str | None] = {source: None}  # node -> the node it was reached from
        behind: dict[str, str | None] = {target: None}  # node -> the node it leads to
        forward, reverse = [source], [target]
        meet: str | None = None
        while forward and reverse and meet is None:
            if len(forward) <= len(reverse):
                level, forward = forward, []
                meet = _step(level, self.callees, ahead, behind, forward)
            else:
                level, reverse = reverse, []
                meet = _step(level, self.callers, behind, ahead, reverse)
        if meet is None:
            return None
        path: list[str] = []
        node: str | None = meet
        while node is not None:
            path.append(node)
            node = ahead[node]
        path.reverse()
        node = behind[meet]
        while node is not None:
            path.append(node)
            node = behind[node]
        return path

    def reachable(self, source: str) -> set[str]:
        if source not in self._g:
            return set()
        return set(nx.descendants(self._g, source)) | {source}

    def stats(self) -> GraphStats:
        counts: Counter[str] = Counter()
        approximated: Counter[str] = Counter()
        for _, _, data in self._g.edges(data=True):
            for ref in data["sites"]:
                found = ref if isinstance(ref, CallEdge) else ref[2]
                counts[found.resolution.value] += 1
                if found.approximation is not None:
                    approximated[found.approximation.value] += 1
        return GraphStats(
            nodes=self._g.number_of_nodes(),
            edges=self._g.number_of_edges(),
            by_resolution=tuple(sorted(counts.items())),
            by_approximation=tuple(sorted(approximated.items())),
            unresolved=len(self.unresolved),
            jedi_queries=self.jedi_queries,
            jedi_edges=counts.get(Resolution.JEDI.value, 0),
        )


def _step(
    level: list[str],
    neighbours: Callable[[str], list[str]],
    mine: dict[str, str | None],
    theirs: dict[str, str | None],
    fringe: list[str],
) -> str | None:
    """One level of one side of ``shortest_path``'s search: the node where the
    two sides meet, if they do."""
    for v in level:
        for w in neighbours(v):
            if w not in mine:
                mine[w] = v
                fringe.append(w)
            if w in theirs:
                return w
    return None


def site_edge(program: Program, caller: str, ref: SiteRef) -> CallEdge:
    """The ``CallEdge`` a stored site stands for (``caller``: the edge's caller)."""
    if isinstance(ref, CallEdge):
        return ref
    scope, index, callee = ref
    call = program.scopes[scope].calls[index]
    return CallEdge(
        caller,
        callee.qualname,
        call.location,
        callee.resolution,
        call.guards,
        index,
        call.text,
        callee.approximation,
    )


def owner_of(program: Program, qn: str) -> str:
    """The graph node a scope's calls belong to (class bodies -> enclosing scope)."""
    scope = program.scopes.get(qn)
    while scope is not None and scope.kind is ScopeKind.CLASS and scope.parent is not None:
        scope = program.scopes.get(scope.parent)
    return scope.qualname if scope is not None else qn


class EdgeEditor:
    """A copy of a call graph's networkx graph whose edges can be narrowed or
    added to without touching the original.

    Why not ``nx.DiGraph.copy()``: it copies every edge's attribute dict, 640k
    of them on vLLM and transformers (1.5-2.5 s of a pruning that changes a few
    thousand). Here the adjacency is copied and the attribute dicts are shared;
    an edge whose sites change gets a new dict in both directions, in place, so
    the adjacency keeps its order."""

    def __init__(self, original: nx.DiGraph) -> None:
        g: nx.DiGraph = nx.DiGraph()
        g.graph.update(original.graph)
        # networkx's own storage: successors and predecessors by node, the same
        # attribute dict under both (as ``add_edge`` makes it)
        g._node.update(original._node)
        g._succ.update((u, dict(nbrs)) for u, nbrs in original._succ.items())
        g._pred.update((v, dict(nbrs)) for v, nbrs in original._pred.items())
        self.graph = g

    def refs(self, caller: str, callee: str) -> list[SiteRef] | None:
        """The edge's sites as stored (``site_edge`` makes each a ``CallEdge``)."""
        data = self.graph._succ.get(caller, {}).get(callee)
        return None if data is None else list(data["sites"])

    def set_refs(self, caller: str, callee: str, refs: list[SiteRef]) -> None:
        """The edge's sites, now ``refs``; no sites: no edge."""
        g = self.graph
        if not refs:
            g.remove_edge(caller, callee)
        elif g.has_edge(caller, callee):
            data = {"sites": refs}
            g._succ[caller][callee] = data
            g._pred[callee][caller] = data
        else:
            g.add_edge(caller, callee, sites=refs)
