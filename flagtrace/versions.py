"""Which bindings of a local name can reach each read of it (flow-sensitive locals).

Why: resolution was flow-insensitive, like PyCG: after ``a = f; b = a; a = g;
b()`` it said ``b()`` may call ``g`` too. The summary walk now records, for each
read of a bare name, the assignments (by index into the scope's
``assignments``) that can reach it, so the resolver evaluates only those. The
walk goes in source order, and this module follows its control flow: branches
join, loops reach a fixpoint, ``try`` handlers and ``with`` bodies see every
binding made before a possible exception.

Why reaching definitions and not SSA names (``a#2``): the names stay as written,
so nothing that reads the summary by name (effects, hazards, interpreters,
reports) changes, and no version can ever show in a witness. The cost is one
index per ``NameExpr`` and one table per scope (``model.Scope.reaching``).

Reads that escape stay flow-insensitive (their table entry is None): a name a
scope does not bind (a closure's free variable, a module global read in a
function: they see every version), a name declared ``global`` or ``nonlocal``,
a module-level name some function declares ``global``, a name a nested scope
declares ``nonlocal``, and every name read or bound inside a generator
expression after its first iterable (it runs when consumed, not where written).

Loops without re-walking: the body is walked once (walking it twice would
duplicate its call sites). At the loop head every name reads "what it held
before the loop" plus a *token* that stands for "what the end of the body (or a
``continue``) binds"; at the end of the loop each token's value is known and is
substituted into the reads of the body and into the states after the loop.
Tokens are made lazily, per (loop, name), only for names that are read.

No CST here: ``flagtrace.summarize`` and ``flagtrace.expressions`` call in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: the value a name has on entry to the scope: parameters, imports and other
#: bindings that are not assignments, the enclosing scope for a class body
ENTRY = -1

Reach = frozenset[int]


@dataclass(slots=True)
class State:
    """The bindings that can reach the current point, by name.

    A name not in ``defs`` holds its entry value, plus the token of each open
    loop in ``loops`` (whose head this state has passed since the name was last
    bound): tokens are made only when such a name is read.
    """

    defs: dict[str, Reach]
    loops: frozenset[int] = frozenset()

    def copy(self) -> State:
        return State(dict(self.defs), self.loops)


@dataclass(slots=True)
class _Loop:
    ident: int
    first_read: int  # the index of the first read of the body in the table
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)


class LocalFlow:
    """The reaching bindings of one scope while the walk goes through it."""

    def __init__(self) -> None:
        self.state: State | None = State({})
        #: per read (``NameExpr.at``): its name and reaching bindings, or None
        self.table: list[tuple[str, Reach] | None] = []
        #: every binding so far, in order: (assignment index or ENTRY, name)
        self.log: list[tuple[int, str]] = []
        #: names bound where their order is unknown (in a generator expression)
        self.insensitive: set[str] = set()
        self._loops: list[_Loop] = []
        #: per open loop, the token of each name read since its head
        self._tokens: dict[int, dict[str, int]] = {}
        self._token_count = 0
        self._next_loop = 0
        self._suspended = 0
        #: container items followed so far (``d[s:a]``), by the base name and by the key
        self._items_of: dict[str, set[str]] = {}
        self._items_at: dict[str, set[str]] = {}

    # ---- reads and bindings

    def read(self, name: str) -> int:
        """Record a read of ``name`` here; its ``NameExpr.at``."""
        if self._suspended or self.state is None:
            self.table.append(None)
        else:
            self.table.append((name, self._lookup(self.state, name)))
        return len(self.table) - 1

    def define(self, name: str, index: int, augmented: bool = False) -> None:
        """``name`` is bound by assignment ``index`` (``a += x``: added to what it held)."""
        if name in self._items_of:  # another container, or the same one mutated
            self._forget(self._items_of[name])
        self.log.append((index, name))
        if self._suspended:
            self.insensitive.add(name)
        if self.state is None:
            return
        if augmented:
            self.state.defs[name] = self._lookup(self.state, name) | {index}
        else:
            self.state.defs[name] = frozenset({index})

    def bind(self, name: str) -> None:
        """``name`` is bound by something that is no assignment (an import, ``except
        E as name``, a ``case`` capture): it reads as the scope's entry value."""
        self.define(name, ENTRY)

    def store_item(self, item: tuple[str, str], index: int, augmented: bool = False) -> None:
        """``d["a"] = v`` (assignment ``index``): the item reads as ``v`` until
        something else may change it. Another name may be the same container,
        so a store to its ``["a"]`` forgets every ``["a"]`` followed so far."""
        base, key = item
        name = base + key
        self._forget(self._items_at.get(key, set()) - {name})
        self._items_of.setdefault(base, set()).add(name)
        self._items_at.setdefault(key, set()).add(name)
        self.define(name, index, augmented)

    def kill_items(self) -> None:
        """Something ran that may change any container (a call, a store under a key
        not followed, an ``await``, a ``yield``, a class body): every item followed
        reads as whatever the container holds (flow-insensitive) again."""
        if self._items_at and self.state is not None:
            for names in self._items_at.values():
                self._forget(names)

    def _forget(self, items: set[str]) -> None:
        if self.state is not None:
            for name in items:
                if name in self.state.defs or self.state.loops:
                    self.state.defs[name] = _ENTRY_ONLY

    def delete(self, name: str) -> None:
        """``del name``: unbound until bound again."""
        if name in self._items_of:
            self._forget(self._items_of[name])
        if self._suspended:
            self.insensitive.add(name)
        if self.state is not None:
            self.state.defs[name] = frozenset()

    def suspend(self) -> None:
        """Reads and bindings from here to ``resume`` run at an unknown time."""
        self._suspended += 1

    def resume(self) -> None:
        self._suspended -= 1

    # ---- branches

    def fork(self) -> State | None:
        """The current state, to walk another arm from later."""
        return None if self.state is None else self.state.copy()

    def start(self, state: State | None) -> None:
        """Walk on from ``state`` (a fork)."""
        self.state = None if state is None else state.copy()

    def join(self, *states: State | None) -> None:
        """Walk on from where any of ``states`` may have left off."""
        self.state = self.merge(states)

    def merge(self, states: Iterable[State | None]) -> State | None:
        live = [s for s in states if s is not None]
        if not live:
            return None
        if len(live) == 1:
            return live[0].copy()
        names = {n for s in live for n in s.defs}
        loops = frozenset().union(*(s.loops for s in live))
        defs: dict[str, Reach] = {}
        for n in names:
            defs[n] = frozenset().union(*(self._lookup(s, n) for s in live))
        return State(defs, loops)

    def stop(self) -> None:
        """``return`` or ``raise``: nothing after it in the block runs."""
        self.state = None

    def mark(self) -> int:
        """A point in the binding log, for ``exceptional``."""
        return len(self.log)

    def exceptional(self, before: State | None, mark: int) -> State | None:
        """Where an exception raised since ``mark`` may leave things: what held
        at ``before``, plus every binding made since (any of them may have run)."""
        if before is None:
            return None
        out = before.copy()
        for index, name in self.log[mark:]:
            out.defs[name] = self._lookup(out, name) | {index}
        return out

    # ---- loops

    def loop_enter(self) -> None:
        """At a loop's head: from here, every name may also hold what the end of
        the body binds (a token, resolved by ``loop_exit``)."""
        ident = self._next_loop
        self._next_loop += 1
        self._loops.append(_Loop(ident, len(self.table)))
        if self.state is not None:
            s = self.state
            self.state = State(
                {n: v | {self._token(ident, n)} for n, v in s.defs.items()}, s.loops | {ident}
            )

    def loop_break(self) -> None:
        if self._loops and self.state is not None:
            self._loops[-1].breaks.append(self.state)
        self.state = None

    def loop_continue(self) -> None:
        if self._loops and self.state is not None:
            self._loops[-1].continues.append(self.state)
        self.state = None

    def pending_jumps(self) -> tuple[int, int]:
        """How many ``break``/``continue`` states the innermost loop holds (for
        ``finally``: see ``after_finally``)."""
        if not self._loops:
            return 0, 0
        return len(self._loops[-1].breaks), len(self._loops[-1].continues)

    def after_finally(self, since: tuple[int, int], final: State | None) -> None:
        """A ``break`` or ``continue`` in a ``try`` body runs its ``finally`` first:
        the jumps recorded since ``since`` also see what the ``finally`` bound."""
        if not self._loops or final is None:
            return
        loop = self._loops[-1]
        for jumps, start in ((loop.breaks, since[0]), (loop.continues, since[1])):
            for i in range(start, len(jumps)):
                merged = self.merge((jumps[i], final))
                assert merged is not None
                jumps[i] = merged

    def loop_exit(self, head: State | None) -> tuple[State | None, list[State]]:
        """The loop's body ends here (the current state flows back to the head).

        ``head`` is the state where the loop test fails (taken at the head, after
        the test). Resolves the loop's tokens everywhere; returns the state the
        ``else`` clause starts from and the states of the ``break``s.
        """
        loop = self._loops.pop()
        back = [s for s in (self.state, *loop.continues) if s is not None]
        ident = loop.ident
        names = set(self._tokens.get(ident, ()))
        names.update(n for s in back for n in s.defs)
        values: dict[int, Reach] = {}
        for n in sorted(names):
            tok = self._token(ident, n)
            got: set[int] = set()
            for s in back:
                got |= self._lookup(s, n)
            got.discard(tok)
            values[tok] = frozenset(got)
        for i in range(loop.first_read, len(self.table)):
            entry = self.table[i]
            if entry is not None:
                self.table[i] = (entry[0], _substitute(entry[1], values))
        after = self._close(head, ident, values)
        breaks = [b for b in (self._close(s, ident, values) for s in loop.breaks) if b is not None]
        self._tokens.pop(ident, None)
        self.state = None
        return after, breaks

    def _close(self, state: State | None, ident: int, values: dict[int, Reach]) -> State | None:
        """``state`` with the tokens of loop ``ident`` replaced by their values."""
        if state is None:
            return None
        defs = {n: _substitute(v, values) for n, v in state.defs.items()}
        if ident in state.loops:
            loops = state.loops - {ident}
            for n, tok in list(self._tokens.get(ident, {}).items()):
                if n not in defs:
                    base = frozenset({ENTRY, *(self._token(o, n) for o in loops)})
                    defs[n] = base | values.get(tok, frozenset())
            return State(defs, loops)
        return State(defs, state.loops)

    # ---- the result

    def freeze(
        self, escaping: set[str], local_names: Iterable[str]
    ) -> tuple[tuple[int, ...] | None, ...]:
        """The ``Scope.reaching`` table: None where the read is flow-insensitive
        (an escaping or non-local name, or every binding reaches it anyway)."""
        local = set(local_names)
        escaping = escaping | self.insensitive
        items = {n for names in self._items_of.values() for n in names}
        every: dict[str, set[int]] = {}
        for index, name in self.log:
            every.setdefault(name, {ENTRY}).add(index)
        interned: dict[Reach, tuple[int, ...]] = {}
        out: list[tuple[int, ...] | None] = []
        for entry in self.table:
            if entry is None:
                out.append(None)
                continue
            name, reach = entry
            if name in items:
                # an item: strong only where every path stored it since anything
                # that may change the container; else what the container holds
                weak = ENTRY in reach or name.partition("[")[0] in escaping
            else:
                weak = name not in local or reach >= every.get(name, {ENTRY})
            if weak or name in escaping or any(i < ENTRY for i in reach):  # < ENTRY: a token
                out.append(None)
            else:
                got = interned.get(reach)
                if got is None:
                    got = interned[reach] = tuple(sorted(reach))
                out.append(got)
        return tuple(out)

    # ---- helpers

    def _lookup(self, state: State, name: str) -> Reach:
        got = state.defs.get(name)
        if got is not None:
            return got
        if not state.loops:
            return _ENTRY_ONLY
        return frozenset({ENTRY, *(self._token(lp, name) for lp in state.loops)})

    def _token(self, loop: int, name: str) -> int:
        tokens = self._tokens.setdefault(loop, {})
        tok = tokens.get(name)
        if tok is None:
            self._token_count += 1
            tok = tokens[name] = -1 - self._token_count
        return tok


_ENTRY_ONLY: Reach = frozenset({ENTRY})


def _substitute(reach: Reach, values: dict[int, Reach]) -> Reach:
    if not any(i in values for i in reach):
        return reach
    out: set[int] = set()
    for i in reach:
        out |= values.get(i, {i})
    return frozenset(out)
