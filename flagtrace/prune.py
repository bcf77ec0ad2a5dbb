"""Pruning: the call graph as it can run, under assumptions and instantiation.

Two things cut hops out of the resolved call graph before the flag stages see it:

* **False guards** (only with ``--assume`` facts): a call site one of whose guards is
  false under the facts (``flagtrace.guards_eval``) calls nothing. The flag
  interpreter is handed the same evaluator, so a branch whose test is false, and the
  reads, writes, ``with`` blocks and setter calls in it, do not run either.
* **Instantiation (RTA)**, always: an instance method can run only on an instance of
  its class or of a subclass. A method reached by a call that is not a direct one
  (``typed``: a receiver of known type; ``by-name``: an unknown receiver, or a library
  type dispatched to our subclasses) is cut when neither its class nor any subclass
  is *instantiated* in code that can run (Rapid Type Analysis, Bacon & Sweeney 1996).

Instantiated, and what counts as code that can run, are computed together to a
fixpoint from the roots (every module, every function nothing in the analysed code
calls, and the configured entries): a scope is *live* when a root reaches it along
hops that are not cut, and a class is instantiated when

1. a live call site that is not behind a false guard calls the class (also
   ``raise C``, and ``cls(...)`` in a live class method, which instantiates the class
   and every subclass), or
2. the class is used as a value in live code (passed to any call but ``isinstance``
   and its kind, stored, put in a display, returned, yielded, a parameter default):
   a registry or a library may instantiate it where we cannot see, or
3. library code may instantiate it: it has a base outside the analysed code other
   than ``object``, ``ABC``, ``Generic`` and ``Protocol`` (``nn.Module``, ``Enum``,
   ``Exception``, ``NamedTuple``: a factory, a metaclass or the library itself
   builds those), a base flagtrace cannot resolve, a class decorator other than
   ``dataclass``-like ones, or an analysed base that defines ``__init_subclass__``,
   or
4. an entry given with ``--entry`` (or configured) is one of its methods: whoever runs
   that entry has an instance.

A method's class counts as instantiated when any subclass is. An uncalled instance
method of a class never instantiated is no root (and no discovered entry): nothing
can run it. ``__init__``, ``__new__`` and the class-creation hooks are never cut.

What this cannot see: a class built by a metaclass keyword or ``type(...)``,
``globals()[name]()``, ``__subclasses__()`` walks, or unpickling an instance made by
another program; an instance method called with an explicit, unrelated ``self``
(``Other.method(obj)`` is a direct call and is never cut).
"""

from __future__ import annotations

import copy
import weakref
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from flagtrace.assume import NO_VALUE, Fact, Facts, parse_facts
from flagtrace.callgraph import CallGraph, EdgeEditor, owner_of, ref_location
from flagtrace.derived import Derived, derive
from flagtrace.guards_eval import Decision, GuardEvaluator, Truth, unparen
from flagtrace.model import (
    AssumptionUse,
    AttrExpr,
    Callee,
    CallKind,
    ContainerExpr,
    CutKind,
    DecoratorKind,
    Expr,
    Guard,
    Location,
    NameExpr,
    OpaqueExpr,
    PrunedHop,
    Resolution,
    Scope,
    ScopeKind,
    SubscriptExpr,
    WitnessStep,
)
from flagtrace.resolve import ResolvedProgram
from flagtrace.resolve.values import is_dunder

SiteKey = tuple[str, int]

#: library bases that do not make instances of their subclasses
BENIGN_BASES = frozenset({"object", "ABC", "Generic", "Protocol", "ABCMeta"})
#: class decorators that neither instantiate nor hand the class on
BENIGN_DECORATORS = frozenset(
    {"dataclass", "total_ordering", "final", "runtime_checkable", "unique", "dataclass_transform"}
)
#: builtins whose class arguments are only looked at
INSPECTING_BUILTINS = frozenset(
    {"isinstance", "issubclass", "hasattr", "getattr", "type", "id", "callable", "super", "repr"}
)
#: methods flagtrace never cuts: they run while an instance or a class is made
NEVER_CUT = frozenset(
    {"__init__", "__new__", "__init_subclass__", "__set_name__", "__class_getitem__"}
)


#: class-level hooks: they run when a class is made or subscripted, no instance needed
CLASS_HOOKS = frozenset({"__init_subclass__", "__class_getitem__"})


@dataclass(frozen=True, slots=True)
class GuardCut:
    """A call site behind a false guard: the guard and what decided it."""

    scope: str
    site: int
    guard: Guard
    decision: Decision
    path: str  # the file of the guard


