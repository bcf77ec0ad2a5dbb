"""Programs: where processes start, and which sticky writes can run before an entry.

A *sticky* write leaves the flag set after the function that made it returns (a plain
setter, a context manager whose reset an exception skipped). Whether an entry can
start with the flag already set depends on what ran before it *in the same process*.
flagtrace's sound default was "a sticky write anywhere may have run before any
entry"; on generated programs that assumption made 74 of the 85 *observes set*
verdicts that no run confirmed (benchmarks/soundness_fp.py, 2026-12-03).

**The assumption made here: a process runs one program root.** A root is a module's
``if __name__ == "__main__":`` block (or a package's ``__main__.py``), a console
script declared in a ``pyproject.toml``/``setup.cfg`` inside the analysed paths
(``flagtrace.scripts``), or a root the user configures (``--root``,
``[tool.flagtrace] roots``). An entry that roots reach can start with the flag set only
if, in one of those roots' processes, it can be called while the flag is set after a
sticky write: the root's process is followed from the flag unset at the root
(``StickyWrites._propagate``: flow-sensitive in the functions that can change the flag,
so a ``__main__`` block that calls ``serve()`` before ``set_flag(True)`` does not count;
a loop that comes round again does). Module-level code outside ``__main__`` blocks runs
on import, in any process: its sticky writes count for every entry. When no root
reaches an entry (a library function, code that runs in a process the analysed code
starts in a way flagtrace does not see), the default holds: a sticky write may have run
before it (``StickyScope.ANYWHERE``), except one in a ``__main__`` block, which runs in
that program only.

What breaks the assumption: a program outside the analysed paths that calls into them
(a library's users, a test runner), or a process started from a function flagtrace
sees as reached from a root for another reason. ``sticky_anywhere`` (the CLI's
``--sticky-anywhere``) turns the scoping off for such code.

Reachability is the call graph's (every resolution layer, by-name included), computed
once per root as bit masks; a flag then only asks which masks its sticky writes carry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from flagtrace.callgraph import CallGraph
from flagtrace.flagstate import SetEvent
from flagtrace.interpret import Interpreter
from flagtrace.model import CallEdge, Guard, ProgramRoot, RootKind, ScopeKind, StickyScope
from flagtrace.reach import sticky_sites
from flagtrace.resolve import Program


def is_main_module(module: str) -> bool:
    """A package's ``__main__.py`` (``python -m pkg``) runs as a program, all of it."""
    return module == "__main__" or module.endswith(".__main__")


def main_roots(program: Program) -> list[ProgramRoot]:
    """Modules with an ``if __name__ == "__main__":`` block, and ``__main__`` modules."""
    out = []
    for module, summary in sorted(program.modules.items()):
        if summary.has_main_block or is_main_module(module):
            out.append(ProgramRoot(module, RootKind.MAIN, summary.path))
    return out


def find_roots(
    program: Program,
    scripts: Iterable[tuple[str, str]] = (),
    configured: Iterable[str] = (),
) -> tuple[ProgramRoot, ...]:
    """Every program root: ``__main__`` modules, console scripts (``(qualname,
    declared)``) whose function is in the analysed code, and configured roots (already
    checked to name a function or module). One root per qualname, the first found."""
    found: dict[str, ProgramRoot] = {}
    for root in main_roots(program):
        found.setdefault(root.qualname, root)
    for qualname, declared in scripts:
        scope = program.scopes.get(qualname)
        if scope is not None and scope.kind is not ScopeKind.CLASS:
            found.setdefault(qualname, ProgramRoot(qualname, RootKind.SCRIPT, declared))
    for qualname in configured:
        found.setdefault(qualname, ProgramRoot(qualname, RootKind.CONFIGURED, "configured"))
    return tuple(sorted(found.values(), key=lambda r: r.qualname))


def is_main_guard(guards: Sequence[Guard]) -> bool:
    """Does a call run only under ``if __name__ == "__main__":``?"""
    return any(
        not g.negated and "__name__" in g.text and "__main__" in g.text and "==" in g.text
        for g in guards
    )


