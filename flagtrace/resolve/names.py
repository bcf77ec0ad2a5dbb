"""Names: which scope binds a name (LEGB, ``global``, star imports), what a
variable holds (its assignments, imports, parameters, annotations), what an
import or a module attribute refers to, and which classes an annotation names."""

from __future__ import annotations

import re

from flagtrace.model import (
    CallExpr,
    CallKind,
    DecoratorKind,
    FunctionRefExpr,
    Import,
    ImportKind,
    NameExpr,
    ParamKind,
    Scope,
    ScopeKind,
    SubscriptExpr,
)
from flagtrace.resolve.state import PARAM, ResolverBase
from flagtrace.resolve.values import (
    BUILTIN,
    BUILTINS,
    CLASS,
    EMPTY,
    EXTERNAL,
    INSTANCE,
    MAX_VALUES,
    MODULE,
    Value,
    Values,
    ordered,
)
from flagtrace.versions import ENTRY

#: names in annotations that are typing constructs, not classes
TYPING_NAMES = frozenset(
    {
        "Optional",
        "Union",
        "List",
        "Dict",
        "Tuple",
        "Set",
        "FrozenSet",
        "Type",
        "Callable",
        "Any",
        "Sequence",
        "Iterable",
        "Iterator",
        "Mapping",
        "MutableMapping",
        "Generator",
        "AsyncIterator",
        "Awaitable",
        "Coroutine",
        "ClassVar",
        "Final",
        "Annotated",
        "Literal",
        "None",
        "list",
        "dict",
        "tuple",
        "set",
        "type",
        "typing",
    }
)
_ANNOTATION_NAME = re.compile(r"[A-Za-z_][\w.]*")


