"""Functions that never return normally: every path through them raises.

Why: the flag interpreter lets a call fall through to the next statement unless it
knows better, and for a function that cannot change the flag it knew nothing. A
helper that always raises (``def fail(): raise ValueError(...)``) then let the code
after its call run in the interpreter, although no run gets there:
``with cm(): fail()`` followed by a read of the flag was a *yes* no run could
produce. With this set, such a call ends its path like a ``raise`` statement does
(the exception still runs the enclosing ``with`` exits and ``finally`` blocks and
may be caught by an enclosing ``except``).

A function never returns when no path through its flow reaches its end or a
``return``, judged syntactically over the flow tree:

* ``raise`` ends a path; so does a call whose every callee is an analysed function
  of the set, called directly (``fail()``, ``mod.fail()``). Methods never count: a
  base class's ``raise NotImplementedError`` is overridden in subclasses flagtrace
  may not see (a library's clients), and a typed, inferred or by-name site may have
  a callee flagtrace does not list;
* a ``try`` with handlers completes if its body or any handler does (any statement
  of the body may raise into a handler); a ``finally`` that cannot complete ends
  every path through it, one with a ``return`` swallows the exception;
* a ``with`` completes if its body does, or if an item may swallow the exception
  (``contextlib.suppress``, an ``__exit__`` that may return true: the
  interpreter's own test);
* a branch completes if an arm that can run does (the guard oracle decides arms:
  ``if False``); a loop always completes (its body may run zero times).

The set is the least one closed under these rules (it starts empty and only
grows), so mutual recursion without a ``raise`` stays out: conservative. Generator
functions and coroutines are never in it (calling one runs nothing of its body);
nor are class bodies, modules and lambdas.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from flagtrace.callgraph import CallGraph
from flagtrace.guards_eval import Truth
from flagtrace.model import (
    Branch,
    CallKind,
    CallStep,
    Flow,
    Guard,
    RaiseStep,
    Resolution,
    ReturnStep,
    Scope,
    ScopeKind,
    TryBlock,
    WithBlock,
    WithItem,
    walk,
)

TruthOf = Callable[[Scope, Guard], Truth]
MaySuppress = Callable[[Scope, WithItem], bool]


class NeverReturns:
    """The functions of ``graph``'s program that never return normally, and the call
    sites that therefore never fall through."""

    def __init__(self, graph: CallGraph, truth: TruthOf, may_suppress: MaySuppress) -> None:
        self.graph = graph
        self.p = graph.program
        self._truth = truth
        self._may_suppress = may_suppress
        self.functions: set[str] = set()
        #: answers memoised once ``functions`` is final: the interpreter asks at
        #: every run of a site (1.2M times for 0.3M sites in a flag on vLLM 0.34.0)
        self._sites: dict[tuple[str, int], bool] | None = None
        self._compute()
        self._sites = {}

    def site(self, scope: str, site: int) -> bool:
        """Does no callee of this call site ever return normally?"""
        memo = self._sites
        if memo is None:  # still computing ``functions``
            return self._never_falls_through(scope, site)
        key = (scope, site)
        known = memo.get(key)
        if known is None:
            known = memo[key] = self._never_falls_through(scope, site)
        return known

    def _never_falls_through(self, scope: str, site: int) -> bool:
        call = self.p.scopes[scope].calls[site]
        if call.kind is not CallKind.CALL:
            return False
        # every callee, the generator functions the site only builds included (those
        # return a generator object): a redefined name may list a placeholder too
        callees = self.graph.site_callees(scope, site)
        return bool(callees) and all(
            c.analysed and c.resolution is Resolution.DIRECT and c.qualname in self.functions
            for c in callees
        )

    def _candidate(self, scope: Scope) -> bool:
        return (
            scope.kind is ScopeKind.FUNCTION
            and not scope.is_generator
            and not scope.is_async
            and self.p.method_class(scope.qualname) is None
        )

    def _compute(self) -> None:
        # a function joins the set only when it has a ``raise`` or calls a member:
        # start from those with a ``raise`` and recheck the callers of each new member
        todo = deque(
            qn
            for qn, scope in self.p.scopes.items()
            if self._candidate(scope) and _has_raise(scope.flow)
        )
        queued = set(todo)
        while todo:
            qn = todo.popleft()
            queued.discard(qn)
            if qn in self.functions:
                continue
            scope = self.p.scopes[qn]
            if self._may_return(scope):
                continue
            self.functions.add(qn)
            for caller in self.graph.scope_callers(qn):
                s = self.p.scopes.get(caller)
                if caller not in self.functions and caller not in queued and s is not None:
                    if self._candidate(s):
                        todo.append(caller)
                        queued.add(caller)

    def _may_return(self, scope: Scope) -> bool:
        returns = [False]
        completes = self._block(scope, scope.flow, returns)
        return completes or returns[0]

    def _block(self, scope: Scope, flow: Iterable[Flow], returns: list[bool]) -> bool:
        """Can control reach the end of ``flow``? Notes a reachable ``return``."""
        for step in flow:
            if not self._step(scope, step, returns):
                return False
        return True

    def _step(self, scope: Scope, step: Flow, returns: list[bool]) -> bool:
        if isinstance(step, ReturnStep):
            returns[0] = True
            return False
        if isinstance(step, RaiseStep):
            return False
        if isinstance(step, CallStep):
            return not self.site(scope.qualname, step.site)
        if isinstance(step, WithBlock):
            body = self._block(scope, step.body, returns)
            return body or any(self._may_suppress(scope, item) for item in step.items)
        if isinstance(step, TryBlock):
            body = self._block(scope, step.body, returns)
            if body and step.orelse:
                body = self._block(scope, step.orelse, returns)
            handled = [self._block(scope, h, returns) for h in step.handlers]
            completes = body or any(handled)
            if step.finalbody:
                final_returns = [False]
                final = self._block(scope, step.finalbody, final_returns)
                if final_returns[0]:
                    returns[0] = True  # ``return`` in ``finally`` swallows the exception
                return completes and final
            return completes
        if isinstance(step, Branch):
            if step.loop:
                self._block(scope, step.body, returns)
                if step.orelse:
                    self._block(scope, step.orelse, returns)
                return True
            truth = self._truth(scope, step.guard) if step.guard is not None else Truth.UNKNOWN
            if truth is Truth.FALSE:
                return self._block(scope, step.orelse, returns)
            if truth is Truth.TRUE:
                return self._block(scope, step.body, returns)
            body = self._block(scope, step.body, returns)
            other = self._block(scope, step.orelse, returns)
            return body or other
        return True


def _has_raise(flow: tuple[Flow, ...]) -> bool:
    return any(isinstance(step, RaiseStep) for step in walk(flow))
