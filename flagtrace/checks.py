"""Checks: the rules that find hazards in setters (their codes, summaries and
explanations are in ``flagtrace.rules``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from flagtrace.callgraph import CallGraph
from flagtrace.effects import FlagEffects, ValueKind, sets_flag
from flagtrace.flagstate import SET, UNSET
from flagtrace.interpret import Interpreter
from flagtrace.model import (
    AttrExpr,
    Branch,
    CallKind,
    CallStep,
    DecoratorKind,
    Flow,
    GuardKind,
    Hazard,
    HazardKind,
    Location,
    NameExpr,
    RaiseStep,
    Resolution,
    ReturnStep,
    Scope,
    ScopeKind,
    SetterKind,
    TryBlock,
    WithBlock,
    WriteStep,
    YieldStep,
    walk,
)
from flagtrace.pergraph import once
from flagtrace.rules import RULES


def _hazard(kind: HazardKind, function: str, location: Location, detail: str) -> Hazard:
    r = RULES[kind]
    return Hazard(r.code, kind, function, location, r.summary, detail)


def find_hazards(
    fx: FlagEffects, interp: Interpreter, threads: Threads | None = None
) -> list[Hazard]:
    """Every hazard of the flag's setters. ``threads`` (from ``threads_of``) saves
    walking the call graph for thread targets again when many flags are checked."""
    out: list[Hazard] = []
    judge = _Judge(fx, interp)
    for qn, kind in judge.subjects().items():
        out.extend(judge.hazards(qn, kind))
    out.extend(_thread_hazards(fx, interp, threads))
    unique = {(h.kind, h.function): h for h in out}
    return sorted(unique.values(), key=lambda h: (h.location.path, h.location.line, h.code))


def nesting_guarded(fx: FlagEffects, interp: Interpreter) -> frozenset[str]:
    """The setters that refuse nested use before they set the flag (``assert not
    FLAG``, ``if FLAG: raise``), by function: the reason FT102 spares them, which
    the report states in the setter's row."""
    judge = _Judge(fx, interp)
    out = set()
    for qn in fx.setters:
        scope = fx.p.scopes.get(qn) or fx.p.scopes.get(f"{qn}.__enter__")
        if scope is not None and judge._guarded(scope):
            out.add(qn)
    return frozenset(out)


# What a statement does to the flag: set it, reset it (to a constant, or restoring the
# saved value), or nothing; ``text`` names it in a hazard's detail.
_SET, _RESET_CONST, _RESTORE = "set", "reset to a constant", "restore"

#: Callees a reviewer would not call "able to raise" between a set and its ``try``.
_HARMLESS_FUNCS = frozenset(
    {
        "len", "str", "isinstance", "issubclass", "id", "type", "repr", "bool", "callable",
        "hasattr", "range", "enumerate", "zip", "list", "tuple", "dict", "set",
        "frozenset", "setattr", "print", "super", "sorted", "reversed", "min", "max",
    }
)  # fmt: skip
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning")
_HARMLESS_METHODS = frozenset(
    {
        "append", "extend", "add", "update", "get", "items", "keys", "values",
        "setdefault", "copy", "clear", "discard", "pop", "appendleft",
        "debug", "info", "warning",
    }
)  # fmt: skip