@dataclass(frozen=True, slots=True)
class PruningState:
    """What pruning computed, as plain data (``Pruning.state``): stored beside the
    resolved program (``flagtrace.program_store``), so that a new question on an
    unchanged tree, with the same facts and entries, skips instantiation and the
    guards (vLLM 0.34.0: about 9 s of each question)."""

    guard_cuts: Mapping[SiteKey, GuardCut]
    uses: Mapping[str, frozenset[Location]]
    derived_decided: frozenset[Location]
    subclasses: Mapping[str, frozenset[str]]
    value_names: frozenset[str]
    class_names: frozenset[str]
    instantiated: frozenset[str]
    alive_classes: frozenset[str]
    made_inside: frozenset[str]
    constructions: Mapping[str, tuple[tuple[str, int], ...]]
    live: frozenset[str]
    escaped: frozenset[str]
    made_by_cls: frozenset[str]
    entry_classes: frozenset[str]
    derived: Mapping[str, Mapping[str, Fact]]


@dataclass(frozen=True, slots=True)
class Notes:
    """What a pruning's questions noted (``Pruning.notes``): notes only grow, so
    those of questions answered apart join into those of one run asking them all."""

    uses: Mapping[str, frozenset[Location]]
    derived: frozenset[Location]


class Pruning:
    """The call graph of ``graph`` with the hops that cannot run taken out
    (``graph``), and what took each out, for explaining *never* verdicts.

    ``full`` is the graph as resolved; ``evaluator`` is None without facts."""

    def __init__(
        self,
        graph: CallGraph,
        facts: Facts | None = None,
        entries: Sequence[str] = (),
        stored: PruningState | None = None,
    ) -> None:
        """Prune ``graph``; with ``stored`` (what an earlier run computed for this
        program, facts and entries: ``state()``), only the pruned graph is built."""
        self.full = graph
        self.p = graph.program
        self.values = graph.values
        self.facts = facts if facts is not None else Facts(())
        # without facts too: a guard made of constants and locals assigned once
        # (``if False``, ``n = 2; if n == 0``) has one value in every run
        self.evaluator: GuardEvaluator | None = GuardEvaluator(self.facts)
        self.guard_cuts: dict[SiteKey, GuardCut] = {}
        #: every fact's decided guards: fact text -> guard locations
        self._uses: dict[str, set[Location]] = {f.text: set() for f in self.facts.facts}
        self._subclasses: dict[str, set[str]] = {}
        self._value_names: frozenset[str] = frozenset()
        self._cuttable_memo: dict[str, str | None] = {}
        self._class_names: frozenset[str] = frozenset()
        self.instantiated: set[str] = set()  # classes some of whose instances can exist
        self.alive_classes: set[str] = set()  # those and every base of them
        #: classes made (constructed or used as a value) somewhere in the analysed
        #: code, live or not, and every base of them
        self._made_inside: set[str] = set()
        #: where each class is constructed (live or not), for explanations
        self.constructions: dict[str, list[tuple[str, int]]] = {}
        self.live: set[str] = set()
        self._escaped: set[str] = set()  # classes used as values
        self._made_by_cls: set[str] = set()  # classes built by ``cls(...)``
        self._entry_classes: set[str] = set()  # classes of --entry methods
        #: guards the derived facts decided (for the run's figures)
        self.derived_decided: set[Location] = set()
        if stored is None:
            # what resolution memoises for pruning's questions is forgotten after:
            # the flag stages answer alike with pruning computed here or loaded
            with self.values.forgetting():
                self._compute(entries)
        else:
            self._restore(stored)
        self.rta_cuts: dict[SiteKey, tuple[str, ...]] = {}
        self.graph = self._pruned()

    def _compute(self, entries: Sequence[str]) -> None:
        self._cut_guards()
        self._rta(entries)
        self.derived = derive(
            self.p, self.values, self._subclasses, self.constructions, self._unseen, self.facts
        )
        if self.derived:
            # the facts flagtrace derives (after RTA, which needs no more than the
            # --assume cuts: a construction a derived fact cuts still counted, soundly)
            self.evaluator = GuardEvaluator(self.facts, self.derived.env)
            self._cut_guards()

    def state(self) -> PruningState:
        """What ``Pruning(graph, facts, entries, stored=...)`` needs to be this pruning
        again without evaluating anything (as it was made, before any question)."""
        return PruningState(
            guard_cuts=dict(self.guard_cuts),
            uses={text: frozenset(where) for text, where in self._uses.items()},
            derived_decided=frozenset(self.derived_decided),
            subclasses={base: frozenset(subs) for base, subs in self._subclasses.items()},
            value_names=self._value_names,
            class_names=self._class_names,
            instantiated=frozenset(self.instantiated),
            alive_classes=frozenset(self.alive_classes),
            made_inside=frozenset(self._made_inside),
            constructions={c: tuple(sites) for c, sites in self.constructions.items()},
            live=frozenset(self.live),
            escaped=frozenset(self._escaped),
            made_by_cls=frozenset(self._made_by_cls),
            entry_classes=frozenset(self._entry_classes),
            derived={c: dict(f) for c, f in self.derived.by_class.items()},
        )

    def _restore(self, stored: PruningState) -> None:
        self.guard_cuts = dict(stored.guard_cuts)
        self._uses = {text: set(where) for text, where in stored.uses.items()}
        self.derived_decided = set(stored.derived_decided)
        self._subclasses = {base: set(subs) for base, subs in stored.subclasses.items()}
        self._value_names = stored.value_names
        self._class_names = stored.class_names
        self.instantiated = set(stored.instantiated)
        self.alive_classes = set(stored.alive_classes)
        self._made_inside = set(stored.made_inside)
        self.constructions = {c: list(sites) for c, sites in stored.constructions.items()}
        self.live = set(stored.live)
        self._escaped = set(stored.escaped)
        self._made_by_cls = set(stored.made_by_cls)
        self._entry_classes = set(stored.entry_classes)
        self.derived = Derived({c: dict(f) for c, f in stored.derived.items()}, self.p, self.values)
        if self.derived:
            self.evaluator = GuardEvaluator(self.facts, self.derived.env)

    def fresh(self) -> Pruning:
        """This pruning for another question: the cuts, RTA and derived facts are
        shared; what a question's analysis notes (the guards each fact decided
        while the flag interpreter ran) starts from what pruning itself noted."""
        other = copy.copy(self)
        other._uses = {text: set(where) for text, where in self._uses.items()}
        other.derived_decided = set(self.derived_decided)
        return other

    def notes(self) -> Notes:
        """What the questions asked so far noted: each fact's decided guards, and
        the guards derived facts decided."""
        return Notes(
            {text: frozenset(where) for text, where in self._uses.items()},
            frozenset(self.derived_decided),
        )

    def note_from(self, notes: Notes) -> None:
        """Start noting again from ``notes`` (what was noted before a question), in
        place: a forked worker answers each of its questions from the same start."""
        self._uses = {text: set(where) for text, where in notes.uses.items()}
        self.derived_decided = set(notes.derived)

    def add_notes(self, notes: Notes) -> None:
        """Note also what ``notes`` holds (a question answered in a forked worker)."""
        for text, where in notes.uses.items():
            self._uses.setdefault(text, set()).update(where)
        self.derived_decided.update(notes.derived)

    # ------------------------------------------------------------------ guards

    def _cut_guards(self) -> None:
        evaluator = self.evaluator
        assert evaluator is not None
        for qn, scope in self.p.scopes.items():
            path = scope.location.path
            for i, call in enumerate(scope.calls):
                if not call.guards:
                    continue
                for g in call.guards:
                    d = evaluator.guard(scope, g)
                    if d.truth is not Truth.UNKNOWN:
                        self._used(d, Location(path, g.line))
                found = evaluator.first_false(scope, call.guards)
                if found is not None:
                    self.guard_cuts[(qn, i)] = GuardCut(qn, i, found[0], found[1], path)

    def truth(self, scope: Scope, guard: Guard) -> Truth:
        """The guard under the facts (the flag interpreter asks for branches and reads)."""
        if self.evaluator is None:
            return Truth.UNKNOWN
        d = self.evaluator.guard(scope, guard)
        if d.truth is not Truth.UNKNOWN:
            self._used(d, Location(scope.location.path, guard.line))
        return d.truth

    def decided(self, scope: Scope, guard: Guard) -> Truth:
        """``truth`` without noting the facts used (``flagtrace.noreturn`` asks about
        guards the report does not show)."""
        if self.evaluator is None:
            return Truth.UNKNOWN
        return self.evaluator.guard(scope, guard).truth

    def constant(self, scope: Scope, text: str) -> object:
        """The value of an expression of ``scope`` that only constants and locals
        assigned once make up (``NO_VALUE`` otherwise)."""
        if self.evaluator is None:
            return NO_VALUE
        return self.evaluator.constant(scope, text)

    def _used(self, d: Decision, where: Location) -> None:
        """Note which facts decided the guard at ``where`` (a derived fact is no
        assumption: it is counted aside)."""
        for f in d.facts:
            uses = self._uses.get(f.text)
            if uses is not None:
                uses.add(where)
            else:
                self.derived_decided.add(where)

    def _unseen(self, cls: str) -> bool:
        """May an instance of ``cls`` be made where no construction site shows it
        (rules 2-4 of instantiation, or ``cls(...)``)? Then no constructor constant."""
        return (
            cls in self._escaped
            or any(base in self._made_by_cls for base in self.values.mro(cls))
            or cls in self._entry_classes
            or self._library_made(cls)
        )

    def site_cut(self, scope: str, site: int) -> bool:
        return (scope, site) in self.guard_cuts

    def may_exist(self, cls: str) -> bool:
        """Can an instance of ``cls`` exist, as a typed receiver sees it (see ``_may_exist``)?"""
        return self._may_exist(cls, Resolution.TYPED)

    def uses(self) -> tuple[AssumptionUse, ...]:
        """Each fact with the guards it decided (none: it matched nothing)."""
        return tuple(
            AssumptionUse(f.text, tuple(sorted(self._uses.get(f.text, ()))))
            for f in self.facts.facts
        )

    # ------------------------------------------------------------------ RTA

    def _rta(self, entries: Sequence[str]) -> None:
        p = self.p
        classes = [qn for qn, s in p.scopes.items() if s.kind is ScopeKind.CLASS]
        for cls in classes:
            for base in self.values.mro(cls):
                self._subclasses.setdefault(base, set()).add(cls)
        self._class_names = frozenset(p.scopes[c].name for c in classes)
        self._value_names = self._class_names | frozenset(
            s.name for s in p.scopes.values() if s.kind is ScopeKind.FUNCTION
        )
        # every construction and escape, live or not: a class with none of either
        # anywhere is made outside the analysed code, if at all
        escapes: dict[str, list[str]] = {}
        #: functions used as values: whoever they are handed to may call them
        handed_on: dict[str, list[str]] = {}
        made: dict[SiteKey, list[str]] = {}  # call sites that may instantiate analysed classes
        for qn, scope in p.scopes.items():
            for i, call in enumerate(scope.calls):
                if not self._may_construct(call.func, call.kind):
                    continue
                found = self.values.constructed(qn, i)
                if found:
                    made[(qn, i)] = found
                    for cls in found:
                        self.constructions.setdefault(cls, []).append((qn, i))
            exprs = list(self._escaping(scope))
            found = sorted({c for e in exprs for c in self.values.classes(qn, e)})
            if found:
                escapes[qn] = found
            handed = sorted({f for e in exprs for f in self.values.functions(qn, e)})
            if handed:
                handed_on[qn] = handed
        made_here = set(self.constructions)
        made_here.update(c for found in escapes.values() for c in found)
        self._escaped = {c for found in escapes.values() for c in found}
        for cls in made_here:
            self._made_inside.update(self.values.mro(cls))

        blocked: dict[str, list[str]] = {}  # class -> methods waiting for it to be alive
        todo: deque[str] = deque()

        def make_live(qn: str, resolution: Resolution | None = None) -> None:
            """``qn`` can run (reached by a hop of ``resolution``; None: a root that
            needs an instance of its class, if a method; DIRECT: nothing needed)."""
            if qn in self.live or qn not in p.scopes:
                return
            if resolution is not Resolution.DIRECT:
                cls = self._cuttable_class(qn)
                if cls is not None and not self._may_exist(cls, resolution):
                    blocked.setdefault(cls, []).append(qn)
                    return
            self.live.add(qn)
            todo.append(qn)

        def instantiate(cls: str) -> None:
            if cls in self.instantiated:
                return
            self.instantiated.add(cls)
            for base in self.values.mro(cls):
                if base not in self.alive_classes:
                    self.alive_classes.add(base)
                    for waiting in blocked.pop(base, ()):
                        make_live(waiting, Resolution.DIRECT)

        for cls in classes:
            if self._library_made(cls):
                instantiate(cls)
        named = set(entries)
        for entry in named:
            owner = p.method_class(entry)
            if owner is not None:
                self._entry_classes.add(owner)
                instantiate(owner)

        def make_root(qn: str) -> None:
            """``qn`` may run without a call we see: a method once an instance exists."""
            cls = self._instance_class(qn)
            if cls is not None and not self._may_exist(cls, None):
                blocked.setdefault(cls, []).append(qn)
            else:
                make_live(qn, Resolution.DIRECT)

        graph = self.full
        for qn, scope in p.scopes.items():
            if scope.kind is ScopeKind.MODULE or qn in named:
                make_live(qn, Resolution.DIRECT)
            elif scope.kind is ScopeKind.LAMBDA and not graph.callers(qn):
                make_live(qn, Resolution.DIRECT)
            elif scope.kind is ScopeKind.FUNCTION and (
                not graph.callers(qn) or is_dunder(scope.name)
            ):
                # dunders too: Python calls them where no call is written (``len(x)``,
                # ``x == y``, an instance made by a registry runs its ``__init__``)
                make_root(qn)
        while todo:
            qn = todo.popleft()
            for scope in self._running_with(p.scopes[qn]):
                for i, call in enumerate(scope.calls):
                    if (scope.qualname, i) in self.guard_cuts:
                        continue
                    for cls in made.get((scope.qualname, i), ()):
                        instantiate(cls)
                    if call.kind is CallKind.CALL and self._calls_cls(scope, call.func):
                        made_by = p.method_class(scope.qualname)
                        if made_by is not None:
                            self._made_by_cls.add(made_by)
                            for sub in sorted(self._subclasses.get(made_by, {made_by})):
                                instantiate(sub)
                    for c in graph.site_callees(scope.qualname, i):
                        if c.analysed:
                            make_live(c.qualname, c.resolution)
                for cls in escapes.get(scope.qualname, ()):
                    instantiate(cls)
                for fn in handed_on.get(scope.qualname, ()):
                    make_live(fn)  # a callback: runs whenever it may (a method: on an instance)

    def _may_construct(self, func: Expr, kind: CallKind) -> bool:
        """Can a call of ``func`` instantiate an analysed class? Only if it is spelled
        like one (``Runner(...)``, ``mod.Runner(...)``), or is a ``raise``: a class held
        in a variable got there as a value, and rule 2 counted it where it was used."""
        if kind is CallKind.RAISE:
            return True
        if isinstance(func, NameExpr):
            return func.name in self._class_names
        return isinstance(func, AttrExpr) and func.attr in self._class_names

    def _may_exist(self, cls: str, resolution: Resolution | None) -> bool:
        """Can an instance of ``cls`` (or a subclass) be what a hop of ``resolution``
        runs a method on? Yes when one is made in live code. For a typed hop or a
        root also when nothing in the analysed code makes one, live or not: the
        receiver is then built outside it (a caller, a test, code not analysed), and
        only the weak hops are held to instances made in the analysis."""
        if cls in self.alive_classes:
            return True
        weak = resolution is not None and resolution.weak
        return not weak and cls not in self._made_inside

    def _running_with(self, scope: Scope) -> Iterator[Scope]:
        """``scope`` and the class bodies nested in it (they run when it does)."""
        yield scope
        for child in scope.children:
            cs = self.p.scopes.get(child)
            if cs is not None and cs.kind is ScopeKind.CLASS:
                yield from self._running_with(cs)

    def _cuttable_class(self, qn: str) -> str | None:
        """The class of ``qn`` when ``qn`` is an instance method (runs only on an
        instance), else None."""
        try:
            return self._cuttable_memo[qn]
        except KeyError:
            found = self._cuttable_memo[qn] = self._find_cuttable_class(qn)
            return found

    def _find_cuttable_class(self, qn: str) -> str | None:
        scope = self.p.scopes.get(qn)
        if scope is None or scope.name in NEVER_CUT:
            return None
        return self._instance_class(qn)

    def _instance_class(self, qn: str) -> str | None:
        """The class of ``qn`` when it is a method that runs on an instance."""
        scope = self.p.scopes.get(qn)
        if scope is None or scope.kind is not ScopeKind.FUNCTION or scope.name in CLASS_HOOKS:
            return None
        cls = self.p.method_class(qn)
        if cls is None:
            return None
        kinds = self.values.decorator_kinds(qn)
        if DecoratorKind.STATICMETHOD in kinds or DecoratorKind.CLASSMETHOD in kinds:
            return None
        return cls

    def cuts(self, callee: str, resolution: Resolution) -> bool:
        """Does RTA cut a hop of ``resolution`` to ``callee`` (an instance method of a
        class no instance of which can be its receiver)?"""
        if resolution is Resolution.DIRECT:
            return False
        cls = self._cuttable_class(callee)
        return cls is not None and not self._may_exist(cls, resolution)

    def _cuts_memoised(
        self, callee: str, resolution: Resolution, memo: dict[tuple[str, Resolution], bool]
    ) -> bool:
        """``cuts``, asked once per callee and resolution: its answer depends on
        nothing else once RTA has run (``_pruned``)."""
        key = (callee, resolution)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self.cuts(callee, resolution)
        return found

    def _library_made(self, cls: str) -> bool:
        """Rule 3: instances that library code (or a hook) may make."""
        scope = self.p.scopes[cls]
        for name in self.values.external_bases(cls):
            if name.rpartition(".")[2] not in BENIGN_BASES:
                return True
        if scope.parent is not None:
            for base in scope.bases:
                parent = scope.parent
                if not self.values.classes(parent, base) and not self._external(parent, base):
                    return True  # a base we cannot resolve: it may make instances
        for text in scope.decorator_texts:
            name = text.strip().lstrip("@").split("(")[0].rpartition(".")[2]
            if name not in BENIGN_DECORATORS:
                return True
        for ancestor in self.values.mro(cls)[1:]:
            if "__init_subclass__" in self.p.locals.get(ancestor, ()):
                return True
        return False

    def _external(self, qn: str, expr: Expr) -> bool:
        """Does ``expr`` name something outside the analysed code (a library base)?"""
        return self.values.names_library(qn, expr)

    def _calls_cls(self, scope: Scope, func: Expr) -> bool:
        """``cls(...)`` in a class method (its first parameter called)."""
        if not isinstance(func, NameExpr) or not scope.params:
            return False
        if DecoratorKind.CLASSMETHOD not in self.values.decorator_kinds(scope.qualname):
            return False
        return func.name == scope.params[0].name

    def _escaping(self, scope: Scope) -> Iterator[Expr]:
        """Expressions of ``scope`` that may hand a class (rule 2) or a function (a
        callback) on as a value: names and attributes spelled like an analysed class
        or function, in call arguments (but those of ``isinstance`` and its kind),
        assigned values, displays, returns, yields and parameter defaults."""
        names = self._value_names
        roots: list[Expr] = []
        for call in scope.calls:
            func = call.func
            if isinstance(func, NameExpr) and func.name in INSPECTING_BUILTINS:
                continue
            roots.extend(a.value for a in call.args)
        roots.extend(a.value for a in scope.assignments)
        roots.extend(scope.returns)
        roots.extend(scope.yields)
        roots.extend(p.default for p in scope.params if p.default is not None)
        stack = roots
        while stack:
            expr = stack.pop()
            if isinstance(expr, NameExpr):
                if expr.name in names:
                    yield expr
            elif isinstance(expr, AttrExpr):
                if expr.attr in names:
                    yield expr
            elif isinstance(expr, ContainerExpr):
                stack.extend(expr.items)
                stack.extend(k for k in expr.keys if k is not None)
            elif isinstance(expr, OpaqueExpr):
                stack.extend(expr.parts)
            elif isinstance(expr, SubscriptExpr):
                stack.append(expr.key)

    # ------------------------------------------------------------------ the graph

    def _pruned(self) -> CallGraph:
        """A new call graph without the cut hops, and without any hop out of code
        that cannot run (``self.full`` is unchanged). Edits a copy of the graph
        (``EdgeEditor``): rebuilding it took 7 s on SGLang, copying it one."""
        full = self.full
        resolved = full.resolved
        p = self.p
        site_callees = dict(resolved.site_callees)
        empty = set(resolved.resolved_empty)
        removed: list[tuple[str, str, Location]] = []  # (owner, callee or hub, call location)
        hub_cuts: set[tuple[str, str]] = set()  # (hub, method): cut at every site of the hub
        detached: list[tuple[str, tuple[str, int], Callee]] = []  # a hub's callee kept here
        owners: dict[str, str] = {}
        # Why memoised, and ``cutting`` a set: a hub's by-name methods (hundreds on
        # transformers) are the callees of each of its sites, so asking ``cuts``
        # per callee and testing them against a tuple was quadratic in them
        cut_memo: dict[tuple[str, Resolution], bool] = {}
        for key, callees in resolved.sites():
            scope_qn, index = key
            owner = owners.get(scope_qn)
            if owner is None:
                owner = owners[scope_qn] = owner_of(p, scope_qn)
            whole = key in self.guard_cuts or owner not in self.live
            if whole:
                cut = tuple(c.qualname for c in callees)
            else:
                cut = tuple(
                    c.qualname
                    for c in callees
                    if c.analysed and self._cuts_memoised(c.qualname, c.resolution, cut_memo)
                )
                if cut:
                    self.rta_cuts[key] = cut
            if not cut:
                continue
            cutting = frozenset(cut)
            location = p.scopes[scope_qn].calls[index].location
            hub = full.site_hub(scope_qn, index)
            if hub is None:
                removed.extend((owner, callee, location) for callee in cut)
            else:
                # a hub's methods are all by-name: each is cut, or not, at every
                # site of the hub alike (``cuts`` asks the method and resolution)
                removed.extend(
                    (owner, c.qualname, location)
                    for c in callees
                    if c.resolution is not Resolution.BY_NAME and c.qualname in cutting
                )
                by_name = [c for c in callees if c.resolution is Resolution.BY_NAME]
                here = {c.qualname for c in by_name if c.qualname in cutting}
                wide = (
                    set()
                    if whole
                    else {q for q in here if self._cuts_memoised(q, Resolution.BY_NAME, cut_memo)}
                )
                hub_cuts.update((hub, q) for q in wide)
                if here - wide:  # cut with the whole site, or through a typed twin here
                    removed.append((owner, hub, location))
                    detached.extend((owner, key, c) for c in by_name if c.qualname not in cutting)
            kept = tuple(c for c in callees if c.qualname not in cutting)
            site_callees[key] = kept
            if not kept:
                empty.add(key)
        dead_unresolved = [
            u
            for u in full.unresolved
            if (u.scope, u.site) in self.guard_cuts
            or owner_of(p, u.scope or u.caller) not in self.live
        ]
        if not removed and not hub_cuts and not dead_unresolved:
            return full
        for u in dead_unresolved:  # a call that cannot run is no unresolved call either
            empty.add((u.scope, u.site))
        editor = EdgeEditor(full.nx)
        by_edge: dict[tuple[str, str], set[Location]] = {}
        for owner, callee, location in removed:
            by_edge.setdefault((owner, callee), set()).add(location)
        for (owner, callee), locations in by_edge.items():
            refs = editor.refs(owner, callee)
            if refs is not None:
                editor.set_refs(
                    owner,
                    callee,
                    [r for r in refs if ref_location(p, r) not in locations],
                )
        for hub, method in hub_cuts:
            editor.remove(hub, method)
        if detached:  # the by-name methods kept at a site that left its hub
            for owner, (scope_qn, index), kept_here in detached:
                qn = kept_here.qualname
                refs = [*(editor.refs(owner, qn) or []), (scope_qn, index, kept_here)]
                full.sort_refs(refs)
                editor.set_refs(owner, qn, refs)
        pruned: ResolvedProgram = replace(
            resolved, site_callees=site_callees, resolved_empty=frozenset(empty)
        )
        dead = set(map(id, dead_unresolved))
        unresolved = tuple(u for u in full.unresolved if id(u) not in dead)
        return full.edited(editor, pruned, unresolved)

    @property
    def active(self) -> bool:
        """Can anything be cut: a hop of the graph, or (with facts) a branch?"""
        return self.graph is not self.full or self.evaluator is not None

    def dead_entry(self, qn: str) -> bool:
        """An instance method of a class whose instances are all made in code that
        cannot run: no entry."""
        cls = self._cuttable_class(qn)
        return cls is not None and not self._may_exist(cls, None)

    # ------------------------------------------------------------------ explaining

    def explain(self, steps: Sequence[WitnessStep]) -> PrunedHop | None:
        """The first step of a witness (found without pruning) that cannot run:
        a hop behind a false guard, a call of a method of a class never
        instantiated, an ``enter``/``set``/read behind a false guard."""
        for step in steps:
            if step.before_entry:
                continue
            scope = self.p.scopes.get(step.function)
            if scope is None:
                continue
            for s, i in self._sites_at(scope, step.location):
                cut = self.guard_cuts.get((s.qualname, i))
                if cut is not None:
                    return self._guard_hop(step, cut)
                if step.callee is not None and step.callee in self.rta_cuts.get(
                    (s.qualname, i), ()
                ):
                    return self._class_hop(step, step.callee)
            if self.evaluator is not None:
                for g in step.guards:
                    d = self.evaluator.guard(scope, g)
                    if d.false:
                        cut = GuardCut(scope.qualname, -1, g, d, scope.location.path)
                        return self._guard_hop(step, cut)
        return None

    def _sites_at(self, scope: Scope, location: Location) -> Iterator[tuple[Scope, int]]:
        """The call sites of ``scope`` (and its class bodies) on the line of ``location``."""
        for s in self._running_with(scope):
            for i, call in enumerate(s.calls):
                if call.location.line == location.line and call.location.path == location.path:
                    yield s, i

    def _shown(self, scope: str, guard: Guard) -> str:
        """A guard as written, a local assigned once followed by its value."""
        text = unparen(" ".join(guard.text.split()))
        shown = f"not ({text})" if guard.negated else text
        if self.evaluator is not None and scope in self.p.scopes:
            value = self.evaluator.local_text(self.p.scopes[scope], guard.text.strip())
            if value is not None:
                shown += f" (= {' '.join(value.split())})"
        return shown

    def _guard_hop(self, step: WitnessStep, cut: GuardCut) -> PrunedHop:
        facts = tuple(f.text for f in cut.decision.facts)
        where = Location(cut.path, cut.guard.line)
        shown = self._shown(cut.scope, cut.guard)
        return PrunedHop(
            CutKind.GUARD,
            step.function,
            step.callee,
            step.location,
            f"{step.function} {_verb(step)} at {step.location.short} only if {shown} "
            f"({where.short}), {_false_when(facts)}",
            shown,
            where,
            facts,
        )

    def _class_hop(self, step: WitnessStep, callee: str) -> PrunedHop:
        cls = self._cuttable_class(callee) or callee.rpartition(".")[0]
        sites = self.constructions.get(cls, [])
        for sub in sorted(self._subclasses.get(cls, ())):
            if sub != cls:
                sites = sites + self.constructions.get(sub, [])
        cuts = [self.guard_cuts[k] for k in sites if k in self.guard_cuts]
        facts: tuple[str, ...] = ()
        guard_text: str | None = None
        guard_at: Location | None = None
        if not sites:
            why = "nothing in the analysed code constructs it"
        elif cuts and len(cuts) == len(sites):
            first = cuts[0]
            scope = self.p.scopes[first.scope]
            call = scope.calls[first.site]
            facts = tuple(dict.fromkeys(f.text for c in cuts for f in c.decision.facts))
            guard_text = self._shown(first.scope, first.guard)
            guard_at = Location(first.path, first.guard.line)
            owner = scope.qualname
            more = f" (and {len(cuts) - 1} more)" if len(cuts) > 1 else ""
            why = (
                f"its construction {call.text} at {call.location.short} in {owner}{more} "
                f"runs only if {guard_text} ({guard_at.short}), {_false_when(facts)}"
            )
        else:
            why = "no code that can run constructs it"
        return PrunedHop(
            CutKind.NOT_INSTANTIATED,
            step.function,
            callee,
            step.location,
            f"{step.function} calls {callee} at {step.location.short}, but {cls} is never "
            f"instantiated: {why}",
            guard_text,
            guard_at,
            facts,
            cls,
        )


