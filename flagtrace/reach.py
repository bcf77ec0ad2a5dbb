"""Reach: can an entry point run a read of the flag while the flag is set?

The flag's state is tiny: it may be *unset* (its initial value), *set* (any
other value), or either. Function bodies are interpreted flow-sensitively
(statement order, ``with`` bodies, ``try/finally``, branches, loops, early
returns); calls apply the callee's *transfer* (what it leaves the flag as),
computed to a fixpoint for the few functions that can reach a write.

Interprocedural reachability is a search over (function, state-on-entry)
pairs; the witness is the path with the fewest by-name hops, shortest among
those, from the entry to a read that runs with the flag set.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from flagtrace.callgraph import CallGraph
from flagtrace.effects import FlagEffects, ValueKind, classify_const, sets_flag
from flagtrace.model import (
    Branch,
    CallExpr,
    CallKind,
    CallStep,
    ConstExpr,
    Flow,
    Guard,
    Location,
    RaiseStep,
    ReadStep,
    Resolution,
    ReturnStep,
    Scope,
    ScopeKind,
    TryBlock,
    WithBlock,
    WriteStep,
    YieldStep,
)


@dataclass(frozen=True, slots=True)
class SetEvent:
    """Where the flag became set: entering a context manager, or a setter call."""

    kind: str  # "enter" | "set"
    function: str
    location: Location
    via: str  # the setter's qualname
    text: str


@dataclass(frozen=True, slots=True)
class State:
    unset: bool
    set: bool
    origin: SetEvent | None = None  # set inside the current function (None: inherited)

    @property
    def key(self) -> tuple[bool, bool]:
        return (self.unset, self.set)

    def join(self, other: State | None) -> State:
        if other is None:
            return self
        return State(self.unset or other.unset, self.set or other.set, self.origin or other.origin)


UNSET = State(True, False)
SET = State(False, True)


_FAR = (1 << 30, 0)  # the cost of a node the witness search has not reached


def join(a: State | None, b: State | None) -> State | None:
    if a is None:
        return b
    return a.join(b)


@dataclass(slots=True)
class Run:
    """What interpreting one function body from one entry state observed."""

    calls: list[tuple[int, State]] = field(default_factory=list)  # (site, state before the call)
    reads: list[tuple[Location, str | None, State]] = field(default_factory=list)
    exit: State | None = None  # normal returns
    raised: State | None = None  # exceptions leaving the function
    yields: State | None = None


class Interpreter:
    """Abstract interpretation of flows for one flag."""

    def __init__(self, effects: FlagEffects) -> None:
        self.fx = effects
        self.p = effects.resolver.p
        self.site_callees = effects.resolver.site_callees
        self.transfer: dict[tuple[str, bool], tuple[bool, bool]] = {}  # on normal return
        self.raise_transfer: dict[tuple[str, bool], tuple[bool, bool]] = {}  # on an exception
        self.writers = self._functions_reaching_writes()
        self.setter_uses: list[tuple[str, Location]] | None = None  # filled on demand by verdicts
        self._protected_memo: dict[str, bool] = {}
        self._reading: set[str] | None = None  # transfers read by the run in progress
        self._site_memo: dict[
            tuple[str, int], tuple[object, tuple[bool, tuple[str, ...], tuple[str, ...]]]
        ] = {}
        self._compute_transfers()

    # ---------------------------------------------------------------- transfers

    def _functions_reaching_writes(self) -> set[str]:
        callers: dict[str, set[str]] = {}
        for (qn, _), callees in self.site_callees.items():
            for c in callees:
                callers.setdefault(c.qualname, set()).add(qn)
        out: set[str] = set()
        todo = deque(self.fx.writes)
        while todo:
            qn = todo.popleft()
            if qn in out:
                continue
            out.add(qn)
            todo.extend(callers.get(qn, ()))
        return out

    def _transfer(self, qn: str, entry_set: bool) -> tuple[bool, bool]:
        """(may be unset, may be set) after ``qn`` returns normally; records the read."""
        if self._reading is not None:
            self._reading.add(qn)
        return self.transfer.get((qn, entry_set), (entry_set is False, entry_set))

    def _raised(self, qn: str, entry_set: bool) -> tuple[bool, bool]:
        """(may be unset, may be set) when an exception leaves ``qn``; records the read."""
        if self._reading is not None:
            self._reading.add(qn)
        return self.raise_transfer.get((qn, entry_set), (False, False))

    def _compute_transfers(self) -> None:
        """Least fixpoint: every function starts as 'never returns' and only gains
        exits, so a cycle cannot keep a state alive that no path produces.

        Each function's run records whose transfers it read (through calls,
        entered context managers, exits); only those readers run again when a
        transfer grows. Transfers are four booleans per
        function that only ever go from False to True, so this terminates. Each
        pass runs, in callee-first order, only the functions marked dirty (a
        transfer they read grew): acyclic code runs once per entry state, and a
        cycle reruns only what its growth reaches."""
        for qn in self.writers:
            for entry_set in (False, True):
                self.transfer[(qn, entry_set)] = (False, False)
                self.raise_transfer[(qn, entry_set)] = (False, False)
        readers: dict[str, set[str]] = {}
        order = self._callees_first()
        dirty = set(order)
        while dirty:  # passes in callees-first order; a clean function is skipped
            for qn in order:
                if qn not in dirty:
                    continue
                dirty.discard(qn)
                if self._run_transfer(qn, readers):
                    dirty.update(readers.get(qn, ()))

    def _run_transfer(self, qn: str, readers: dict[str, set[str]]) -> bool:
        """Interpret ``qn`` from both entry states; grow its transfers. True if they grew."""
        scope = self.p.scopes.get(qn)
        if scope is None or scope.kind is ScopeKind.CLASS:
            return False
        self._reading = set()
        changed = False
        try:
            for entry_set in (False, True):
                run = self.run(scope, SET if entry_set else UNSET)
                out = run.exit.key if run.exit is not None else (False, False)
                exc = run.raised.key if run.raised is not None else (False, False)
                old_out = self.transfer[(qn, entry_set)]
                old_exc = self.raise_transfer[(qn, entry_set)]
                out = (out[0] or old_out[0], out[1] or old_out[1])  # only ever grows
                exc = (exc[0] or old_exc[0], exc[1] or old_exc[1])
                if old_out != out or old_exc != exc:
                    self.transfer[(qn, entry_set)] = out
                    self.raise_transfer[(qn, entry_set)] = exc
                    changed = True
            for callee in self._reading:
                readers.setdefault(callee, set()).add(qn)
        finally:
            self._reading = None
        return changed

    def _callees_first(self) -> list[str]:
        """The writers, callees before callers where the call graph allows (the
        strongly connected components in reverse topological order)."""
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(sorted(self.writers))
        for (qn, _), callees in self.site_callees.items():
            if qn in self.writers:
                graph.add_edges_from(
                    (qn, c.qualname)
                    for c in callees
                    if c.qualname in self.writers and c.qualname != qn
                )
        condensed = nx.condensation(graph)
        order: list[str] = []
        for component in reversed(
            list(
                nx.lexicographical_topological_sort(
                    condensed, key=lambda c: min(condensed.nodes[c]["members"])
                )
            )
        ):
            order.extend(sorted(condensed.nodes[component]["members"]))
        return order

    def is_cm(self, qn: str) -> bool:
        scope = self.p.scopes.get(qn)
        return (
            scope is not None
            and scope.is_generator
            and any(t.endswith("contextmanager") for t in scope.decorator_texts)
        )

    def _site_callees(
        self, qualname: str, site: int
    ) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
        """A call site's callees as the transfers see them, memoised (a by-name
        site can have hundreds): whether some analysed callee cannot change the
        flag (the state passes through it), the analysed callees that can (not
        context managers: entering one is the ``with``'s business), and every
        callee that can raise with the flag changed. Recomputed when the site's
        callees change (jedi settles sites while verdicts are made)."""
        callees = self.site_callees.get((qualname, site), ())
        memo = self._site_memo.get((qualname, site))
        if memo is not None and memo[0] is callees:
            return memo[1]
        passive = False
        active: list[str] = []
        raising: list[str] = []
        for c in callees:
            changes = c.qualname in self.writers and not self.is_cm(c.qualname)
            if changes:
                raising.append(c.qualname)
            if c.analysed:
                if changes:
                    active.append(c.qualname)
                else:
                    passive = True
        split = (passive, tuple(active), tuple(raising))
        self._site_memo[(qualname, site)] = (callees, split)
        return split

    def apply_call(self, scope: Scope, site: int, state: State) -> State:
        """The state after a call, given the callees' transfers."""
        passive, active, _ = self._site_callees(scope.qualname, site)
        if not active:
            return state
        result: State | None = state if passive else None
        call = scope.calls[site]
        for qn in active:
            param_write = self._parameter_write(qn)
            if param_write is not None:
                result = join(result, self._param_setter(scope, call, qn, param_write, state))
                continue
            outs: list[tuple[bool, bool]] = []
            if state.unset:
                outs.append(self._transfer(qn, False))
            if state.set:
                outs.append(self._transfer(qn, True))
            unset = any(o[0] for o in outs)
            set_ = any(o[1] for o in outs)
            origin = state.origin
            if set_ and state.unset and self._transfer(qn, False)[1]:
                origin = (
                    origin
                    if state.set
                    else SetEvent("set", scope.qualname, call.location, qn, call.text)
                )
            result = join(result, State(unset, set_, origin if set_ else None))
        return result if result is not None else state

    def _parameter_write(self, qn: str) -> str | None:
        for w in self.fx.writes.get(qn, ()):
            if w.kind is ValueKind.PARAMETER:
                return w.param
        return None

    def _param_setter(self, scope: Scope, call: object, qn: str, param: str, state: State) -> State:
        """``set_flag(True)``: the argument decides."""
        from flagtrace.model import CallSite

        assert isinstance(call, CallSite)
        target = self.p.scopes[qn]
        names = [p.name for p in target.params]
        value = None
        if self.p.method_class(qn) is not None and names:
            names = names[1:]
        for i, arg in enumerate(call.args):
            if arg.keyword == param or (
                arg.keyword is None and i < len(names) and names[i] == param
            ):
                value = arg.value
        initial = self.fx.flag.initial_kind
        if isinstance(value, ConstExpr):
            sets = sets_flag(classify_const(value.value), initial)
        else:
            sets = None
        event = SetEvent("set", scope.qualname, call.location, qn, call.text)
        if sets is True:
            return State(False, True, event)
        if sets is False:
            return UNSET
        return State(True, True, state.origin if state.set else event)

    # ---------------------------------------------------------------- bodies

    def run(
        self,
        scope: Scope,
        entry: State,
        resume: State | None = None,
        on_call: Callable[[int, State], None] | None = None,
    ) -> Run:
        out = Run()
        ctx = _Ctx(scope, entry, resume, out)
        end = self._block(scope.flow, entry, ctx)
        out.exit = join(out.exit, end)
        return out

    def _block(self, flow: Iterable[Flow], state: State | None, ctx: _Ctx) -> State | None:
        for step in flow:
            if state is None:
                return None
            state = self._step(step, state, ctx)
        return state

    def _step(self, step: Flow, state: State, ctx: _Ctx) -> State | None:
        t = type(step)
        scope = ctx.scope
        if t is CallStep:
            site = step.site  # type: ignore[union-attr]
            ctx.run.calls.append((site, state))
            for acc in self.fx.accessor_callees(scope, site):
                ctx.run.reads.append((scope.calls[site].location, acc, state))
            call = scope.calls[site]
            if call.kind is not CallKind.CALL:
                return state
            entered = self._enter_context_call(scope, site, state)
            if entered is not None:
                return entered
            self._callee_raises(scope, site, state, ctx)
            return self.apply_call(scope, site, state)
        if t is ReadStep:
            if self.fx.is_flag_read(scope, step):  # type: ignore[arg-type]
                ctx.run.reads.append((step.location, None, state))  # type: ignore[union-attr]
            return state
        if t is WriteStep:
            w = self.fx.write_of(step)  # type: ignore[arg-type]
            if w is None:
                return state
            if w.kind is ValueKind.RESTORE:
                return ctx.entry
            sets = sets_flag(w.kind, self.fx.flag.initial_kind)
            event = SetEvent(
                "set", scope.qualname, w.location, scope.qualname, f"{self.fx.flag.name} = {w.text}"
            )
            if sets is True:
                return State(False, True, event)
            if sets is False:
                return UNSET
            return State(True, True, state.origin if state.set else event)
        if t is YieldStep:
            ctx.run.yields = join(ctx.run.yields, state)
            return ctx.resume if ctx.resume is not None else state
        if t is ReturnStep or t is RaiseStep:
            # leaving through enclosing ``with`` exits and ``finally`` blocks,
            # innermost first; each runs with only the handlers outside it, so a
            # ``return`` inside a ``finally`` does not re-enter that ``finally``
            exceptional = t is RaiseStep
            out = _leave_through(ctx, state, exceptional)
            if exceptional:
                ctx.run.raised = join(ctx.run.raised, out)
            else:
                ctx.run.exit = join(ctx.run.exit, out)
            return None
        if t is WithBlock:
            return self._with(step, state, ctx)  # type: ignore[arg-type]
        if t is TryBlock:
            assert isinstance(step, TryBlock)
            raised: list[State] = []

            def through_try(
                st: State, exceptional: bool, fb: tuple[Flow, ...] = step.finalbody
            ) -> State | None:
                if exceptional and step.handlers:
                    raised.append(st)  # an except clause here may catch it
                return self._block(fb, st, ctx) if fb else st

            ctx.exit_handlers.append(through_try)
            try:
                body_end = self._block(step.body, state, ctx)
            finally:
                ctx.exit_handlers.pop()
            handler_in = state.join(body_end) if body_end is not None else state
            for st in raised:
                handler_in = handler_in.join(st)
            ends: State | None = None
            if step.orelse:
                ends = self._block(step.orelse, body_end, ctx) if body_end is not None else None
            else:
                ends = body_end
            for h in step.handlers:
                ends = join(ends, self._block(h, handler_in, ctx))
            if step.finalbody:
                # the finally block also runs on the exceptional path
                self._block(step.finalbody, handler_in, ctx)
                if ends is None:
                    return None
                return self._block(step.finalbody, ends, ctx)
            return ends
        if t is Branch:
            assert isinstance(step, Branch)
            if step.loop:
                once = self._block(step.body, state, ctx)
                again = self._block(step.body, state.join(once), ctx) if once is not None else None
                after = state.join(once).join(again) if once is not None else state
                if step.orelse:
                    return join(self._block(step.orelse, after, ctx), None)
                return after
            a = self._block(step.body, state, ctx)
            b = self._block(step.orelse, state, ctx) if step.orelse else state
            return join(a, b)
        return state

    def _with(self, step: WithBlock, state: State, ctx: _Ctx) -> State | None:
        scope = ctx.scope
        inside = state
        exits: list[
            tuple[str, State, str]
        ] = []  # (kind, state before, qualname) to undo after the body
        for item in step.items:
            for kind, qn in self._context_managers(scope, item.expr):
                before = inside
                if kind == "cm":
                    run = self.run(self.p.scopes[qn], before)
                    now = run.yields if run.yields is not None else before
                else:  # class-based: __enter__'s transfer
                    now = self._apply_function(qn, before)
                inside = self._entered_state(
                    before, now, scope.qualname, step.location, qn, item.text
                )
                exits.append((kind, before, qn))

        def leave(end: State, exceptional: bool = False) -> State:
            for kind, before, qn in reversed(exits):
                if kind == "cm":
                    if exceptional and not self._reset_survives_exceptions(qn):
                        continue  # the exception skips a reset that is not in ``finally``
                    run = self.run(self.p.scopes[qn], before, resume=end)
                    end = run.exit if run.exit is not None else end
                else:
                    exit_qn = qn.rpartition(".")[0] + (
                        ".__aexit__" if qn.endswith("__aenter__") else ".__exit__"
                    )
                    end = self._apply_function(exit_qn, end)
            return end

        suppressed: list[State] = []
        swallows = any(self._may_suppress(scope, item) for item in step.items)

        def through_with(st: State, exceptional: bool) -> State:
            out = leave(st, exceptional)
            if exceptional and swallows:
                suppressed.append(out)  # contextlib.suppress, an __exit__ returning True...
            return out

        ctx.exit_handlers.append(through_with)
        try:
            end = self._block(step.body, inside, ctx)
        finally:
            ctx.exit_handlers.pop()
        if end is not None:
            end = leave(end)
        for st in suppressed:
            end = join(end, st)
        if end is None:
            return None
        if any(self._is_exit_stack(scope, item.expr) for item in step.items):
            return state.join(UNSET) if not state.set else state
        return end

    def _entered_state(
        self, before: State, now: State, function: str, location: Location, cm: str, text: str
    ) -> State:
        """The state inside a setter context manager, with where it became set:
        the ``enter`` itself unless the flag was surely set already."""
        if not now.set:
            return now
        if before.set and not before.unset:
            return State(now.unset, True, before.origin)
        return State(now.unset, True, SetEvent("enter", function, location, _setter_name(cm), text))

    def _reset_survives_exceptions(self, cm: str) -> bool:
        """Does the generator context manager's reset run when the body raises
        (its ``yield`` sits in a ``try`` whose ``finally`` or ``except`` writes)?"""
        memo = self._protected_memo.get(cm)
        if memo is None:
            memo = self._protected_memo[cm] = _yield_protected(self.p.scopes[cm].flow, self.fx)
        return memo

    def _may_suppress(self, scope: Scope, item: object) -> bool:
        """Can this ``with`` item swallow an exception from its body?
        ``contextlib.suppress``, a class whose ``__exit__`` may return a true
        value, a generator context manager that catches around its ``yield``."""
        from flagtrace.model import ReturnStep as Ret
        from flagtrace.model import WithItem

        assert isinstance(item, WithItem)
        if "suppress(" in item.text:
            return True
        resolver = self.fx.resolver
        if isinstance(item.expr, CallExpr):
            for c in self.site_callees.get((scope.qualname, item.expr.site), ()):
                target = self.p.scopes.get(c.qualname)
                if (
                    target is not None
                    and target.is_generator
                    and _catches_around_yield(target.flow)
                ):
                    return True
        for v in resolver.eval(scope.qualname, item.expr):
            if v[0] != "i":
                continue
            for m in resolver.class_attribute(v[1], "__exit__") | resolver.class_attribute(
                v[1], "__aexit__"
            ):
                exit_scope = self.p.scopes.get(m[1]) if m[0] == "f" else None
                if exit_scope is None:
                    continue
                for st in _walk(exit_scope.flow):
                    if isinstance(st, Ret) and st.value is not None:
                        if not (
                            isinstance(st.value, ConstExpr) and st.value.value in ("False", "None")
                        ):
                            return True
        return False

    def _callee_raises(self, scope: Scope, site: int, state: State, ctx: _Ctx) -> None:
        """A callee that can leave the flag set by raising (its exception skipped a
        reset) raises here too: the exception runs the enclosing ``with`` exits and
        ``finally`` blocks, may be caught by an enclosing ``except``, or leaves
        this function. The call's normal continuation is ``apply_call``'s."""
        exc: State | None = None
        for qn in self._site_callees(scope.qualname, site)[2]:
            outs = []
            if state.unset:
                outs.append(self._raised(qn, False))
            if state.set:
                outs.append(self._raised(qn, True))
            unset, set_ = any(o[0] for o in outs), any(o[1] for o in outs)
            if set_ and not state.set:
                call = scope.calls[site]
                exc = join(
                    exc,
                    State(
                        unset, True, SetEvent("set", scope.qualname, call.location, qn, call.text)
                    ),
                )
            elif unset or set_:
                exc = join(exc, State(unset, set_, state.origin))
        if exc is None:
            return
        ctx.run.raised = join(ctx.run.raised, _leave_through(ctx, exc, True))

    def _apply_function(self, qn: str, state: State) -> State:
        if qn not in self.writers:
            return state
        outs = []
        if state.unset:
            outs.append(self._transfer(qn, False))
        if state.set:
            outs.append(self._transfer(qn, True))
        return State(any(o[0] for o in outs), any(o[1] for o in outs), state.origin)

    def _context_managers(self, scope: Scope, expr: object) -> list[tuple[str, str]]:
        """Setter context managers a ``with`` item enters: ("cm", generator) or ("class", __enter__)."""
        out: list[tuple[str, str]] = []
        if isinstance(expr, CallExpr):
            for c in self.site_callees.get((scope.qualname, expr.site), ()):
                if c.qualname in self.writers and self.is_cm(c.qualname):
                    out.append(("cm", c.qualname))
        for v in self.fx.resolver.eval(scope.qualname, expr):  # type: ignore[arg-type]
            if v[0] == "i":
                for m in self.fx.resolver.class_attribute(
                    v[1], "__enter__"
                ) | self.fx.resolver.class_attribute(v[1], "__aenter__"):
                    if m[0] == "f" and m[1] in self.writers:
                        out.append(("class", m[1]))
        return out

    def _enter_context_call(self, scope: Scope, site: int, state: State) -> State | None:
        """``stack.enter_context(cm())``: the rest of the ``with ExitStack()`` body runs inside."""
        call = scope.calls[site]
        func = call.func
        from flagtrace.model import AttrExpr

        if not (
            isinstance(func, AttrExpr)
            and func.attr in ("enter_context", "enter_async_context")
            and call.args
        ):
            return None
        now = state
        for kind, qn in self._context_managers(scope, call.args[0].value):
            before = now
            if kind == "cm":
                run = self.run(self.p.scopes[qn], before)
                now = run.yields if run.yields is not None else before
            else:
                now = self._apply_function(qn, before)
            now = self._entered_state(before, now, scope.qualname, call.location, qn, call.text)
        return now if now is not state else None

    def _is_exit_stack(self, scope: Scope, expr: object) -> bool:
        if isinstance(expr, CallExpr):
            return any(
                c.qualname.endswith("ExitStack")
                for c in self.site_callees.get((scope.qualname, expr.site), ())
            )
        return False


def _yield_protected(flow: tuple[Flow, ...], fx: FlagEffects, protected: bool = False) -> bool:
    """True if every ``yield`` sits in a ``try`` whose ``finally`` or handlers write the flag."""
    result = True
    for step in flow:
        if isinstance(step, YieldStep) and not protected:
            return False
        if isinstance(step, TryBlock):
            writes = any(
                isinstance(s, WriteStep) and fx.write_of(s) is not None
                for block in (step.finalbody, *step.handlers)
                for s in _walk(block)
            )
            result &= _yield_protected(step.body, fx, protected or writes)
            for block in (*step.handlers, step.orelse, step.finalbody):
                result &= _yield_protected(block, fx, protected)
        elif isinstance(step, WithBlock):
            result &= _yield_protected(step.body, fx, protected)
        elif isinstance(step, Branch):
            result &= _yield_protected(step.body, fx, protected) and _yield_protected(
                step.orelse, fx, protected
            )
    return result


def _leave_through(ctx: _Ctx, state: State, exceptional: bool) -> State | None:
    """Run the exit handlers (with-exits, ``finally`` blocks) a ``return`` or an
    exception passes on its way out, innermost first; each runs with only the
    handlers outside it, so a ``return`` inside a ``finally`` does not re-enter it."""
    out: State | None = state
    handlers = ctx.exit_handlers
    try:
        for i in range(len(handlers) - 1, -1, -1):
            if out is None:
                break
            ctx.exit_handlers = handlers[:i]
            out = handlers[i](out, exceptional)
    finally:
        ctx.exit_handlers = handlers
    return out


def _catches_around_yield(flow: tuple[Flow, ...], inside: bool = False) -> bool:
    for step in flow:
        if isinstance(step, YieldStep) and inside:
            return True
        if isinstance(step, TryBlock):
            if _catches_around_yield(step.body, inside or bool(step.handlers)):
                return True
            if any(
                _catches_around_yield(b, inside)
                for b in (*step.handlers, step.orelse, step.finalbody)
            ):
                return True
        elif isinstance(step, WithBlock):
            if _catches_around_yield(step.body, inside):
                return True
        elif isinstance(step, Branch):
            if _catches_around_yield(step.body, inside) or _catches_around_yield(
                step.orelse, inside
            ):
                return True
    return False


def _walk(flow: tuple[Flow, ...]) -> Iterable[Flow]:
    from flagtrace.effects import walk

    return walk(flow)


def _setter_name(qn: str) -> str:
    """``pkg.Mode.__enter__`` is shown as the class ``pkg.Mode``."""
    if qn.endswith(("__enter__", "__aenter__")):
        return qn.rpartition(".")[0]
    return qn


@dataclass(slots=True)
class _Ctx:
    scope: Scope
    entry: State
    resume: State | None
    run: Run
    # what a ``return``/``raise`` passes through on its way out: with-exits, finally
    # blocks; called with (state, exceptional)
    exit_handlers: list[Callable[[State, bool], State | None]] = field(default_factory=list)


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


@dataclass(frozen=True, slots=True)
class ReadHit:
    function: str
    location: Location
    via: str | None
    set_here: SetEvent | None


@dataclass(frozen=True, slots=True)
class Witness:
    hops: tuple[Hop, ...]
    read: ReadHit
    preset: bool  # the flag was already set when the entry started

    @property
    def by_name_hops(self) -> int:
        return sum(1 for h in self.hops if h.resolution.weak)


Node = tuple[str, tuple[bool, bool]]


class Reach:
    """Searches the (function, state-on-entry) graph, memoising body runs."""

    def __init__(
        self, interp: Interpreter, graph: CallGraph, reads: frozenset[str] = frozenset()
    ) -> None:
        self.reads = reads  # only reads in these functions count (empty: all)
        self.i = interp
        self.graph = graph
        self.p = interp.p
        self.can_read = self._can_read()
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
        for (qn, _), callees in self.i.site_callees.items():
            if any(c.qualname in fx.accessors for c in callees):
                readers.add(qn)
        if self.reads:
            readers &= set(self.reads)
        callers: dict[str, set[str]] = {}
        for (qn, _), callees in self.i.site_callees.items():
            for c in callees:
                callers.setdefault(c.qualname, set()).add(qn)
        out: set[str] = set()
        todo = list(readers)
        while todo:
            qn = todo.pop()
            if qn in out:
                continue
            out.add(qn)
            todo.extend(callers.get(qn, ()))
            scope = self.p.scopes.get(qn)
            if scope is not None and scope.parent is not None:
                parent = self.p.scopes.get(scope.parent)
                if parent is not None and parent.kind is ScopeKind.CLASS:
                    todo.append(parent.qualname)  # class bodies run in their parent
        return out

    def _worth_following(self, callee: str, state: State) -> bool:
        """Only paths that can still end at a read with the flag set: with the
        flag possibly set, callees that can reach a read; with it unset,
        callees that can both set it and reach a read."""
        if callee not in self.can_read:
            return False
        return state.set or callee in self.i.writers

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
            for site, state in run.calls:
                call = scope.calls[site]
                for c in self.i.site_callees.get((qn, site), ()):
                    if not c.analysed or c.qualname not in self.p.scopes:
                        continue
                    callee_scope = self.p.scopes[c.qualname]
                    if callee_scope.kind is ScopeKind.CLASS or not self._worth_following(
                        c.qualname, state
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
                    )
                    edges.append(((c.qualname, state.key), hop))
            for location, via, state in run.reads:
                if state.set and (not self.reads or qn in self.reads):
                    hits.append(ReadHit(qn, location, via, state.origin))
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
        """Fewest by-name hops first, then fewest hops; among equal paths, the one
        that takes the earliest call at each step.

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
        """``node``'s edges with their weak-evidence cost, memoised: settling and
        walking both go over them."""
        costed = self._costs.get(node)
        if costed is None:
            costed = [
                (nxt, hop, (1 if hop.resolution.weak else 0) + self._inferred_set_penalty(hop))
                for nxt, hop in edges
            ]
            self._costs[node] = costed
        return costed

    def _inferred_set_penalty(self, hop: Hop) -> int:
        """Evidence rank of where the flag became set before this hop: entering a
        setter or calling a real setter is direct; a function that only *leaves*
        the flag set through what it calls (a transfer inferred over the whole
        call graph, by-name hops and cycles included) is weaker than by-name."""
        ev = hop.set_here
        if ev is None or ev.kind == "enter" or ev.via in self.i.fx.setters:
            return 0
        return 2

    def reachable_functions(self, entry: str, start: tuple[bool, bool]) -> set[str]:
        """Functions the entry can reach at all (the plain call graph: a never
        verdict counts the unresolved calls among them)."""
        return self.graph.reachable(entry)


def sticky_sites(interp: Interpreter) -> list[tuple[str, int, str]]:
    """Call sites anywhere that leave the flag set when they return: (caller, site, setter)."""
    out = []
    for (qn, site), callees in interp.site_callees.items():
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
