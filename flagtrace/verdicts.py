"""Verdicts: one ``FlagReport`` per flag, with a verdict and proof per entry.

Puts together effects (setters, readers), reach (witness search) and checks
(hazards); turns internal search results into the plain ``model`` findings
that reporters print.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from flagtrace.callgraph import CallGraph
from flagtrace.checks import find_hazards, nesting_guarded
from flagtrace.effects import Flag, FlagEffects, ValueKind
from flagtrace.flagstate import UNSET, join
from flagtrace.guards_eval import unparen
from flagtrace.interpret import FlagIndependent, GuardOracle, Interpreter
from flagtrace.model import (
    CallSite,
    EntryVerdict,
    Evidence,
    FlagReport,
    Guard,
    GuardKind,
    GuardNot,
    Hazard,
    HazardKind,
    Location,
    ReaderFinding,
    ScopeKind,
    SetterFinding,
    StepKind,
    StickyScope,
    UnresolvedCall,
    WitnessStep,
)
from flagtrace.programs import Before, Excluded, RootIndex, StickyWrites
from flagtrace.prune import Pruning
from flagtrace.reach import Reach, Witness, sticky_sites
from flagtrace.resolve import Program
from flagtrace.setby import observed_write, resolve_set_by
from flagtrace.setting import evidence_of

MAX_UNRESOLVED_SHOWN = 5


class EntryError(Exception):
    """An ``--entry`` that names no function in the analysed code."""


#: Directory names whose modules are tests (any package on the module's path).
TEST_PACKAGES = frozenset({"tests", "test"})


def is_test_module(module: str) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or anything under a
    ``tests/`` or ``test/`` package: judged by the module name, not the file
    path, so a checkout under ``/home/test/`` is not all tests."""
    parts = module.split(".")
    last = parts[-1]
    return (
        last.startswith("test_")
        or last.endswith("_test")
        or last == "conftest"
        or any(part in TEST_PACKAGES for part in parts)
    )


def is_test(program: Program, qualname: str) -> bool:
    """A scope of a test module, or inside a ``test_*`` function or a ``Test*`` class."""
    if is_test_module(program.module_of.get(qualname, qualname)):
        return True
    scope = program.scopes.get(qualname)
    while scope is not None and scope.kind is not ScopeKind.MODULE:
        if scope.kind is ScopeKind.FUNCTION and scope.name.startswith("test_"):
            return True
        if scope.kind is ScopeKind.CLASS and scope.name.startswith("Test"):
            return True
        scope = program.scopes.get(scope.parent) if scope.parent else None
    return False


@dataclass(frozen=True, slots=True)
class Discovered:
    """The entries to judge, and how many discovered ones were left out as tests."""

    entries: list[str]
    left_out: int


def discover_entries(
    graph: CallGraph, configured: Sequence[str] = (), include_tests: bool = False
) -> Discovered:
    """Functions nobody in the analysed code calls, modules with a ``__main__``
    block, and configured entries (always judged).

    Why leave tests out: on SGLang 0.5.9 a third of the uncalled functions that
    observe ``_in_piecewise_cuda_graph`` were test functions and fixtures, which
    nobody calls because pytest does; they buried the entry points a person asks
    about. Calls from tests then do not count either: a function only tests
    call is judged itself. ``include_tests`` brings all of it back."""
    p = graph.program
    out: set[str] = set(configured)
    left_out: set[str] = set()
    # a caller is asked about once per function it calls (by-name hubs: transformers
    # asked 1.4M times about 84k functions, 7 s of a discovered flag's 20)
    tests: dict[str, bool] = {}

    def in_tests(qn: str) -> bool:
        known = tests.get(qn)
        if known is None:
            known = tests[qn] = is_test(p, qn)
        return known

    for qn, scope in p.scopes.items():
        if scope.kind is ScopeKind.FUNCTION:
            parent = p.scopes.get(scope.parent) if scope.parent else None
            if parent is not None and parent.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
                continue  # nested functions run when their parent calls them
            callers = graph.callers(qn)
            # a function only tests call is an entry once the tests are left out
            if any(include_tests or not in_tests(c) for c in callers):
                continue
        elif not (scope.kind is ScopeKind.MODULE and p.modules[qn].has_main_block):
            continue
        if not include_tests and qn not in out and in_tests(qn):
            left_out.add(qn)
        else:
            out.add(qn)
    return Discovered(sorted(out), len(left_out))