class _Judge:
    """The hazard rules: which functions are judged (the ones that make a set/reset
    pair, directly or through calls), and the leaks, constant resets and sticky sets
    in each.

    A statement can raise when it is a ``raise`` (an ``assert`` is one, on its
    failing branch), a call into code flagtrace cannot see through (outside the
    analysed code, or a parameter such as the wrapped ``fn``) other than the harmless
    builtins and container methods above, or a call into analysed code that can; in a
    generator context manager the ``yield`` raises whatever the ``with`` body raises.
    An exception leaks the flag when, raised while the function holds it set, it
    leaves the function with the flag still set: every enclosing ``finally`` runs on
    the way out (also for an exception raised in a handler), and a handler that does
    not re-raise stops it."""

    def __init__(self, fx: FlagEffects, interp: Interpreter) -> None:
        self.fx = fx
        self.interp = interp
        self.p = fx.p
        self.name = fx.flag.name
        self._raisers: dict[str, str | None] = {}
        self._effects: dict[tuple[str, int], tuple[str | None, str]] = {}
        self._certain_setters: set[str] | None = None

    # -- who is judged

    def _kind(self, qn: str) -> SetterKind:
        setter = self.fx.setters.get(qn)
        if setter is not None:
            return setter.kind
        scope = self.p.scopes[qn]
        decorated = self.fx.graph.values.decorator_kinds(qn)
        if scope.is_generator and DecoratorKind.ASYNCCONTEXTMANAGER in decorated:
            return SetterKind.ASYNCCONTEXTMANAGER
        if scope.is_generator and DecoratorKind.CONTEXTMANAGER in decorated:
            return SetterKind.CONTEXTMANAGER
        if scope.name in ("__enter__", "__aenter__") and self.p.method_class(qn):
            return SetterKind.CLASS
        return SetterKind.FUNCTION

    def _is_exit(self, qn: str) -> bool:
        return self.p.scopes[qn].name in ("__exit__", "__aexit__") and bool(self.p.method_class(qn))

    def _callers(self, qn: str) -> set[str]:
        """The scopes that call the setter function ``qn`` (to set or to reset)."""
        return set(self.fx.graph.scope_callers(qn))

    def _in_function(self, caller: str) -> bool:
        scope = self.p.scopes.get(caller)
        return scope is not None and scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA)

    def _pairs(self, caller: str) -> bool:
        """Does ``caller`` take charge of resetting what it sets: a context manager
        (judged itself), or a function that returns with the flag unset?"""
        scope = self.p.scopes.get(caller)
        if scope is None or scope.kind not in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
            return False
        if self._kind(caller) is not SetterKind.FUNCTION:
            return True
        after = self.interp.returns(caller)
        return after is not None and not after[1]

    def _can_return_set(self, qn: str) -> bool:
        """Can the function ``qn``, entered with the flag unset, return with it set?"""
        after = self.interp.returns(qn)
        return after is None or bool(after[1])

    def subjects(self) -> dict[str, SetterKind]:
        """The functions judged, with their kind. A plain setter function whose
        every caller resets what it sets (``set_x(True) ... set_x(False)``) is not
        judged itself: its callers are, where the pair is made."""
        out: dict[str, SetterKind] = {}
        delegated: set[str] = set()
        for qn, setter in self.fx.setters.items():
            if self._is_exit(qn):
                continue  # judged with its ``__enter__``
            if setter.kind is SetterKind.FUNCTION and self._can_return_set(qn):
                # only a setter that can return with the flag set hands the pair to its
                # callers; one that resets before it returns makes the pair itself
                callers = self._callers(qn)
                if callers and all(self._pairs(c) for c in callers):
                    delegated.add(qn)
                    for c in callers:
                        if not self._is_exit(c):
                            out.setdefault(c, self._kind(c))
                    continue
            out[qn] = setter.kind
            # callers that reset it on some path make a pair there too (and may
            # clear an outer use early): judged as well
            for c in self._callers(qn) if setter.kind is SetterKind.FUNCTION else ():
                if self._in_function(c) and not self._is_exit(c) and self._resets(self.p.scopes[c]):
                    out.setdefault(c, self._kind(c))
        # context managers that set through a helper are judged whatever the helper is
        for qn in sorted(self.interp.writers):  # only these can set through a call
            if qn in out or qn in delegated or qn not in self.p.scopes:
                continue
            kind = self._kind(qn)
            if kind is SetterKind.FUNCTION:
                continue
            scope = self.p.scopes[qn]
            if any(
                isinstance(s, CallStep) and self._effect(scope, s)[0] == _SET
                for s in walk(scope.flow)
            ):
                out[qn] = kind
        for qn in delegated:
            out.pop(qn, None)
        return out

    # -- what one statement does

    def _effect(self, scope: Scope, step: Flow) -> tuple[str | None, str]:
        """(``_SET``/``_RESET_CONST``/``_RESTORE``/None, the statement's text), memoised."""
        key = (scope.qualname, id(step))
        memo = self._effects.get(key)
        if memo is None:
            memo = self._effects[key] = self._compute_effect(scope, step)
        return memo

    def _compute_effect(self, scope: Scope, step: Flow) -> tuple[str | None, str]:
        fx = self.fx
        if isinstance(step, WriteStep):
            w = fx.write_of(step)
            if w is None:
                return None, ""
            sets = sets_flag(w.kind, fx.flag.initial_kind)
            if sets is not False:
                return _SET, f"{self.name} = {w.text}"
            if w.kind is ValueKind.RESTORE:
                return _RESTORE, f"{self.name} = {w.text}"
            return _RESET_CONST, w.text
        if not isinstance(step, CallStep):
            return None, ""
        call = scope.calls[step.site]
        if (
            call.kind is not CallKind.CALL
            or not self.interp._site_callees(scope.qualname, step.site)[1]
        ):
            return None, ""
        if self.interp.restoring_call(scope, step.site):
            return _RESTORE, call.text
        if self.interp.apply_call(scope, step.site, UNSET).set and self._certainly_reaches_setter(
            scope.qualname, step.site
        ):
            return _SET, call.text
        if not self.interp.apply_call(scope, step.site, SET).set:
            return _RESET_CONST, f"a constant by `{call.text}`"
        return None, ""

    def _certainly_reaches_setter(self, qn: str, site: int) -> bool:
        """Does the call at ``site`` of ``qn`` reach a function that writes the
        flag through calls flagtrace is sure of (direct or typed hops only)?

        Why: a hazard fails a commit, and on torch most "sets the flag through
        a helper" findings came from by-name hops (a method called on a value of
        unknown type, matched to every analysed method of that name, and from
        there into code that sets a flag of the compiler): 136 unrelated context
        managers were sticky setters of each of dozens of flags. Inferred hops
        (value flow: a parameter bound by every caller, a container) did the
        same at a smaller scale: on vLLM 0.34.0 one ``_comm_region`` context
        manager "set" 27 unrelated flags through a merged parameter. A verdict
        may still follow such hops (and says ``inferred`` or ``by-name``)."""
        setters = self._certain_setters
        if setters is None:
            setters = self._certain_setters = self._setters_by_certain_calls()
        for callee in self.fx.graph.site_callees(qn, site):
            if callee.qualname in setters and callee.resolution in _CERTAIN:
                return True
        return False

    def _setters_by_certain_calls(self) -> set[str]:
        """The functions that write the flag, and those that call one through a
        chain of certain calls."""
        graph = self.fx.graph
        callers = once(graph, "certain callers", lambda: _certain_callers(graph))
        found = set(self.fx.setters)
        found.update(s.function for s in self.fx.setters.values())
        todo = list(found)
        while todo:
            for caller in callers.get(todo.pop(), ()):
                if caller not in found:
                    found.add(caller)
                    todo.append(caller)
        return found

    def _raises(self, scope: Scope, step: Flow, generator_cm: bool) -> str | None:
        """Why ``step`` can raise, or None."""
        if isinstance(step, RaiseStep):
            return f"the `raise` at line {step.location.line}"
        if isinstance(step, Branch) and step.guard is not None:
            if step.guard.kind is GuardKind.ASSERT:
                return f"the `assert {step.guard.text}` at line {step.location.line}"
            return None
        if isinstance(step, YieldStep):
            if not generator_cm:
                return None
            if self._kind(scope.qualname) is SetterKind.FUNCTION:
                return "the code consuming the generator (at the `yield`)"
            return "the `with` body"
        if not isinstance(step, CallStep):
            return None
        call = scope.calls[step.site]
        if call.kind is not CallKind.CALL or _harmless(call.func, self.name):
            return None
        callees = self.fx.graph.site_callees(scope.qualname, step.site)
        if not callees or any(not c.analysed for c in callees):
            return (
                f"`{call.text}` (line {call.location.line}), a call flagtrace cannot see through,"
            )
        for c in callees:
            why = self._can_raise(c.qualname)
            if why is not None:
                return f"`{call.text}` (line {call.location.line}), where {why},"
        return None

    def _can_raise(self, qn: str) -> str | None:
        """Can calling the analysed function ``qn`` raise (memoised; a cycle counts
        as not raising until a member is shown to)?"""
        if qn in self._raisers:
            return self._raisers[qn]
        self._raisers[qn] = None
        scope = self.p.scopes.get(qn)
        why: str | None = None
        if scope is not None and scope.kind is not ScopeKind.CLASS:
            for step in walk(scope.flow):
                if isinstance(step, RaiseStep):
                    why = f"{scope.name}() raises at line {step.location.line}"
                    break
            else:
                for step in walk(scope.flow):
                    inner = self._raises(scope, step, False)
                    if inner is not None:
                        why = f"{scope.name}() calls {inner.rstrip(',')}"
                        break
        self._raisers[qn] = why
        return why

    # -- the rules

    def hazards(self, qn: str, kind: SetterKind) -> Iterator[Hazard]:
        scope = self.p.scopes[qn]
        name = self.name
        setter = self.fx.setters.get(qn)
        set_at = setter.location if setter is not None else self._first_set(scope)
        if kind is SetterKind.CLASS:
            yield from self._class_hazards(qn, scope, set_at)
            return
        if kind is SetterKind.DECORATOR:
            return
        if setter is None and set_at == scope.location:
            return  # a caller that only resets (``stop(): set_x(False)``) makes no pair
        resets = self._resets(scope)
        if kind in (SetterKind.CONTEXTMANAGER, SetterKind.ASYNCCONTEXTMANAGER):
            if not resets:
                yield _hazard(
                    HazardKind.STICKY, qn, set_at, f"{name} is never reset after the yield"
                )
                return
        else:
            after = self.interp.returns(qn)
            param_setter = setter is not None and any(
                w.kind is ValueKind.PARAMETER for w in setter.writes
            )
            if param_setter or (after is not None and after[1]):
                yield _hazard(
                    HazardKind.STICKY, qn, set_at, f"{name} is left set when {scope.name}() returns"
                )
                # a path that resets still clears an outer use early
                yield from self._constant_reset(qn, scope, scope, resets)
                return
            if not resets:
                return
        generator = kind is not SetterKind.FUNCTION or scope.is_generator
        leak = self._leak(scope, scope.flow, False, generator)
        if leak is not None:
            where, why = leak
            via = self._set_call(scope)
            held = f"{name} (set by `{via}`)" if via else name
            yield _hazard(
                HazardKind.EXCEPTION_LEAK,
                qn,
                where,
                f"{held} stays set if {why} raises"
                if why == "the `with` body"
                else f"{held} stays set if {why} raises before the reset",
            )
        yield from self._constant_reset(qn, scope, scope, resets)

    def _class_hazards(self, qn: str, scope: Scope, set_at: Location) -> Iterator[Hazard]:
        name = self.name
        cls = self.p.method_class(qn)
        exit_qn = f"{cls}.__aexit__" if qn.endswith("__aenter__") else f"{cls}.__exit__"
        exit_scope = self.p.scopes.get(exit_qn)
        resets = self._resets(exit_scope) if exit_scope is not None else []
        if not resets:
            yield _hazard(HazardKind.STICKY, qn, set_at, f"{exit_qn} does not reset {name}")
            return
        leak = self._leak(scope, scope.flow, False, False)
        if leak is not None:
            where, why = leak
            yield _hazard(
                HazardKind.EXCEPTION_LEAK,
                qn,
                where,
                f"{name} stays set if {why} raises: an exception in `__enter__` skips `__exit__`",
            )
        elif exit_scope is not None:
            leak = self._leak(exit_scope, exit_scope.flow, True, False)
            if leak is not None:
                where, why = leak
                yield _hazard(
                    HazardKind.EXCEPTION_LEAK,
                    qn,
                    where,
                    f"{name} stays set if {why} raises: it skips the reset in `__exit__`",
                )
        if exit_scope is not None:
            yield from self._constant_reset(qn, scope, exit_scope, resets)

    def _set_call(self, scope: Scope) -> str | None:
        """The call that sets the flag, when a callee sets it (``set_x(True)``)."""
        for step in walk(scope.flow):
            if self._effect(scope, step)[0] == _SET:
                return scope.calls[step.site].text if isinstance(step, CallStep) else None
        return None

    def _first_set(self, scope: Scope) -> Location:
        for step in walk(scope.flow):
            if self._effect(scope, step)[0] == _SET:
                return _loc(scope, step)
        return scope.location

    def _resets(self, scope: Scope) -> list[tuple[str, str, Location]]:
        out = []
        for step in walk(scope.flow):
            effect, text = self._effect(scope, step)
            if effect in (_RESET_CONST, _RESTORE):
                out.append((effect, text, _loc(scope, step)))
        return out

    def _constant_reset(
        self, qn: str, setter: Scope, reset_scope: Scope, resets: list[tuple[str, str, Location]]
    ) -> Iterator[Hazard]:
        """FT102: a reset to a constant, unless the setter refuses nested use
        (``assert not FLAG`` / ``if FLAG: raise``) before it sets the flag:
        nesting then fails loudly instead of clearing the flag early."""
        if self._guarded(setter):
            return
        for effect, text, where in resets:
            if effect == _RESET_CONST:
                yield _hazard(
                    HazardKind.NON_REENTRANT,
                    qn,
                    where,
                    f"{self.name} is reset to {text} instead of its previous value",
                )
                return

    def _guarded(self, scope: Scope) -> bool:
        """Does a raise that tests the flag come before the first set?"""
        for step in walk(scope.flow):
            if self._effect(scope, step)[0] == _SET:
                return False
            if (
                isinstance(step, Branch)
                and step.guard is not None
                and _mentions_name(step.guard.text, self.name)
                and any(isinstance(s, RaiseStep) for s in walk(step.body))
            ):
                return True
        return False

    def _leak(
        self, scope: Scope, flow: tuple[Flow, ...], armed: bool, generator: bool
    ) -> tuple[Location, str] | None:
        """The first statement whose exception leaves ``scope`` with the flag it
        set still set, and why it can raise; ``armed``: set on entry."""
        found: list[tuple[Location, str]] = []
        Frame = tuple[str, TryBlock]  # ("body" | "handler", the try)

        def after(block: tuple[Flow, ...], held: bool) -> tuple[bool, bool]:
            """(held after ``block`` runs through, does it re-raise)."""
            reraises = False
            for s in walk(block):
                effect = self._effect(scope, s)[0]
                if effect == _SET:
                    held = True
                elif effect is not None:
                    held = False
                if isinstance(s, RaiseStep):
                    reraises = True
            return held, reraises

        def escapes(frames: list[Frame]) -> bool:
            held = True
            for where, t in reversed(frames):
                if where == "body" and t.handlers:
                    outcomes = [after(h, held) for h in t.handlers]
                    reraised = [h for h, again in outcomes if again]
                    if not reraised:
                        return False  # every handler swallows it
                    held = any(reraised)
                if t.finalbody:
                    held = after(t.finalbody, held)[0]
                if not held:
                    return False
            return held

        def scan(block: tuple[Flow, ...], held: bool | None, frames: list[Frame]) -> bool | None:
            for step in block:
                if held is None or found:
                    return None
                effect = self._effect(scope, step)[0]
                if effect == _SET:
                    held = True
                    continue
                if effect is not None:
                    # a reset made by a call happens inside it: the call can raise first
                    # (``call_fn(i, batch)`` where call_fn may reset the flag, or not)
                    why = self._raises(scope, step, generator) if held else None
                    if why is not None and isinstance(step, CallStep) and escapes(frames):
                        found.append((_loc(scope, step), why))
                        return None
                    held = False
                    continue
                why = self._raises(scope, step, generator)
                if why is not None and held and escapes(frames):
                    found.append((_loc(scope, step), why))
                    return None
                if isinstance(step, (RaiseStep, ReturnStep)):
                    return None
                if isinstance(step, TryBlock):
                    body = scan(step.body, held, [*frames, ("body", step)])
                    handler_in = bool(held) or bool(body)
                    ends = (
                        scan(step.orelse, body, [*frames, ("handler", step)])
                        if step.orelse
                        else body
                    )
                    for h in step.handlers:
                        end = scan(h, handler_in, [*frames, ("handler", step)])
                        ends = end if ends is None else (ends if end is None else ends or end)
                    if step.finalbody:
                        scan(step.finalbody, handler_in or bool(ends), frames)
                        if ends is None:
                            return None
                        held = scan(step.finalbody, ends, frames)
                    else:
                        held = ends
                elif isinstance(step, WithBlock):
                    held = scan(step.body, held, frames)
                elif isinstance(step, Branch) and not (
                    step.guard is not None and step.guard.kind is GuardKind.ASSERT
                ):
                    first = scan(step.body, held, frames)
                    if step.loop and first is not None:
                        first = bool(scan(step.body, held or first, frames)) or first or held
                    other = scan(step.orelse, held, frames) if step.orelse else held
                    if first is None:
                        held = other
                    elif other is None:
                        held = first
                    else:
                        held = first or other
            return held

        scan(flow, armed, [])
        return found[0] if found else None