class RootIndex:
    """Which roots reach which functions: flag-independent, built once per call graph.

    ``reach[node]`` has bit ``i`` set when ``roots[i]`` reaches ``node`` (the root
    itself included); ``below[node]`` when it reaches it through at least one call
    (``node`` can run after something else of that root's process). ``import_time``:
    the functions module-level code outside ``__main__`` blocks reaches."""

    def __init__(self, graph: CallGraph, roots: Sequence[ProgramRoot]) -> None:
        self.graph = graph
        self.roots = tuple(roots)
        g = graph.nx
        own: dict[str, int] = {}
        for i, root in enumerate(self.roots):
            own[root.qualname] = own.get(root.qualname, 0) | 1 << i
        # reachability over the stored graph, through its hubs, then without them
        below = _masks_below(g, {q: m for q, m in own.items() if q in graph})
        self.below: dict[str, int] = {n: m for n, m in below.items() if n not in graph.hubs}
        self.reach: dict[str, int] = dict(self.below)
        for qn, mask in own.items():
            self.reach[qn] = self.reach.get(qn, 0) | mask
        starts: set[str] = set()
        program = graph.program
        for module in program.modules:
            if module not in graph or is_main_module(module):
                continue
            for callee in graph.callees(module):
                if any(not is_main_guard(e.guards) for e in graph.sites(module, callee)):
                    starts.add(callee)
        self.import_time = frozenset(_closure(g, sorted(starts)) - graph.hubs)

    def rebuilt(self, graph: CallGraph) -> RootIndex:
        """The same roots over another graph (jedi settled calls: new edges)."""
        return self if graph is self.graph else RootIndex(graph, self.roots)

    def roots_of(self, node: str) -> tuple[str, ...]:
        """The roots that reach ``node`` (itself included), by name."""
        return self.names(self.reach.get(node, 0))

    def names(self, mask: int) -> tuple[str, ...]:
        return tuple(r.qualname for i, r in enumerate(self.roots) if mask >> i & 1)

    def first(self, mask: int) -> ProgramRoot:
        return self.roots[(mask & -mask).bit_length() - 1]


def _masks_below(g: object, seeds: dict[str, int]) -> dict[str, int]:
    """For every node reached from a seed through at least one call, the OR of
    the masks of the seeds that reach it so.

    One pass over the strongly connected components the seeds reach, in
    topological order, with the masks as bit sets: a search per root cost the
    roots times the graph (vLLM: 34 roots, 640k edges, 11 s per question). A
    node is below a seed of its own component only when the component has a
    cycle (more than one node, or a call of itself)."""
    import networkx as nx

    assert isinstance(g, nx.DiGraph)
    if not seeds:
        return {}
    reached = _closure(g, sorted(seeds))
    components = _components(g, reached)
    component_of = {node: i for i, members in enumerate(components) for node in members}
    seed_mask = [0] * len(components)
    for qn, mask in seeds.items():
        seed_mask[component_of[qn]] |= mask
    successors: list[set[int]] = []
    cyclic: list[bool] = []
    for i, members in enumerate(components):
        after = {component_of[m] for n in members for m in g.successors(n)}
        cyclic.append(len(members) > 1 or i in after)
        after.discard(i)
        successors.append(after)
    waiting = [0] * len(components)
    for after in successors:
        for j in after:
            waiting[j] += 1
    above = [0] * len(components)  # seeds in components strictly above
    ready = deque(i for i, n in enumerate(waiting) if n == 0)
    while ready:
        i = ready.popleft()
        passed = above[i] | seed_mask[i]
        for j in successors[i]:
            above[j] |= passed
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    out: dict[str, int] = {}
    for i, members in enumerate(components):
        mask = above[i] | (seed_mask[i] if cyclic[i] else 0)
        if mask:
            for node in members:
                out[node] = mask
    return out