def expand_entry(program: Program, spec: str) -> list[str]:
    """The functions and modules ``spec`` names: itself, or every qualname the
    pattern (``fnmatch``: ``*``, ``?``, ``[...]``) matches, sorted."""
    if not any(ch in spec for ch in "*?["):
        return [check_entry(program, spec)]
    import fnmatch

    matched = sorted(
        qn
        for qn, scope in program.scopes.items()
        if scope.kind is not ScopeKind.CLASS and fnmatch.fnmatchcase(qn, spec)
    )
    if not matched:
        raise EntryError(
            f"entry pattern {spec!r} matches no function or module in the analysed code"
        )
    return matched


def check_entry(program: Program, entry: str) -> str:
    """``entry`` if it names a function or module of the analysed code."""
    if entry in program.scopes and program.scopes[entry].kind is not ScopeKind.CLASS:
        return entry
    import difflib

    close = difflib.get_close_matches(entry, list(program.scopes), n=3, cutoff=0.75)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise EntryError(
        f"entry point {entry!r} is not a function or module in the analysed code{hint}"
    )


def analyse_flag(
    graph: CallGraph,
    flag: Flag,
    entries: Sequence[str],
    discovered: bool,
    reads: Sequence[str] = (),
    settle: Callable[[CallGraph, list[UnresolvedCall]], CallGraph | None] | None = None,
    pruning: Pruning | None = None,
    roots: RootIndex | None = None,
    sticky_anywhere: bool = False,
    set_by: Sequence[str] = (),
    independent: FlagIndependent | None = None,
) -> FlagReport:
    """``graph`` is the graph to judge on: with ``pruning``, its pruned graph (whose
    guard evaluator the interpreter then uses too), and a *never* verdict for a
    named entry says which hop of the unpruned witness cannot run. ``roots`` scope
    sticky writes to program roots (``flagtrace.programs``; None or
    ``sticky_anywhere``: a sticky write anywhere may run before any entry);
    ``set_by`` restricts the verdicts to the values those setters write
    (``flagtrace.setby``; hazards and setters are reported in full).
    ``independent`` keeps what does not depend on the flag for the next flags
    judged on these graphs."""
    oracle = pruning if pruning is not None and pruning.active else None
    shared = independent if independent is not None else FlagIndependent()
    fx, interp, reach = _engine(graph, flag, reads, oracle, shared=shared)
    hazards = find_hazards(fx, interp)
    guarded = nesting_guarded(fx, interp)
    setters = setter_findings(fx, hazards, guarded)
    readers = _readers(fx, pruning.full if pruning is not None else None)
    live = pruning.live if pruning is not None else None
    chosen = resolve_set_by(fx, set_by) if set_by else frozenset()
    if chosen:
        fx, interp, reach = _engine(graph, flag, reads, oracle, chosen, shared)
    sticky = _Sticky(interp, graph, roots, sticky_anywhere, live)
    verdicts = []
    unpruned: list[_Unpruned] = []  # the engine on the full graph, built on demand
    for entry in entries:
        verdict = _verdict(fx, interp, reach, graph, entry, sticky, explain_never=not discovered)
        if discovered and not verdict.observes_set:
            continue  # discovered entries are reported only when they observe the flag set
        if settle is not None and not verdict.observes_set and verdict.unresolved_count:
            # demand-driven: let jedi settle the calls this verdict rests on, then judge again
            reachable = reach.reachable_functions(entry)
            settled = settle(graph, [u for u in graph.unresolved if u.caller in reachable])
            if settled is not None:
                graph = settled
                fx, interp, reach = _engine(graph, flag, reads, oracle, chosen, shared)
                roots = roots.rebuilt(graph) if roots is not None else None
                sticky = _Sticky(interp, graph, roots, sticky_anywhere, live)
                verdict = _verdict(fx, interp, reach, graph, entry, sticky)
        if discovered and not verdict.observes_set:
            continue
        if pruning is not None and pruning.active and not verdict.observes_set:
            verdict = _explain_pruned(pruning, flag, reads, entry, verdict, unpruned, sticky)
        verdicts.append(verdict)
    return FlagReport(
        qualname=flag.qualname,
        location=flag.location,
        initial=flag.initial,
        setters=setters,
        readers=readers,
        entries=tuple(verdicts),
        hazards=tuple(hazards),
    )


