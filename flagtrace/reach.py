"""Reach: can an entry point run a read of the flag while the flag is set?

Interprocedural reachability is a search over (function, state-on-entry)
pairs, each expanded by interpreting the function's body from that state
(``interpret``); the witness is the path with the fewest by-name hops, then
the fewest inferred ones (``Resolution.INFERRED``), shortest among those, from
the entry to a read that runs with the flag set. The step where the flag became
set counts with its setting proof (``flagtrace.setting``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from flagtrace.callgraph import callee_name
from flagtrace.flagstate import UNSET, SetEvent, State
from flagtrace.interpret import Interpreter
from flagtrace.model import (
    Approximation,
    CallKind,
    Guard,
    Location,
    Resolution,
    ScopeKind,
    StepKind,
)
from flagtrace.setting import SettingProofs

_FAR = (1 << 30, 0)  # the cost of a node the witness search has not reached
#: one weak (by-name, jedi) hop costs as much as this many inferred ones: the
#: first term of a cost is ``weak * _WEAK + inferred``, so that comparing it
#: ranks by-name hops first, inferred ones second (no path has 4,096 hops)
_WEAK = 1 << 12


# ---------------------------------------------------------------------------- search


@dataclass(frozen=True, slots=True)
class Hop:
    caller: str
    callee: str
    location: Location
    resolution: Resolution
    guards: tuple[Guard, ...]
    text: str
    set_here: SetEvent | None  # the flag became set in ``caller`` before this call
    approximation: Approximation | None = None  # the idiom the edge was inferred from


@dataclass(frozen=True, slots=True)
class ReadHit:
    function: str
    location: Location
    via: str | None
    set_here: SetEvent | None
    guards: tuple[Guard, ...] = ()


@dataclass(frozen=True, slots=True)
class Witness:
    hops: tuple[Hop, ...]
    read: ReadHit
    preset: bool  # the flag was already set when the entry started

    @property
    def by_name_hops(self) -> int:
        return sum(1 for h in self.hops if h.resolution.weak)

    @property
    def inferred_hops(self) -> int:
        return sum(1 for h in self.hops if h.resolution is Resolution.INFERRED)


Node = tuple[str, tuple[bool, bool]]


class Reach:
    """Searches the (function, state-on-entry) graph, memoising body runs."""

    def __init__(self, interp: Interpreter, reads: frozenset[str] = frozenset()) -> None:
        self.reads = reads  # only reads in these functions count (empty: all)
        self.i = interp
        self.graph = interp.graph
        self.p = interp.p
        self.can_read = self._can_read()
        #: one set, not a question per callee: ``expand`` asks it of every
        #: callee of every site, by-name ones included (``_worth_following``)
        self._can_read_and_set = self.can_read & interp.writers
        self.settings = SettingProofs(interp)
        self._expanded: dict[Node, tuple[list[tuple[Node, Hop]], list[ReadHit]]] = {}
        self._costs: dict[Node, list[tuple[Node, Hop, int]]] = {}
        self._settled: set[Node] = (
            set()
        )  # nodes whose distance is final (absent from _dist: no read)
        self._dist: dict[Node, tuple[int, int]] = {}

    def _can_read(self) -> set[str]:
        """Functions from which a (counted) read of the flag is reachable."""
        fx = self.i.fx
        readers = set(fx.direct_reads)
        for (qn, _), callees in self.graph.call_sites():
            if any(c.qualname in fx.accessors for c in callees):
                readers.add(qn)
        if self.reads:
            readers &= set(self.reads)
        out: set[str] = set()
        todo = list(readers)
        while todo:
            qn = todo.pop()
            if qn in out:
                continue
            out.add(qn)
            todo.extend(self.graph.scope_callers(qn))
            scope = self.p.scopes.get(qn)
            if scope is not None and scope.parent is not None:
                parent = self.p.scopes.get(scope.parent)
                if parent is not None and parent.kind is ScopeKind.CLASS:
                    todo.append(parent.qualname)  # class bodies run in their parent
        return out

    def _worth_following(self, state: State) -> set[str]:
        """The callees worth following in ``state``: only paths that can still
        end at a read with the flag set. With the flag possibly set, callees that
        can reach a read; with it unset, callees that can both set it and reach
        a read."""
        return self.can_read if state.set else self._can_read_and_set

    def expand(self, node: Node) -> tuple[list[tuple[Node, Hop]], list[ReadHit]]:
        memo = self._expanded.get(node)
        if memo is not None:
            return memo
        qn, (unset, set_) = node
        scope = self.p.scopes.get(qn)
        edges: list[tuple[Node, Hop]] = []
        hits: list[ReadHit] = []
        if scope is not None:
            run = self.i.run(scope, State(unset, set_))
            scopes = self.p.scopes
            for site, state in run.calls:
                call = scope.calls[site]
                # the cheap questions first: a by-name site has hundreds of
                # callees, few of them worth following
                worth = self._worth_following(state)
                callees = self.graph.site_callees(qn, site)
                if worth.isdisjoint(map(callee_name, callees)):
                    continue
                for c in callees:
                    if not c.analysed or c.qualname not in worth:
                        continue
                    callee_scope = scopes.get(c.qualname)
                    if (
                        callee_scope is None
                        or callee_scope.kind is ScopeKind.CLASS
                        or not self.graph.runs_at(qn, site, c.qualname)
                    ):
                        continue
                    hop = Hop(
                        qn,
                        c.qualname,
                        call.location,
                        c.resolution,
                        call.guards,
                        call.text,
                        state.origin,
                        c.approximation,
                    )
                    edges.append(((c.qualname, state.key), hop))
            for location, via, state, guards in run.reads:
                if state.set and (not self.reads or qn in self.reads):
                    hits.append(ReadHit(qn, location, via, state.origin, guards))
            # class bodies nested in this scope run with it
            for child in scope.children:
                cs = self.p.scopes.get(child)
                if cs is not None and cs.kind is ScopeKind.CLASS:
                    edges.append(
                        (
                            (child, (unset, set_)),
                            Hop(
                                qn,
                                child,
                                cs.location,
                                Resolution.DIRECT,
                                (),
                                "class " + cs.name,
                                None,
                            ),
                        )
                    )
        self._expanded[node] = (edges, hits)
        return edges, hits

    def witness(self, entry: str, start: tuple[bool, bool]) -> Witness | None:
        """Fewest by-name hops first, then fewest inferred ones, then fewest hops;
        among equal paths, the one that takes the earliest call at each step.

        Why not a search from the entry? Entry-point discovery asks this for
        thousands of entries over the same graph; a search from each one took
        minutes on vLLM and SGLang 0.5.23. Instead ``_settle`` computes, once per
        node, its exact distance to the nearest read with the flag set (a
        backward Dijkstra over the nodes the entries reach), and a witness is
        read off by walking from the entry along edges that keep to a shortest
        path.
        """
        node: Node = (entry, start)
        self._settle(node)
        dist = self._dist.get(node)
        if dist is None:
            return None
        hops: list[Hop] = []
        while True:
            edges, hits = self.expand(node)
            if hits:  # distance zero: the walk ends at the first read it meets
                hit = min(hits, key=lambda h: (h.set_here is None, h.location))
                return Witness(tuple(hops), hit, preset=start[1])
            weak, length = dist
            for nxt, hop, step in self._costed(node, edges):
                after = self._dist.get(nxt)
                if after is not None and after[0] + step == weak and after[1] + 1 == length:
                    hops.append(hop)
                    node, dist = nxt, after
                    break
            else:  # cannot happen: a finite distance has a next hop that realises it
                raise AssertionError(f"no shortest-path hop from {node}")

    def _settle(self, start: Node) -> None:
        """Distances to a read with the flag set for every node ``start`` reaches.

        Nodes already settled keep their distance (it depends only on what they
        reach, and that was complete when they were settled); the new ones are
        settled by a Dijkstra backwards from their reads and from their edges
        into settled nodes. Costs are pairs ``(weak evidence, hops)`` compared
        lexicographically, as the witness is chosen.
        """
        if start in self._settled:
            return
        fresh: list[Node] = []
        seen = {start}
        stack = [start]
        while stack:
            node = stack.pop()
            fresh.append(node)
            edges, hits = self.expand(node)
            if hits:  # distance zero: what it calls cannot matter to the nodes reaching it
                continue
            for nxt, _, _ in self._costed(node, edges):
                if nxt not in seen and nxt not in self._settled:
                    seen.add(nxt)
                    stack.append(nxt)
        into: dict[Node, list[tuple[Node, int]]] = {}  # reversed edges among the fresh nodes
        best: dict[Node, tuple[int, int]] = {}
        for node in fresh:
            edges, hits = self.expand(node)
            if hits:
                best[node] = (0, 0)
                continue
            for nxt, _, step in self._costed(node, edges):
                if nxt in seen:
                    into.setdefault(nxt, []).append((node, step))
                    continue
                after = self._dist.get(nxt)
                if after is not None:
                    cost = (after[0] + step, after[1] + 1)
                    if cost < best.get(node, _FAR):
                        best[node] = cost
        heap = [(cost, n) for n, cost in best.items()]
        heapq.heapify(heap)
        while heap:
            cost, node = heapq.heappop(heap)
            if best.get(node, _FAR) < cost or node in self._dist:
                continue
            self._dist[node] = cost
            for prev, step in into.get(node, ()):
                if prev in self._dist:
                    continue
                candidate = (cost[0] + step, cost[1] + 1)
                if candidate < best.get(prev, _FAR):
                    best[prev] = candidate
                    heapq.heappush(heap, (candidate, prev))
        self._settled.update(fresh)

    def _costed(self, node: Node, edges: list[tuple[Node, Hop]]) -> list[tuple[Node, Hop, int]]:
        """``node``'s edges with their evidence cost (``weak * _WEAK + inferred``),
        memoised: settling and walking both go over them."""
        costed = self._costs.get(node)
        if costed is None:
            costed = [(nxt, hop, self._hop_cost(hop)) for nxt, hop in edges]
            self._costs[node] = costed
        return costed

    def _hop_cost(self, hop: Hop) -> int:
        res = hop.resolution
        cost = _WEAK if res.weak else 1 if res is Resolution.INFERRED else 0
        if hop.set_here is not None:
            weak, inferred = self.settings.of_event(hop.set_here).cost
            cost += weak * _WEAK + inferred
        return cost + self._inferred_set_penalty(hop) * _WEAK

    def _inferred_set_penalty(self, hop: Hop) -> int:
        """Evidence rank of where the flag became set before this hop: entering a
        setter or calling a real setter is direct; a function that only *leaves*
        the flag set through what it calls (a transfer inferred over the whole
        call graph, by-name hops and cycles included) is weaker than by-name."""
        ev = hop.set_here
        if ev is None or ev.kind is StepKind.ENTER or ev.via in self.i.fx.setters:
            return 0
        return 2

    def reachable_functions(self, entry: str) -> set[str]:
        """Functions the entry can reach at all (the plain call graph: a never
        verdict counts the unresolved calls among them)."""
        return self.graph.reachable(entry)


def sticky_sites(interp: Interpreter) -> list[tuple[str, int, str]]:
    """Call sites anywhere that leave the flag set when they return: (caller, site, setter)."""
    out = []
    writers = interp.writers
    for (qn, site), callees in interp.graph.call_sites():
        if writers.isdisjoint(map(callee_name, callees)):
            continue  # first the cheap question: most sites call no writer
        scope = interp.p.scopes[qn]
        if scope.kind is ScopeKind.CLASS or scope.calls[site].kind is not CallKind.CALL:
            continue  # implicit protocol calls (with-enter/exit) are the with-block's business
        setter = next(
            (
                c.qualname
                for c in callees
                if c.qualname in interp.writers and not interp.is_cm(c.qualname)
            ),
            None,
        )
        # once per site: the state after the call joins all its callees already
        if setter is not None and interp.apply_call(scope, site, UNSET).set:
            out.append((qn, site, setter))
    return sorted(out)