def _components(g: object, nodes: set[str]) -> list[set[str]]:
    """The strongly connected components of ``g`` among ``nodes``, which must hold every
    successor of theirs (``_closure``'s answer): Tarjan's algorithm, iteratively, on
    networkx's own adjacency.

    Why not ``nx.strongly_connected_components(g.subgraph(nodes))``: every neighbour
    lookup through a subgraph view is filtered, and the components of SGLang 0.5.9's
    roots took 0.21-0.35 s so, against about 0.1 s for the whole graph's."""
    import networkx as nx

    assert isinstance(g, nx.DiGraph)
    successors = g._succ
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors[root]))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors[child])))
                    break
                if child in on_stack and index[child] < low[node]:
                    low[node] = index[child]
            else:  # every successor seen: ``node`` is done
                work.pop()
                if work and low[node] < low[work[-1][0]]:
                    low[work[-1][0]] = low[node]
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    out.append(component)
    return out


def _closure(g: object, starts: Iterable[str]) -> set[str]:
    import networkx as nx

    assert isinstance(g, nx.DiGraph)
    seen: set[str] = set()
    todo = deque(starts)
    while todo:
        node = todo.popleft()
        if node in seen:
            continue
        seen.add(node)
        todo.extend(n for n in g.successors(node) if n not in seen)
    return seen


@dataclass(frozen=True, slots=True)
class Before:
    """Where the flag may have been left set before an entry runs.

    ``scope`` says why this counts for the entry. For ``ROOT`` and ``IMPORT``: ``path``
    runs from the root (or the module whose import runs it) to ``site``'s caller or to
    ``leaker``; ``site`` is a sticky call ``(caller, index, setter)``; ``leaker`` a
    function that can end, returning or raising, with the flag set. For ``ANYWHERE``
    both are None: the verdict shows the unscoped default's own steps."""

    scope: StickyScope
    root: str | None = None
    path: tuple[str, ...] = ()
    site: tuple[str, int, str] | None = None
    leaker: str | None = None
    #: where the flag became set in the root's own body, before it calls the entry
    origin: SetEvent | None = None


@dataclass(frozen=True, slots=True)
class Excluded:
    """Sticky writes exist, but none can run before the entry: for a *never* reason."""

    places: tuple[str, ...]  # the functions (or modules) holding the sticky writes left out
    roots: tuple[str, ...]  # the roots that reach the entry