class _Sticky:
    """The flag's sticky writes scoped to program roots, and the unscoped default's
    steps (``_preset``), computed once and only when a verdict needs them."""

    def __init__(
        self,
        interp: Interpreter,
        graph: CallGraph,
        roots: RootIndex | None,
        anywhere: bool,
        live: Container[str] | None = None,
    ) -> None:
        self.interp = interp
        self.graph = graph
        self.roots = roots
        self.live = live
        self.writes = StickyWrites(interp, roots, anywhere)
        self._default: tuple[list[WitnessStep], bool] | None = None

    def default(self) -> tuple[list[WitnessStep], bool]:
        if self._default is None:
            w = self.writes
            if w.anywhere:  # --sticky-anywhere, or no root at all: every sticky write
                self._default = _preset(self.interp, self.graph, self.live, w.sites)
            else:
                self._default = _preset(
                    self.interp, self.graph, self.live, w.open_sites, w.main_modules
                )
        return self._default

    def roots_of(self, entry: str) -> tuple[str, ...]:
        return self.roots.roots_of(entry) if self.roots is not None else ()


def _engine(
    graph: CallGraph,
    flag: Flag,
    reads: Sequence[str],
    guards: GuardOracle | None = None,
    set_by: frozenset[str] = frozenset(),
    shared: FlagIndependent | None = None,
) -> tuple[FlagEffects, Interpreter, Reach]:
    fx = FlagEffects(graph, flag, set_by=set_by)
    interp = Interpreter(fx, guards, shared)
    return fx, interp, Reach(interp, frozenset(reads))


@dataclass(frozen=True, slots=True)
class _Unpruned:
    """The flag engine on the unpruned graph, for explaining *never* verdicts."""

    fx: FlagEffects
    interp: Interpreter
    reach: Reach
    sticky: _Sticky


def _explain_pruned(
    pruning: Pruning,
    flag: Flag,
    reads: Sequence[str],
    entry: str,
    verdict: EntryVerdict,
    memo: list[_Unpruned],
    pruned: _Sticky,
) -> EntryVerdict:
    """A *never* verdict on the pruned graph: if the entry observes the flag set
    without pruning, the first hop of that witness that cannot run, in the reason."""
    if not memo:
        fx, interp, reach = _engine(
            pruning.full, flag, reads, None, pruned.interp.fx.set_by, pruned.interp.shared
        )
        roots = pruned.roots.rebuilt(pruning.full) if pruned.roots is not None else None
        sticky = _Sticky(interp, pruning.full, roots, pruned.writes.anywhere_asked)
        memo.append(_Unpruned(fx, interp, reach, sticky))
    u = memo[0]
    full = _verdict(u.fx, u.interp, u.reach, pruning.full, entry, u.sticky, explain_never=False)
    if not full.observes_set:
        return verdict
    hop = pruning.explain(full.witness)
    if hop is None:
        reason = f"{verdict.reason}; without pruning it would, but no path is left"
        return replace(verdict, reason=reason)
    return replace(verdict, reason=f"{verdict.reason}; pruned: {hop.reason}", pruned=hop)


def _shown_value(kind: ValueKind) -> str:
    """A value passed in by the caller (``set_flag(v)``) is, for the setter, unknown."""
    return "unknown" if kind is ValueKind.PARAMETER else kind.value


