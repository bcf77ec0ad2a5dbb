"""Facts flagtrace derives itself: constructor constants and attribute nullness.

Both speak about ``self.ATTR`` inside the instance methods of one class, and both
are facts that hold on *every* run (they feed ``guards_eval`` the way ``--assume``
facts do, asked after them), so a guard they decide prunes soundly:

* **Constructor constants.** ``Runner.__init__`` stores ``self.is_draft = is_draft``
  (a parameter it never rebinds), and every construction of ``Runner`` in the
  analysed code passes the same constant for it (or leaves the same constant
  default): then ``self.is_draft`` is that constant in every method of ``Runner``.
  The limit to *every* construction is object sensitivity at the granularity of the
  class: two constructions that disagree leave the fact unknown (a receiver-specific
  fact would need the flag transfers computed per receiver, which they are not).
* **Attribute nullness.** Every store to ``.ATTR`` anywhere stores ``None``, or is
  ``self.ATTR = C(...)`` whose call sits behind a guard that is false under the facts
  (an early ``return`` when the feature is off, or an ``if``): the store never runs,
  so ``self.ATTR`` is ``None`` (or unset, and reading it raises).

A fact is derived only when nothing else can write the attribute: one store of
that attribute name in the whole analysed code (any receiver: a store to ``x.ATTR``
on an object of unknown type counts), no ``setattr``/``__setattr__`` call whose name
may be ``ATTR`` (one with a name that is not a literal forbids every fact), no
class anywhere binding ``ATTR`` in its body (a property, a class attribute), no
``__getattr__``/``__getattribute__``/``__setattr__`` in the class's MRO. A constructor
constant also needs every instance to be made where we see it: the class has no
analysed subclass, no base outside the analysed code but ``object``-like ones, is
never used as a value (a registry may build it), never built by ``cls(...)``, never
an ``--entry``'s class, and constructed at least once, each time without ``*args``/
``**kwargs``.

What this cannot see: ``self.__dict__`` or ``vars(self)`` edits, an instance method
called with an unrelated explicit ``self``, instances made outside the analysed code
(a test, a library calling back) of a class the analysed code also constructs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from flagtrace.assume import NO_VALUE, Fact, Facts, literal
from flagtrace.guards_eval import GuardEvaluator
from flagtrace.model import (
    AttrExpr,
    CallExpr,
    CallKind,
    ConstExpr,
    DecoratorKind,
    GuardCall,
    GuardExpr,
    GuardPath,
    Location,
    NameExpr,
    ParamKind,
    Scope,
    ScopeKind,
)
from flagtrace.resolve import Program, ValueQuery

__all__ = ["Derived", "DerivedEnv", "derive"]

#: hooks that make attribute reads or writes run code
_ATTR_HOOKS = ("__getattr__", "__getattribute__", "__setattr__")
#: the site of a store: (scope, index into its assignments)
_Store = tuple[str, int]


class DerivedEnv:
    """The derived facts of one method: ``self.ATTR`` (``self`` its first parameter)."""

    def __init__(self, self_name: str, facts: Mapping[str, Fact]) -> None:
        self.self_name = self_name
        self.facts = dict(facts)
        #: attribute names: a guard whose text has none of them is not asked
        self.names = frozenset(facts)

    def value(self, expr: GuardPath | GuardCall) -> tuple[object, tuple[Fact, ...]] | None:
        if not isinstance(expr, GuardPath):
            return None
        base, _, attr = expr.path.partition(".")
        if base != self.self_name or "." in attr:
            return None
        fact = self.facts.get(attr)
        return None if fact is None else (fact.value, (fact,))

    def local(self, name: str) -> GuardExpr | None:
        return None


@dataclass(frozen=True, slots=True)
class Derived:
    """Per class, the attribute facts of its instance methods."""

    by_class: Mapping[str, Mapping[str, Fact]]
    program: Program
    values: ValueQuery

    def __bool__(self) -> bool:
        return bool(self.by_class)

    @property
    def facts(self) -> tuple[Fact, ...]:
        return tuple(f for facts in self.by_class.values() for f in facts.values())

    def env(self, scope: Scope) -> DerivedEnv | None:
        """The facts of ``scope`` when it is an instance method of a class with some."""
        if scope.kind is not ScopeKind.FUNCTION or not scope.params:
            return None
        cls = self.program.method_class(scope.qualname)
        facts = self.by_class.get(cls) if cls is not None else None
        if not facts:
            return None
        kinds = self.values.decorator_kinds(scope.qualname)
        if DecoratorKind.STATICMETHOD in kinds or DecoratorKind.CLASSMETHOD in kinds:
            return None
        return DerivedEnv(scope.params[0].name, facts)


@dataclass(frozen=True, slots=True)
class _Writes:
    """Every store to each attribute name, and what forbids facts altogether."""

    stores: Mapping[str, list[_Store]]
    setattr_names: frozenset[str]
    any_setattr: bool  # a setattr whose name is no literal: no fact anywhere
    class_bound: frozenset[str]  # names some class body binds
    #: names imported under another name (``from m import Runner as R``): a
    #: construction ``R(...)`` is not spelled like the class, so it may be unseen
    renamed: frozenset[str]


def _writes(p: Program) -> _Writes:
    stores: dict[str, list[_Store]] = {}
    named: set[str] = set()
    any_setattr = False
    class_bound: set[str] = set()
    renamed: set[str] = set()
    for qn, scope in p.scopes.items():
        renamed.update(i.name for i in scope.imports if i.name is not None and i.alias != i.name)
        for j, a in enumerate(scope.assignments):
            if a.target.attr is not None:
                stores.setdefault(a.target.attr, []).append((qn, j))
        for call in scope.calls:
            func = call.func
            if not (
                (isinstance(func, NameExpr) and func.name == "setattr")
                or (isinstance(func, AttrExpr) and func.attr == "__setattr__")
            ):
                continue
            name = call.args[1].value if len(call.args) > 1 else None
            value = literal(name.value) if isinstance(name, ConstExpr) else NO_VALUE
            if isinstance(value, str):
                named.add(value)
            else:
                any_setattr = True
        if scope.kind is ScopeKind.CLASS:
            class_bound.update(scope.local_names)
            class_bound.update(c.rpartition(".")[2] for c in scope.children)
    return _Writes(
        stores, frozenset(named), any_setattr, frozenset(class_bound), frozenset(renamed)
    )


def derive(
    p: Program,
    values: ValueQuery,
    subclasses: Mapping[str, Iterable[str]],
    constructions: Mapping[str, Iterable[tuple[str, int]]],
    unseen_instances: Callable[[str], bool],
    facts: Facts,
) -> Derived:
    """The facts that hold on every run. ``constructions``: class -> the call sites
    that may construct it (live or not); ``unseen_instances(cls)``: may an instance
    of ``cls`` be made where no construction site shows it (a value escape, a
    library, ``cls(...)``, an entry's class)? ``facts``: the ``--assume`` facts,
    under which the guards of nullness stores are evaluated."""
    writes = _writes(p)
    if writes.any_setattr:
        return Derived({}, p, values)
    by_class: dict[str, dict[str, Fact]] = {}
    for cls, made in constructions.items():
        if any(sub != cls for sub in subclasses.get(cls, ())):
            continue
        found = _constructor_constants(p, values, cls, list(made), unseen_instances, writes)
        if found:
            by_class[cls] = found
    constants = Derived({c: dict(f) for c, f in by_class.items()}, p, values)
    evaluator = GuardEvaluator(facts, constants.env if constants else None)
    for cls, attr, fact in _nullness(p, values, writes, evaluator):
        by_class.setdefault(cls, {}).setdefault(attr, fact)
    return Derived(by_class, p, values)


def _free_attr(p: Program, values: ValueQuery, cls: str, attr: str, writes: _Writes) -> bool:
    """No hook, property, class attribute or ``setattr`` can read or write ``attr``."""
    if attr in writes.setattr_names or attr in writes.class_bound:
        return False
    return not any(h in p.locals.get(base, ()) for base in values.mro(cls) for h in _ATTR_HOOKS)


def _constructor_constants(
    p: Program,
    values: ValueQuery,
    cls: str,
    made: list[tuple[str, int]],
    unseen_instances: Callable[[str], bool],
    writes: _Writes,
) -> dict[str, Fact]:
    init = p.scopes.get(f"{cls}.__init__")
    if init is None or not made or len(init.params) < 1 or unseen_instances(cls):
        return {}
    if p.scopes[cls].name in writes.renamed:
        return {}
    params = {prm.name: k for k, prm in enumerate(init.params)}
    rebound = {a.target.name for a in init.assignments if a.target.name is not None}
    self_name = init.params[0].name
    out: dict[str, Fact] = {}
    for j, a in enumerate(init.assignments):
        attr = a.target.attr
        base = a.target.base
        value = a.value
        if (
            attr is None
            or not isinstance(base, NameExpr)
            or base.name != self_name
            or not isinstance(value, NameExpr)
            or value.name not in params
            or value.name == self_name
            or value.name in rebound
            or a.augmented
            or a.iterates
            or writes.stores.get(attr) != [(init.qualname, j)]
            or not _free_attr(p, values, cls, attr, writes)
        ):
            continue
        param = init.params[params[value.name]]
        if param.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
            continue
        agreed = _agreed(p, made, init, params[value.name])
        if agreed is None:
            continue
        text, where = agreed
        out[attr] = Fact(
            f"{self_name}.{attr}={text} (derived: every construction of {cls} passes "
            f"{value.name}={text}, e.g. {where.short})",
            (self_name, attr),
            None,
            literal(text),
        )
    return out


def _agreed(
    p: Program, made: list[tuple[str, int]], init: Scope, index: int
) -> tuple[str, Location] | None:
    """The constant every construction binds parameter ``index`` of ``init`` to
    (its source text) and the first construction's location; None if any differs
    or is not a literal."""
    param = init.params[index]
    positional = [k for k, prm in enumerate(init.params[1:], 1) if prm.kind is ParamKind.POSITIONAL]
    seen: tuple[type, object] | None = None
    text = ""
    first: Location | None = None
    for qn, i in sorted(made):
        call = p.scopes[qn].calls[i]
        if call.kind is not CallKind.CALL or any(a.star for a in call.args):
            return None
        bound = None
        for n, arg in enumerate(a for a in call.args if a.keyword is None):
            if n < len(positional) and positional[n] == index:
                bound = arg.value
        for arg in call.args:
            if arg.keyword == param.name:
                bound = arg.value
        if bound is None:
            bound = param.default
        if not isinstance(bound, ConstExpr):
            return None
        value = literal(bound.value)
        if value is NO_VALUE:
            return None
        key = (type(value), value)
        if seen is None:
            seen, text, first = key, bound.value, call.location
        elif seen != key:
            return None
    if first is None:
        return None
    return text, first


def _nullness(
    p: Program, values: ValueQuery, writes: _Writes, evaluator: GuardEvaluator
) -> Iterable[tuple[str, str, Fact]]:
    """``self.ATTR=None`` for each attribute every store to which stores ``None`` or
    never runs (a ``self.ATTR = C(...)`` behind a false guard), at least one of them."""
    for attr, stores in writes.stores.items():
        if not any(_is_none(p, s) for s in stores):
            continue
        owner: str | None = None
        because: list[str] = []
        ok = True
        for qn, j in stores:
            if _is_none(p, (qn, j)):
                continue
            scope = p.scopes[qn]
            a = scope.assignments[j]
            cls = p.method_class(qn)
            if (
                cls is None
                or (owner is not None and cls != owner)
                or not isinstance(a.value, CallExpr)
                or not isinstance(a.target.base, NameExpr)
                or not scope.params
                or a.target.base.name != scope.params[0].name
                or a.augmented
                or a.iterates
            ):
                ok = False
                break
            found = evaluator.first_false(scope, scope.calls[a.value.site].guards)
            if found is None:
                ok = False
                break
            guard, decision = found
            owner = cls
            shown = _condition(guard.text, guard.negated)
            why = " and ".join(f.text for f in decision.facts)
            because.append(
                f"{a.location.short} runs only if {shown} "
                f"({Location(scope.location.path, guard.line).short}), false when {why}"
            )
        if not ok or owner is None or not _free_attr(p, values, owner, attr, writes):
            continue
        if not _plain_class(values, owner):
            continue
        self_name = "self"
        fact = Fact(
            f"{self_name}.{attr}=None (derived: its only non-None store {'; '.join(because)})",
            (self_name, attr),
            None,
            None,
        )
        yield owner, attr, fact


def _is_none(p: Program, store: _Store) -> bool:
    value = p.scopes[store[0]].assignments[store[1]].value
    return isinstance(value, ConstExpr) and value.value == "None"


def _plain_class(values: ValueQuery, cls: str) -> bool:
    """No base outside the analysed code that may set attributes by name."""
    return not any(
        name.rpartition(".")[2] not in ("object", "ABC", "Generic", "Protocol")
        for name in values.external_bases(cls)
    )


def _condition(text: str, negated: bool) -> str:
    """The condition a guard requires, as read: ``not (not X)`` is ``X``."""
    text = " ".join(text.split())
    if not negated:
        return text
    if text.startswith("not ") and "(" not in text and " and " not in text and " or " not in text:
        return text[4:]
    return f"not ({text})"
