"""What resolution hands to the later stages: a frozen ``ResolvedProgram``.

Later stages never see the resolver's tables, memos or value tuples. They get
the summaries (``program``), the callees of every call site, the sites that
knowingly call nothing analysed, and a ``ValueQuery`` for the few value
questions the flag analysis asks (is this alias the flag's module? which
classes can this ``with`` item be an instance of?).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from flagtrace.model import Callee, ContainerExpr, DecoratorKind, Expr, Resolution
from flagtrace.resolve.program import Program
from flagtrace.resolve.rounds import KEPT_ANSWERS, Resolver, SiteKey
from flagtrace.resolve.state import NAMED_RUN_TABLES
from flagtrace.resolve.values import (
    BUILTIN,
    CLASS,
    EXTERNAL,
    FUNCTION,
    GENERATOR,
    INSTANCE,
    MODULE,
    Value,
    Values,
    ordered,
)


class NamedState(NamedTuple):
    """What ``ValueQuery.named_state_apart`` detaches from a resolver."""

    param_values: dict[tuple[str, str], set[Value]]
    memo: dict[str, dict[Any, Any]]
    run_memo: dict[str, dict[Any, Any]]


class ValueQuery:
    """Value questions about the resolved program, answered with the parameter
    values and container stores of resolution's last round, and the part of its
    memo ``Resolver.settle`` kept."""

    def __init__(self, resolver: Resolver) -> None:
        self._r = resolver

    @contextmanager
    def forgetting(self) -> Iterator[None]:
        """Questions asked inside are answered as usual, but what resolution
        memoises to answer them is forgotten on exit.

        Why: a few answers still depend on what was memoised before they were
        asked (a component of lookups whose rules are not monotone, see
        ``RoundMemo.solve``), so a stage that asks many questions could change
        the later stages' answers. Pruning asks inside this:
        the flag stages then answer the same whether pruning ran in this process
        or its result was loaded (``flagtrace.program_store``)."""
        r = self._r
        kept = r.memo
        r.memo = kept.copy()
        try:
            yield
        finally:
            r.memo = kept

    @contextmanager
    def named_state_apart(self) -> Iterator[NamedState]:
        """What the resolver holds keyed and valued by names and values alone,
        detached for the duration: the parameter values, the memo tables
        ``Resolver.settle`` kept and the run memo's ``NAMED_RUN_TABLES``.

        Why: the program without them, and they, are pickled one after the other,
        each with a pickler memo of its own (``flagtrace.program_store``); nothing
        in them is an object of the program whose identity matters (an
        expression), so they load as well apart (SGLang 0.5.9: 0.87M of the 5.9M
        objects stored)."""
        r = self._r
        memo, run_memo, param_values = r.memo, r.run_memo, r.param_values
        r.memo, r.run_memo = copy.copy(memo), copy.copy(run_memo)
        r.param_values = defaultdict(set)
        for name in KEPT_ANSWERS:
            setattr(r.memo, name, {})
        for name in NAMED_RUN_TABLES:
            setattr(r.run_memo, name, {})
        try:
            yield NamedState(
                param_values,
                {name: getattr(memo, name) for name in KEPT_ANSWERS},
                {name: getattr(run_memo, name) for name in NAMED_RUN_TABLES},
            )
        finally:
            r.memo, r.run_memo, r.param_values = memo, run_memo, param_values

    @contextmanager
    def program_apart(self) -> Iterator[dict[str, str]]:
        """The resolver without the program for the duration: no program tables
        (``Resolver.p``), no displays (yields the scope of each by origin), no
        passthrough memo.

        Why: all three are the summaries or objects inside them, and a stored
        program (``flagtrace.program_store``) does not store the summaries again
        (they were 85% of its objects, and the stored program's pickler memo the
        largest allocation of a cold run): the loading run gets them from the
        summary cache and puts the program back (``restore_program``). The
        passthrough memo depends on the code alone and is computed again."""
        r = self._r
        program, containers, passthrough = r.p, r.run_memo.containers, r.run_memo.passthrough
        r.p = None  # type: ignore[assignment]
        r.run_memo.containers, r.run_memo.passthrough = {}, {}
        try:
            yield {origin: scope for origin, (scope, _) in containers.items()}
        finally:
            r.p, r.run_memo.containers, r.run_memo.passthrough = program, containers, passthrough

    def restore_program(self, program: Program, displays: object) -> bool:
        """Put back what ``program_apart`` detached, ``program`` built from the
        summaries the program was resolved from; False, and nothing changed, if
        ``displays`` is not what it yielded or names a display ``program`` lacks.
        The displays are the summaries' own objects (``ModuleSummary.containers``):
        memo keys stand for an expression by its identity (``values.Same``)."""
        if not isinstance(displays, dict):
            return False
        containers: dict[str, tuple[str, ContainerExpr]] = {}
        for origin, scope in displays.items():
            if type(origin) is not str or type(scope) is not str:
                return False
            module, _, number = origin.rpartition(":")
            summary = program.modules.get(module)
            if summary is None or not number.isdigit():
                return False
            index = int(number) - 1
            if not 0 <= index < len(summary.containers):
                return False
            display = summary.containers[index]
            if display.origin != origin:
                return False
            containers[origin] = (scope, display)
        r = self._r
        r.p = program
        r.run_memo.containers, r.run_memo.passthrough = containers, {}
        return True

    def restore_named_state(self, state: object) -> bool:
        """Put back what ``named_state_apart`` detached (after a load); False, and
        nothing changed, if ``state`` is not that."""
        if not (
            isinstance(state, NamedState)
            and type(state.param_values) is defaultdict
            and state.param_values.default_factory is set
            and set(state.memo) == set(KEPT_ANSWERS)
            and set(state.run_memo) == set(NAMED_RUN_TABLES)
            and all(type(t) is dict for t in (*state.memo.values(), *state.run_memo.values()))
        ):
            return False
        r = self._r
        r.param_values = state.param_values
        for name, table in state.memo.items():
            setattr(r.memo, name, table)
        for name, table in state.run_memo.items():
            setattr(r.run_memo, name, table)
        return True

    def names_module(self, qn: str, dotted: str, module: str) -> bool:
        """Does ``dotted`` (``st`` or ``pkg.state``), read in scope ``qn``, refer
        to the analysed module ``module``?"""
        r = self._r
        first, *rest = dotted.split(".")
        values: Values = r.lookup(qn, first)
        for part in rest:
            values = frozenset(v for b in ordered(values) for v in r.attribute(b, part, qn))
        return (MODULE, module, 0) in values

    def instance_classes(self, qn: str, expr: Expr) -> list[str]:
        """Analysed classes whose instances ``expr`` may evaluate to in ``qn``."""
        return [name for kind, name, _ in ordered(self._r.eval(qn, expr)) if kind is INSTANCE]

    def functions(self, qn: str, expr: Expr) -> list[str]:
        """Analysed functions (or bound methods) ``expr`` may evaluate to in ``qn``."""
        return [name for kind, name, _ in ordered(self._r.eval(qn, expr)) if kind is FUNCTION]

    def generators(self, qn: str, expr: Expr) -> list[str]:
        """The generator functions whose generator objects ``expr`` may evaluate
        to in ``qn`` (``cm()``, ``make_cm()`` returning one, a stored one)."""
        return [name for kind, name, _ in ordered(self._r.eval(qn, expr)) if kind is GENERATOR]

    def decorator_kinds(self, qn: str) -> frozenset[DecoratorKind]:
        """What ``qn``'s decorators make of it (a context manager, a static method...)."""
        return self._r.decorator_kinds(qn)

    def classes(self, qn: str, expr: Expr) -> list[str]:
        """Analysed classes (the class objects, not instances) ``expr`` may be in ``qn``."""
        return [name for kind, name, _ in ordered(self._r.eval(qn, expr)) if kind is CLASS]

    def constructed(self, qn: str, index: int) -> list[str]:
        """Analysed classes call site ``index`` of ``qn`` may instantiate: what its
        callee expression evaluates to, as resolution saw it (memoised there)."""
        site = self._r.p.scopes[qn].calls[index]
        targets, _ = self._r.callee_values(qn, index, site)
        return sorted({v[1] for v, _, _ in targets if v[0] is CLASS})

    def names_library(self, qn: str, expr: Expr) -> bool:
        """Can ``expr`` be something outside the analysed code (a library or builtin name)?"""
        return any(kind in (EXTERNAL, BUILTIN) for kind, _, _ in self._r.eval(qn, expr))

    def mro(self, cls: str) -> tuple[str, ...]:
        """``cls`` and its analysed bases, in method resolution order."""
        return self._r.mro(cls)

    def external_bases(self, cls: str) -> tuple[str, ...]:
        """The bases of ``cls`` (through its analysed bases) outside the analysed code."""
        return self._r.external_bases_of(cls)

    def grade(
        self, qn: str, expr: Expr, generator: str | None = None, cls: str | None = None
    ) -> Resolution:
        """How surely ``expr`` in ``qn`` evaluates to the generator object of
        ``generator``, or to an instance of ``cls``: ``direct``/``typed`` when a
        declaration says so, ``inferred`` when only value flow does."""
        if generator is not None:
            return self._r.value_grade(qn, expr, (GENERATOR, generator, 0))
        assert cls is not None
        return self._r.value_grade(qn, expr, (INSTANCE, cls, 0))

    def methods(self, cls: str, *names: str) -> list[str]:
        """The functions bound to any of ``names`` on class ``cls`` (through its MRO)."""
        found: set[str] = set()
        for name in names:
            found.update(n for kind, n, _ in self._r.class_attribute(cls, name) if kind is FUNCTION)
        return sorted(found)