def setter_findings(
    fx: FlagEffects, hazards: Sequence[Hazard], guarded: Collection[str]
) -> tuple[SetterFinding, ...]:
    """The flag's setters as reported, each with the kinds of hazard found in it
    (``hazards``) and whether a nesting guard protects it (``guarded``): what
    ``check`` and ``scan`` both list, from the same code, so they never disagree."""
    by_setter: dict[str, list[HazardKind]] = {}
    for h in hazards:
        by_setter.setdefault(_setter_key(fx, h.function), []).append(h.kind)
    return tuple(
        SetterFinding(
            s.function,
            s.kind,
            _shown_value(s.value),
            s.location,
            tuple(sorted(set(by_setter.get(s.function, [])))),
            s.function in guarded,
        )
        for s in sorted(fx.setters.values(), key=lambda s: s.function)
    )


def _setter_key(fx: FlagEffects, function: str) -> str:
    """Hazards on ``Cls.__exit__`` belong to the setter ``Cls.__enter__``."""
    if function.endswith(("__exit__", "__aexit__")):
        cls = function.rpartition(".")[0]
        for name in ("__enter__", "__aenter__"):
            if f"{cls}.{name}" in fx.setters:
                return f"{cls}.{name}"
    return function


def _readers(fx: FlagEffects, graph: CallGraph | None = None) -> tuple[ReaderFinding, ...]:
    """Every read of the flag in the code, including code that cannot run under the
    pruning (the readers are an inventory; ``graph``: the unpruned graph)."""
    out: list[ReaderFinding] = []
    p = fx.p
    for qn, steps in fx.direct_reads.items():
        for step in steps:
            out.append(ReaderFinding(qn, step.location, None))
    for (qn, site), callees in (graph or fx.graph).call_sites():
        scope = p.scopes[qn]
        for c in callees:
            if c.qualname in fx.accessors:
                out.append(ReaderFinding(_owner(fx, qn), scope.calls[site].location, c.qualname))
    unique = {(r.function, r.location, r.via): r for r in out}
    return tuple(
        sorted(unique.values(), key=lambda r: (r.location.path, r.location.line, r.function))
    )


def _owner(fx: FlagEffects, qn: str) -> str:
    from flagtrace.callgraph import owner_of

    return owner_of(fx.p, qn)


def _preset(
    interp: Interpreter,
    graph: CallGraph,
    live: Container[str] | None = None,
    sites: list[tuple[str, int, str]] | None = None,
    skip: frozenset[str] = frozenset(),
) -> tuple[list[WitnessStep], bool]:
    """If a sticky setter runs anywhere, entries may start with the flag set:
    the steps showing where (a root, a path to the setter call). ``live``: the
    functions that can run at all (``prune.Pruning.live``); a function with no
    caller left in a pruned graph is no root unless it is live. ``sites`` are the
    sticky calls that count (default: all); ``skip``, scopes that are not run from
    elsewhere (``__main__`` modules, whose sticky calls only their own program runs)."""
    sites = sticky_sites(interp) if sites is None else sites
    if not sites:
        # a sticky function nobody calls is an entry point itself: running it first
        # leaves the flag set for every other entry
        for qn in sorted(interp.writers):
            scope = interp.p.scopes.get(qn)
            if (
                scope is None
                or scope.kind is ScopeKind.CLASS
                or interp.is_cm(qn)
                or scope.name in ("__enter__", "__aenter__")
            ):
                continue
            leaves_set = interp.may_leave_set(qn)
            if (
                leaves_set
                and not graph.callers(qn)
                and (live is None or qn in live)
                and qn not in skip
            ):
                # an entry nobody calls that returns, or raises, with the flag set
                run = interp.run(scope, UNSET)
                ends = join(run.exit, run.raised)
                ev = ends.origin if ends is not None else None
                if ev is not None:
                    step = ev.kind
                    return [
                        WitnessStep(
                            step, ev.function, ev.location, ev.via, text=ev.text, before_entry=True
                        )
                    ], True
                where = next((w.location for w in fx_writes(interp, qn)), scope.location)
                return [
                    WitnessStep(
                        StepKind.SET, qn, where, qn, text=f"{scope.name}()", before_entry=True
                    )
                ], True
        return [], False
    p = interp.p
    caller, site, setter = sites[0]
    call = p.scopes[caller].calls[site]
    steps: list[WitnessStep] = []
    # a path from some root to the caller, for context
    roots = [
        n
        for n in graph.nodes()
        if graph.is_analysed(n) and not graph.callers(n) and (live is None or n in live)
    ]
    path: list[str] | None = None
    for root in roots:
        path = graph.shortest_path(root, caller)
        if path:
            break
    if path:
        for a, b in pairwise(path):
            e = graph.sites(a, b)[0]
            steps.append(
                WitnessStep(
                    StepKind.CALL,
                    a,
                    e.location,
                    b,
                    e.resolution,
                    _guards(interp, a, e.guards),
                    e.text,
                    True,
                    _unique(e.guards),
                    e.approximation,
                )
            )
    steps.append(_sticky_call(interp, caller, call, setter))
    return steps, True


