"""The state one resolution carries: the program, what parameters hold, and
the memo tables, grouped by how long an answer stays true.

A *round* resolves every call site once with the parameter values known so
far; its answers (a variable's values, a call's result) can grow in the next
round, so they live in a ``RoundMemo`` that each round starts afresh. Facts
that no round can change (which scope binds a name, what an annotation names,
a class's MRO) are kept for the whole run in a ``RunMemo``.

``ResolverBase`` declares the questions the parts of the resolver ask each
other (``flow``, ``classes`` and ``rounds`` each answer some), so that each
part can live in its own module and still type-check.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from flagtrace.model import (
    Approximation,
    Callee,
    CallSite,
    ContainerExpr,
    DecoratorKind,
    Import,
    NameExpr,
    Resolution,
    SubscriptExpr,
)
from flagtrace.resolve.program import Program, Stored
from flagtrace.resolve.values import ANY_VALUE, WIDE, WIDEN_AT, Same, Value, Values

T = TypeVar("T")
#: a callee value, the layer that found it, and the receiver it was looked up on
Target = tuple[Value, Resolution, Value | None]
#: a field store ``base.attr = value``: (scope, value, annotation)
FieldStore = tuple[str, Stored, str | None]
#: what calling a value runs: (callee name, analysed?, bound self, function)
CallTarget = tuple[str, bool, "Value | BoundSelf | None", str | None]
#: a parameter, ``(function, name)``, and the values an argument binds to it
Binding = tuple[tuple[str, str], Values]


class BoundSelf:
    """The receiver of a bound method whose instance is not known here: the
    first parameter is taken, but gets no value from this call."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "BOUND"


BOUND = BoundSelf()


#: How many times a component of lookups that need each other is evaluated
#: before its answers are taken as they stand (``RoundMemo.solve``). Answers
#: only grow from one evaluation to the next where lookups are monotone, and
#: then settle in a few; the limit is for the rest (a value cap, ``if not
#: out`` fallbacks), counted in ``RoundMemo.unsettled``.
MAX_EVALUATIONS = 12


#: An answer of this many values or more is kept as one object per distinct set
#: (``RoundMemo.interned``). Why: on SGLang 0.5.23 the same ~1,900 values (what
#: every model's ``forward`` may return) are the answer of thousands of lookups;
#: one object each made equal answers cost a full comparison wherever a record
#: is checked (``holds``), a full sort wherever they are visited in order
#: (``values.ordered``), and their own memory.
INTERN_AT = 32