class StickyWrites:
    """One flag's sticky writes, scoped to the program roots (see the module docstring)."""

    def __init__(
        self, interp: Interpreter, roots: RootIndex | None, anywhere: bool = False
    ) -> None:
        self.interp = interp
        self.index = roots
        self.anywhere_asked = anywhere  # ``--sticky-anywhere``
        self.anywhere = anywhere or roots is None or not roots.roots
        self.sites = sticky_sites(interp)
        self.leakers = _leakers(interp)
        self.any = bool(self.sites or self.leakers)
        # a sticky call in a ``__main__`` block runs only in that program's process: for an
        # entry no root reaches (run by a program flagtrace does not see) it cannot come
        # first, unlike a function's, which any program may call
        graph = interp.graph
        self.main_modules = frozenset(
            m for m, summary in interp.p.modules.items() if summary.has_main_block
        ) | frozenset(m for m in interp.p.modules if is_main_module(m))
        self.open_sites = [s for s in self.sites if not _in_main_block(graph, *s[:2])]
        # the unscoped default also counts a parameterised setter nobody calls
        self.any = self.any or self._open_leaker(frozenset())
        open_sites = set(self.open_sites)  # a list's ``in`` was quadratic: 23k sites on vLLM
        self.closed = tuple(
            dict.fromkeys(graph_owner(graph, s[0]) for s in self.sites if s not in open_sites)
        )
        self._import: Before | None = None
        self._mask = 0  # roots that reach some sticky write
        #: per root: what its process can enter, and how (``_propagate``)
        self._entered: dict[str, dict[_Node, tuple[_Node | None, SetEvent | None]]] = {}
        if roots is not None and not self.anywhere:
            graph = interp.graph
            for caller, site, setter in self.sites:
                self._mask |= roots.reach.get(graph_owner(graph, caller), 0)
                if self._import is None and _runs_on_import(graph, roots, caller, site):
                    self._import = Before(
                        StickyScope.IMPORT,
                        path=_module_path(graph, caller),
                        site=(caller, site, setter),
                    )
            for fn in self.leakers:
                self._mask |= roots.reach.get(fn, 0)
                if self._import is None and fn in roots.import_time:
                    self._import = Before(
                        StickyScope.IMPORT, path=_module_path(graph, fn), leaker=fn
                    )

    def before(self, entry: str) -> Before | Excluded | None:
        """What may have left the flag set before ``entry`` runs (None: nothing can)."""
        if not self.any:
            return None
        index = self.index
        if self.anywhere or index is None or not index.reach.get(entry):
            if self.anywhere or self.open_sites or self._open_leaker():
                return Before(StickyScope.ANYWHERE)
            return Excluded(self.closed, ())
        if self._import is not None:
            return self._import
        mask = index.below.get(entry, 0) & self._mask
        for i, root in enumerate(index.roots):
            if mask >> i & 1:
                found = self._started_set(root.qualname, entry)
                if found is not None:
                    return found
        # the roots that reach the entry reach no sticky write, or none before the entry
        places = dict.fromkeys([*(c for c, _, _ in self.sites), *self.leakers])
        return Excluded(tuple(places), index.roots_of(entry))

    def _started_set(self, root: str, entry: str) -> Before | None:
        """Can ``entry`` start with the flag set in ``root``'s process? Where it became set."""
        parents = self._entered.get(root)
        if parents is None:
            parents = self._entered[root] = self._propagate(root)
        node = next((n for n in parents if n[0] == entry and n[1][1]), None)
        if node is None:
            return None
        # walk back to the call where the flag became set, then on to the root
        while parents[node][1] is None:
            up = parents[node][0]
            if up is None:
                return Before(StickyScope.ROOT, root, (root,))
            node = up
        parent, origin = parents[node]
        chain: list[str] = []
        while parent is not None:
            chain.append(parent[0])
            parent = parents[parent][0]
        return Before(StickyScope.ROOT, root, tuple(reversed(chain)), origin=origin)

    def _propagate(self, root: str) -> dict[_Node, tuple[_Node | None, SetEvent | None]]:
        """Every (function, state on entry) that ``root``'s process can reach, from the
        flag unset at the root, with the node it was first reached from and, where the
        flag became set on that call, the step that set it.

        The state only changes in functions that can reach a write (``interp.writers``):
        those are interpreted, flow-sensitively, so the order of a ``__main__`` block
        (``serve()`` before ``set_flag(True)``) and loops that come round again count;
        every other function passes the state to all it calls unchanged."""
        from flagtrace.flagstate import State

        interp, graph = self.interp, self.interp.graph
        start: _Node = (root, (True, False))
        parents: dict[_Node, tuple[_Node | None, SetEvent | None]] = {start: (None, None)}
        todo = deque([start])
        while todo:
            node = todo.popleft()
            qn, key = node
            scope = interp.p.scopes.get(qn)
            nexts: list[tuple[_Node, SetEvent | None]] = []
            if qn in interp.writers and scope is not None:
                run = interp.run(scope, State(*key))
                for site, state in run.calls:
                    origin = state.origin if state.set and not key[1] else None
                    for c in graph.running_callees(qn, site):
                        nexts.append(((c.qualname, state.key), origin))
                for child in scope.children:
                    cs = interp.p.scopes.get(child)
                    if cs is not None and cs.kind is ScopeKind.CLASS:
                        nexts.append(((child, key), None))
            elif qn in graph:  # callees by name: the first found is the witness
                nexts.extend(((c, key), None) for c in graph.callees(qn))
            for nxt, origin in nexts:
                if nxt not in parents:
                    parents[nxt] = (node, origin)
                    todo.append(nxt)
        return parents

    def _open_leaker(self, skip: frozenset[str] | None = None) -> bool:
        """A function nobody calls, other than a ``__main__`` module, that can end with the
        flag set: the unscoped default's second case (``verdicts._preset``), which any
        program may run first."""
        interp = self.interp
        skip = self.main_modules if skip is None else skip
        for qn in interp.writers:
            scope = interp.p.scopes.get(qn)
            if (
                scope is None
                or scope.kind is ScopeKind.CLASS
                or interp.is_cm(qn)
                or scope.name in ("__enter__", "__aenter__")
                or qn in skip
                or interp.graph.callers(qn)
            ):
                continue
            if interp.may_leave_set(qn):
                return True
        return False


