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
from collections.abc import Iterator
from dataclasses import dataclass, field

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
from flagtrace.resolve.values import EMPTY, Same, Value, Values

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
    #: last rounds. Only for contents complete (not in ``containers_filling``):
    #: they no longer grow
    container_values: dict[str, Values] = field(default_factory=dict)
    #: (container values, key or None) -> what ``container_items`` answers for
    #: each of them, joined (``Objects._items_of``), on the same terms
    container_joins: dict[tuple[Values, str | None], Values] = field(default_factory=dict)
    #: origins whose display is being evaluated (``Objects._container_contents``)
    containers_filling: set[str] = field(default_factory=set)
    class_attributes: dict[tuple[str, str], Values] = field(default_factory=dict)
    external_dispatch: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    fields_by_class: dict[str, dict[str, list[FieldStore]]] = field(default_factory=dict)
    indexing_fields: set[str] = field(default_factory=set)
    #: declared-only values (``resolve.declared``), asked after the last round
    declared: dict[object, Values] = field(default_factory=dict)
    #: lookups under way: a lookup that meets itself answers "nothing" (see
    #: ``values.ordered`` for why the order of visits is fixed)
    in_progress: set[object] = field(default_factory=set)
    #: how many lookups have met themselves so far this round (``cut``): an answer
    #: computed while this did not move is complete, and may be memoised
    cuts: int = 0
    #: ``base.attr`` by (scope, the stored expression: ``Same``), complete answers only
    attributes: dict[tuple[str, Same], Values] = field(default_factory=dict)

    def cut(self) -> Values:
        """Answer for a lookup that met itself: nothing, counted."""
        self.cuts += 1
        return EMPTY

    def copy(self) -> RoundMemo:
        """A memo that answers as this one and records what it learns on its own:
        every table copied, the tables' values shared. Sound because an entry,
        once its lookup has finished, is never changed in place outside a round
        (``collect_stores`` replaces the container tables whole)."""
        other = copy.copy(self)
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, dict | set):
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