def _sticky_call(interp: Interpreter, caller: str, call: CallSite, setter: str) -> WitnessStep:
    """The step before the entry where ``caller`` calls the sticky ``setter``."""
    return WitnessStep(
        StepKind.SET,
        caller,
        call.location,
        setter,
        None,
        _guards(interp, caller, call.guards),
        call.text,
        True,
        _unique(call.guards),
    )


def fx_writes(interp: Interpreter, qn: str) -> list:  # type: ignore[type-arg]
    return list(interp.fx.writes.get(qn, ()))


def _verdict(
    fx: FlagEffects,
    interp: Interpreter,
    reach: Reach,
    graph: CallGraph,
    entry: str,
    sticky: _Sticky,
    explain_never: bool = True,
) -> EntryVerdict:
    roots = sticky.roots_of(entry)
    witness = reach.witness(entry, (True, False))
    pre: list[WitnessStep] = []
    before = sticky.writes.before(entry)
    scope = None
    if witness is None and isinstance(before, Before):
        pre, may_be_preset = _before_steps(interp, graph, before, sticky)
        if may_be_preset:
            witness = reach.witness(entry, (True, True))
            scope = before.scope
    if witness is not None:
        # the enter/set step graded, with the calls inside the setter that set the flag
        steps = [
            replace(s, guard=_guards(interp, s.function, s.guards))
            if s.setting and s.guards and s.guard is None
            else s
            for s in reach.settings.prove(
                (pre if scope is not None else []) + _witness_steps(interp, witness)
            )
        ]
        hops = len(witness.hops)
        via = f" via {witness.read.via}()" if witness.read.via else ""
        reason = (
            f"{fx.flag.name} can be set when {witness.read.function} reads it{via} "
            f"at {witness.read.location.short} ({hops} call{'s' if hops != 1 else ''} from {entry})"
        )
        if scope is StickyScope.ANYWHERE:
            reason += (
                "; a sticky setter elsewhere may leave it set before the entry runs "
                "(no program root reaches the entry, so any may have run first)"
            )
        elif scope is StickyScope.ROOT:
            reason += (
                f"; the program root {before.root if isinstance(before, Before) else '?'} "
                "reaches a sticky write and the entry, so the flag may be left set "
                "before the entry runs"
            )
        elif scope is StickyScope.IMPORT:
            reason += "; a sticky write runs on import, before the entry runs"
        evidence = evidence_of(steps)
        setter, value = observed_write(interp, steps)
        return EntryVerdict(
            entry,
            True,
            evidence,
            reason,
            tuple(steps),
            roots=roots,
            sticky_scope=scope,
            set_by=setter,
            set_value=value,
        )
    if not explain_never:
        return EntryVerdict(entry, False, Evidence.RESOLVED, "", roots=roots)
    verdict = _never(fx, interp, reach, graph, entry)
    if isinstance(before, Excluded):
        places = ", ".join(before.places[:3]) + (" ..." if len(before.places) > 3 else "")
        if before.roots:
            why = (
                f"no program root that reaches {entry} reaches it "
                f"(roots: {', '.join(before.roots)})"
            )
        else:
            why = f"it runs only in that program's __main__ block, and no root reaches {entry}"
        reason = (
            f"{verdict.reason}; a sticky write in {places} could leave {fx.flag.name} set, "
            f"but {why}"
        )
        verdict = replace(verdict, reason=reason)
    return replace(verdict, roots=roots)