class Names(ResolverBase):
    def lookup(self, qn: str, name: str) -> Values:
        """What ``name`` holds when read in scope ``qn``."""
        where = self.binding_scope(qn, name)
        if where is None:
            if name in BUILTINS:
                return frozenset({(BUILTIN, name, 0)})
            return EMPTY
        return self.variable(where, name)

    def variable(self, scope_qn: str, name: str) -> Values:
        """Everything bound to ``name`` in ``scope_qn`` (flow-insensitive)."""
        key = (scope_qn, name)
        found = self.memo.variables.get(key)
        if found is not None:
            self.memo.note(key, found)
            return found
        return self.memo.solve(
            self.memo.variables, key, key, lambda: self._variable(scope_qn, name), EMPTY
        )

    def _variable(self, scope_qn: str, name: str) -> Values:
        out: set[Value] = set()
        for imp in self.p.imports.get((scope_qn, name), ()):
            out |= self.import_value(imp)
        for expr in self.p.assigns.get((scope_qn, name), ()):
            if len(out) >= MAX_VALUES:
                break
            out |= self.eval(scope_qn, expr)
        for function, expr in self.p.global_assigns.get((scope_qn, name), ()):
            if len(out) >= MAX_VALUES:
                break
            out |= self.eval(function, expr)
        self._unassigned_value(scope_qn, name, out)
        return frozenset(out)

    def _unassigned_value(self, scope_qn: str, name: str, out: set[Value]) -> None:
        """Add to ``out`` what ``name`` holds in ``scope_qn`` besides its
        assignments and imports: a parameter's values, a star import's, its
        annotations' classes."""
        key = (scope_qn, name)
        scope = self.p.scopes.get(scope_qn)
        if scope is not None and scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
            out |= self._param_value(scope, name)
        if not out and scope is not None and scope.kind is ScopeKind.MODULE:
            for star_module in self.p.star_imports.get(scope_qn, ()):
                if self._module_binds(star_module, name):
                    out |= self.variable(star_module, name)
        for ann in self.p.annotations.get(key, ()):
            out |= self.annotation_values(scope_qn, ann)

    def local_value(self, qn: str, expr: NameExpr) -> Values:
        """What the read ``expr`` of a bare name in scope ``qn`` holds: the
        assignments that reach it (``Scope.reaching``, ``flagtrace.versions``),
        or every binding of the name when the read is flow-insensitive."""
        scope = self.p.scopes.get(qn)
        if scope is None or expr.at >= len(scope.reaching):
            return self.lookup(qn, expr.name)
        reach = scope.reaching[expr.at]
        if reach is None:
            return self.lookup(qn, expr.name)
        key = (qn, expr.name, reach)
        found = self.memo.reaching.get(key)
        if found is not None:
            self.memo.note(key, found)
            return found
        return self.memo.solve(
            self.memo.reaching, key, key, lambda: self._local_value(scope, expr.name, reach), EMPTY
        )

    def _local_value(self, scope: Scope, name: str, reach: tuple[int, ...]) -> Values:
        qn = scope.qualname
        out: set[Value] = set()
        stored = self.p.stored[qn]
        for i in reach:
            if len(out) >= MAX_VALUES:
                break
            if i == ENTRY:
                out |= self._entry_value(scope, name)
            else:
                out |= self.eval(qn, stored[i])
        for ann in self.p.annotations.get((qn, name), ()):
            out |= self.annotation_values(qn, ann)
        return frozenset(out)

    def stored_item(self, qn: str, expr: SubscriptExpr) -> Values | None:
        """``d["a"]`` read where every path stored the item since anything that
        could change the container (``Scope.reaching``): what those stores
        stored. None when it is not such a read."""
        scope = self.p.scopes.get(qn)
        if scope is None or expr.at >= len(scope.reaching):
            return None
        reach = scope.reaching[expr.at]
        if reach is None:
            return None
        key = (qn, "[]", reach)
        found = self.memo.reaching.get(key)
        if found is not None:
            self.memo.note(key, found)
            return found
        stored = self.p.stored[qn]

        def items() -> Values:
            out: set[Value] = set()
            for i in reach:
                out |= self.eval(qn, stored[i])
            return frozenset(out)

        return self.memo.solve(self.memo.reaching, key, key, items, EMPTY)

    def _entry_value(self, scope: Scope, name: str) -> set[Value]:
        """What a local holds before any assignment of it runs: its imports and
        parameter values; in a class body a name not bound yet is read from the
        enclosing scopes, and at module level from the builtins."""
        qn = scope.qualname
        out: set[Value] = set()
        imports = self.p.imports.get((qn, name), ())
        for imp in imports:
            out |= self.import_value(imp)
        self._unassigned_value(qn, name, out)
        if scope.kind is ScopeKind.MODULE:
            if not out and name in BUILTINS:
                out.add((BUILTIN, name, 0))
        elif scope.kind is ScopeKind.CLASS or (not imports and name not in self.p.param_names[qn]):
            # a class body reads an unbound name from outside; in a function it
            # is an error, unless the name is only a comprehension's own (the
            # walk binds those in the function): it then is the outer name
            outer = self.p.scopes.get(scope.parent) if scope.parent else None
            while outer is not None and outer.kind is ScopeKind.CLASS and outer.parent:
                outer = self.p.scopes.get(outer.parent)
            if outer is not None:
                out |= self.lookup(outer.qualname, name)
        return out

    def _param_value(self, scope: Scope, name: str) -> set[Value]:
        """A parameter: the arguments bound to it so far, its annotation, its
        default, and ``self``/``cls`` for the first parameter of a method."""
        out: set[Value] = set()
        if name not in self.p.param_names[scope.qualname]:
            return out
        for i, p in enumerate(scope.params):
            if p.name != name:
                continue
            bound = self.param_values.get((scope.qualname, name), set())
            self.memo.note((PARAM, scope.qualname, name), len(bound))
            out |= bound
            if p.annotation:
                out |= self.annotation_values(scope.parent or scope.qualname, p.annotation)
            if p.default is not None and scope.parent is not None:
                out |= self.eval(scope.parent, p.default)
            if i == 0 and p.kind is ParamKind.POSITIONAL:
                cls = self.p.method_class(scope.qualname)
                if cls is not None:
                    kinds = self.decorator_kinds(scope.qualname)
                    if DecoratorKind.STATICMETHOD in kinds:
                        pass
                    elif DecoratorKind.CLASSMETHOD in kinds:
                        # a factory builds whatever class it was called on: this
                        # one or an analysed subclass (``Sub.from_pretrained()``)
                        out.add((CLASS, cls, 0))
                        out.update((CLASS, sub, 0) for sub in self.subclasses(cls))
                    else:
                        out.add((INSTANCE, cls, 0))
        return out

    def binding_scope(self, qn: str, name: str) -> str | None:
        """The scope whose variable ``name`` refers to when read in ``qn`` (LEGB).
        Static, so memoised for the whole run."""
        key = (qn, name)
        memo = self.run_memo.binding_scopes
        try:
            return memo[key]
        except KeyError:
            pass
        where = self._find_binding_scope(qn, name)
        memo[key] = where
        return where

    def _find_binding_scope(self, qn: str, name: str) -> str | None:
        scope = self.p.scopes.get(qn)
        first = True
        while scope is not None:
            if scope.kind is ScopeKind.MODULE:
                if (
                    name in self.p.locals[scope.qualname]
                    or (scope.qualname, name) in self.p.imports
                    or (scope.qualname, name) in self.p.global_assigns
                ):
                    return scope.qualname
                for star_module in self.p.star_imports.get(scope.qualname, ()):
                    if self._module_binds(star_module, name):
                        return scope.qualname
                return None
            if name in scope.globals_declared:
                return self.p.module_of.get(scope.qualname)
            # a class body's names are not visible in the functions nested in it
            if (first or scope.kind is not ScopeKind.CLASS) and name in self.p.locals[
                scope.qualname
            ]:
                return scope.qualname
            first = False
            scope = self.p.scopes.get(scope.parent) if scope.parent else None
        return None

    def _module_binds(self, module: str, name: str) -> bool:
        """Does ``from module import *`` bind ``name``?"""
        summary = self.p.modules.get(module)
        if summary is None:
            return False
        top = summary.module_scope
        return name in self.p.locals[top.qualname] and not name.startswith("_")

    def name_is_direct(self, qn: str, name: str) -> bool:
        """A name bound only by def/class/import (not a parameter or computed).
        Static: memoised for the whole run."""
        key = (qn, name)
        memo = self.run_memo.direct_names.get(key)
        if memo is None:
            memo = self.run_memo.direct_names[key] = self._find_name_is_direct(qn, name)
        return memo

    def _find_name_is_direct(self, qn: str, name: str) -> bool:
        scope_qn = self.binding_scope(qn, name)
        if scope_qn is None:
            return name in BUILTINS
        if (scope_qn, name) in self.p.imports:
            return True
        exprs = self.p.assigns.get((scope_qn, name), [])
        scope = self.p.scopes.get(scope_qn)
        if scope is not None and any(p.name == name for p in scope.params):
            return False
        return bool(exprs) and all(
            isinstance(e, FunctionRefExpr)
            or (isinstance(e, CallExpr) and self._is_decorator_site(scope_qn, e.site))
            for e in exprs
        )

    def _is_decorator_site(self, qn: str, site: int) -> bool:
        scope = self.p.scopes.get(qn)
        return (
            scope is not None
            and site < len(scope.calls)
            and scope.calls[site].kind is CallKind.DECORATOR
        )

    def import_value(self, imp: Import) -> Values:
        """What an import binds: an analysed module, a member of one, or an
        external dotted name."""
        if imp.kind is ImportKind.MODULE:
            top = imp.module.split(".")[0]
            if imp.alias == imp.module or "." not in imp.module or imp.alias == top:
                target = top if imp.alias == top else imp.module
            else:
                target = imp.module
            return frozenset(
                {(MODULE, target, 0) if self.p.is_module(target) else (EXTERNAL, target, 0)}
            )
        assert imp.name is not None
        full = f"{imp.module}.{imp.name}" if imp.module else imp.name
        if self.p.is_module(full):
            return frozenset({(MODULE, full, 0)})
        if self.p.is_module(imp.module):
            return self.module_attribute(imp.module, imp.name)
        return frozenset({(EXTERNAL, full, 0)})

    def module_attribute(self, module: str, name: str) -> Values:
        """``module.name``: a module-level binding, a submodule, or a star import."""
        summary = self.p.modules.get(module)
        if summary is None:
            return EMPTY
        top = summary.module_scope
        if name in self.p.locals[top.qualname] or (module, name) in self.p.imports:
            values = self.variable(module, name)
            if values:
                return values
        sub = f"{module}.{name}"
        if self.p.is_module(sub):
            return frozenset({(MODULE, sub, 0)})
        for star_module in self.p.star_imports.get(module, ()):
            if self._module_binds(star_module, name):
                return self.module_attribute(star_module, name)
        return EMPTY

    def annotation_values(self, qn: str, annotation: str) -> Values:
        """Instances of the classes an annotation names (``Optional[T]``, ``"T"``,
        ``T | None``). Annotations name classes through imports and defs, which
        do not change between rounds: memoised for the whole run."""
        key = (qn, annotation)
        memo = self.run_memo.annotations.get(key)
        if memo is None:
            memo = self.run_memo.annotations[key] = self._annotation_values(qn, annotation)
        return memo

    def _annotation_values(self, qn: str, annotation: str) -> Values:
        text = annotation.strip().strip("'\"")
        out: set[Value] = set()
        for name in _ANNOTATION_NAME.findall(text):
            if name in TYPING_NAMES or name.split(".")[-1] in TYPING_NAMES:
                continue
            parts = name.split(".")
            values = self.lookup(qn, parts[0])
            for attr in parts[1:]:
                values = frozenset(
                    v2 for v in ordered(values) for v2 in self.attribute(v, attr, qn)
                )
            for v in values:
                if v[0] is CLASS:
                    out.add((INSTANCE, v[1], 0))
                elif v[0] is EXTERNAL:
                    out.add(v)
        return frozenset(out)
