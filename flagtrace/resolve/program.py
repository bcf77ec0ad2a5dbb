"""Lookup tables over every module summary, built once and only read after.

Resolution asks the same questions millions of times (which names does this
scope bind, which assignments store to ``x.attr``, which methods are called
``forward``): the answers are indexed here once, by scope and by name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

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
    """The summaries of the analysed code, indexed for resolution.

    Resolution reads every table, millions of times: ``Resolver`` has them all
    built at once, as plain dicts (``index_all``). A new question on a stored
    resolved program (``flagtrace.program_store``) asks a few hundred values:
    there only the modules and scopes by name are indexed up front, the tables
    by scope fill in per scope as they are read, and each other table is built,
    whole, the first time something reads it (``_LAZY_TABLES``). Building them
    all was 0.3 s of such a question's 5 on SGLang 0.5.9.
    """

    # by scope: ``_PerScope`` until ``index_all``
    # names bound in each scope (tuples are O(n) to search)
    locals: dict[str, frozenset[str]]
    # a function's parameter names: most variables read in a function are not
    # parameters, and scanning the parameters for each was 6% of resolution
    param_names: dict[str, frozenset[str]]
    assigns: dict[tuple[str, str], list[Stored]]
    # (module, name) -> (function, value) for ``global name; name = value`` in a
    # function: the module's variable holds that value too, evaluated in the
    # function that stores it
    global_assigns: dict[tuple[str, str], list[tuple[str, Stored]]]
    # per scope, what each of its assignments stores, by index (``Scope.reaching``)
    stored: dict[str, list[Stored]]
    annotations: dict[tuple[str, str], list[str]]
    imports: dict[tuple[str, str], list[Import]]
    star_imports: dict[str, list[str]]
    # attr -> (scope, base, value, annotation) for every ``base.attr = value``
    field_assigns: dict[str, list[tuple[str, Expr, Stored, str | None]]]
    methods_by_name: dict[str, list[str]]  # this and the rest: see ``_LAZY_TABLES``
    # (scope, container expr, key text or None/"**", value) for d[k] = v,
    # l.append(v), d.update(x)
    container_stores: list[tuple[str, Expr, str | None, Stored]]
    # attribute name -> scopes with a call through it (``self.runner.replay()``)
    attr_users: dict[str, set[str]]
    # name -> scopes with a call through a name of that spelling (``_handler()``,
    # ``_handler.run()``): resolved again when a function that rebinds a global
    # of that name gains parameter values
    name_users: dict[str, set[str]]

    def __init__(self, summaries: Iterable[ModuleSummary]) -> None:
        self.modules: dict[str, ModuleSummary] = {}
        self.scopes: dict[str, Scope] = {}
        self.module_of: dict[str, str] = {}
        self.packages: set[str] = set()
        # in the order given: discovery keeps one file per module, but a library caller
        # may pass two summaries of one (the tables keep both, as built at once they did)
        self._summaries: list[ModuleSummary] = []
        for summary in summaries:
            self._summaries.append(summary)
            module = summary.module
            self.modules[module] = summary
            if summary.is_package:
                self.packages.add(module)
            for scope in summary.scopes:
                self.scopes[scope.qualname] = scope
                self.module_of[scope.qualname] = module
        self.locals = _PerScope(self.scopes, _local_names)
        self.param_names = _PerScope(self.scopes, _param_names)
        self.stored = _PerScope(self.scopes, _stored_values)

    def index_all(self) -> None:
        """Build every table now, the tables by scope as plain dicts (what the
        rounds of resolution read millions of times is not a dict subclass)."""
        self.locals = {qn: _local_names(scope) for qn, scope in self.scopes.items()}
        self.param_names = {qn: _param_names(scope) for qn, scope in self.scopes.items()}
        self.stored = {qn: self.stored[qn] for qn in self.scopes}
        for build in dict.fromkeys(_LAZY_TABLES.values()):
            build(self)

    if not TYPE_CHECKING:  # mypy: the tables are the attributes declared above

        def __getattr__(self, name: str) -> object:
            """A table not built yet: build it (and the others of its pass)."""
            build = _LAZY_TABLES.get(name)
            if build is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            build(self)
            return self.__dict__[name]

    def _scope_order(self) -> Iterator[tuple[str, Scope]]:
        """Every scope with its module, in the summaries' order (a qualname bound
        twice is met twice: the tables keep what each binding adds)."""
        for summary in self._summaries:
            for scope in summary.scopes:
                yield summary.module, scope

    def _index_methods(self) -> None:
        self.methods_by_name = defaultdict(list)
        seen: dict[str, Scope] = {}  # the scopes before this one, as a parent is found
        for _, scope in self._scope_order():
            seen[scope.qualname] = scope
            if scope.kind is ScopeKind.FUNCTION and scope.parent is not None:
                parent = seen.get(scope.parent)
                if parent is not None and parent.kind is ScopeKind.CLASS:
                    self.methods_by_name[scope.name].append(scope.qualname)

    def _index_imports(self) -> None:
        self.imports = defaultdict(list)
        self.star_imports = defaultdict(list)
        for _, scope in self._scope_order():
            for imp in scope.imports:
                if imp.kind is ImportKind.STAR:
                    self.star_imports[scope.qualname].append(imp.module)
                else:
                    self.imports[(scope.qualname, imp.alias)].append(imp)

    def _index_assignments(self) -> None:
        self.assigns = defaultdict(list)
        self.global_assigns = defaultdict(list)
        self.field_assigns = defaultdict(list)
        for module, scope in self._scope_order():
            qn = scope.qualname
            # the very values ``stored`` holds (memo keys stand for an expression by
            # identity), but for a scope a later one of the same name replaced there
            values = self.stored[qn] if self.scopes[qn] is scope else _stored_values(scope)
            for a, value in zip(scope.assignments, values, strict=True):
                t = a.target
                if t.name is not None:
                    self.assigns[(qn, t.name)].append(value)
                    if t.name in scope.globals_declared:
                        self.global_assigns[(module, t.name)].append((qn, value))
                elif t.attr is not None and t.base is not None:
                    self.field_assigns[t.attr].append((qn, t.base, value, a.annotation))

    def _index_annotations(self) -> None:
        """Apart from the assignments: a local's value reads its annotations, and
        a new question asks a few values (``_index_assignments`` is 5x this)."""
        self.annotations = defaultdict(list)
        for _, scope in self._scope_order():
            for a in scope.assignments:
                if a.target.name is not None and a.annotation:
                    self.annotations[(scope.qualname, a.target.name)].append(a.annotation)

    def _index_calls(self) -> None:
        """The calls through each name and attribute, and every store into a
        container (``d[k] = v`` and calls such as ``l.append(v)``): only the rounds
        of resolution read them, not the questions asked of a resolved program."""
        self.container_stores = []
        self.attr_users = defaultdict(set)
        self.name_users = defaultdict(set)
        for _, scope in self._scope_order():
            qn = scope.qualname
            for a in scope.assignments:
                t = a.target
                if t.name is None and t.attr is None and t.key is not None and t.base is not None:
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


#: each table ``Program`` builds on first use, with the pass that builds it
_LAZY_TABLES: dict[str, Callable[[Program], None]] = {
    "methods_by_name": Program._index_methods,
    "annotations": Program._index_annotations,
    **dict.fromkeys(("imports", "star_imports"), Program._index_imports),
    **dict.fromkeys(
        ("assigns", "global_assigns", "field_assigns"),
        Program._index_assignments,
    ),
    **dict.fromkeys(("container_stores", "attr_users", "name_users"), Program._index_calls),
}


V = TypeVar("V")


class _PerScope(dict[str, V]):
    """qualname -> what ``compute`` makes of that scope, made the first time it is
    read (``[qn]`` or ``get``; not ``in``, which only the tables' readers would
    miss, and none asks). A name that is no scope is missing, as in a full table."""

    __slots__ = ("_scopes", "_compute")

    def __init__(self, scopes: Mapping[str, Scope], compute: Callable[[Scope], V]) -> None:
        super().__init__()
        self._scopes = scopes
        self._compute = compute

    def __missing__(self, qn: str) -> V:
        value = self[qn] = self._compute(self._scopes[qn])  # KeyError: no such scope
        return value

    def get(self, qn: str, default: Any = None) -> Any:
        try:
            return self[qn]
        except KeyError:
            return default


def _local_names(scope: Scope) -> frozenset[str]:
    return frozenset(scope.local_names)


def _param_names(scope: Scope) -> frozenset[str]:
    return frozenset(p.name for p in scope.params)


def _stored_values(scope: Scope) -> list[Stored]:
    return [ElementsExpr(a.value) if a.iterates else a.value for a in scope.assignments]