def _before_steps(
    interp: Interpreter, graph: CallGraph, before: Before, sticky: _Sticky
) -> tuple[list[WitnessStep], bool]:
    """The steps before the entry: from the root (or the importing module) to the sticky
    call or the leaking function; the unscoped default's own for ``ANYWHERE``."""
    if before.scope is StickyScope.ANYWHERE:
        return sticky.default()
    steps: list[WitnessStep] = []
    for a, b in pairwise(before.path):
        e = graph.sites(a, b)[0]
        steps.append(
            WitnessStep(
                StepKind.CALL,
                a,
                e.location,
                b,
                e.resolution,
                _guards(interp, a, e.guards),
                e.text,
                True,
                _unique(e.guards),
            )
        )
    if before.origin is not None or (before.site is None and before.leaker is None):
        ev = before.origin
        if ev is None:  # set, but where is not recorded: the root itself
            root = before.root or ""
            where = interp.p.scopes[root].location if root in interp.p.scopes else None
            if where is None:
                return steps, True
            steps.append(WitnessStep(StepKind.SET, root, where, root, text=root, before_entry=True))
            return steps, True
        steps.append(
            WitnessStep(ev.kind, ev.function, ev.location, ev.via, text=ev.text, before_entry=True)
        )
        return steps, True
    if before.site is not None:
        caller, site, setter = before.site
        call = interp.p.scopes[caller].calls[site]
        steps.append(_sticky_call(interp, caller, call, setter))
        return steps, True
    assert before.leaker is not None
    scope = interp.p.scopes[before.leaker]
    run = interp.run(scope, UNSET)
    ends = join(run.exit, run.raised)
    ev = ends.origin if ends is not None else None
    if ev is not None:
        steps.append(
            WitnessStep(ev.kind, ev.function, ev.location, ev.via, text=ev.text, before_entry=True)
        )
    else:
        where = next((w.location for w in fx_writes(interp, before.leaker)), scope.location)
        steps.append(
            WitnessStep(
                StepKind.SET,
                before.leaker,
                where,
                before.leaker,
                text=f"{scope.name}()",
                before_entry=True,
            )
        )
    return steps, True


def _witness_steps(interp: Interpreter, w: Witness) -> list[WitnessStep]:
    out: list[WitnessStep] = []
    for hop in w.hops:
        if hop.set_here is not None and not any(
            s.step.sets_flag and s.location == hop.set_here.location for s in out
        ):
            ev = hop.set_here
            out.append(
                WitnessStep(
                    ev.kind,
                    ev.function,
                    ev.location,
                    ev.via,
                    text=ev.text,
                    approximation=ev.approximation,
                )
            )
        out.append(
            WitnessStep(
                StepKind.CALL,
                hop.caller,
                hop.location,
                hop.callee,
                hop.resolution,
                _guards(interp, hop.caller, hop.guards),
                hop.text,
                guards=_unique(hop.guards),
                approximation=hop.approximation,
            )
        )
    r = w.read
    if r.set_here is not None and not any(s.location == r.set_here.location for s in out):
        ev = r.set_here
        out.append(
            WitnessStep(
                ev.kind,
                ev.function,
                ev.location,
                ev.via,
                text=ev.text,
                approximation=ev.approximation,
            )
        )
    out.append(
        WitnessStep(
            StepKind.READ,
            r.function,
            r.location,
            r.via,
            guard=_guards(interp, r.function, r.guards),
            text=interp.fx.flag.name,
            guards=_unique(r.guards),
        )
    )
    return out


def _unique(guards: tuple[Guard, ...]) -> tuple[Guard, ...]:
    """Each condition once (the first), however many constructs repeat it: ``if c``
    around ``c and f()`` guards ``f()`` by ``c`` twice."""
    seen: set[tuple[str, bool, bool]] = set()
    out: list[Guard] = []
    for g in guards:
        key = (g.text, g.negated, g.expr is None)
        if key not in seen:
            seen.add(key)
            out.append(g)
    return tuple(out) if len(out) < len(guards) else guards