class _Marker:
    """A tag no lookup key can equal (``RoundMemo.note``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: what a lookup read that is not another lookup: a parameter's values
#: (``(PARAM, function, name)``, seen as their number: they only grow) and the
#: stores of a round into a container (``(STORES, origin)``, seen as a version)
PARAM = _Marker("PARAM")
STORES = _Marker("STORES")
#: ``RoundMemo.current``: no answer without computing it
RED = _Marker("RED")
#: the first item of a lookup's frame (``RoundMemo.frames``) while it is under
#: way: it read nothing a round changes so far, something that may change, or
#: a lookup under way outside ``solve``
STATIC = _Marker("STATIC")
DYNAMIC = _Marker("DYNAMIC")
TAINTED = _Marker("TAINTED")
#: a lookup's record (``RoundMemo.records``): the round it last held in (negated:
#: the round it was found not to hold in), pairs of what it read (a lookup or
#: a base read) and the answer seen, then its answer. It is the list that
#: collected the reads while the lookup was under way (``RoundMemo.frames``,
#: whose first item is then ``STATIC``, ``DYNAMIC`` or ``TAINTED``): one
#: object per lookup
Record = list[Any]


@dataclass(slots=True)
class RoundMemo:
    """Answers valid for one round (parameter values may grow in the next)."""

    variables: dict[tuple[str, str], Values] = field(default_factory=dict)
    #: a local's value at a read, by the bindings that reach it (``Names.local_value``)
    reaching: dict[tuple[str, str, tuple[int, ...]], Values] = field(default_factory=dict)
    fields: dict[tuple[str, str], Values] = field(default_factory=dict)
    call_results: dict[tuple[str, int], Values] = field(default_factory=dict)
    returns: dict[str, Values] = field(default_factory=dict)
    callee_values: dict[tuple[str, int], tuple[list[Target], str | None]] = field(
        default_factory=dict
    )
    field_bases: dict[tuple[str, Same], Values] = field(default_factory=dict)
    container_contents: dict[str, dict[str, set[Value]]] = field(default_factory=dict)
    container_stores: dict[str, dict[str, set[Value]]] = field(default_factory=dict)
    #: container origin -> every value it holds, under any key: what iterating it
    #: yields (``Objects.container_items``). SGLang 0.5.23's registries hold
    #: hundreds of values, and the union made again at every read was half of its
    #: last rounds
    container_values: dict[str, Values] = field(default_factory=dict)
    #: (container values, key or None) -> what ``container_items`` answers for
    #: each of them, joined (``Objects._items_of``)
    container_joins: dict[tuple[Values, str | None], Values] = field(default_factory=dict)
    class_attributes: dict[tuple[str, str], Values] = field(default_factory=dict)
    external_dispatch: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    fields_by_class: dict[str, dict[str, list[FieldStore]]] = field(default_factory=dict)
    #: declared-only values (``resolve.declared``), asked after the last round
    declared: dict[object, Values] = field(default_factory=dict)
    #: ``base.attr`` by (scope, the stored expression: ``Same``)
    attributes: dict[tuple[str, Same], Values] = field(default_factory=dict)

    # -- the lookups under way (``solve``)

    #: lookup under way -> its position on the stack of lookups under way
    open: dict[object, int] = field(default_factory=dict)
    #: per position: the lowest position of a lookup under way whose answer
    #: (unfinished) the lookup there has read, itself or through another
    lows: list[int] = field(default_factory=list)
    #: per position: whether a lookup above read the unfinished answer there
    closed: list[bool] = field(default_factory=list)
    #: per position: the finished lookups of the component that position heads
    #: so far, with where their answers go once the component is solved
    members: list[dict[object, tuple[dict[Any, Any], object]]] = field(default_factory=list)
    #: a component's current answers, while it is being solved
    tentative: dict[object, Any] = field(default_factory=dict)
    #: a finished lookup of a component being solved, evaluated in its current
    #: evaluation -> the position of the lookup its component hangs from
    member_at: dict[object, int] = field(default_factory=dict)
    #: how many tentative answers have changed (``solve`` compares before/after)
    changes: int = 0
    #: how many times a lookup met itself, and how many components were
    #: solved; components left at ``MAX_EVALUATIONS`` without settling
    cuts: int = 0
    components: int = 0
    unsettled: int = 0
    #: evaluations of a component's lookups that took the last answer (``_reads_hold``)
    skipped: int = 0
    #: a lookup of a component being solved -> the values a rule adds only
    #: when it found nothing else (``if_empty``), held back until the
    #: component is solved without them
    deferred: dict[object, Values] = field(default_factory=dict)
    #: a lookup of a component being solved -> the held-back values it takes
    #: whatever else it finds, once the component was solved without them
    forced: dict[object, Values] = field(default_factory=dict)
    #: while components are being solved (recording only): each lookup of one
    #: -> what it read in its last evaluation (its frame), and each lookup of
    #: one, its head included -> how to ask it again (``solve``'s arguments).
    #: An evaluation takes a lookup's last answer when all it read answers as
    #: before (``_reads_hold``) instead of computing it again.
    member_reads: dict[object, list[Any]] = field(default_factory=dict)
    member_solve: dict[object, tuple[dict[Any, Any], object, Callable[[], Any], Any]] = field(
        default_factory=dict
    )

    # -- what each lookup read, kept from one round to the next (``current``)

    #: whether lookups record what they read (the rounds; not the value
    #: questions of the flag stages)
    recording: bool = False
    #: this round's number, and the records of the rounds so far, shared;
    #: ``last``: no round follows (nothing is recorded)
    records: dict[object, Record] = field(default_factory=dict)
    round: int = 0
    last: bool = False
    #: per lookup under way (and per call site being resolved): ``STATIC``,
    #: ``DYNAMIC`` or ``TAINTED``, then pairs of what it read
    frames: list[list[Any]] = field(default_factory=list)
    #: lookups that read nothing a round changes (no parameter, no container
    #: store, no other lookup but these), with their answer: for the whole run,
    #: shared; what reads one does not record it
    static: dict[object, object] = field(default_factory=dict)
    #: the resolver's parameter values, and each container origin's version of
    #: stores (bumped by a round whose stores into it differ from the last one's)
    params: dict[tuple[str, str], set[Value]] = field(default_factory=dict)
    store_versions: dict[str, int] = field(default_factory=dict)
    #: the lookups answered of the tables ``Resolver.settle`` keeps, shared:
    #: variables and reaching definitions (whose lookup is their key), fields
    #: (lookup -> key)
    kept: set[Any] = field(default_factory=set)
    kept_fields: dict[object, object] = field(default_factory=dict)
    #: every distinct answer of ``INTERN_AT`` values or more, once (``solve``), shared
    interned: dict[Values, Values] = field(default_factory=dict)
    #: answers taken from an earlier round's record, and computed
    reused: int = 0
    computed: int = 0
    #: an answer of more values than this is ``WIDE`` (``widen``); answers widened
    widen_at: int = WIDEN_AT
    widened: int = 0

    def solve(
        self,
        table: dict[Any, Any],
        key: object,
        busy: object,
        compute: Callable[[], T],
        empty: T,
    ) -> T:
        """``compute()``, memoised in ``table[key]`` once it no longer depends
        on a lookup under way; ``busy`` names the lookup while it is under way.

        Why: lookups can need each other (``x = f(x)``, a recursive function's
        return, two fields stored from each other). A lookup that meets one
        under way reads that one's current answer (at first nothing); the
        lookups that did so, up to the lowest one they met (a strongly
        connected component, found as Tarjan's algorithm finds them), are
        evaluated again with the answers of the last evaluation, until no
        answer changes, and only then memoised. The answers are then the least
        solution of the component's equations (where lookups are monotone),
        whichever lookup of it was asked first: resolving the sites in another
        order gives the same call graph (``tests/test_cycles.py``)."""
        opened = self.open
        lows = self.lows
        at = opened.get(busy)
        frames = self.frames
        if at is not None:  # met itself: its current answer
            self.cuts += 1
            self.closed[at] = True
            if at < lows[-1]:
                lows[-1] = at
            answer = self.tentative.get(busy, empty)
            if frames:  # the reader is of the component: ``_reads_hold`` asks this again
                frames[-1] += (busy, answer)
            return answer  # type: ignore[no-any-return]
        if self.member_at:
            at = self.member_at.get(busy)
            if at is not None:  # finished in this evaluation of its component
                if at < lows[-1]:
                    lows[-1] = at
                answer = self.tentative[busy]
                if frames:
                    frames[-1] += (busy, answer)
                return answer  # type: ignore[no-any-return]
        if self.recording:
            held = self.current(busy)
            if held is not RED:  # what it read answers as it did: its answer holds
                self.reused += 1
                table[key] = held
                self.note(busy, held)
                return held  # type: ignore[return-value]
            self.computed += 1
            frames.append([STATIC])
        here = len(lows)
        opened[busy] = here
        lows.append(here)
        closed = self.closed
        closed.append(False)
        self.members.append({})
        changes_before = self.changes
        try:
            reads = self.member_reads.pop(busy, None) if self.member_reads else None
            if reads is not None and busy in self.tentative and self._reads_hold(reads):
                value = cast(T, self.tentative[busy])  # it read what it read before
                self.skipped += 1
            else:
                value = self.widen(compute())
            settled = closed[here]
            if settled and lows[here] == here:  # heads a component
                if self.recording:
                    self.member_solve[busy] = (table, key, compute, empty)
                value = self._settle(busy, here, value, changes_before, compute, empty)
        finally:
            del opened[busy]
            low = lows.pop()
            closed.pop()
            members = self.members.pop()
            read = frames.pop() if self.recording else None
        if isinstance(value, frozenset) and len(value) >= INTERN_AT:
            value = cast(T, self.interned.setdefault(value, value))
        if read is not None:
            self._record(busy, read, bool(low < here or members or settled), value, table, key)
        if low < here:  # a member of a component headed further down
            if read is not None:
                self.member_solve[busy] = (table, key, compute, empty)
                if read[0] is not TAINTED:  # else it read what no pair shows
                    self.member_reads[busy] = read
            previous = self.tentative.get(busy, empty)
            if value != previous:
                self.changes += 1
            self.tentative[busy] = value
            self.member_at[busy] = low
            joined = self.members[low]
            joined[busy] = (table, key)
            for member, where in members.items():
                joined[member] = where
                if member in self.member_at:
                    self.member_at[member] = low
            if low < lows[-1]:
                lows[-1] = low
            return value
        # final: this answer and its component's
        table[key] = value
        if members:
            for member, (member_table, member_key) in members.items():
                answer = self.tentative.pop(member, None)
                if self.member_at.pop(member, None) is not None:
                    member_table[member_key] = answer
                self.deferred.pop(member, None)
                self.forced.pop(member, None)
        if self.tentative:
            self.tentative.pop(busy, None)
        if self.deferred:
            self.deferred.pop(busy, None)
            self.forced.pop(busy, None)
        if self.member_solve and not self.tentative:  # no component is being solved
            self.member_solve.clear()
            self.member_reads.clear()
        self.changes = changes_before
        return value

    def _settle(
        self,
        busy: object,
        here: int,
        value: T,
        changes: int,
        compute: Callable[[], T],
        empty: T,
    ) -> T:
        """Evaluate the component headed at position ``here`` again until no
        answer in it changes (``solve``); ``value`` is its first evaluation's,
        ``changes`` the count of changed answers before it."""
        evaluations = 1
        while True:
            previous = self.tentative.get(busy, empty)
            if self.changes == changes and value == previous:
                if not self._force_deferred(busy, value, self.members[here]):
                    self.components += 1
                    return value
            if evaluations >= MAX_EVALUATIONS:
                self.unsettled += 1
                return value
            self.tentative[busy] = value
            for member in self.members[here]:
                self.member_at.pop(member, None)
            self.closed[here] = False
            changes = self.changes
            value = self.widen(compute())
            evaluations += 1
            if self.lows[here] < here or not self.closed[here]:
                return value

    def widen(self, value: T) -> T:
        """``value``, or ``WIDE`` when it is a set of more than ``widen_at``
        values or holds ``WIDE``'s value among others (top absorbs: what may be
        anything is nothing more precise). See ``values.WIDE`` for why."""
        if isinstance(value, frozenset) and len(value) > 1:
            if len(value) > self.widen_at or ANY_VALUE in value:
                self.widened += 1
                return cast(T, WIDE)
        return value

    def _reads_hold(self, reads: list[Any]) -> bool:
        """Whether everything a lookup of a component being solved read in its
        last evaluation (``reads``, its frame then) answers as it did; each
        pair is noted again for the lookup under way, whose frame this is.

        Why: a component is evaluated again, all of it, until no answer
        changes (``_settle``), and on torch components of 2,000-10,000 lookups
        took 12 evaluations, most lookups answering as before in most of them;
        computing one again (joining every store of a field, say) costs far
        more than asking again what it read. The answers of each evaluation
        are those computing every lookup would give, since a lookup's answer
        is a function of what it read: a final answer (a table's) reads the
        same; a lookup of the component is asked again (``solve``)."""
        frame = self.frames[-1]
        mark = len(frame)
        solving = self.member_solve
        for i in range(1, len(reads), 2):
            busy = reads[i]
            seen = reads[i + 1]
            how = solving.get(busy)
            if how is None:  # a final answer, a parameter, a store: as it was
                frame += (busy, seen)
                if frame[0] is STATIC:
                    frame[0] = DYNAMIC
                continue
            table, key, compute, empty = how
            now = table.get(key, RED)
            if now is RED:
                now = self.solve(table, key, busy, compute, empty)  # notes itself
            else:  # finished since, in a component of its own
                frame += (busy, now)
            if now is not seen and now != seen:
                del frame[mark:]
                return False
        return True

    def _record(
        self,
        busy: object,
        read: list[Any],
        of_component: bool,
        value: object,
        table: dict[Any, Any],
        key: object,
    ) -> None:
        """Keep what lookup ``busy`` read and answered (``solve``), and tell the
        lookup that asked for it (``note``)."""
        if of_component or read[0] is TAINTED:
            # its answer came from answers that were not final: none is kept
            self.records.pop(busy, None)
        elif read[0] is STATIC:
            # read nothing a round changes: the answer for the whole run
            self.records.pop(busy, None)
            self.static[busy] = value
        elif self.last:
            # no later round reuses it: only its answer, for what reads it
            self.records[busy] = [self.round, value]
        else:
            read[0] = self.round  # the frame becomes the record: no copy
            read.append(value)
            self.records[busy] = read
        if read[0] is not TAINTED and not of_component:
            if table is self.variables or table is self.reaching:
                self.kept.add(busy)
            elif table is self.fields:
                self.kept_fields[busy] = key
        self.note(busy, value)

    def note(self, busy: object, answer: object) -> None:
        """A lookup under way (or a call site being resolved) read ``answer`` of
        ``busy``: one of what its own answer depends on, unless ``busy`` reads
        nothing a round changes (``static``)."""
        frames = self.frames
        if frames and busy not in self.static:
            read = frames[-1]
            read += (busy, answer)
            if read[0] is STATIC:
                read[0] = DYNAMIC

    def taint(self) -> None:
        """The lookup under way read one that is under way too, not through
        ``solve``: its answer is not kept to reuse in a later round."""
        if self.frames:
            self.frames[-1][0] = TAINTED

    def current(self, busy: object) -> object:
        """The answer lookup ``busy`` has in this round if an earlier round's
        record of it holds: everything it read answers as it did then (its
        parameters hold as many values, its containers the same stores, the
        lookups it read the same answers, checked the same way). ``RED`` when
        there is no record, or something it read may answer otherwise.

        Why: a later round resolves again the call sites of every function
        that gained parameter values and of their callers, and about 98% of
        them come out the same; their lookups mostly read nothing that
        changed. A record is kept only for a lookup that met no lookup under
        way (``solve``), so its answer is a function of what it read."""
        record = self.records.get(busy)
        if record is None:
            return self.static.get(busy, RED)
        number = self.round
        checked = record[0]
        if checked == number:  # computed, or found to hold, in this round
            return record[-1]
        if checked == -number:  # found not to hold in this round, or being checked
            return RED
        record[0] = -number
        if self.holds(record):
            record[0] = number
            return record[-1]
        return RED

    def holds(self, record: list[Any]) -> bool:
        """Whether every (lookup, answer) pair of ``record`` (between its first
        item and its last, the answer it gave) answers as it did (``current``)."""
        params = self.params
        versions = self.store_versions
        current = self.current
        for i in range(1, len(record) - 1, 2):
            busy = record[i]
            seen = record[i + 1]
            if type(busy) is tuple and busy and busy[0] is PARAM:
                now: object = len(params.get((busy[1], busy[2]), ()))
            elif type(busy) is tuple and busy and busy[0] is STORES:
                now = versions.get(busy[1], 0)
            else:
                now = current(busy)
                if now is RED:
                    return False
            if now is not seen and now != seen:
                return False
        return True

    def if_empty(self, busy: object, out: set[Value], fallback: Values) -> None:
        """Add ``fallback`` to ``out`` (the answer of lookup ``busy``, under
        way) if ``out`` is empty.

        Why not simply so: the rule is not monotone (more found elsewhere can
        make ``out`` non-empty and drop ``fallback``), so inside a component
        where it would decide on answers not final yet, the component could
        settle on different answers depending on the lookup it was entered
        at. There the fallback is held back: the component is solved without
        any, then the lookups it left empty all take theirs (``forced``), and
        it is solved again (``_force_deferred``). Outside a component ``out``
        is final, and the rule applies as written."""
        forced = self.forced.get(busy)
        if forced is not None:
            out |= forced
            return
        if out or not fallback:
            return
        here = len(self.lows) - 1
        if self.lows[here] < here or self.closed[here]:
            self.deferred[busy] = fallback
            return
        out |= fallback

    def _force_deferred(
        self, head: object, value: object, members: dict[object, tuple[dict[Any, Any], object]]
    ) -> bool:
        """A component settled: let every lookup of it that is empty and held a
        fallback back take it (``if_empty``); True if any did (solve again)."""
        if not self.deferred:
            return False
        found = False
        for lookup in (head, *members):
            fallback = self.deferred.get(lookup)
            if fallback is None or lookup in self.forced:
                continue
            answer = value if lookup is head else self.tentative.get(lookup)
            if lookup is not head and lookup not in self.member_at:
                continue  # not evaluated in the last evaluation: not of the component now
            if not answer:
                self.forced[lookup] = fallback
                self.member_reads.pop(lookup, None)  # its answer changes: computed again
                found = True
        return found

    def copy(self) -> RoundMemo:
        """A memo that answers as this one and records what it learns on its own:
        every table copied, the tables' values shared. Sound because an entry,
        once its lookup has finished, is never changed in place outside a round
        (``collect_stores`` replaces the container tables whole)."""
        other = copy.copy(self)
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, dict | set | list):
                setattr(other, name, value.copy())
        return other


#: The ``RunMemo`` tables keyed and valued by names and values, never by an
#: expression: a stored program holds them apart (``ValueQuery.named_state_apart``).
NAMED_RUN_TABLES = (
    "binding_scopes",
    "direct_names",
    "annotations",
    "mro",
    "external_bases",
    "alternative_bases",
    "decorators",
)


@dataclass(slots=True)
class RunMemo:
    """Answers no round changes: they depend on definitions and imports only."""

    binding_scopes: dict[tuple[str, str], str | None] = field(default_factory=dict)
    direct_names: dict[tuple[str, str], bool] = field(default_factory=dict)
    annotations: dict[tuple[str, str], Values] = field(default_factory=dict)
    mro: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: container displays seen so far, by origin (values of earlier rounds refer to them)
    containers: dict[str, tuple[str, ContainerExpr]] = field(default_factory=dict)
    external_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    external_subclasses: dict[str, list[str]] | None = None
    #: class -> the classes one of its base expressions may name, if several
    alternative_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: analysed class -> its analysed subclasses, direct and indirect (sorted)
    subclasses: dict[str, tuple[str, ...]] | None = None
    decorators: dict[str, frozenset[DecoratorKind]] = field(default_factory=dict)
    #: function -> the parameters it returns unchanged, and its other return
    #: expressions (``Objects.passthrough``); absent: not computed yet
    passthrough: dict[str, tuple[frozenset[str], tuple[Stored, ...]] | None] = field(
        default_factory=dict
    )


class ResolverBase:
    """State shared by the parts of the resolver, and the questions they ask
    each other (answered by the mixins in ``flow``, ``classes``, ``rounds``)."""

    def __init__(self, program: Program) -> None:
        self.p = program
        self.param_values: dict[tuple[str, str], set[Value]] = defaultdict(set)
        #: container origin -> scopes that read its items (resolved again when a
        #: round stores more into it: a registry filled through a decorator's parameter)
        self.container_readers: dict[str, set[str]] = defaultdict(set)
        self.memo = RoundMemo()
        self.run_memo = RunMemo()
        #: one ``Callee`` per distinct (name, resolution, analysed, approximation),
        #: shared by every site and round that finds it (10M made on SGLang 0.5.23
        #: otherwise, most of them equal), and the by-name callees of each name
        self.callee_records: dict[tuple[str, Resolution, bool, Approximation | None], Callee] = {}
        self.by_name_records: dict[str, dict[str, Callee]] = {}

    # -- values (flow.py)

    def eval(self, qn: str, expr: Stored) -> Values:
        raise NotImplementedError

    def lookup(self, qn: str, name: str) -> Values:
        raise NotImplementedError

    def variable(self, scope_qn: str, name: str) -> Values:
        raise NotImplementedError

    def local_value(self, qn: str, expr: NameExpr) -> Values:
        raise NotImplementedError

    def stored_item(self, qn: str, expr: SubscriptExpr) -> Values | None:
        raise NotImplementedError

    def attribute(self, value: Value, attr: str, from_qn: str) -> Values:
        raise NotImplementedError

    def returns(self, qn: str) -> Values:
        raise NotImplementedError

    def name_is_direct(self, qn: str, name: str) -> bool:
        raise NotImplementedError

    def module_attribute(self, module: str, name: str) -> Values:
        raise NotImplementedError

    def annotation_values(self, qn: str, annotation: str) -> Values:
        raise NotImplementedError

    def import_value(self, imp: Import) -> Values:
        raise NotImplementedError

    # -- objects (objects.py)

    def instance_attribute(self, cls: str, attr: str) -> Values:
        raise NotImplementedError

    def _field_stores(self, mro: tuple[str, ...], attr: str) -> list[FieldStore]:
        raise NotImplementedError

    # -- classes (classes.py)

    def mro(self, cls: str) -> tuple[str, ...]:
        raise NotImplementedError

    def class_attribute(self, cls: str, attr: str) -> Values:
        raise NotImplementedError

    def own_member(self, cls: str, attr: str) -> Values:
        raise NotImplementedError

    def external_bases_of(self, cls: str) -> tuple[str, ...]:
        raise NotImplementedError

    def alternative_bases(self, cls: str) -> tuple[str, ...]:
        raise NotImplementedError

    def external_dispatch(self, dotted: str, attr: str) -> list[tuple[str, str]]:
        raise NotImplementedError

    def subclasses(self, cls: str) -> tuple[str, ...]:
        raise NotImplementedError

    def binding_scope(self, qn: str, name: str) -> str | None:
        raise NotImplementedError

    def is_classmethod(self, qn: str) -> bool:
        raise NotImplementedError

    def decorator_kinds(self, qn: str) -> frozenset[DecoratorKind]:
        raise NotImplementedError

    def is_staticmethod(self, qn: str) -> bool:
        raise NotImplementedError

    # -- calls (calls.py)

    def callee_values(self, qn: str, index: int, site: CallSite) -> tuple[list[Target], str | None]:
        raise NotImplementedError

    def call_targets(self, value: Value) -> Iterator[CallTarget]:
        raise NotImplementedError

    def bind_arguments(
        self,
        fn: str,
        site: CallSite,
        bound_self: Value | BoundSelf | None,
        arg_values: list[Values],
    ) -> list[Binding]:
        raise NotImplementedError
