"""Which write an entry observes: ``--set-by`` and the verdict's ``set_by``/``set_value``.

A global such as SGLang's ``MOE_A2A_BACKEND`` is written at start-up from the
configuration (``MOE_A2A_BACKEND = MoeA2ABackend(server_args.moe_a2a_backend)``) and
switched by a context manager for the draft model
(``speculative_moe_a2a_backend_context``). "Can ``verify`` observe it set?" is then
answered *yes* by the configuration write alone, which is rarely the question.

* ``--set-by QUALNAME`` restricts the question to the values the named setters write:
  every other write of the flag (a configuration write, another manager) counts as
  replacing that value, as it does at run time; restores (``FLAG = prev``) still go
  back to the value on entry. A write counts as the setter's when it is in the setter's
  body (a class: its ``__enter__``), or when the setter passes the value to a
  parameterised setter (``_set(True)`` inside it).
* Without it, every *observes set* verdict names the setter whose write it observes
  and whether that write is a **constant** or an **unknown** value (computed at run
  time: configuration, an argument), so a reader can tell a leaked ``True`` from a
  configured value.
"""

from __future__ import annotations

import difflib
import weakref
from collections import deque
from collections.abc import Iterable, Sequence

from flagtrace.effects import FlagEffects, Setter, ValueKind, sets_flag
from flagtrace.interpret import Interpreter
from flagtrace.model import ConstExpr, StepKind, WitnessStep, WrittenValue


class SetByError(Exception):
    """A ``--set-by`` that names no function writing the flag, or several."""


def resolve_set_by(fx: FlagEffects, specs: Iterable[str]) -> frozenset[str]:
    """The functions whose writes ``specs`` name: a writer of the flag by its qualified
    name or a dotted tail of it (``speculative_moe_a2a_backend_context``), a class by
    its name (its ``__enter__``/``__aenter__``)."""
    writers = sorted(set(fx.writes) | set(fx.setters))
    out: set[str] = set()
    for spec in specs:
        matched = [w for w in writers if _names(w, spec)]
        if not matched:
            close = difflib.get_close_matches(spec, writers, n=3, cutoff=0.5)
            hint = (
                f"; functions that write it: {', '.join(close or writers[:3])}" if writers else ""
            )
            raise SetByError(
                f"--set-by {spec!r} names no function that writes {fx.flag.name}{hint}"
            )
        owners = {_owner(w) for w in matched}
        if len(owners) > 1:
            raise SetByError(
                f"--set-by {spec!r} names several writers of {fx.flag.name} "
                f"({', '.join(sorted(owners))}); pass the qualified name"
            )
        out.update(matched)
    return frozenset(out)


def _owner(qualname: str) -> str:
    """``pkg.Mode.__enter__`` belongs to ``pkg.Mode``."""
    if qualname.endswith(("__enter__", "__aenter__")):
        return qualname.rpartition(".")[0]
    return qualname


def _names(writer: str, spec: str) -> bool:
    owner = _owner(writer)
    return owner == spec or owner.endswith("." + spec)


# ---------------------------------------------------------------------------- the observed write


def observed_write(
    interp: Interpreter, steps: Sequence[WitnessStep]
) -> tuple[str | None, WrittenValue | None]:
    """The setter whose write a witness observes (its last ``enter``/``set`` step), and
    whether that write is a constant or an unknown value."""
    step = next((s for s in reversed(steps) if s.step.sets_flag), None)
    if step is None or step.callee is None:
        return None, None
    fx = interp.fx
    if step.step is StepKind.ENTER:
        setter = fx.setters.get(step.callee) or fx.setters.get(f"{step.callee}.__enter__")
        setter = setter or fx.setters.get(f"{step.callee}.__aenter__")
        return step.callee, _setter_value(fx, setter)
    if step.callee == step.function:  # a write in the function itself
        write = next(
            (w for w in fx.writes.get(step.function, ()) if w.location == step.location), None
        )
        return step.function, _value(write.kind) if write is not None else WrittenValue.UNKNOWN
    scope = interp.p.scopes.get(step.function)
    if scope is not None:
        site = next((i for i, c in enumerate(scope.calls) if c.location == step.location), None)
        if site is not None:
            found = interp.param_argument(scope, site)
            # ``set_flag(v)``: the argument is the value (when the step names that setter:
            # a by-name site may call a parameterised setter beside the one observed)
            if found is not None and found[0] == step.callee:
                constant = isinstance(found[1], ConstExpr)
                return found[0], WrittenValue.CONSTANT if constant else WrittenValue.UNKNOWN
    if step.callee in fx.setters:
        return step.callee, _setter_value(fx, fx.setters[step.callee])
    nearest = _nearest_setter(interp, step.callee)
    if nearest is None:
        return step.callee, None
    return nearest.function, _setter_value(fx, nearest)


