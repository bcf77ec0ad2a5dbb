"""Checks: the rules that find hazards in setters (their codes, summaries and
explanations are in ``flagtrace.rules``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from flagtrace.callgraph import CallGraph
from flagtrace.effects import FlagEffects, Setter, ValueKind, sets_flag
from flagtrace.interpret import Interpreter
from flagtrace.model import (
    AttrExpr,
    Branch,
    CallKind,
    CallStep,
    Flow,
    Hazard,
    HazardKind,
    Location,
    Scope,
    SetterKind,
    TryBlock,
    WithBlock,
    WriteStep,
    YieldStep,
    walk,
)
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
    for setter in fx.setters.values():
        out.extend(_setter_hazards(fx, interp, setter))
    out.extend(_thread_hazards(fx, interp, threads))
    unique = {(h.kind, h.function): h for h in out}
    return sorted(unique.values(), key=lambda h: (h.location.path, h.location.line, h.code))


def _setter_hazards(fx: FlagEffects, interp: Interpreter, setter: Setter) -> Iterator[Hazard]:
    p = fx.p
    scope = p.scopes[setter.function]
    initial = fx.flag.initial_kind
    name = fx.flag.name
    if setter.kind in (SetterKind.CONTEXTMANAGER, SetterKind.ASYNCCONTEXTMANAGER):
        resets = [w for w in setter.writes if sets_flag(w.kind, initial) is False]
        if not resets:
            yield _hazard(
                HazardKind.STICKY,
                setter.function,
                setter.location,
                f"{name} is never reset after the yield",
            )
            return
        leak = _unprotected_span(scope, name, fx)
        if leak is not None:
            yield _hazard(
                HazardKind.EXCEPTION_LEAK,
                setter.function,
                leak,
                f"{name} stays set if the `with` body raises",
            )
        yield from _constant_resets(setter.function, resets, name)
        return
    if setter.kind is SetterKind.CLASS:
        cls = p.method_class(setter.function)
        exit_qn = (
            f"{cls}.__aexit__" if setter.function.endswith("__aenter__") else f"{cls}.__exit__"
        )
        resets = [w for w in fx.writes.get(exit_qn, []) if sets_flag(w.kind, initial) is False]
        if not resets:
            yield _hazard(
                HazardKind.STICKY,
                setter.function,
                setter.location,
                f"{exit_qn} does not reset {name}",
            )
            return
        # reported on the setter (``__enter__``), pointing at the reset in ``__exit__``
        yield from _constant_resets(setter.function, resets, name)
        return
    # plain functions: set/reset pairs inside, or sticky setters
    after = interp.transfer.get((setter.function, False))
    param_setter = any(w.kind is ValueKind.PARAMETER for w in setter.writes)
    if param_setter or (after is not None and after[1]):
        yield _hazard(
            HazardKind.STICKY,
            setter.function,
            setter.location,
            f"{name} is left set when {scope.name}() returns",
        )
        return
    resets = [w for w in setter.writes if sets_flag(w.kind, initial) is False]
    if resets:
        leak = _unprotected_span(scope, name, fx)
        if leak is not None:
            yield _hazard(
                HazardKind.EXCEPTION_LEAK,
                setter.function,
                leak,
                f"{name} stays set if a call before the reset raises",
            )
        yield from _constant_resets(setter.function, resets, name)


def _constant_resets(function: str, resets: list, name: str) -> Iterator[Hazard]:  # type: ignore[type-arg]
    for w in resets:
        if w.kind in (
            ValueKind.TRUE,
            ValueKind.FALSE,
            ValueKind.NONE,
            ValueKind.CONSTANT,
            ValueKind.DELETE,
        ):
            yield _hazard(
                HazardKind.NON_REENTRANT,
                function,
                w.location,
                f"{name} is reset to {w.text} instead of its previous value",
            )
            return


def _unprotected_span(scope: Scope, name: str, fx: FlagEffects) -> Location | None:
    """Where an exception can escape while the flag is set without a ``finally``
    that resets it: the first such point (a yield or a call), or None."""
    initial = fx.flag.initial_kind

    def is_set(step: Flow) -> bool:
        w = fx.write_of(step) if isinstance(step, WriteStep) else None
        return w is not None and sets_flag(w.kind, initial) is not False

    def resets(flow: tuple[Flow, ...]) -> bool:
        for s in walk(flow):
            w = fx.write_of(s) if isinstance(s, WriteStep) else None
            if w is not None and sets_flag(w.kind, initial) is False:
                return True
        return False

    def scan(flow: tuple[Flow, ...], armed: bool, protected: bool) -> tuple[bool, Location | None]:
        for step in flow:
            if isinstance(step, WriteStep):
                if is_set(step):
                    armed = True
                elif fx.write_of(step) is not None:
                    armed = False
                continue
            if isinstance(step, (YieldStep,)) and armed and not protected:
                return armed, step.location
            if isinstance(step, CallStep) and armed and not protected:
                call = scope.calls[step.site]
                if call.kind is CallKind.CALL and not _harmless(call.func, name):
                    return armed, call.location
            if isinstance(step, TryBlock):
                guard = protected or resets(step.finalbody)
                armed, hit = scan(step.body, armed, guard)
                if hit:
                    return armed, hit
                for h in step.handlers:
                    _, hit = scan(h, armed, protected)
                    if hit:
                        return armed, hit
                armed, hit = scan(step.orelse, armed, protected)
                if hit:
                    return armed, hit
                armed, hit = scan(step.finalbody, armed, protected)
                if hit:
                    return armed, hit
            elif isinstance(step, WithBlock):
                armed, hit = scan(step.body, armed, protected)
                if hit:
                    return armed, hit
            elif isinstance(step, Branch):
                a, hit = scan(step.body, armed, protected)
                if hit:
                    return a, hit
                b, hit = scan(step.orelse, armed, protected)
                if hit:
                    return b, hit
                armed = a or b
        return armed, None

    _, hit = scan(scope.flow, False, False)
    return hit


def _harmless(func: object, flag: str) -> bool:
    """Calls that practically never raise between a set and its ``try``: logging,
    and configuring the object just stored in the flag (``_ctx.set_layers(...)``)."""
    if not isinstance(func, AttrExpr):
        return False
    if func.attr in ("debug", "info", "warning"):
        return True
    base = func.base
    while isinstance(base, AttrExpr):
        base = base.base
    from flagtrace.model import NameExpr

    return isinstance(base, NameExpr) and base.name == flag


# ---------------------------------------------------------------------------- threads

_THREAD_TARGET_ATTRS = {"submit": 0, "map": 0, "run_in_executor": 1, "start_new_thread": 0}


@dataclass(frozen=True, slots=True)
class Threads:
    """What the thread check needs of the call graph, whatever the flag: the functions
    handed to a thread or executor, and every function's certain (not by-name) callees."""

    targets: list[tuple[str, Location]]
    callees: dict[str, set[str]]