def _false_when(facts: Sequence[str]) -> str:
    """What made a guard false: the facts, or nothing but constants."""
    if not facts:
        return "which is always false (constants and locals assigned once)"
    return f"false when {' and '.join(facts)}"


def _verb(step: WitnessStep) -> str:
    if step.step.value == "read":
        return "reads the flag"
    if step.step.value == "enter":
        return f"enters {step.callee}"
    if step.step.value == "set":
        return f"calls the setter {step.callee}"
    return f"calls {step.callee}"


#: a question's part in pruning: the ``--assume`` facts and the named entries
Question = tuple[tuple[str, ...], tuple[str, ...]]


class StoredPrunings(Protocol):
    """Prunings computed for one resolved program by earlier runs (kept by
    ``flagtrace.program_store``, which this stage does not know)."""

    def get(self, question: Question) -> PruningState | None: ...

    def put(self, question: Question, state: PruningState) -> None: ...


#: per call graph, the pruning last computed for it and the key it was computed
#: for; weak, so a graph and its pruning go together
_SHARED: weakref.WeakKeyDictionary[CallGraph, tuple[Question, Pruning]] = (
    weakref.WeakKeyDictionary()
)


def pruning_for(
    graph: CallGraph,
    assume: Sequence[str],
    entries: Sequence[str],
    stored: StoredPrunings | None = None,
) -> Pruning:
    """``Pruning(graph, facts, entries)``, computed once for a graph and reused by
    every later question with the same facts and entries (each gets ``fresh()``);
    with ``stored``, loaded from an earlier run when it has one, else stored there.

    Why: pruning does not depend on the flag, and it cost 13 s of each flag's
    analysis on transformers when a process asked about several flags (the sweep,
    a script looping over flags), and as much in each new process asking a new
    question. A malformed fact raises ``FactError`` as before."""
    key: Question = (tuple(assume), tuple(entries))
    found = _SHARED.get(graph)
    if found is None or found[0] != key:
        facts = Facts(parse_facts(assume))
        state = stored.get(key) if stored is not None else None
        pruning = Pruning(graph, facts, entries, stored=state)
        if stored is not None and state is None:
            stored.put(key, pruning.state())
        found = (key, pruning)
        _SHARED[graph] = found
    return found[1].fresh()
