"""Calls: what a call site's callee expression evaluates to, what calling a
value runs, and the callees and argument bindings of one site.

Layers, strongest first, recorded on every callee (see ``Resolution``):
*direct* (a name, or ``module.name``, bound by def/class/import), *typed* (the
receiver's type is known), *by-name* (unknown receiver: every analysed method
of that name; or a library-typed receiver: our subclasses that define it).
"""

from __future__ import annotations

from collections.abc import Iterator

from flagtrace.generators import ITER_BUILTINS, RESUMING_METHODS
from flagtrace.model import (
    Approximation,
    AttrExpr,
    Callee,
    CallExpr,
    CallKind,
    CallSite,
    ContainerKind,
    Expr,
    NameExpr,
    ParamKind,
    Resolution,
    ScopeKind,
    SubscriptExpr,
)
from flagtrace.resolve.state import (
    BOUND,
    Binding,
    BoundSelf,
    CallTarget,
    ResolverBase,
    Target,
)
from flagtrace.resolve.values import (
    ANYTHING,
    BUILTIN,
    CLASS,
    CONTAINER,
    EXTERNAL,
    FUNCTION,
    GENERATOR,
    INSTANCE,
    MODULE,
    SUPER,
    ElementsExpr,
    Value,
    Values,
    is_dunder,
    key_text,
    ordered,
    root_of,
)

#: builtins that call their function arguments (``map(f, xs)``)
HIGHER_ORDER_BUILTINS = frozenset({"map", "filter"})
#: library base classes whose ``__call__`` runs a method of the subclass
CALL_PROTOCOLS = {
    "torch.nn.Module": "forward",
    "torch.nn.modules.module.Module": "forward",
    "nn.Module": "forward",
}
_PASSTHROUGH_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
_STRENGTH = {r: i for i, r in enumerate(Resolution)}
#: methods of a dict that look a value up by key (a registry's ``REGISTRY.get(name)``)
_LOOKUPS = frozenset({"get", "pop", "setdefault"})
#: ``ExitStack``'s methods that enter the context manager they are given
_ENTERING = frozenset({"enter_context", "enter_async_context"})


def approximated_resolution(
    resolution: Resolution, approximation: Approximation | None
) -> Resolution:
    """The grade of an edge inferred from a framework idiom (``Approximation``).

    The one place that decides it: such an edge rests on value flow (a class
    hierarchy, a container's contents, an attribute's every value), not on a
    declaration, so it is ``INFERRED`` at best (the grade between typed and
    by-name), and never stronger than the layer that found its receiver.
    """
    if approximation is None:
        return resolution
    graded = Resolution.INFERRED
    return graded if _STRENGTH[graded] > _STRENGTH[resolution] else resolution


def _rank(callee: Callee) -> tuple[int, bool]:
    """Of two ways one site reaches a callee, keep the stronger; at equal strength,
    the one that needed no approximation."""
    return _STRENGTH[callee.resolution], callee.approximation is not None


#: what a callee expression answers while it is cut (``RoundMemo.solve``)
_NOTHING_RESUMED: frozenset[str] = frozenset()
_NO_TARGETS: tuple[list[Target], str | None] = ([], None)