def _guards(interp: Interpreter, function: str, guards: tuple[Guard, ...]) -> str | None:
    """Guards as source, each condition once; a local assigned once from an
    expression shows that expression."""
    if not guards:
        return None
    scope = interp.p.scopes.get(function)
    singles: dict[str, str] = {}
    if scope is not None:
        counts: dict[str, int] = {}
        for a in scope.assignments:
            if a.target.name is not None:
                counts[a.target.name] = counts.get(a.target.name, 0) + 1
                singles[a.target.name] = a.text
        singles = {k: v for k, v in singles.items() if counts[k] == 1 and v}
    parts = []
    for g in guards:
        if g.kind in (GuardKind.EXCEPT, GuardKind.CASE) and not g.negated:
            parts.append(g.render() if g.kind is GuardKind.CASE else f"except {g.text}")
            continue
        text = unparen(singles.get(g.text, g.text))
        if g.negated and isinstance(g.expr, GuardNot) and text == g.text:
            parts.append(unparen(text.removeprefix("not").strip()))  # not (not c): c
            continue
        parts.append(f"not ({text})" if g.negated else text)
    return " and ".join(dict.fromkeys(parts))


def _display(setter: str) -> str:
    """``pkg.Mode.__enter__`` reads better as ``Mode``; functions by their name."""
    if setter.endswith(("__enter__", "__aenter__")):
        return setter.rpartition(".")[0].rpartition(".")[2]
    return setter.rpartition(".")[2]


def _setter_uses(fx: FlagEffects, interp: Interpreter) -> list[tuple[str, Location]]:
    """Where setters are used: ``with`` items and ``enter_context`` calls that
    enter a setter context manager, and calls of plain setters or decorators."""
    from flagtrace.effects import SetterKind
    from flagtrace.model import AttrExpr, CallStep, WithBlock, walk

    plain = {
        s.function
        for s in fx.setters.values()
        if s.kind in (SetterKind.FUNCTION, SetterKind.DECORATOR)
    }
    uses: list[tuple[str, Location]] = []
    for qn, scope in interp.p.scopes.items():
        if scope.kind is ScopeKind.CLASS:
            continue
        for step in walk(scope.flow):
            if isinstance(step, WithBlock):
                for item in step.items:
                    if interp._context_managers(scope, item.expr):
                        uses.append((qn, item.location))
            elif isinstance(step, CallStep):
                call = scope.calls[step.site]
                callees = {c.qualname for c in interp.graph.site_callees(qn, step.site)}
                if callees & plain:
                    uses.append((qn, call.location))
                elif (
                    isinstance(call.func, AttrExpr)
                    and call.func.attr == "enter_context"
                    and call.args
                ):
                    if interp._context_managers(scope, call.args[0].value):
                        uses.append((qn, call.location))
    return uses


def _never(
    fx: FlagEffects, interp: Interpreter, reach: Reach, graph: CallGraph, entry: str
) -> EntryVerdict:
    reachable = reach.reachable_functions(entry)
    setters = sorted(fx.setters)
    name = fx.flag.name
    if not setters:
        reason = f"nothing in the analysed code sets {name}"
    else:
        uses = interp.setter_uses
        if uses is None:
            uses = interp.setter_uses = _setter_uses(fx, interp)
        shown = ", ".join(f"{_display(s)}()" for s in setters[:3])
        live = [u for u in uses if u[0] in reachable]
        if not live:
            sites = f"{len(uses)} site{'s' if len(uses) != 1 else ''}"
            reason = f"set only inside {shown}; entered at {sites}, none reachable from {entry}"
        else:
            sites = f"{len(live)} site{'s' if len(live) != 1 else ''}"
            reason = (
                f"set inside {shown} at {sites} reachable from {entry}, "
                f"but no read of {name} runs while it is set"
            )
    unresolved = [u for u in graph.unresolved if u.caller in reachable]
    if unresolved:
        calls = f"{len(unresolved)} call{'s' if len(unresolved) != 1 else ''}"
        return EntryVerdict(
            entry,
            False,
            Evidence.UNRESOLVED_CALLS,
            f"{reason}; {calls} on the way could not be resolved",
            (),
            len(unresolved),
            tuple(u.location for u in unresolved[:MAX_UNRESOLVED_SHOWN]),
        )
    return EntryVerdict(entry, False, Evidence.RESOLVED, reason)