def _loc(scope: Scope, step: Flow) -> Location:
    if isinstance(step, CallStep):
        return scope.calls[step.site].location
    return step.location


def _mentions_name(text: str, name: str) -> bool:
    import re

    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _harmless(func: object, flag: str) -> bool:
    """Calls that practically never raise between a set and its ``try``: logging,
    builtins such as ``len``/``isinstance``, container bookkeeping, and configuring
    the object just stored in the flag (``_ctx.set_layers(...)``)."""
    if isinstance(func, NameExpr):
        # an exception being built for a ``raise``: the ``raise`` is what raises
        return func.name in _HARMLESS_FUNCS or func.name.endswith(_EXCEPTION_SUFFIXES)
    if not isinstance(func, AttrExpr):
        return False
    if func.attr in _HARMLESS_METHODS:
        return True
    base = func.base
    while isinstance(base, AttrExpr):
        base = base.base
    return isinstance(base, NameExpr) and base.name == flag


# ---------------------------------------------------------------------------- threads

#: the resolutions of a callee flagtrace is sure of, for the hazards: a declaration
#: (a def, class or import, an annotation, ``self``, a constructor) says what is
#: called. Not value flow (``INFERRED``: a flow-insensitive analysis merges what
#: the program keeps apart), by-name dispatch or jedi's guess.
_CERTAIN = frozenset({Resolution.DIRECT, Resolution.TYPED})
_THREAD_TARGET_ATTRS = {"submit": 0, "map": 0, "run_in_executor": 1, "start_new_thread": 0}