class Calls(ResolverBase):
    def resolve_site(
        self, qn: str, index: int, site: CallSite
    ) -> tuple[tuple[Callee, ...], list[Binding], bool, frozenset[str]]:
        """The callees of one site, the argument bindings it makes, whether
        it knowingly calls nothing analysed (a method of a builtin value, a
        library class without our ``__init__``), and the generator functions
        whose objects it resumes (callees too: see ``flagtrace.generators``)."""
        targets, by_name = self.callee_values(qn, index, site)
        if any(value[0] is ANYTHING for value, _, _ in targets):
            return (), [], False, _NOTHING_RESUMED  # the callee may be anything (``WIDE``)
        callees: dict[str, Callee] = {}
        bindings: list[Binding] = []
        implicit = site.kind.implicit  # iteration protocol, raise: only our code
        decorator = site.kind is CallKind.DECORATOR
        arg_values: list[Values] | None = None
        idioms: dict[str, bool] = {}  # what the callee expression is, asked once per site
        callee_of = self.callee_records
        for value, resolution, receiver in targets:
            if decorator and value[0] is BUILTIN and value[1] in _PASSTHROUGH_DECORATORS:
                continue
            for callee_qn, analysed, bound_self, fn in self.call_targets(value):
                if implicit and not analysed:
                    continue
                approximation = self.edge_approximation(
                    qn, site, value, receiver, callee_qn, analysed, idioms
                )
                found = approximated_resolution(resolution, approximation)
                key = (callee_qn, found, analysed, approximation)
                callee = callee_of.get(key)
                if callee is None:
                    callee = callee_of[key] = Callee(callee_qn, found, analysed, approximation)
                known = callees.get(callee_qn)
                if known is None or _rank(callee) < _rank(known):
                    callees[callee_qn] = callee
                if fn is not None and resolution is not Resolution.BY_NAME:
                    # arguments flow only along typed edges: bound through every
                    # subclass of a library class that defines the method, they made
                    # every ``forward(hidden_states)`` hold every other's values
                    if bound_self is BOUND and receiver is not None and receiver[0] is INSTANCE:
                        bound_self = receiver
                    if arg_values is None:  # once per site, not once per callee
                        arg_values = [self.eval(qn, arg.value) for arg in site.args]
                    bindings.extend(self.bind_arguments(fn, site, bound_self, arg_values))
            if value[0] is BUILTIN and value[1] in HIGHER_ORDER_BUILTINS:
                for arg in site.args:
                    for v in ordered(self.eval(qn, arg.value)):
                        if v[0] is ANYTHING:  # ``map(anything, xs)``
                            return (), [], False, _NOTHING_RESUMED
                        for callee_qn, analysed, _, _ in self.call_targets(v):
                            if analysed and v[0] is FUNCTION and callee_qn not in callees:
                                callees[callee_qn] = Callee(callee_qn, Resolution.TYPED, True)
        if not callees and by_name and not implicit:
            callees.update(self._by_name_callees(by_name))
        resumed = self.resumed_generators(qn, site, targets)
        if resumed:
            from_container = self._enters_from_container(qn, site)
            approximation = Approximation.CONTAINER_CONTEXT if from_container else None
            for gen in resumed:
                if gen not in callees:
                    callees[gen] = Callee(
                        gen,
                        approximated_resolution(Resolution.TYPED, approximation),
                        True,
                        approximation,
                    )
        # we know what is called (a class without __init__, a method of a list or
        # dict, the iteration protocol of a builtin): nothing of ours
        knowingly_empty = not callees and bool(
            targets or implicit or self._builtin_receiver(qn, site)
        )
        if len(callees) < 2:
            return tuple(callees.values()), bindings, knowingly_empty, resumed
        ordered_callees = tuple(sorted(callees.values(), key=lambda c: c.qualname))
        return ordered_callees, bindings, False, resumed

    def _by_name_callees(self, name: str) -> dict[str, Callee]:
        """Every method called ``name``, as by-name callees: made once per name,
        not once per site and round (SGLang 0.5.23: 943k by-name callees a round
        from 750 names)."""
        found = self.by_name_records.get(name)
        if found is None:
            found = self.by_name_records[name] = {
                method: Callee(method, Resolution.BY_NAME, True)
                for method in self.p.methods_by_name.get(name, ())
            }
        return found

    def resumed_generators(self, qn: str, site: CallSite, targets: list[Target]) -> frozenset[str]:
        """The generator functions whose objects this site resumes, running their
        bodies: ``g.__next__()`` (a ``for``'s, a comprehension's, ``yield from``'s),
        ``g.__enter__()`` (a ``with``'s), ``g.send(v)``; and a generator passed to a
        builtin or to library code (``next(g)``, ``list(g)``,
        ``stack.enter_context(cm())``), which is taken to consume it.
        ``iter(g)`` returns ``g`` and runs nothing (``call_result`` passes it on)."""
        func = site.func
        values: set[Value] = set()
        if isinstance(func, AttrExpr) and func.attr in RESUMING_METHODS:
            values.update(self.eval(qn, func.base))
        if site.kind is CallKind.CALL and any(
            v[0] in (BUILTIN, EXTERNAL) and v[1] not in ITER_BUILTINS for v, _, _ in targets
        ):
            for arg in site.args:
                values.update(self.eval(qn, arg.value))
        if not values:
            return _NOTHING_RESUMED  # one object: each site's result is kept between rounds
        return frozenset(name for kind, name, _ in values if kind is GENERATOR)

    # ------------------------------------------------------------ approximations

    def edge_approximation(
        self,
        qn: str,
        site: CallSite,
        value: Value,
        receiver: Value | None,
        callee: str,
        analysed: bool,
        idioms: dict[str, bool],
    ) -> Approximation | None:
        """Which framework idiom, if any, the edge from ``site`` to ``callee``
        (reached through ``value``, looked up on ``receiver``) was inferred from.
        ``idioms`` caches, per site, what its callee expression is: the same for
        every target of the site (a registry call can have dozens)."""
        if not analysed:  # a library's code: no hop of a witness
            return None
        func = site.func
        if value[0] is INSTANCE and callee.endswith(".__call__") and self._flowed(qn, func):
            return Approximation.CALL_WRAPPER
        registry = idioms.get("registry")
        if registry is None:
            registry = idioms["registry"] = self._registry_lookup(qn, func)
        if registry:
            return Approximation.DICT_REGISTRY
        factory = idioms.get("factory")
        if factory is None:
            factory = idioms["factory"] = self._factory_expr(qn, func)
        if factory:
            built = value if value[0] is CLASS else receiver
            if built is not None and built[0] in (CLASS, INSTANCE):
                home = self.p.enclosing_class(qn)
                if built[1] != home:  # a subclass, not the class the code is in
                    return Approximation.CLASSMETHOD_FACTORY
        return None

    def _flowed(self, qn: str, func: Expr) -> bool:
        """Is the called instance one that flowed here (an attribute, which holds
        every value ever stored to it, a parameter, an item), rather than a local
        assigned from a constructor (``w = Wrapper(m); w(x)``: typed by it)?"""
        if not isinstance(func, NameExpr):
            return True
        where = self.binding_scope(qn, func.name)
        if where is None or func.name in self.p.param_names.get(where, frozenset()):
            return True
        return not all(isinstance(e, CallExpr) for e in self.p.assigns.get((where, func.name), ()))

    def _factory_expr(self, qn: str, expr: Expr) -> bool:
        """``cls``, ``cls.attr`` (``cls`` the first parameter of a classmethod),
        ``type(x)``, ``x.__class__``: a class that may be any analysed subclass."""
        while isinstance(expr, AttrExpr):
            if expr.attr == "__class__":
                return True
            expr = expr.base
        if isinstance(expr, NameExpr):
            where = self.binding_scope(qn, expr.name)
            return where is not None and self._is_cls_parameter(where, expr.name)
        if isinstance(expr, CallExpr):
            call = self.p.scopes[qn].calls[expr.site]
            return (
                isinstance(call.func, NameExpr)
                and call.func.name == "type"
                and len(call.args) == 1
                and self.binding_scope(qn, "type") is None
            )
        return False

    def _is_cls_parameter(self, scope_qn: str, name: str) -> bool:
        scope = self.p.scopes.get(scope_qn)
        return (
            scope is not None
            and scope.kind is ScopeKind.FUNCTION
            and bool(scope.params)
            and scope.params[0].name == name
            and self.is_classmethod(scope_qn)
        )

    def _registry_lookup(self, qn: str, expr: Expr, depth: int = 5) -> bool:
        """Does the callee (or its receiver) come out of a dict by a key that is no
        literal: ``REGISTRY[name]``, ``REGISTRY.get(name)``, what calling such a
        value returns (``REGISTRY[name](cfg).run``), or a local assigned from one
        of these (``cls = MODELS[arch]; cls(cfg)``), a few levels deep?"""
        if depth == 0:
            return False
        if isinstance(expr, SubscriptExpr):
            return key_text(expr.key) is None and self._holds_container(qn, expr.base)
        if isinstance(expr, AttrExpr):
            return self._registry_lookup(qn, expr.base, depth - 1)
        if isinstance(expr, CallExpr):
            call = self.p.scopes[qn].calls[expr.site]
            func = call.func
            if isinstance(func, AttrExpr) and func.attr in _LOOKUPS:
                return (
                    bool(call.args)
                    and key_text(call.args[0].value) is None
                    and self._holds_container(qn, func.base)
                )
            return self._registry_lookup(qn, func, depth - 1)
        if isinstance(expr, NameExpr):
            return any(
                self._registry_lookup(qn, stored, depth - 1)
                for stored in self.p.assigns.get((qn, expr.name), ())
                if not isinstance(stored, ElementsExpr)
            )
        return False

    def _holds_container(self, qn: str, expr: Expr) -> bool:
        """Does ``expr`` hold a dict display (a registry; lists indexed by a
        position are no lookup by name)?"""
        containers = self.run_memo.containers
        return any(
            v[0] is CONTAINER
            and v[1] in containers
            and containers[v[1]][1].kind is ContainerKind.DICT
            for v in self.eval(qn, expr)
        )

    def _enters_from_container(self, qn: str, site: CallSite) -> bool:
        """Does the site consume a generator taken out of a container: an argument
        (or the receiver of ``__enter__``) that is a loop variable over one
        (``for cm in cms: stack.enter_context(cm)``) or an item of one?"""
        func = site.func
        if site.kind is CallKind.ENTER and isinstance(func, AttrExpr):
            exprs = [func.base]  # ``with cm:``
        elif isinstance(func, AttrExpr) and func.attr in _ENTERING:
            exprs = [a.value for a in site.args[:1]]  # ``stack.enter_context(cm)``
        else:
            return False
        for expr in exprs:
            if isinstance(expr, SubscriptExpr):
                return True
            if isinstance(expr, NameExpr) and any(
                isinstance(stored, ElementsExpr) or isinstance(stored, SubscriptExpr)
                for stored in self.p.assigns.get((qn, expr.name), ())
            ):
                return True
        return False

    def _builtin_receiver(self, qn: str, site: CallSite) -> bool:
        """``xs.append(x)`` on a list/dict/set display or a builtin value."""
        func = site.func
        if not isinstance(func, AttrExpr):
            return False
        receivers = self.eval(qn, func.base)
        return bool(receivers) and all(r[0] in (CONTAINER, BUILTIN, GENERATOR) for r in receivers)

    def callee_values(self, qn: str, index: int, site: CallSite) -> tuple[list[Target], str | None]:
        """Values the callee expression evaluates to, each with its layer and the
        receiver it was looked up on, and the method name for by-name dispatch
        when the receiver is unknown."""
        key = (qn, index)
        found = self.memo.callee_values.get(key)
        if found is not None:
            self.memo.note(("callee", qn, index), found)
            return found
        return self.memo.solve(
            self.memo.callee_values,
            key,
            ("callee", qn, index),
            lambda: self._callee_values(qn, site),
            _NO_TARGETS,
        )

    def _callee_values(self, qn: str, site: CallSite) -> tuple[list[Target], str | None]:
        func = site.func
        out: list[Target] = []
        by_name: str | None = None
        if isinstance(func, NameExpr):
            values = self.eval(qn, func)
            res = Resolution.DIRECT if self.name_is_direct(qn, func.name) else Resolution.TYPED
            out = [(v, res, None) for v in ordered(values)]
        elif isinstance(func, AttrExpr):
            receivers = ordered(self.eval(qn, func.base))
            root = root_of(func.base)
            direct = isinstance(root, NameExpr) and all(
                r[0] in (MODULE, CLASS, EXTERNAL) for r in receivers
            )
            if direct and isinstance(root, NameExpr):
                direct = self.name_is_direct(qn, root.name)
            res = Resolution.DIRECT if direct else Resolution.TYPED
            for r in receivers:
                for v in ordered(self.attribute(r, func.attr, qn)):
                    out.append((v, res, r))
            if not is_dunder(func.attr) and (
                not receivers
                or (not out and any(r[0] in (INSTANCE, CLASS, SUPER) for r in receivers))
            ):
                # unknown receiver, or ours without such an attribute (dynamic, or a
                # mixin's super() that reaches a sibling class): by name. Not for
                # dunders: ``__init__`` missing from our class and its bases is
                # object's or a builtin base's, and by name it matched every
                # class's (1,164 ``__init__``s for each ``super(C, self).__init__()``
                # in the standard library). Such a call stays unresolved, and
                # verdicts that rest on it say so.
                by_name = func.attr
            if not any(v[0] is FUNCTION for v, _, _ in out):
                for r in receivers:
                    if r[0] is EXTERNAL:
                        # a library type (``self.model: nn.Module``): our subclasses of it
                        # that define the method (class-hierarchy dispatch, weak evidence)
                        for method, sub in self.external_dispatch(r[1], func.attr):
                            out.append(
                                ((FUNCTION, method, 1), Resolution.BY_NAME, (INSTANCE, sub, 0))
                            )
        else:
            out = [(v, Resolution.TYPED, None) for v in ordered(self.eval(qn, func))]
        return (out, by_name)

    def call_targets(self, value: Value) -> Iterator[CallTarget]:
        """What calling ``value`` runs: (callee name, analysed?, bound self,
        function qualname whose parameters receive the arguments)."""
        kind, name, bound = value
        if kind is FUNCTION:
            yield name, True, BOUND if bound else None, name
        elif kind is CLASS:
            found = False
            for v in ordered(self.class_attribute(name, "__init__")):
                if v[0] is FUNCTION:
                    found = True
                    yield v[1], True, (INSTANCE, name, 0), v[1]
            if not found:
                for ext in self.run_memo.external_bases.get(name, ()):
                    yield f"{ext}.__init__", False, None, None
                    break
        elif kind is INSTANCE:
            found = False
            for v in ordered(self.class_attribute(name, "__call__")):
                if v[0] is FUNCTION:
                    found = True
                    yield v[1], True, value, v[1]
            protocol = None if found else self._call_protocol(name)
            if protocol is not None:
                # torch.nn.Module.__call__ runs forward()
                method = protocol
                for v in ordered(self.class_attribute(name, method)):
                    if v[0] is FUNCTION:
                        yield v[1], True, value, v[1]
        elif kind is BUILTIN:
            yield f"<builtin>.{name}", False, None, None
        elif kind is EXTERNAL:
            yield name, False, None, None

    def _call_protocol(self, cls: str) -> str | None:
        """The method a library base's ``__call__`` runs (``forward``), if any."""
        return next(
            (CALL_PROTOCOLS[b] for b in self.external_bases_of(cls) if b in CALL_PROTOCOLS), None
        )

    def bind_arguments(
        self,
        fn: str,
        site: CallSite,
        bound_self: Value | BoundSelf | None,
        arg_values: list[Values],
    ) -> list[Binding]:
        """Bind the site's evaluated arguments (``arg_values``) to ``fn``'s parameters."""
        scope = self.p.scopes.get(fn)
        if scope is None:
            return []
        params = list(scope.params)
        out: list[Binding] = []
        positional = [p for p in params if p.kind is ParamKind.POSITIONAL]
        if bound_self is not None and positional:
            if not isinstance(bound_self, BoundSelf) and bound_self[0] is INSTANCE:
                out.append(((fn, positional[0].name), frozenset({bound_self})))
            positional = positional[1:]
        by_name = {p.name: p for p in params}
        star = next((p for p in params if p.kind is ParamKind.VAR_POSITIONAL), None)
        pos_i = 0
        for arg, values in zip(site.args, arg_values, strict=True):
            if not values:
                continue
            if arg.keyword is not None:
                p = by_name.get(arg.keyword)
                if p is not None:
                    out.append(((fn, p.name), values))
            elif arg.star == 1:
                for p in positional[pos_i:]:
                    out.append(((fn, p.name), values))
                if star is not None:
                    out.append(((fn, star.name), values))
            elif arg.star == 2:
                for p in params:
                    if p.kind in (ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY):
                        out.append(((fn, p.name), values))
            else:
                if pos_i < len(positional):
                    out.append(((fn, positional[pos_i].name), values))
                elif star is not None:
                    out.append(((fn, star.name), values))
                pos_i += 1
        return out
