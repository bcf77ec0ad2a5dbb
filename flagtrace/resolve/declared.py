"""Declared values: what an expression holds by declaration alone, to tell a
*typed* call edge from an *inferred* one.

Resolution's values (``objects``) follow every flow it sees: arguments into
parameters, items into containers, lambdas into factories, results out of
functions. That finds calls a declaration-only analysis misses, but, being
flow-insensitive, it also merges what the program keeps apart: on SGLang 0.5.9
one model's ``forward`` "called" the lambda another model's ``__init__`` passes
to its layer factory, because the factory's parameter holds every lambda passed
to it anywhere. Such an edge must not be reported with the confidence of a
declared one.

So after the last round, each site whose callees resolution marked ``typed`` is
evaluated a second time here, following declarations only:

* names bound by def/class/import (what ``name_is_direct`` accepts) hold what
  resolution says they hold;
* a parameter holds ``self``/``cls`` (a method's first parameter), its
  annotation and its default, not the arguments bound to it;
* a variable holds what its assignments hold *declaratively*: ``x = C()`` (a
  constructor), ``x = y`` (a declared value), ``x: T = ...`` (an annotation), not
  ``x = d[k]``, ``x = [...]``, ``for x in xs`` or ``x = factory()``;
* an instance's attribute holds its class's methods, the fields stored with a
  declared value (``self.x = C(...)``, ``self.x = param`` of an annotated
  parameter) and the annotations of the field; a property what it returns
  declaratively;
* a call returns an instance of the class called, the generator of a generator
  function, or what the callee's return annotation names; nothing else.

A typed callee the declared evaluation does not reach is ``inferred``
(``model.Resolution``). The work is done once per resolved program, on the last
round's memo tables, for typed sites only (cost on SGLang in benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flagtrace.generators import ITER_BUILTINS, RESUMING_METHODS
from flagtrace.model import (
    AttrExpr,
    Callee,
    CallExpr,
    CallKind,
    CallSite,
    DecoratorKind,
    Expr,
    FunctionRefExpr,
    ImportKind,
    NameExpr,
    OpaqueExpr,
    ParamKind,
    Resolution,
    ScopeKind,
    SuperExpr,
)
from flagtrace.resolve.program import Stored
from flagtrace.resolve.state import ResolverBase
from flagtrace.resolve.values import (
    BUILTIN,
    BUILTINS,
    CLASS,
    EMPTY,
    EXTERNAL,
    FUNCTION,
    GENERATOR,
    INSTANCE,
    MODULE,
    Value,
    Values,
    looks_like_class,
    ordered,
)

_PROPERTIES = frozenset({DecoratorKind.PROPERTY, DecoratorKind.PROPERTY_SETTER})
_PASSTHROUGH = frozenset({"staticmethod", "classmethod", "property"})
_HIGHER_ORDER = frozenset({"map", "filter"})


class Declared(ResolverBase):
    """The declared-only evaluation, and the refinement of typed callees it decides."""

    def refine_callees(
        self, qn: str, index: int, callees: tuple[Callee, ...]
    ) -> tuple[Callee, ...]:
        """``callees`` of site ``index`` of ``qn`` with every typed callee that no
        declaration supports marked ``inferred``."""
        if not any(c.resolution is Resolution.TYPED for c in callees):
            return callees
        declared = self.declared_callees(qn, self.p.scopes[qn].calls[index])
        return tuple(
            Callee(c.qualname, Resolution.INFERRED, c.analysed, c.approximation)
            if c.resolution is Resolution.TYPED and c.qualname not in declared
            else c
            for c in callees
        )

    def declared_callees(self, qn: str, site: CallSite) -> set[str]:
        """What the site calls by declaration alone (the generators it resumes too)."""
        values = self.declared(qn, site.func)
        out: set[str] = set()
        for value in ordered(values):
            for callee, _, _, _ in self.call_targets(value):
                out.add(callee)
            if value[0] is BUILTIN and value[1] in _HIGHER_ORDER:
                for arg in site.args:
                    for v in ordered(self.declared(qn, arg.value)):
                        if v[0] is FUNCTION:
                            out.add(v[1])
        func = site.func
        resumed: set[Value] = set()
        if isinstance(func, AttrExpr) and func.attr in RESUMING_METHODS:
            resumed.update(self.declared(qn, func.base))
        if site.kind is CallKind.CALL and any(
            v[0] in (BUILTIN, EXTERNAL) and v[1] not in ITER_BUILTINS for v in values
        ):
            for arg in site.args:
                resumed.update(self.declared(qn, arg.value))
        out.update(name for kind, name, _ in resumed if kind is GENERATOR)
        return out

    def value_grade(self, qn: str, expr: Expr, value: Value) -> Resolution:
        """How surely ``expr`` evaluated in ``qn`` holds ``value`` (the generator
        or instance a ``with`` item enters): ``direct``/``typed`` by declaration,
        ``inferred`` by value flow only."""
        if value not in self.declared(qn, expr):
            return Resolution.INFERRED
        root = expr
        if isinstance(root, CallExpr):
            root = self.p.scopes[qn].calls[root.site].func
        while isinstance(root, AttrExpr):
            root = root.base
        if isinstance(root, NameExpr) and self.name_is_direct(qn, root.name):
            return Resolution.DIRECT
        return Resolution.TYPED

    # ------------------------------------------------------------ evaluation

    def declared(self, qn: str, expr: Stored) -> Values:
        """The values ``expr`` holds in ``qn`` by declaration (see the module doc)."""
        t = type(expr)
        if t is NameExpr:
            assert isinstance(expr, NameExpr)
            return self._declared_name(qn, expr.name)
        if t is AttrExpr:
            assert isinstance(expr, AttrExpr)
            out: set[Value] = set()
            for base in ordered(self.declared(qn, expr.base)):
                out |= self._declared_attribute(base, expr.attr, qn)
            return frozenset(out)
        if t is CallExpr:
            assert isinstance(expr, CallExpr)
            return self._declared_result(qn, expr.site)
        if t is FunctionRefExpr or t is SuperExpr:
            return self.eval(qn, expr)
        if t is OpaqueExpr:  # ``a if c else b``, ``a or b``: either part, as written
            assert isinstance(expr, OpaqueExpr)
            out = set()
            for part in expr.parts:
                out |= self.declared(qn, part)
            return frozenset(out)
        return EMPTY  # subscripts, displays, the elements of an iteration: value flow

    def _guarded(self, key: object, parts: Callable[[], Iterable[Values]]) -> Values:
        """Memoised union of the values ``parts()`` yields; a lookup that meets
        itself reads its current answer (``RoundMemo.solve``)."""
        memo = self.memo.declared
        found = memo.get(key)
        if found is not None:
            self.memo.note(("declared", key), found)
            return found

        def compute() -> Values:
            out: set[Value] = set()
            for values in parts():
                out |= values
            return frozenset(out)

        return self.memo.solve(memo, key, ("declared", key), compute, EMPTY)

    def _declared_name(self, qn: str, name: str) -> Values:
        where = self.binding_scope(qn, name)
        if where is None:
            return frozenset({(BUILTIN, name, 0)}) if name in BUILTINS else EMPTY
        return self._declared_variable(where, name)

    def _declared_variable(self, scope_qn: str, name: str) -> Values:
        if self.name_is_direct(scope_qn, name):
            return self.variable(scope_qn, name)  # def, class, import, decorated def
        return self._guarded(("var", scope_qn, name), lambda: self._variable_parts(scope_qn, name))

    def _variable_parts(self, scope_qn: str, name: str) -> Iterable[Values]:
        key = (scope_qn, name)
        for imp in self.p.imports.get(key, ()):
            if imp.kind is ImportKind.FROM and imp.name is not None:
                full = f"{imp.module}.{imp.name}" if imp.module else imp.name
                if not self.p.is_module(full) and self.p.is_module(imp.module):
                    yield self._declared_module_attribute(imp.module, imp.name)
                    continue
            yield self.import_value(imp)
        for expr in self.p.assigns.get(key, ()):
            yield self.declared(scope_qn, expr)
        scope = self.p.scopes.get(scope_qn)
        if scope is not None and scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
            yield self._declared_param(scope_qn, name)
        if scope is not None and scope.kind is ScopeKind.MODULE:
            for star_module in self.p.star_imports.get(scope_qn, ()):
                yield self._declared_module_attribute(star_module, name)
        for ann in self.p.annotations.get(key, ()):
            yield self.annotation_values(scope_qn, ann)

    def _declared_param(self, fn: str, name: str) -> Values:
        """A parameter without the arguments bound to it: self/cls, annotation, default."""
        scope = self.p.scopes[fn]
        out: set[Value] = set()
        for i, p in enumerate(scope.params):
            if p.name != name:
                continue
            if p.annotation:
                out |= self.annotation_values(scope.parent or fn, p.annotation)
            if p.default is not None and scope.parent is not None:
                out |= self.declared(scope.parent, p.default)
            if i == 0 and p.kind is ParamKind.POSITIONAL and self.p.method_class(fn) is not None:
                out |= {v for v in self.variable(fn, name) if v[0] in (INSTANCE, CLASS)}
        return frozenset(out)

    def _declared_module_attribute(self, module: str, name: str) -> Values:
        summary = self.p.modules.get(module)
        if summary is None:
            return EMPTY
        if name in self.p.locals[summary.module_scope.qualname] or (module, name) in self.p.imports:
            values = self._declared_variable(module, name)
            if values:
                return values
        return (
            self.module_attribute(module, name) if self.p.is_module(f"{module}.{name}") else EMPTY
        )

    def _declared_attribute(self, value: Value, attr: str, qn: str) -> Values:
        kind, name, _ = value
        if kind is MODULE:
            return self._declared_module_attribute(name, attr)
        if kind is CLASS:
            return frozenset(
                v
                for v in ordered(self.attribute(value, attr, qn))
                if v[0] in (FUNCTION, CLASS) or v in self._declared_class_member(name, attr)
            )
        if kind is INSTANCE:
            return self._guarded(("field", name, attr), lambda: self._field_parts(name, attr))
        return self.attribute(value, attr, qn)  # super(), library names: by the MRO

    def _declared_class_member(self, cls: str, attr: str) -> Values:
        for owner in self.mro(cls):
            if attr in self.p.locals[owner]:
                return self._declared_variable(owner, attr)
        return EMPTY

    def _field_parts(self, cls: str, attr: str) -> Iterable[Values]:
        """``obj.attr`` for an instance of ``cls``, declaratively."""
        members = self._declared_class_member(cls, attr)
        for v in ordered(self.class_attribute(cls, attr)):
            if v[0] is FUNCTION:
                kinds = self.decorator_kinds(v[1])
                if DecoratorKind.STATICMETHOD in kinds:
                    yield frozenset({v})
                elif kinds & _PROPERTIES:
                    yield self._declared_returns(v[1], property_=True)
                else:
                    yield frozenset({(FUNCTION, v[1], 1)})
            elif v[0] is CLASS or v in members:
                yield frozenset({v})
        mro = self.mro(cls)
        for scope_qn, stored, ann in self._field_stores(mro, attr):
            yield self.declared(scope_qn, stored)
            if ann:
                yield self.annotation_values(scope_qn, ann)
        for owner in mro:
            for ann in self.p.annotations.get((owner, attr), ()):
                yield self.annotation_values(owner, ann)
        for v in self.instance_attribute(cls, attr):
            if v[0] is EXTERNAL:  # the library base's attribute (``self.weight``)
                yield frozenset({v})

    def _declared_returns(self, fn: str, property_: bool = False) -> Values:
        """What calling ``fn`` returns by declaration: its generator, its return
        annotation; for a property (read like a field) also its return values."""
        scope = self.p.scopes.get(fn)
        if scope is None:
            return EMPTY
        if scope.is_generator:
            return frozenset({(GENERATOR, fn, 0)})
        out: set[Value] = set()
        if scope.returns_annotation and scope.parent is not None:
            out |= self.annotation_values(scope.parent, scope.returns_annotation)
        if property_:
            out |= self._guarded(("ret", fn), lambda: (self.declared(fn, r) for r in scope.returns))
        return frozenset(out)

    def _declared_result(self, qn: str, index: int) -> Values:
        return self._guarded(("call", qn, index), lambda: self._result_parts(qn, index))

    def _result_parts(self, qn: str, index: int) -> Iterable[Values]:
        site = self.p.scopes[qn].calls[index]
        callees = self.declared(qn, site.func)
        decorator = site.kind is CallKind.DECORATOR
        first = site.args[0].value if site.args else None
        for value in ordered(callees):
            kind, name, _ = value
            if kind is CLASS:
                yield frozenset({(INSTANCE, name, 0)})
            elif kind is FUNCTION:
                yield self._declared_returns(name)
            elif kind is EXTERNAL:
                if decorator and first is not None:
                    yield self.declared(qn, first)
                elif looks_like_class(name):
                    yield frozenset({value})
            elif kind is BUILTIN and first is not None:
                if name in _PASSTHROUGH:
                    yield self.declared(qn, first)
                elif name in ITER_BUILTINS:
                    yield frozenset(v for v in self.declared(qn, first) if v[0] is GENERATOR)
        func = site.func
        if isinstance(func, AttrExpr) and func.attr in ("__iter__", "__aiter__"):
            yield frozenset(v for v in self.declared(qn, func.base) if v[0] is GENERATOR)
        if decorator and not callees and first is not None:
            yield self.declared(qn, first)