@dataclass(frozen=True, slots=True)
class Threads:
    """What the thread check needs of the call graph, whatever the flag: the functions
    handed to a thread or executor, and every function's certain (direct or typed)
    callees."""

    targets: list[tuple[str, Location]]
    callees: dict[str, set[str]]


def threads_of(graph: CallGraph) -> Threads:
    """One pass over every call site: a program has a few dozen thread targets
    among 100k+ sites, so the pass is the cost (SGLang 0.5.9: 0.5 s as two
    passes of generator expressions and properties, a new question's 10%)."""
    callees: dict[str, set[str]] = {}
    targets: list[tuple[str, Location]] = []
    scopes = graph.program.scopes
    certain_resolutions = _CERTAIN
    for (qn, site), cs in graph.call_sites():
        certain = callees.get(qn)
        if certain is None:
            certain = callees[qn] = set()
        thread = False
        for c in cs:
            if c.resolution in certain_resolutions:
                certain.add(c.qualname)
            if not thread and c.qualname.endswith("Thread"):
                thread = True
        call = scopes[qn].calls[site]
        # threads share module globals; processes (multiprocessing.Process) do not
        if thread:
            handed = [a.value for a in call.args if a.keyword == "target"]
        elif type(call.func) is AttrExpr and call.func.attr in _THREAD_TARGET_ATTRS:
            looks_external = not cs or all(not c.analysed for c in cs)
            i = _THREAD_TARGET_ATTRS[call.func.attr]
            if not (looks_external and len(call.args) > i and call.args[i].keyword is None):
                continue
            handed = [call.args[i].value]
        else:
            continue
        for a in handed:
            for function in graph.values.functions(qn, a):
                targets.append((function, call.location))
    return Threads(targets, callees)


