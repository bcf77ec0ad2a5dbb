"""Lookup tables over every module summary, built once and only read after.

Resolution asks the same questions millions of times (which names does this
scope bind, which assignments store to ``x.attr``, which methods are called
``forward``): the answers are indexed here once, by scope and by name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from flagtrace.model import (
    AttrExpr,
    Expr,
    Import,
    ImportKind,
    ModuleSummary,
    NameExpr,
    Scope,
    ScopeKind,
)
from flagtrace.resolve.values import ElementsExpr, key_text

#: methods that put their argument into the container they are called on
CONTAINER_ADDERS = frozenset({"append", "add", "insert", "extend", "update", "setdefault"})

#: what an assignment stores: an expression, or the elements of one
Stored = Expr | ElementsExpr


class Program:
    """The summaries of the analysed code, indexed for resolution."""

    def __init__(self, summaries: Iterable[ModuleSummary]) -> None:
        self.modules: dict[str, ModuleSummary] = {}
        # names bound in each scope (tuples are O(n) to search)
        self.locals: dict[str, frozenset[str]] = {}
        self.scopes: dict[str, Scope] = {}
        # a function's parameter names: most variables read in a function are not
        # parameters, and scanning the parameters for each was 6% of resolution
        self.param_names: dict[str, frozenset[str]] = {}
        self.module_of: dict[str, str] = {}
        self.assigns: dict[tuple[str, str], list[Stored]] = defaultdict(list)
        # (module, name) -> (function, value) for ``global name; name = value``
        # in a function: the module's variable holds that value too, evaluated
        # in the function that stores it
        self.global_assigns: dict[tuple[str, str], list[tuple[str, Stored]]] = defaultdict(list)
        # per scope, what each of its assignments stores, by index (``Scope.reaching``)
        self.stored: dict[str, list[Stored]] = {}
        self.annotations: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.imports: dict[tuple[str, str], list[Import]] = defaultdict(list)
        self.star_imports: dict[str, list[str]] = defaultdict(list)
        # attr -> (scope, base, value, annotation) for every ``base.attr = value``
        self.field_assigns: dict[str, list[tuple[str, Expr, Stored, str | None]]] = defaultdict(
            list
        )
        self.methods_by_name: dict[str, list[str]] = defaultdict(list)
        # (scope, container expr, key text or None/"**", value) for d[k] = v,
        # l.append(v), d.update(x)
        self.container_stores: list[tuple[str, Expr, str | None, Stored]] = []
        # attribute name -> scopes with a call through it (``self.runner.replay()``)
        self.attr_users: dict[str, set[str]] = defaultdict(set)
        # name -> scopes with a call through a name of that spelling
        # (``_handler()``, ``_handler.run()``): resolved again when a function
        # that rebinds a global of that name gains parameter values
        self.name_users: dict[str, set[str]] = defaultdict(set)
        self.packages: set[str] = set()
        for summary in summaries:
            self._add(summary)

    def _add(self, summary: ModuleSummary) -> None:
        self.modules[summary.module] = summary
        if summary.is_package:
            self.packages.add(summary.module)
        for scope in summary.scopes:
            self._add_scope(summary.module, scope)

    def _add_scope(self, module: str, scope: Scope) -> None:
        qn = scope.qualname
        self.scopes[qn] = scope
        self.locals[qn] = frozenset(scope.local_names)
        self.param_names[qn] = frozenset(p.name for p in scope.params)
        self.module_of[qn] = module
        stored = self.stored[qn] = []
        for a in scope.assignments:
            t = a.target
            value: Stored = ElementsExpr(a.value) if a.iterates else a.value
            stored.append(value)
            if t.name is not None:
                self.assigns[(qn, t.name)].append(value)
                if t.name in scope.globals_declared:
                    self.global_assigns[(module, t.name)].append((qn, value))
                if a.annotation:
                    self.annotations[(qn, t.name)].append(a.annotation)
            elif t.attr is not None and t.base is not None:
                self.field_assigns[t.attr].append((qn, t.base, value, a.annotation))
            elif t.key is not None and t.base is not None:
                self.container_stores.append((qn, t.base, key_text(t.key), a.value))
        for site in scope.calls:
            func = site.func
            base = func
            while isinstance(base, AttrExpr):
                self.attr_users[base.attr].add(qn)
                base = base.base
            if isinstance(base, NameExpr):
                self.name_users[base.name].add(qn)
            if isinstance(func, AttrExpr) and func.attr in CONTAINER_ADDERS and site.args:
                self._add_container_call(qn, func, [a.value for a in site.args])
        for imp in scope.imports:
            if imp.kind is ImportKind.STAR:
                self.star_imports[qn].append(imp.module)
            else:
                self.imports[(qn, imp.alias)].append(imp)
        if scope.kind is ScopeKind.FUNCTION and scope.parent is not None:
            parent = self.scopes.get(scope.parent)
            if parent is not None and parent.kind is ScopeKind.CLASS:
                self.methods_by_name[scope.name].append(qn)

    def _add_container_call(self, qn: str, func: AttrExpr, args: list[Expr]) -> None:
        """``d.update(x)``, ``d.setdefault(k, v)``, ``l.extend(xs)``, ``l.append(v)``."""
        if func.attr == "update":
            self.container_stores.append((qn, func.base, "**", args[0]))
        elif func.attr == "setdefault" and len(args) == 2:
            self.container_stores.append((qn, func.base, key_text(args[0]), args[1]))
        elif func.attr == "extend":
            self.container_stores.append((qn, func.base, None, ElementsExpr(args[0])))
        else:
            self.container_stores.append((qn, func.base, None, args[-1]))

    def is_module(self, name: str) -> bool:
        return name in self.modules

    def enclosing_class(self, qn: str) -> str | None:
        """The class a function (or a function nested in a method) belongs to."""
        scope = self.scopes.get(qn)
        while scope is not None and scope.parent is not None:
            parent = self.scopes.get(scope.parent)
            if parent is None:
                return None
            if parent.kind is ScopeKind.CLASS:
                return parent.qualname
            if parent.kind is ScopeKind.MODULE:
                return None
            scope = parent
        return None

    def method_class(self, qn: str) -> str | None:
        """The class a function is defined directly in, if any."""
        scope = self.scopes.get(qn)
        if scope is None or scope.parent is None:
            return None
        parent = self.scopes.get(scope.parent)
        return parent.qualname if parent is not None and parent.kind is ScopeKind.CLASS else None
