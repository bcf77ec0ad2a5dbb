"""Call graph: a thin, read-only wrapper over ``networkx.DiGraph``.

Nodes are functions by qualified name (``pkg.mod.Class.method``; module code is
``pkg.mod``; builtins are ``<builtin>.name``; names outside the analysed code
keep their dotted import path). Every edge keeps the list of call sites that
produce it (``CallEdge``: file/line, guards, resolution layer), so a witness
path can show *where* each hop happens and how strong its evidence is. The
graph stores each as a ``SiteRef`` and makes the ``CallEdge`` when asked: one
per site and callee was most of the cost of building the graph (1.6M of them on
transformers 5.25.0), and few are ever asked for.

By-name dispatch goes through hubs: a site that calls every method named
``forward`` (``x.forward()`` on an unknown receiver) has one edge to a hub node
(``<by-name>.forward``) and the hub one edge to each such method, so stored
edges grow with call sites plus methods, not their product (SGLang 0.5.23 has
30.5k such sites calling 943k methods between them, through 752 hubs). Every
verb sees through the hubs and answers as the graph with one edge per caller and
method would: a by-name hop is one step from the call site to the method.

Class bodies run when their module (or enclosing function) runs, so their calls
are attributed to the nearest enclosing function or module, as PyCG does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter

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
#: the callee: None on an edge to a hub, whose nodes hold the callees); or a
#: ``CallEdge`` made elsewhere (jedi's, which carry no guards)
SiteRef = tuple[str, int, Callee | None] | CallEdge

#: a hub's node name starts with this (no qualified name can)
HUB_PREFIX = "<by-name>."

#: a callee's name, as a function that runs in C: ``set.isdisjoint(map(callee_name,
#: callees))`` asks a set about every callee of a site at once, a by-name site's
#: hundreds too, where a loop would call Python code per callee
callee_name = attrgetter("qualname")


def by_name_part(callees: Sequence[Callee]) -> tuple[Callee, ...]:
    """The callees of a site that a hub stands for: its by-name ones, when
    there are two or more (one is an edge like any other)."""
    if len(callees) < 2:  # most sites
        return ()
    part = tuple(c for c in callees if c.resolution is Resolution.BY_NAME)
    if len(part) < 2 or len({c.qualname for c in part}) < len(part):
        return ()  # one method twice (two approximations): stored as plain edges
    return part


class CallGraph:
    """Query verbs over the resolved calls (``callees``, ``callers``, ``shortest_path``).

    Built from a ``ResolvedProgram``, which it keeps (``resolved``): the flag
    stages ask it both the function-level questions (callers, paths) and the
    site-level ones (what does call site ``i`` of this scope call?). It is not
    changed once built; settling calls with jedi makes a new graph.

    The networkx graph (``nx``) holds the hubs as nodes (``hubs``): a question
    over it that only cares what is reachable (components, closures) is
    answered on it as it stands, hubs then dropped; every other question goes
    through the verbs here.
    """

    def __init__(
        self,
        graph: nx.DiGraph,
        resolved: ResolvedProgram,
        unresolved: tuple[UnresolvedCall, ...],
        jedi_queries: int = 0,
        hub_of: dict[tuple[Callee, ...], str] | None = None,
        site_hubs: dict[tuple[str, int], str] | None = None,
    ) -> None:
        self._g = graph
        self.resolved = resolved
        self.unresolved = unresolved
        self.jedi_queries = jedi_queries
        #: a site's by-name callees (``by_name_part``) -> their hub's node
        self._hub_of: dict[tuple[Callee, ...], str] = hub_of if hub_of is not None else {}
        self.hubs: frozenset[str] = frozenset(self._hub_of.values())
        #: each site that calls through a hub -> the hub, as ``build`` found it
        #: (None: not known for this graph's sites, ``hub_at`` asks)
        self._site_hubs = site_hubs
        self._scope_callers: dict[str, frozenset[str]] | None = None
        self._site_rank: dict[tuple[str, int], int] | None = None
        self._hubs_into: dict[str, tuple[str, ...]] | None = None
        self._generators: frozenset[str] | None = None

    # -- construction

    @classmethod
    def build(cls, resolved: ResolvedProgram, hubs: bool = True) -> CallGraph:
        """The graph of ``resolved``'s calls; ``hubs=False`` stores one edge per
        caller and by-name method (the tests check the two answer alike)."""
        g: nx.DiGraph = nx.DiGraph()
        hub_of: dict[tuple[Callee, ...], str] = {}
        site_hubs: dict[tuple[str, int], str] = {}
        named: dict[str, int] = {}
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
            by_name = by_name_part(callees) if hubs else ()
            if by_name:
                hub = hub_of.get(by_name)
                if hub is None:
                    hub = hub_of[by_name] = _hub_node(by_name, named)
                    for callee in by_name:
                        if not callee.analysed:
                            external.add(callee.qualname)
                site_hubs[(qn, index)] = hub
                listed = sites.get((caller, hub))
                if listed is None:
                    sites[(caller, hub)] = [(qn, index, None)]
                else:
                    listed.append((qn, index, None))
            for callee in callees:
                if by_name and callee.resolution is Resolution.BY_NAME:
                    continue
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
        for part, hub in hub_of.items():  # first: a hub is no function
            g.add_node(hub, kind="hub", callees={c.qualname: c for c in part})
        targets = [c.qualname for part in hub_of for c in part]
        for callee_qn in (*(callee_qn for _, callee_qn in sites), *targets):
            if callee_qn not in g:  # analysed, yet not a scope (a class called by name)
                g.add_node(callee_qn, analysed=True, kind="function")
        for part, hub in hub_of.items():
            g.add_edges_from((hub, c.qualname) for c in part)
        g.add_edges_from(
            (caller, callee_qn, {"sites": listed}) for (caller, callee_qn), listed in sites.items()
        )
        unresolved.sort(key=lambda u: (u.location.path, u.location.line, u.location.column))
        return cls(g, resolved, tuple(unresolved), 0, hub_of, site_hubs)

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
            g,
            self.resolved.with_callees(added),
            unresolved,
            self.jedi_queries + queries,
            self._hub_of,
            self._site_hubs,  # jedi settles sites that called nothing: no hub's
        )

    def edited(
        self, editor: EdgeEditor, resolved: ResolvedProgram, unresolved: tuple[UnresolvedCall, ...]
    ) -> CallGraph:
        """A graph over an edited copy of this one's edges (pruning's). Its
        sites' callees are not this one's: which hub a site calls through is
        asked again (``hub_at``)."""
        return CallGraph(editor.graph, resolved, unresolved, self.jedi_queries, self._hub_of)

    def hub_at(self, callees: Sequence[Callee]) -> str | None:
        """The hub a site with these callees calls its by-name ones through."""
        part = by_name_part(callees)
        return self._hub_of.get(part) if part else None

    def site_hub(self, scope: str, site: int) -> str | None:
        """The hub site ``site`` of ``scope`` calls its by-name callees through.

        Why not ``hub_at``: that finds the hub by the site's by-name callees, a
        tuple of hundreds hashed anew at each site of a large hub (pruning asks
        it of every site it cuts at: 0.9 s of a new question on transformers
        under the profiler); ``build`` noted each site's hub as it made it."""
        if self._site_hubs is None:
            return self.hub_at(self.site_callees(scope, site))
        return self._site_hubs.get((scope, site))

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
        generators = self._generator_functions()
        if generators.isdisjoint(map(callee_name, callees)):
            return callees  # most sites: every callee runs (by-name ones are hundreds)
        resumed = self.resolved.resumed.get((scope, site), frozenset())
        scopes = self.resolved.program.scopes
        return tuple(c for c in callees if runs_body(scopes.get(c.qualname), c.qualname, resumed))

    def _generator_functions(self) -> frozenset[str]:
        """The analysed generator functions: the only callees that may not run
        their body where they are called (``generators.runs_body``)."""
        found = self._generators
        if found is None:
            found = self._generators = frozenset(
                qn for qn, s in self.resolved.program.scopes.items() if s.is_generator
            )
        return found

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
        return node in self._g and node not in self.hubs

    def nodes(self) -> list[str]:
        return sorted(n for n in self._g.nodes if n not in self.hubs)

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
        """What ``node`` calls, by name (hubs seen through)."""
        return self._through(self._g._succ, node)

    def callers(self, node: str) -> list[str]:
        """What calls ``node``, by name (hubs seen through)."""
        return self._through(self._g._pred, node)

    def _through(self, adjacency: dict[str, dict[str, object]], node: str) -> list[str]:
        """``node``'s neighbours in ``adjacency`` (successors or predecessors),
        each hub among them replaced by its own: a hub's successors are its
        methods, its predecessors the callers of its sites."""
        if node not in self:
            return []
        near = adjacency[node]
        hubs = self.hubs
        if not hubs:
            return sorted(near)
        out: set[str] = set()
        for v in near:
            if v in hubs:
                out.update(adjacency[v])
            else:
                out.add(v)
        return sorted(out)

    def edges(self) -> Iterator[CallEdge]:
        """Every call site's edge to each callee, by caller and callee."""
        for caller in self.nodes():
            for callee in self.callees(caller):
                for ref in self._refs(caller, callee):
                    yield self._edge(caller, ref)

    def sites(self, caller: str, callee: str) -> tuple[CallEdge, ...]:
        """The call sites of ``caller`` that call ``callee``, in resolution order
        (a by-name site's edge names the method, not the hub)."""
        return tuple(self._edge(caller, ref) for ref in self._refs(caller, callee))

    def _refs(self, caller: str, callee: str) -> list[SiteRef]:
        succ = self._g._succ.get(caller)
        if succ is None or callee in self.hubs:
            return []
        data = succ.get(callee)
        refs: list[SiteRef] = list(data["sites"]) if data else []
        through = [h for h in self._hubs_to(callee) if h in succ]
        if not through:
            return refs
        for hub in through:
            found = self._g._node[hub]["callees"][callee]
            refs.extend((scope, index, found) for scope, index, _ in succ[hub]["sites"])
        if len(through) > 1 or data:  # from several edges: back in resolution order
            self.sort_refs(refs)
        return refs

    def sort_refs(self, refs: list[SiteRef]) -> None:
        """Put one edge's sites in resolution order, jedi's last as they were added."""
        rank = self.site_ranks()
        refs.sort(key=lambda r: (1, 0) if isinstance(r, CallEdge) else (0, rank[r[:2]]))

    def _hubs_to(self, callee: str) -> tuple[str, ...]:
        """The hubs with an edge to ``callee`` (indexed on first use: a callee
        can have a hundred thousand callers and one hub)."""
        index = self._hubs_into
        if index is None:
            found: dict[str, list[str]] = {}
            for hub in sorted(self.hubs):
                for method in self._g._succ[hub]:
                    found.setdefault(method, []).append(hub)
            index = self._hubs_into = {m: tuple(h) for m, h in found.items()}
        return index.get(callee, ())

    def site_ranks(self) -> dict[tuple[str, int], int]:
        """Every site's place in resolution order, the order of an edge's sites
        (built on first use)."""
        rank = self._site_rank
        if rank is None:
            rank = self._site_rank = {key: i for i, (key, _) in enumerate(self.resolved.sites())}
        return rank

    def _edge(self, caller: str, ref: SiteRef) -> CallEdge:
        return site_edge(self.resolved.program, caller, ref)

    def has_edge(self, caller: str, callee: str) -> bool:
        succ = self._g._succ.get(caller)
        if succ is None or callee in self.hubs:
            return False
        return callee in succ or any(h in succ for h in self._hubs_to(callee))

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
        if source not in self:
            return set()
        return {n for n in nx.descendants(self._g, source) if n not in self.hubs} | {source}

    def stats(self) -> GraphStats:
        """Counts as of one edge per caller and callee (hubs seen through)."""
        counts: Counter[str] = Counter()
        approximated: Counter[str] = Counter()
        hubs, succ, nodes = self.hubs, self._g._succ, self._g._node
        pairs = 0
        for caller, targets in succ.items():
            if caller in hubs:
                continue
            through = [v for v in targets if v in hubs]
            if through:
                called = {v for v in targets if v not in hubs}
                for hub in through:
                    called.update(succ[hub])
                pairs += len(called)
            else:
                pairs += len(targets)
            for callee, data in targets.items():
                # each site once per callee: a hub's sites once per method it keeps
                weighted: list[tuple[Callee | CallEdge | None, int]]
                if callee in hubs:
                    held, n_sites = nodes[callee]["callees"], len(data["sites"])
                    weighted = [(held[m], n_sites) for m in succ[callee]]
                else:
                    weighted = [(r if isinstance(r, CallEdge) else r[2], 1) for r in data["sites"]]
                for found, n in weighted:
                    assert found is not None
                    counts[found.resolution.value] += n
                    if found.approximation is not None:
                        approximated[found.approximation.value] += n
        return GraphStats(
            nodes=self._g.number_of_nodes() - len(hubs),
            edges=pairs,
            by_resolution=tuple(sorted(counts.items())),
            by_approximation=tuple(sorted(approximated.items())),
            unresolved=len(self.unresolved),
            jedi_queries=self.jedi_queries,
            jedi_edges=counts.get(Resolution.JEDI.value, 0),
        )

    def stored_edges(self) -> int:
        """Edges as stored, hubs' included (what hubs save: ``stats().edges`` less this)."""
        return int(self._g.number_of_edges())


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
    assert callee is not None, "an edge to a hub: CallGraph.sites names the method"
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


def ref_location(program: Program, ref: SiteRef) -> Location:
    """Where a stored site's call is."""
    if isinstance(ref, CallEdge):
        return ref.location
    return program.scopes[ref[0]].calls[ref[1]].location


def _hub_node(part: tuple[Callee, ...], named: dict[str, int]) -> str:
    """A new hub's node: ``<by-name>.forward`` for the first set of methods named
    ``forward``, then ``#2``, ``#3``... (our subclasses of one library class that
    define it); ``named`` counts the hubs made per name."""
    name = HUB_PREFIX + part[0].qualname.rpartition(".")[2]
    n = named[name] = named.get(name, 0) + 1
    return name if n == 1 else f"{name}#{n}"


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

    def remove(self, caller: str, callee: str) -> None:
        """No edge from ``caller`` to ``callee`` (a hub's to a method) any more."""
        if self.graph.has_edge(caller, callee):
            self.graph.remove_edge(caller, callee)

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