def _certain_callers(graph: CallGraph) -> dict[str, set[str]]:
    """Callee -> the functions that call it through a certain (direct or typed)
    edge; the reverse of ``Threads.callees``, shared the same way."""
    threads = once(graph, "threads", lambda: threads_of(graph))
    out: dict[str, set[str]] = {}
    for caller, callees in threads.callees.items():
        for callee in callees:
            out.setdefault(callee, set()).add(caller)
    return out


def _thread_hazards(
    fx: FlagEffects, interp: Interpreter, threads: Threads | None
) -> Iterator[Hazard]:
    if not fx.setters:
        return
    # only calls we are sure of: by-name fan-out, or value flow merging what the
    # program keeps apart, would make every flag look shared
    if threads is None:
        graph = fx.graph
        threads = once(graph, "threads", lambda: threads_of(graph))
    targets, callees = threads.targets, threads.callees
    if not targets:
        return
    setters = set(fx.setters)
    for cls_setter in [s for s in fx.setters.values() if s.kind is SetterKind.CLASS]:
        setters.add(cls_setter.function)
    for target, where in targets:
        seen: set[str] = set()
        todo = [target]
        while todo:
            qn = todo.pop()
            if qn in seen:
                continue
            seen.add(qn)
            if qn in setters:
                s = fx.setters[qn]
                yield _hazard(
                    HazardKind.THREAD_UNSAFE,
                    s.function,
                    s.location,
                    f"{fx.flag.name} is set on a thread started with {target} at {where.short}",
                )
            todo.extend(callees.get(qn, ()))