def threads_of(graph: CallGraph) -> Threads:
    callees: dict[str, set[str]] = {}
    for (qn, _), cs in graph.call_sites():
        callees.setdefault(qn, set()).update(c.qualname for c in cs if not c.resolution.weak)
    return Threads(_thread_targets(graph), callees)


def _thread_targets(graph: CallGraph) -> list[tuple[str, Location]]:
    """Functions handed to a thread or executor: (function, where it is handed over)."""
    out: list[tuple[str, Location]] = []
    for (qn, site), callees in graph.call_sites():
        scope = graph.program.scopes[qn]
        call = scope.calls[site]
        names = [c.qualname for c in callees]
        args = []
        # threads share module globals; processes (multiprocessing.Process) do not
        if any(n.endswith("Thread") for n in names):
            args = [a.value for a in call.args if a.keyword == "target"]
        elif isinstance(call.func, AttrExpr) and call.func.attr in _THREAD_TARGET_ATTRS:
            looks_external = not callees or all(not c.analysed for c in callees)
            i = _THREAD_TARGET_ATTRS[call.func.attr]
            if looks_external and len(call.args) > i and call.args[i].keyword is None:
                args = [call.args[i].value]
        for a in args:
            for function in graph.values.functions(qn, a):
                out.append((function, call.location))
    return out


def _thread_hazards(
    fx: FlagEffects, interp: Interpreter, threads: Threads | None
) -> Iterator[Hazard]:
    if not fx.setters:
        return
    # only calls we are sure of: by-name fan-out would make every flag look shared
    if threads is None:
        threads = threads_of(fx.graph)
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
