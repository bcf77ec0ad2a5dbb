"""Setting proofs: how sure is the step where a witness's flag became set?

A witness's ``enter`` (or ``set``) step says a context manager (or a setter
function) set the flag. Two things must hold for that, and both belong to the
proof and to its grade:

* the call reaches that setter: ``with graph_mode():`` names it directly, but
  ``with self.mode:`` or ``with make_mode():`` reach it by value flow only (the
  step's own ``resolution``);
* the setter really sets the flag. Its own code may write it, or it may call
  something that does: ``__enter__`` calling ``helper.enable()`` by name. Those
  calls, from the setter down to the function that writes the flag, are the
  *setting hops* a witness shows under its step (``WitnessStep.setting``).

The chain is the cheapest path (fewest by-name, then inferred hops, then
fewest hops) from the setter's own function (the generator, ``__enter__``, the
setter function) to a function that writes the flag, over the calls whose callee
can leave the flag set as the interpreter computed it (a function's transfer from
unset, a context manager's state at its ``yield``). The first setting chain
tried read the interpreter's remembered origin instead; on SGLang it followed a
cycle of "may stay set" calls and ended nowhere near a write. Steps are
identified by what they show (kind, function, location, setter), so steps built
anywhere (a witness, a sticky setter's preset path) get the same proof.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

from flagtrace.effects import sets_flag
from flagtrace.flagstate import UNSET, SetEvent
from flagtrace.interpret import Interpreter
from flagtrace.model import (
    AttrExpr,
    CallStep,
    Evidence,
    Expr,
    Location,
    Resolution,
    StepKind,
    WithBlock,
    WitnessStep,
    walk,
)

#: setting chains deeper than this are cut (a cycle is cut where it closes)
MAX_SETTING_HOPS = 32
_STRENGTH = {r: i for i, r in enumerate(Resolution)}
_INFERRED = Resolution.INFERRED
_WEAK = 1 << 12  # as in ``reach``: one weak hop outweighs any number of inferred ones
#: a chain's cost (weak-or-inferred weight, hops) packed in one int: weight * _PACK + hops
_PACK = 1 << 32
_FAR = 1 << 62
#: chain searches an interpreter runs before it computes every function's distance to
#: a write once and bounds the later searches with it (see ``_cheapest``)
UNBOUNDED_SEARCHES = 8


def weakest(resolutions: list[Resolution | None]) -> Resolution:
    """The weakest of ``resolutions`` (``direct`` when there are none)."""
    found = [r for r in resolutions if r is not None]
    return max(found, key=_STRENGTH.__getitem__) if found else Resolution.DIRECT


def evidence_of(steps: tuple[WitnessStep, ...] | list[WitnessStep]) -> Evidence:
    """A *yes* verdict's evidence: its weakest step (every call, enter, set and
    setting hop counts; a by-name or jedi hop makes it ``by-name``)."""
    grade = weakest([s.resolution for s in steps])
    if grade.weak:
        return Evidence.BY_NAME
    if grade is Resolution.INFERRED:
        return Evidence.INFERRED
    return Evidence.RESOLVED


@dataclass(frozen=True, slots=True)
class SettingProof:
    """The grade of reaching the setter (``resolution``), and the calls inside it
    that set the flag (``hops``, each ``setting``)."""

    resolution: Resolution
    hops: tuple[WitnessStep, ...]

    @property
    def cost(self) -> tuple[int, int]:
        """(weak hops, inferred hops), the step's own grade included: the terms the
        witness search ranks by."""
        grades = [self.resolution, *(h.resolution for h in self.hops)]
        weak = sum(1 for g in grades if g is not None and g.weak)
        inferred = sum(1 for g in grades if g is Resolution.INFERRED)
        return weak, inferred


class SettingProofs:
    """Setting proofs for one flag's interpreter, memoised per step."""

    def __init__(self, interp: Interpreter) -> None:
        self.i = interp
        self.p = interp.p
        self.graph = interp.graph
        self._proofs: dict[tuple[StepKind, str, Location, str], SettingProof] = {}
        self._chains: dict[tuple[StepKind, str], tuple[WitnessStep, ...]] = {}
        self._leaves: dict[str, bool] = {}
        #: per function, its calls whose callee can leave the flag set, by callee
        #: (sorted): the call's packed cost and its step. Every search for a chain
        #: (one per setter a witness names) walks the same ones
        self._edges: dict[str, dict[str, tuple[int, WitnessStep]]] = {}
        self._searches = 0
        #: every function's cost to the cheapest write, once computed (``_distances``)
        self._to_write: dict[str, int] | None = None
        #: per function, its setting calls on a cheapest chain to a write (``_tight_edges``)
        self._tight: dict[str, dict[str, tuple[int, WitnessStep]]] = {}
        self._writes_memo: dict[str, bool] = {}

    def prove(self, steps: list[WitnessStep]) -> list[WitnessStep]:
        """``steps`` with every ``enter``/``set`` step graded and followed by its
        setting hops, and every read through an accessor graded by its call."""
        out: list[WitnessStep] = []
        for step in steps:
            if step.setting or step.callee is None:
                out.append(step)
            elif step.step.sets_flag:
                proof = self.proof(step.step, step.function, step.location, step.callee)
                out.append(replace(step, resolution=proof.resolution))
                out.extend(replace(h, before_entry=step.before_entry) for h in proof.hops)
            elif step.step is StepKind.READ:
                grade = self.call_grade(step.function, step.location, step.callee)
                out.append(replace(step, resolution=grade))
            else:
                out.append(step)
        return out

    def of_event(self, ev: SetEvent) -> SettingProof:
        return self.proof(ev.kind, ev.function, ev.location, ev.via)

    def proof(self, kind: StepKind, function: str, location: Location, via: str) -> SettingProof:
        key = (kind, function, location, via)
        found = self._proofs.get(key)
        if found is None:
            grade = self._reach_grade(kind, function, location, via)
            hops = self._chain(kind, via) if via != function else ()
            found = self._proofs[key] = SettingProof(grade, hops)
        return found

    def call_grade(self, function: str, location: Location, callee: str) -> Resolution | None:
        """The resolution of the call at ``location`` in ``function`` that reaches
        ``callee`` (None when no such call site is there)."""
        scope = self.p.scopes.get(function)
        if scope is None:
            return None
        grades = [
            c.resolution
            for i, call in enumerate(scope.calls)
            if call.location == location
            for c in self.graph.site_callees(function, i)
            if c.qualname == callee
        ]
        return min(grades, key=_STRENGTH.__getitem__) if grades else None

    # ------------------------------------------------------------ the step itself

    def _reach_grade(
        self, kind: StepKind, function: str, location: Location, via: str
    ) -> Resolution:
        """How surely ``function`` reaches the setter ``via`` at ``location``."""
        if via == function:  # the function writes the flag itself
            return Resolution.DIRECT
        if kind is StepKind.SET:
            grade = self.call_grade(function, location, via)
            return grade if grade is not None else Resolution.DIRECT
        grades = [
            self._entered_grade(function, expr, via) for expr in self._entered(function, location)
        ]
        known = [g for g in grades if g is not None]
        return min(known, key=_STRENGTH.__getitem__) if known else Resolution.DIRECT

    def _entered(self, function: str, location: Location) -> list[Expr]:
        """The expressions entered at ``location`` in ``function``: the items of a
        ``with`` statement there, or the argument of ``enter_context``."""
        scope = self.p.scopes.get(function)
        if scope is None:
            return []
        out: list[Expr] = []
        for step in walk(scope.flow):
            if isinstance(step, WithBlock) and step.location == location:
                out.extend(item.expr for item in step.items)
            elif isinstance(step, CallStep):
                call = scope.calls[step.site]
                if (
                    call.location == location
                    and isinstance(call.func, AttrExpr)
                    and call.func.attr in ("enter_context", "enter_async_context")
                    and call.args
                ):
                    out.append(call.args[0].value)
        return out

    def _entered_grade(self, function: str, expr: Expr, via: str) -> Resolution | None:
        """The grade of ``expr`` being the setter ``via`` (a generator context
        manager, or a class whose ``__enter__`` sets); None when it is not."""
        scope = self.p.scopes[function]
        for cm_kind, qn in self.i._context_managers(scope, expr):
            if cm_kind == "cm" and qn == via:
                return self.graph.values.grade(function, expr, generator=qn)
            if cm_kind == "class" and qn in self.graph.values.methods(
                via, "__enter__", "__aenter__"
            ):
                return self.graph.values.grade(function, expr, cls=via)
        return None

    # ------------------------------------------------------------ inside the setter

    def _chain(self, kind: StepKind, via: str) -> tuple[WitnessStep, ...]:
        """The calls from the setter ``via`` down to a function that writes the flag:
        the strongest such chain (fewest weak, then inferred, then hops), over the
        calls whose callee leaves the flag set (a setter function's transfer, a
        context manager entered and yielding it set)."""
        key = (kind, via)
        found = self._chains.get(key)
        if found is None:
            start = self._setter_function(kind, via)
            found = self._cheapest(start) if start is not None else ()
            self._chains[key] = found
        return found

    def _setter_function(self, kind: StepKind, via: str) -> str | None:
        """The function whose code runs when the setter sets: the generator, the
        class's ``__enter__``, or the setter function itself."""
        scope = self.p.scopes.get(via)
        if kind is StepKind.ENTER and (scope is None or not scope.is_generator):
            return next(
                (
                    m
                    for m in self.graph.values.methods(via, "__enter__", "__aenter__")
                    if m in self.i.writers
                ),
                None,
            )
        return via if scope is not None else None

    def _cheapest(self, start: str) -> tuple[WitnessStep, ...]:
        """Dijkstra from ``start`` to the nearest function that writes the flag.

        The chain found is the first write popped (cheapest, then first by name),
        and each function on it is reached from the first function popped that
        reaches it at its cheapest. A flag observed by 1,500 entries asks for as many
        chains, and each search popped ~3,000 functions (vLLM: 5M pops, 39 s). So
        after ``UNBOUNDED_SEARCHES`` searches, every function's cost to the cheapest
        write is computed once (``_distances``) and a search only follows calls to
        functions on some cheapest chain from ``start`` (cost so far + their cost to
        a write == ``start``'s). That finds the same chain: every function the
        unbounded search compares for it (a write as cheap as the cheapest, a caller
        reaching a function on the chain at its cheapest) lies on a cheapest chain
        too, and is popped in the same order relative to the others.

        A function popped by the bounded search lies on such a chain, at cost so far
        ``bound - to_write[fn]``; so the calls it follows are exactly its tight ones
        (``_tight_edges``: weight + the callee's cost to a write == its own), the
        same for every search: memoised, they spare each search a pass over every
        setting call of the functions it pops, most of them skipped (a flag on vLLM
        0.34.0 with 1,673 searches: 29 -> 23 s)."""
        self._searches += 1
        if self._searches > UNBOUNDED_SEARCHES:
            if start not in self._distances():
                return ()
            edges_of = self._tight_edges
        else:
            edges_of = self._setting_edges
        best: dict[str, int] = {start: 0}
        back: dict[str, tuple[str, WitnessStep]] = {}
        heap: list[tuple[int, str]] = [(0, start)]
        while heap:
            cost, fn = heapq.heappop(heap)
            if best[fn] < cost:
                continue
            if self._writes_set(fn):
                hops: list[WitnessStep] = []
                while fn in back:
                    fn, hop = back[fn]
                    hops.append(hop)
                return tuple(reversed(hops[-MAX_SETTING_HOPS:]))
            for callee, (weight, hop) in edges_of(fn).items():
                candidate = cost + weight
                if candidate < best.get(callee, _FAR):
                    best[callee] = candidate
                    back[callee] = (fn, hop)
                    heapq.heappush(heap, (candidate, callee))
        return ()

    def _tight_edges(self, fn: str) -> dict[str, tuple[int, WitnessStep]]:
        """``fn``'s setting calls that keep to a cheapest chain to a write (the
        call's weight + the callee's cost to a write == ``fn``'s), in the order of
        ``_setting_edges``; memoised (``_distances`` must have been computed)."""
        found = self._tight.get(fn)
        if found is None:
            to_write = self._to_write
            assert to_write is not None
            own = to_write.get(fn, _FAR)
            found = self._tight[fn] = {
                callee: edge
                for callee, edge in self._setting_edges(fn).items()
                if edge[0] + to_write.get(callee, _FAR) <= own  # == : no call is cheaper
            }
        return found

    def _distances(self) -> dict[str, int]:
        """Every function's cost to the cheapest write of the flag over setting
        calls (absent: no chain), by Dijkstra backwards from the writes."""
        if self._to_write is not None:
            return self._to_write
        dist = {fn: 0 for fn in self.i.fx.writes if self._writes_set(fn)}
        heap = [(0, fn) for fn in sorted(dist)]
        while heap:
            cost, fn = heapq.heappop(heap)
            if dist[fn] < cost or not self._leaves_set(fn):
                continue  # a call of a function that cannot leave the flag set is no setting call
            for caller in sorted(self.graph.scope_callers(fn)):
                weight = self._weight_to(caller, fn)
                if weight is not None and cost + weight < dist.get(caller, _FAR):
                    dist[caller] = cost + weight
                    heapq.heappush(heap, (cost + weight, caller))
        self._to_write = dist
        return dist

    def _weight_to(self, fn: str, callee: str) -> int | None:
        """The packed cost of ``fn``'s setting call of ``callee`` (None: no such call)."""
        found = self._setting_edges(fn).get(callee)
        return found[0] if found is not None else None

    def _writes_set(self, fn: str) -> bool:
        memo = self._writes_memo.get(fn)
        if memo is None:
            initial = self.i.fx.flag.initial_kind
            memo = self._writes_memo[fn] = any(
                sets_flag(w.kind, initial) is not False for w in self.i.fx.writes.get(fn, ())
            )
        return memo

    def _setting_edges(self, fn: str) -> dict[str, tuple[int, WitnessStep]]:
        """The calls in ``fn`` whose callee can leave the flag set (each callee once,
        at its strongest site); memoised (on transformers a flag's witnesses ran
        ~1,000 searches over the same functions, and building these steps again
        was a third of the flag's time)."""
        found = self._edges.get(fn)
        if found is None:
            found = self._edges[fn] = self._find_setting_edges(fn)
        return found

    def _find_setting_edges(self, fn: str) -> dict[str, tuple[int, WitnessStep]]:
        scope = self.p.scopes.get(fn)
        if scope is None:
            return {}
        out: dict[str, tuple[str, WitnessStep]] = {}
        for i, call in enumerate(scope.calls):
            for c in self.graph.running_callees(fn, i):
                if not c.analysed or c.qualname not in self.i.writers or c.qualname == fn:
                    continue
                if not self._leaves_set(c.qualname):
                    continue
                known = out.get(c.qualname)
                if (
                    known is not None
                    and _STRENGTH[known[1].resolution or c.resolution] <= (_STRENGTH[c.resolution])
                ):
                    continue
                hop = WitnessStep(
                    StepKind.CALL,
                    fn,
                    call.location,
                    c.qualname,
                    c.resolution,
                    text=call.text,
                    guards=call.guards,
                    setting=True,
                )
                out[c.qualname] = (c.qualname, hop)
        return {k: (_hop_weight(out[k][1]), out[k][1]) for k in sorted(out)}

    def _leaves_set(self, qn: str) -> bool:
        """Does running ``qn`` from the flag unset leave it set: a context manager
        at its ``yield``, any other function when it returns or raises."""
        memo = self._leaves.get(qn)
        if memo is None:
            if self.i.is_cm(qn):
                run = self.i.run(self.p.scopes[qn], UNSET)
                memo = run.yields is not None and run.yields.set
            else:
                memo = self.i.may_leave_set(qn)
            self._leaves[qn] = memo
        return memo


def _hop_weight(hop: WitnessStep) -> int:
    """A setting call's packed cost: a weak hop outweighs any number of inferred ones,
    then one more hop."""
    grade = hop.resolution
    weight = _WEAK if grade is not None and grade.weak else int(grade is _INFERRED)
    return weight * _PACK + 1
