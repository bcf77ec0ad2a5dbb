"""Rounds: resolve every call site, bind arguments to parameters, and repeat
for the scopes whose parameters gained values, until nothing changes.

Evaluation is demand-driven and memoised within a round; parameter values come
from the call edges of the previous round, and rounds repeat until no new
parameter binding appears (higher-order functions need a few).

Each round also records what every lookup and every call site read, and a later
round takes an earlier answer whose reads all answer as they did
(``RoundMemo.current``): of the sites rounds 2-4 resolve again on SGLang 0.5.9,
81-88% read nothing that changed. The answers are those of computing everything
again (``tests/test_round_records.py``).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

from flagtrace.model import Callee
from flagtrace.resolve.calls import Calls
from flagtrace.resolve.classes import ClassModel
from flagtrace.resolve.declared import Declared
from flagtrace.resolve.names import Names
from flagtrace.resolve.objects import Objects
from flagtrace.resolve.program import Program
from flagtrace.resolve.state import RED, STATIC, TAINTED, Record, RoundMemo
from flagtrace.resolve.values import (
    MAX_VALUES,
    WIDEN_AT,
    Value,
    Values,
    forget_orders,
    order_key,
)

MAX_ROUNDS = 4
SiteKey = tuple[str, int]
#: The last round's memo tables ``settle`` keeps: the answers pruning's value
#: questions need most (SGLang 0.5.23's pruning took 59 s without any, 16 s with
#: these), keyed by names alone, never by an expression, so that a stored
#: program can hold them in a pickle of their own (``flagtrace.program_store``).
KEPT_ANSWERS = ("variables", "reaching", "fields")


class Resolver(Calls, Declared, Objects, Names, ClassModel):
    """Runs the rounds; afterwards ``site_callees`` holds every site's callees."""

    #: answers of more values than this are widened (``values.WIDE``); tests set less
    widen_at: int = WIDEN_AT

    def __init__(self, program: Program) -> None:
        program.index_all()  # the rounds read every table
        super().__init__(program)
        self.site_callees: dict[SiteKey, tuple[Callee, ...]] = {}
        self.resolved_empty: set[SiteKey] = set()  # sites that call nothing of ours, knowingly
        #: the generator functions each site resumes (runs the body of), see flagtrace.generators
        self.resumed: dict[SiteKey, frozenset[str]] = {}
        self._callers: dict[str, set[str]] | None = None
        #: per call site: what resolving it read (``RoundMemo.frames``) and,
        #: last, what it gave; kept from round to round while the rounds run
        self._site_records: dict[SiteKey, list[Any]] = {}
        #: the same per container store, for collecting (``collect_stores``)
        self._store_records: dict[int, list[Any]] = {}
        self.sites_reused = 0
        self.stores_reused = 0

    def run(self) -> None:
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, 20_000))
        try:
            todo: list[str] | None = None  # None: every scope
            stored: dict[str, dict[str, set[Value]]] = {}
            records: dict[object, Record] = {}
            static: dict[object, object] = {}
            interned: dict[Values, Values] = {}
            # collecting's lookups answer against the last round's stores: their
            # records are apart from the round's own (``static`` answers, which
            # read no store, are the same in both; the tables a stored program
            # keeps take those of them it answered first, ``_keep_held_answers``)
            collecting_records: dict[object, Record] = {}
            kept: set[Any] = set()
            kept_fields: dict[object, object] = {}
            versions: dict[str, int] = {}
            for number in range(1, MAX_ROUNDS + 1):
                # what flows into containers, evaluated against the last round's
                # stores; then the round's own memo, against the new ones only.
                # Why not keep the answers collecting made: a call result it
                # needed (a registry read inside a factory) was memoised with the
                # stores of before, and the round then resolved that registry
                # call to nothing (SGLang's ATTENTION_BACKENDS[backend_str](self),
                # once a decorator's result stopped standing for every backend)
                self.memo = RoundMemo(
                    container_stores=self._copy_stores(stored),
                    recording=True,
                    records=collecting_records,
                    static=static,
                    interned=interned,
                    kept=kept,  # a static answer it finds first is kept as the round's
                    kept_fields=kept_fields,
                    round=number,
                    last=number == MAX_ROUNDS,
                    params=self.param_values,
                    store_versions=versions,  # bumped below, once collected
                    widen_at=self.widen_at,
                )
                self.stores_reused += self.collect_stores(self._store_records)
                stores = self.memo.container_stores
                for origin in sorted(stores.keys() | stored.keys()):
                    if stores.get(origin, {}) != stored.get(origin, {}):
                        versions[origin] = versions.get(origin, 0) + 1
                # what lookups read is recorded, and kept from round to round:
                # a lookup whose reads all answer as they did is not computed
                # again, nor a call site (``RoundMemo.current``)
                self.memo = RoundMemo(
                    container_stores=stores,
                    recording=True,
                    records=records,
                    static=static,
                    interned=interned,
                    kept=kept,
                    kept_fields=kept_fields,
                    round=number,
                    last=number == MAX_ROUNDS,
                    params=self.param_values,
                    store_versions=versions,
                    widen_at=self.widen_at,
                )
                if todo is not None:
                    todo = self._with_container_readers(todo, stored)
                stored = {k: dict(v) for k, v in stores.items()}
                changed = self._one_round(todo)
                if not changed:
                    break
                todo = self._affected_by(changed)
            self._keep_held_answers()
            self._forget_records()
        finally:
            forget_orders()
            sys.setrecursionlimit(old_limit)

    def settle(self) -> None:
        """Forget what only the rounds needed, once their result has been read:
        the sites' callees (``ResolvedProgram`` holds its own copy), the callers
        index, and the last round's memo but for its container stores and the
        tables of ``KEPT_ANSWERS``.

        Why most of the memo goes: the flag stages' value questions
        (``ValueQuery``) must be answered from the same state whether resolution
        ran in this process or its result was loaded (``flagtrace.program_store``):
        a memo answer cut at a recursive lookup depends on what was memoised
        before. What is kept is stored with the program; the rest was a quarter of
        it, and most of the memory that storing it took."""
        self.site_callees = {}
        self.resolved_empty = set()
        self.resumed = {}
        self._callers = None
        memo = self.memo
        self.memo = RoundMemo(
            container_stores=memo.container_stores,
            widen_at=self.widen_at,
            **{name: getattr(memo, name) for name in KEPT_ANSWERS},
        )

    def _forget_records(self) -> None:
        """Drop what only the rounds needed: the records (about as many as the
        answers of a round) would otherwise live as long as the last memo."""
        memo = self.memo
        memo.recording = False
        memo.records = {}
        memo.static = {}
        memo.interned = {}
        memo.kept = set()
        memo.kept_fields = {}
        memo.params = {}
        memo.store_versions = {}
        self._site_records = {}
        self._store_records = {}

    def _keep_held_answers(self) -> None:
        """Give the last round's tables of ``KEPT_ANSWERS`` every answer an
        earlier round recorded that still holds: a later round reused lookups
        whole, so it did not ask what they asked, and the flag stages' value
        questions would compute those again (``settle``)."""
        memo = self.memo
        tables: list[tuple[dict[Any, Any], object, Any]] = [
            (memo.reaching if len(busy) == 3 else memo.variables, busy, busy) for busy in memo.kept
        ]
        tables += [(memo.fields, busy, key) for busy, key in memo.kept_fields.items()]
        for table, busy, key in tables:
            if key not in table:
                held = memo.current(busy)
                if held is not RED:
                    table[key] = held

    @staticmethod
    def _copy_stores(stores: dict[str, dict[str, set[Value]]]) -> dict[str, dict[str, set[Value]]]:
        return {origin: {k: set(v) for k, v in slots.items()} for origin, slots in stores.items()}

    def _with_container_readers(
        self, todo: list[str], before: dict[str, dict[str, set[Value]]]
    ) -> list[str]:
        """``todo`` and the scopes that read a container whose stores grew since the
        last round: a registry filled by a decorator (``REGISTRY[name] = cls`` with
        ``cls`` a parameter) holds nothing until the decorator's parameter is bound,
        and ``MODELS[name](...)`` elsewhere must then be resolved again."""
        grown = [
            origin
            for origin, slots in self.memo.container_stores.items()
            if slots != before.get(origin, {})
        ]
        extra = {qn for origin in grown for qn in self.container_readers.get(origin, ())}
        if not extra - set(todo):
            return todo
        return sorted(set(todo) | extra)

    def _one_round(self, scopes: list[str] | None) -> set[str]:
        """Resolve the call sites of ``scopes`` (all when None) and bind arguments
        to parameters; the functions whose parameters gained a value."""
        new_bindings: dict[tuple[str, str], set[Value]] = defaultdict(set)
        names = self.round_order(list(self.p.scopes) if scopes is None else scopes)
        memo = self.memo
        recording = memo.recording
        records = self._site_records
        for qn in names:
            scope = self.p.scopes[qn]
            for i, site in enumerate(scope.calls):
                record = records.get((qn, i)) if recording else None
                if record is not None and memo.holds(record):
                    result = record[-1]  # read nothing that answers otherwise now
                    self.sites_reused += 1
                elif recording:
                    memo.frames.append([STATIC])
                    try:
                        result = self.resolve_site(qn, i, site)
                    finally:
                        read = memo.frames.pop()
                    if read[0] is TAINTED or memo.last:
                        records.pop((qn, i), None)
                    else:
                        read.append(result)
                        records[(qn, i)] = read
                else:
                    result = self.resolve_site(qn, i, site)
                callees, bindings, knowingly_empty, resumed = result
                self.site_callees[(qn, i)] = callees
                if resumed:
                    self.resumed[(qn, i)] = resumed
                else:
                    self.resumed.pop((qn, i), None)
                if knowingly_empty:
                    self.resolved_empty.add((qn, i))
                else:
                    self.resolved_empty.discard((qn, i))
                for key, values in bindings:
                    new_bindings[key] |= values
        changed: set[str] = set()
        for key, bound in new_bindings.items():
            current = self.param_values[key]
            if len(current) >= MAX_VALUES:
                continue
            added = bound - current
            if added:
                room = MAX_VALUES - len(current)
                if len(added) > room:  # the cap holds for one large binding too
                    added = set(sorted(added, key=order_key)[:room])
                current |= added
                changed.add(key[0])
        return changed

    def round_order(self, scopes: list[str]) -> list[str]:
        """The order a round resolves ``scopes`` in: as given (the program's
        order, each scope's calls in source order). Answers do not depend on it
        (``RoundMemo.solve``); ``tests/test_cycles.py`` resolves in other orders
        through this to check that they do not."""
        return scopes

    def _affected_by(self, changed: set[str]) -> list[str]:
        """Scopes whose call sites may resolve differently now that ``changed``
        functions' parameters hold more values: those functions and what they
        nest, their callers (call results flow back), and every scope calling a
        method on an attribute those functions assign (``self.x = param``)."""
        p = self.p
        if self._callers is None:
            callers: dict[str, set[str]] = defaultdict(set)
            for (qn, _), callees in self.site_callees.items():
                for c in callees:
                    callers[c.qualname].add(qn)
            self._callers = callers
        out: set[str] = set()
        expanded: set[str] = set()
        frontier = set(changed)
        for _ in range(3):  # callers of callers: results flow up a few levels
            nxt: set[str] = set()
            # ``expanded``, not ``out``: a function nested in another of the frontier
            # is in ``out`` already, and skipping its callers made the set depend on
            # the order the frontier (a set of strings) was visited in, which is
            # PYTHONHASHSEED's: two runs of one tree resolved different call graphs
            for qn in frontier - expanded:
                expanded.add(qn)
                out.add(qn)
                scope = p.scopes.get(qn)
                if scope is not None:
                    out.update(scope.children)
                nxt |= self._callers.get(qn, set())
            frontier = nxt
        # a display evaluated in one of these scopes may hold more now (``[f,
        # last(extra)]`` with ``extra`` a parameter that gained values): its readers
        # are resolved again, or ``for handler in DEFAULTS`` kept its first answer
        for origin, (display_scope, _) in self.run_memo.containers.items():
            if display_scope in out:
                out.update(self.container_readers.get(origin, ()))
        attrs = {a.target.attr for qn in changed for a in p.scopes[qn].assignments if a.target.attr}
        for attr in attrs:
            out.update(p.attr_users.get(attr, ()))
        # ``global handler; handler = param``: the calls through that global
        rebound = {
            a.target.name
            for qn in changed
            for a in p.scopes[qn].assignments
            if a.target.name is not None and a.target.name in p.scopes[qn].globals_declared
        }
        for name in sorted(rebound):
            out.update(p.name_users.get(name, ()))
        return sorted(qn for qn in out if qn in p.scopes)