class _SetterSearches:
    """What the searches for a witness's setter keep per flag interpreter.

    ``nearest``: every answer (each witness through one sticky setter asks again:
    2,288 discovered entries of one transformers flag spent 21 s in the search);
    ``count``: the searches run so far; ``to_setter``: every function's distance to
    a setter, computed once ``count`` passes ``UNBOUNDED_SEARCHES``."""

    __slots__ = ("nearest", "count", "to_setter")

    def __init__(self) -> None:
        self.nearest: dict[str, Setter | None] = {}
        self.count = 0
        self.to_setter: dict[str, int] | None = None


#: searches an interpreter runs before it bounds them with every function's distance to
#: a setter (``_find_nearest_setter``)
UNBOUNDED_SEARCHES = 8
#: weak, so an interpreter and its searches go together
_SEARCHES: weakref.WeakKeyDictionary[Interpreter, _SetterSearches] = weakref.WeakKeyDictionary()


def _nearest_setter(interp: Interpreter, start: str) -> Setter | None:
    """The setter closest to ``start`` among what it calls that can change the flag (a
    function that leaves the flag set through a callee: the callee's write is the one)."""
    searches = _SEARCHES.get(interp)
    if searches is None:
        searches = _SEARCHES[interp] = _SetterSearches()
    if start not in searches.nearest:
        searches.nearest[start] = _find_nearest_setter(interp, searches, start)
    return searches.nearest[start]


def _find_nearest_setter(
    interp: Interpreter, searches: _SetterSearches, start: str
) -> Setter | None:
    """Breadth first from ``start`` over the calls of functions that can change the
    flag: the first setter popped.

    After ``UNBOUNDED_SEARCHES`` searches (vLLM: 1,600 witnesses, one search each, the
    ~3,000 functions below a sticky setter every time), every function's distance to
    the nearest setter is computed once (``_setter_distances``) and a search only
    follows calls that stay on a shortest way from ``start`` to a setter. It finds
    the same setter: every function the plain search discovers before it, on those
    ways, is discovered from the same caller in the same order (all the callers one
    level up of a function on a shortest way are on one too)."""
    fx = interp.fx
    searches.count += 1
    to_setter: dict[str, int] | None = None
    if searches.count > UNBOUNDED_SEARCHES:
        if searches.to_setter is None:
            searches.to_setter = _setter_distances(interp)
        to_setter = searches.to_setter
        if start not in to_setter:
            return None
    depth = {start: 0}
    todo = deque([start])
    while todo:
        qn = todo.popleft()
        setter = fx.setters.get(qn)
        if setter is not None:
            return setter
        below = depth[qn] + 1
        for callee in interp.graph.callees(qn):
            if callee in depth or callee not in interp.writers:
                continue
            if to_setter is not None and below + to_setter.get(callee, _FAR) > to_setter[start]:
                continue
            depth[callee] = below
            todo.append(callee)
    return None


_FAR = 1 << 30


def _setter_distances(interp: Interpreter) -> dict[str, int]:
    """Every function's number of calls to the nearest setter, over the calls
    ``_find_nearest_setter`` follows (absent: none reachable)."""
    graph = interp.graph
    dist = {qn: 0 for qn in interp.fx.setters}
    todo = deque(sorted(dist))
    while todo:
        qn = todo.popleft()
        if qn not in interp.writers:
            continue  # a search follows a call only to a function that can change the flag
        for caller in sorted(graph.callers(qn)):
            if caller not in dist:
                dist[caller] = dist[qn] + 1
                todo.append(caller)
    return dist


def _setter_value(fx: FlagEffects, setter: Setter | None) -> WrittenValue | None:
    if setter is None:
        return None
    initial = fx.flag.initial_kind
    kinds = [w.kind for w in setter.writes if sets_flag(w.kind, initial) is not False]
    if not kinds:
        kinds = [setter.value]
    if any(_value(k) is WrittenValue.UNKNOWN for k in kinds):
        return WrittenValue.UNKNOWN
    return WrittenValue.CONSTANT


def _value(kind: ValueKind) -> WrittenValue:
    if kind in (ValueKind.UNKNOWN, ValueKind.PARAMETER):
        return WrittenValue.UNKNOWN
    return WrittenValue.CONSTANT