_Node = tuple[str, tuple[bool, bool]]


def _in_main_block(graph: CallGraph, caller: str, site: int) -> bool:
    """A call in module-level code under ``if __name__ == "__main__":``, or anywhere in a
    ``__main__`` module."""
    owner = graph_owner(graph, caller)
    scope = graph.program.scopes.get(owner)
    if scope is None or scope.kind is not ScopeKind.MODULE:
        return False
    if is_main_module(owner):
        return True
    return is_main_guard(graph.program.scopes[caller].calls[site].guards)


def graph_owner(graph: CallGraph, qualname: str) -> str:
    """The graph node a scope's calls belong to (a class body's: its module's)."""
    from flagtrace.callgraph import owner_of

    return owner_of(graph.program, qualname)


def _leakers(interp: Interpreter) -> list[str]:
    """Functions that can end, returning or raising, with the flag set when they started
    with it unset: run first in a process, they leave it set for what runs next.
    Context managers are left out (entering one is the ``with``'s business), and so are
    parameterised setters (``set_flag(v)``: their call sites decide, ``sticky_sites``)."""
    out = []
    for qn in sorted(interp.writers):
        scope = interp.p.scopes.get(qn)
        if (
            scope is None
            or scope.kind is ScopeKind.CLASS
            or interp.is_cm(qn)
            or scope.name in ("__enter__", "__aenter__")
            or any(w.param is not None for w in interp.fx.writes.get(qn, ()))
        ):
            continue
        if interp.may_leave_set(qn):
            out.append(qn)
    return out


def _runs_on_import(graph: CallGraph, roots: RootIndex, caller: str, site: int) -> bool:
    """A sticky call in module-level code outside a ``__main__`` block, or in a
    function such code reaches."""
    owner = graph_owner(graph, caller)
    scope = graph.program.scopes.get(owner)
    if scope is not None and scope.kind is ScopeKind.MODULE:
        if is_main_module(owner):
            return False
        call = graph.program.scopes[caller].calls[site]
        return not is_main_guard(call.guards)
    return owner in roots.import_time


def _module_path(graph: CallGraph, target: str) -> tuple[str, ...]:
    """A path from some module's import-time code to ``target`` (for the witness)."""
    owner = graph_owner(graph, target)
    program = graph.program
    scope = program.scopes.get(owner)
    if scope is not None and scope.kind is ScopeKind.MODULE:
        return (owner,)
    for module in sorted(program.modules):
        if module in graph and not is_main_module(module):
            path = _import_path(graph, module, owner)
            if path is not None:
                return tuple(path)
    return (owner,)


def _import_path(graph: CallGraph, module: str, target: str) -> list[str] | None:
    """The shortest path from ``module`` to ``target`` whose first call is not in a
    ``__main__`` block."""
    for callee in graph.callees(module):
        edges: tuple[CallEdge, ...] = graph.sites(module, callee)
        if any(not is_main_guard(e.guards) for e in edges):
            rest = graph.shortest_path(callee, target)
            if rest is not None:
                return [module, *rest]
    return None