@dataclass(frozen=True, slots=True)
class ResolvedProgram:
    """The analysed code with every call site resolved."""

    program: Program
    #: (scope qualname, site index) -> callees; class-body sites keep their class scope
    site_callees: Mapping[SiteKey, tuple[Callee, ...]]
    #: sites that call nothing analysed, knowingly (a method of a list, a library class)
    resolved_empty: frozenset[SiteKey]
    values: ValueQuery
    #: site -> the generator functions whose objects it resumes (iterates,
    #: enters, hands to library code): there, and not where they are called,
    #: their bodies run (``flagtrace.generators``)
    resumed: Mapping[SiteKey, frozenset[str]] = field(default_factory=dict)

    def callees(self, scope: str, site: int) -> tuple[Callee, ...]:
        return self.site_callees.get((scope, site), ())

    def sites(self) -> Iterator[tuple[SiteKey, tuple[Callee, ...]]]:
        """Every resolved site with its callees, in resolution order."""
        return iter(self.site_callees.items())

    def with_callees(self, added: Mapping[SiteKey, Sequence[Callee]]) -> ResolvedProgram:
        """A new program whose sites also call ``added`` (jedi's answers); callees
        a site already has are not added twice. This program is unchanged."""
        site_callees = dict(self.site_callees)
        for key, extra in added.items():
            current = site_callees.get(key, ())
            for callee in extra:
                if all(c.qualname != callee.qualname for c in current):
                    current = (*current, callee)
            site_callees[key] = current
        return replace(self, site_callees=site_callees)


def resolve_program(resolver: Resolver) -> ResolvedProgram:
    """The frozen result; typed callees that no declaration supports become
    ``inferred`` here, once, with the last round's values (``resolve.declared``)."""
    # one object per distinct callee: resolution makes a new one at every site
    # (SGLang: 300k made, 30k distinct), and the stored program pickles each
    # copy as a reference to the first, at a cost in time and memory
    same: dict[Callee, Callee] = {}
    site_callees = {
        key: tuple(same.setdefault(c, c) for c in resolver.refine_callees(key[0], key[1], callees))
        for key, callees in resolver.site_callees.items()
    }
    # resolution's own tables of records: the stored program pickles the resolver
    resolver.callee_records, resolver.by_name_records = {}, {}
    resolved = ResolvedProgram(
        program=resolver.p,
        site_callees=site_callees,
        resolved_empty=frozenset(resolver.resolved_empty),
        resumed=dict(resolver.resumed),
        values=ValueQuery(resolver),
    )
    resolver.settle()
    return resolved
