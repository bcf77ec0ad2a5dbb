"""Summarize: one parsed module -> one ``ModuleSummary``.

This module and ``flagtrace.positions`` (where each node is, and its source
text) are the only code that touches CST nodes. Everything they return is plain
frozen data from ``flagtrace.model``, small enough to pickle across processes
and to cache on disk; reading files, worker pools and the cache are
``flagtrace.index``'s job.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import libcst as cst

from flagtrace.model import (
    Argument,
    Assignment,
    AttrExpr,
    Branch,
    CallExpr,
    CallKind,
    CallSite,
    CallStep,
    ConstExpr,
    ContainerExpr,
    ContainerKind,
    Expr,
    Flow,
    FunctionRefExpr,
    Guard,
    GuardKind,
    Import,
    ImportKind,
    Location,
    ModuleSummary,
    NameExpr,
    OpaqueExpr,
    Param,
    ParamKind,
    RaiseStep,
    ReadStep,
    ReturnStep,
    ScopeKind,
    SourceFile,
    SubscriptExpr,
    SuperExpr,
    Target,
    TryBlock,
    WithBlock,
    WithItem,
    WriteStep,
    YieldStep,
)
from flagtrace.positions import MAX_CALL_TEXT, SourceSpans
from flagtrace.scopes import ScopeBuilder

_TYPE_CHECKING_TESTS = {"TYPE_CHECKING", "typing.TYPE_CHECKING", "t.TYPE_CHECKING"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


class _Indexer:
    """Walks a module's statements and builds the scopes, in source order."""

    def __init__(self, source: SourceFile, src: SourceSpans) -> None:
        self.source = source
        self.src = src
        self.module = source.module
        self.package = source.module if source.is_package else source.module.rpartition(".")[0]
        self.scopes: list[ScopeBuilder] = []
        self.guards: list[Guard] = []
        self.with_texts: list[str] = []
        self.type_checking = 0
        self.import_guarded = 0
        self.flows: list[list[Flow]] = []
        self.scope: ScopeBuilder
        self.has_main_block = False
        self.all_names: tuple[str, ...] | None = None
        self.import_aliases: set[str] = set()  # any name bound by an import, anywhere
        self.defined_names: set[str] = set()  # module-level def/class names
        self.containers = 0  # displays so far: ``ContainerExpr.origin``

    def container(
        self, kind: ContainerKind, items: tuple[Expr, ...], keys: tuple[Expr | None, ...] = ()
    ) -> ContainerExpr:
        self.containers += 1
        return ContainerExpr(kind, items, keys, f"{self.module}:{self.containers}")

    # ---- entry

    def run(self, module: cst.Module) -> ModuleSummary:
        top = ScopeBuilder(
            qualname=self.module,
            kind=ScopeKind.MODULE,
            name=self.module.rpartition(".")[2],
            location=Location(self.source.path, 1, 1),
            parent=None,
        )
        self.scope = top
        self.scopes.append(top)
        top.flow = self.block(module.body)
        top.end_line = self.src.line_count
        # a read can only be of a flag if the name is a module variable: bound by
        # assignment at module level or declared ``global`` somewhere
        declared = {n for sc in self.scopes for n in sc.globals_declared}
        assigned = {a.target.name for a in top.assignments if a.target.name is not None}
        module_globals = frozenset((assigned - self.defined_names) | declared)
        frozen = tuple(s.freeze(module_globals) for s in self.scopes)
        return ModuleSummary(
            module=self.module,
            path=self.source.path,
            is_package=self.source.is_package,
            scopes=frozen,
            lines=self.src.line_count,
            has_main_block=self.has_main_block,
            all_names=self.all_names,
        )

    # ---- helpers

    def loc(self, node: cst.CSTNode) -> Location:
        return self.src.location(node)

    @contextmanager
    def guard(self, g: Guard | None) -> Iterator[None]:
        if g is None:
            yield
            return
        self.guards.append(g)
        try:
            yield
        finally:
            self.guards.pop()

    def emit(self, step: Flow) -> None:
        self.flows[-1].append(step)

    def block(self, body: Sequence[cst.CSTNode] | cst.BaseSuite) -> tuple[Flow, ...]:
        if isinstance(body, cst.IndentedBlock):
            stmts: Sequence[cst.CSTNode] = body.body
        elif isinstance(body, cst.SimpleStatementSuite):
            stmts = body.body
        else:
            stmts = body  # type: ignore[assignment]
        self.flows.append([])
        try:
            for stmt in stmts:
                self.statement(stmt)
        finally:
            out = self.flows.pop()
        return tuple(out)

    def bind(self, name: str) -> None:
        self.scope.local_names.add(name)

    # ---- statements

    def statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(small)
            return
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:  # pragma: no cover - every compound statement has a handler
            for child in node.children:
                if isinstance(child, cst.BaseExpression):
                    self.expr(child)

    def small_statement(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Expr):
            self.expr(node.value)
        elif isinstance(node, cst.Assign):
            value = self.expr(node.value)
            text = self.src.text(node.value)
            for t in node.targets:
                self.assign(t.target, value, text, node.value)
            self.check_all(node)
        elif isinstance(node, cst.AnnAssign):
            ann = self.src.text(node.annotation.annotation)
            if node.value is not None:
                value = self.expr(node.value)
                self.assign(
                    node.target, value, self.src.text(node.value), node.value, annotation=ann
                )
            else:
                self.assign(node.target, OpaqueExpr(""), "", node, annotation=ann, store=False)
        elif isinstance(node, cst.AugAssign):
            value = self.expr(node.value)
            self.expr(node.target)
            self.assign(node.target, value, self.src.text(node.value), node.value, augmented=True)
        elif isinstance(node, cst.Return):
            value = self.expr(node.value) if node.value is not None else None
            if value is not None:
                self.scope.returns.append(value)
            self.emit(ReturnStep(self.loc(node), value))
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                exc = self.expr(node.exc)
                if isinstance(exc, (NameExpr, AttrExpr)):
                    # ``raise E`` instantiates E
                    self.add_call(
                        exc,
                        (),
                        node.exc,
                        "<raise> " + self.src.text(node.exc, MAX_CALL_TEXT),
                        CallKind.RAISE,
                    )
            if node.cause is not None:
                self.expr(node.cause)
            self.emit(RaiseStep(self.loc(node)))
        elif isinstance(node, cst.Global):
            self.scope.globals_declared.update(n.name.value for n in node.names)
        elif isinstance(node, cst.Nonlocal):
            self.scope.nonlocals_declared.update(n.name.value for n in node.names)
        elif isinstance(node, cst.Import):
            self.stmt_import(node)
        elif isinstance(node, cst.ImportFrom):
            self.stmt_import_from(node)
        elif isinstance(node, cst.Del):
            self.delete(node.target)
        elif isinstance(node, cst.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.expr(node.msg)
        # Pass, Break, Continue: nothing to record

    def check_all(self, node: cst.Assign) -> None:
        if self.scope.kind is not ScopeKind.MODULE:
            return
        for t in node.targets:
            if isinstance(t.target, cst.Name) and t.target.value == "__all__":
                if isinstance(node.value, (cst.List, cst.Tuple)):
                    names = []
                    for el in node.value.elements:
                        if isinstance(el.value, cst.SimpleString):
                            ev = el.value.evaluated_value
                            if isinstance(ev, str):
                                names.append(ev)
                    self.all_names = tuple(names)

    def delete(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.delete(el.value)
            return
        if isinstance(target, cst.Name):
            name = target.value
            if name in self.scope.globals_declared:
                self.emit(WriteStep(name, None, "del", self.loc(target)))
        elif isinstance(target, cst.Attribute) and self.import_rooted(target.value) is not None:
            base = self.import_rooted(target.value)
            self.emit(WriteStep(target.attr.value, None, "del", self.loc(target), base=base))
        else:
            self.expr(target)

    def is_import_alias(self, name: str) -> bool:
        return name in self.import_aliases

    def import_rooted(self, node: cst.BaseExpression) -> str | None:
        """``mod`` or ``pkg.mod`` when it starts at a name bound by an import."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name) or not self.is_import_alias(node.value):
            return None
        parts.append(node.value)
        return ".".join(reversed(parts))

    def assign(
        self,
        target: cst.BaseExpression,
        value: Expr,
        text: str,
        value_node: cst.CSTNode,
        *,
        annotation: str | None = None,
        augmented: bool = False,
        iterates: bool = False,
        store: bool = True,
    ) -> None:
        location = self.loc(target)
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [el.value for el in target.elements]
            values: list[Expr] | None = None
            if isinstance(value, ContainerExpr) and value.kind in (
                ContainerKind.TUPLE,
                ContainerKind.LIST,
            ):
                if len(value.items) == len(elements) and not iterates:
                    values = list(value.items)
            for i, el in enumerate(elements):
                if isinstance(el, cst.StarredElement):
                    el = el.value
                if values is not None:
                    self.assign(el, values[i], text, value_node, augmented=augmented)
                else:
                    self.assign(el, value, text, value_node, augmented=augmented, iterates=True)
            return
        if isinstance(target, cst.StarredElement):
            self.assign(target.value, value, text, value_node, iterates=True)
            return
        if isinstance(target, cst.Name):
            name = target.value
            self.bind(name)
            self.scope.assignments.append(
                Assignment(
                    Target(name=name), value, location, text, annotation, augmented, iterates
                )
            )
            if (
                self.scope.kind is not ScopeKind.MODULE
                and (name in self.scope.globals_declared)
                and store
            ):
                self.emit(WriteStep(name, value, text, location, augmented=augmented))
            return
        if isinstance(target, cst.Attribute):
            base = self.expr(target.value, load_attr=False)
            self.scope.assignments.append(
                Assignment(
                    Target(base=base, attr=target.attr.value),
                    value,
                    location,
                    text,
                    annotation,
                    augmented,
                    iterates,
                )
            )
            dotted = self.import_rooted(target.value)
            if store and dotted is not None:
                self.emit(
                    WriteStep(
                        target.attr.value, value, text, location, base=dotted, augmented=augmented
                    )
                )
            return
        if isinstance(target, cst.Subscript):
            base = self.expr(target.value)
            key: Expr = OpaqueExpr("")
            if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                key = self.expr(target.slice[0].slice.value)
            self.scope.assignments.append(
                Assignment(
                    Target(base=base, key=key),
                    value,
                    location,
                    text,
                    annotation,
                    augmented,
                    iterates,
                )
            )
            return
        self.expr(target)

    def stmt_import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = _dotted(alias.name)
            if alias.asname is not None:
                local = _name_of(alias.asname.name)
                self.add_import(ImportKind.MODULE, dotted, None, local, alias)
            else:
                # ``import a.b.c`` binds ``a`` (and makes a.b.c importable)
                self.add_import(ImportKind.MODULE, dotted, None, dotted.split(".")[0], alias)

    def stmt_import_from(self, node: cst.ImportFrom) -> None:
        level = len(node.relative)
        base = _dotted(node.module) if node.module is not None else ""
        if level:
            pkg_parts = self.package.split(".") if self.package else []
            if level - 1 > len(pkg_parts):
                module = base  # beyond the top: keep what we have
            else:
                anchor = pkg_parts[: len(pkg_parts) - (level - 1)]
                module = ".".join([*anchor, base] if base else anchor)
        else:
            module = base
        if isinstance(node.names, cst.ImportStar):
            self.add_import(ImportKind.STAR, module, None, "*", node)
            return
        for alias in node.names:
            name = _dotted(alias.name)
            local = _name_of(alias.asname.name) if alias.asname is not None else name
            self.add_import(ImportKind.FROM, module, name, local, alias)

    def add_import(
        self, kind: ImportKind, module: str, name: str | None, alias: str, node: cst.CSTNode
    ) -> None:
        if kind is not ImportKind.STAR:
            self.bind(alias)
            self.import_aliases.add(alias)
        self.scope.imports.append(
            Import(
                kind,
                module,
                name,
                alias,
                self.loc(node),
                type_checking=self.type_checking > 0,
                guarded=self.import_guarded > 0,
            )
        )

    def stmt_FunctionDef(self, node: cst.FunctionDef) -> None:
        decorators, texts = self.decorators(node.decorators)
        name = node.name.value
        qualname = self.scope.child_qualname(name)
        params = self.parameters(node.params)
        returns = self.src.text(node.returns.annotation) if node.returns is not None else None
        child = ScopeBuilder(
            qualname=qualname,
            kind=ScopeKind.FUNCTION,
            name=name,
            location=self.loc(node),
            parent=self.scope,
            decorators=decorators,
            decorator_texts=texts,
            params=params,
            returns_annotation=returns,
            is_async=node.asynchronous is not None,
        )
        self.define(child, node)
        self.enter_function(child, node.body, params)

    def enter_function(
        self,
        child: ScopeBuilder,
        body: cst.BaseSuite | cst.BaseExpression,
        params: tuple[Param, ...],
    ) -> None:
        outer_scope, outer_guards, outer_with = self.scope, self.guards, self.with_texts
        outer_tc, outer_ig = self.type_checking, self.import_guarded
        self.scope, self.guards, self.with_texts = child, [], []
        self.type_checking = self.import_guarded = 0
        self.scopes.append(child)
        for p in params:
            child.local_names.add(p.name)
        try:
            if isinstance(body, cst.BaseExpression):  # lambda
                self.flows.append([])
                value = self.expr(body)
                child.returns.append(value)
                self.emit(ReturnStep(self.loc(body), value))
                child.flow = tuple(self.flows.pop())
            else:
                child.flow = self.block(body)
        finally:
            self.scope, self.guards, self.with_texts = outer_scope, outer_guards, outer_with
            self.type_checking, self.import_guarded = outer_tc, outer_ig

    def define(self, child: ScopeBuilder, node: cst.CSTNode) -> None:
        """Bind a def/class in the enclosing scope and apply its decorators."""
        self.scope.children.append(child.qualname)
        self.bind(child.name)
        if self.scope.kind is ScopeKind.MODULE:
            self.defined_names.add(child.name)
        child.end_line = self.src.end_line(node)
        value: Expr = FunctionRefExpr(child.qualname)
        # decorators apply innermost first: @a @b def f -> a(b(f))
        for dec in reversed(child.decorators):
            site = self.add_call(
                dec, (Argument(value),), node, self.decorator_text(child, dec), CallKind.DECORATOR
            )
            value = CallExpr(site)
        self.scope.assignments.append(
            Assignment(Target(name=child.name), value, child.location, child.name)
        )

    def decorator_text(self, child: ScopeBuilder, dec: Expr) -> str:
        i = child.decorators.index(dec)
        return "@" + child.decorator_texts[i]

    def decorators(self, decs: Sequence[cst.Decorator]) -> tuple[tuple[Expr, ...], tuple[str, ...]]:
        exprs = tuple(self.expr(d.decorator) for d in decs)
        texts = tuple(self.src.text(d.decorator) for d in decs)
        return exprs, texts

    def parameters(self, params: cst.Parameters) -> tuple[Param, ...]:
        out: list[Param] = []

        def one(p: cst.Param, kind: ParamKind) -> None:
            ann = self.src.text(p.annotation.annotation) if p.annotation is not None else None
            default = self.expr(p.default) if p.default is not None else None
            out.append(Param(p.name.value, kind, ann, default))

        for p in (*params.posonly_params, *params.params):
            one(p, ParamKind.POSITIONAL)
        if isinstance(params.star_arg, cst.Param):
            one(params.star_arg, ParamKind.VAR_POSITIONAL)
        for p in params.kwonly_params:
            one(p, ParamKind.KEYWORD_ONLY)
        if params.star_kwarg is not None:
            one(params.star_kwarg, ParamKind.VAR_KEYWORD)
        return tuple(out)

    def stmt_ClassDef(self, node: cst.ClassDef) -> None:
        decorators, texts = self.decorators(node.decorators)
        bases = tuple(self.expr(a.value) for a in node.bases if a.keyword is None)
        for a in node.keywords:
            self.expr(a.value)
        name = node.name.value
        child = ScopeBuilder(
            qualname=self.scope.child_qualname(name),
            kind=ScopeKind.CLASS,
            name=name,
            location=self.loc(node),
            parent=self.scope,
            decorators=decorators,
            decorator_texts=texts,
            bases=bases,
        )
        self.define(child, node)
        outer_scope, outer_guards, outer_with = self.scope, self.guards, self.with_texts
        self.scope, self.guards, self.with_texts = child, [], []
        self.scopes.append(child)
        try:
            child.flow = self.block(node.body)
        finally:
            self.scope, self.guards, self.with_texts = outer_scope, outer_guards, outer_with

    def stmt_If(self, node: cst.If, kind: GuardKind = GuardKind.IF) -> None:
        test = self.expr(node.test)
        text = self.src.text(node.test)
        g = Guard(text, self.loc(node.test).line, False, kind)
        is_tc = text in _TYPE_CHECKING_TESTS
        is_main = _is_main_test(node.test)
        if is_main and self.scope.kind is ScopeKind.MODULE:
            self.has_main_block = True
        if is_tc:
            self.type_checking += 1
        with self.guard(g):
            body = self.block(node.body)
        if is_tc:
            self.type_checking -= 1
        orelse: tuple[Flow, ...] = ()
        if node.orelse is not None:
            neg = Guard(text, g.line, True, GuardKind.ELSE)
            with self.guard(neg):
                if isinstance(node.orelse, cst.If):
                    self.flows.append([])
                    self.stmt_If(node.orelse, GuardKind.ELIF)
                    orelse = tuple(self.flows.pop())
                else:
                    orelse = self.block(node.orelse.body)
        del test
        self.emit(Branch(g, body, orelse, self.loc(node)))

    def stmt_While(self, node: cst.While) -> None:
        self.expr(node.test)
        g = Guard(self.src.text(node.test), self.loc(node.test).line, False, GuardKind.WHILE)
        with self.guard(g):
            body = self.block(node.body)
        orelse = self.block(node.orelse.body) if node.orelse is not None else ()
        self.emit(Branch(g, body, orelse, self.loc(node), loop=True))

    def stmt_For(self, node: cst.For) -> None:
        iterable = self.expr(node.iter)
        text = self.src.text(node.iter, MAX_CALL_TEXT)
        # the iteration protocol: iter(x).__next__(), recorded as implicit calls
        it = self.add_call(
            AttrExpr(iterable, "__iter__"), (), node.iter, f"<iter> {text}", CallKind.ITER
        )
        self.add_call(
            AttrExpr(CallExpr(it), "__next__"), (), node.iter, f"<next> {text}", CallKind.NEXT
        )
        self.assign(node.target, iterable, self.src.text(node.iter), node.iter, iterates=True)
        body = self.block(node.body)
        orelse = self.block(node.orelse.body) if node.orelse is not None else ()
        self.emit(Branch(None, body, orelse, self.loc(node), loop=True))

    def stmt_With(self, node: cst.With) -> None:
        items: list[WithItem] = []
        for item in node.items:
            value = self.expr(item.item)
            text = self.src.text(item.item)
            alias = None
            if item.asname is not None:
                tgt = item.asname.name
                self.assign(tgt, value, text, item.item)
                if isinstance(tgt, cst.Name):
                    alias = tgt.value
            items.append(WithItem(value, text, self.loc(item.item), alias))
            # the context-manager protocol, as implicit calls (edges only to our code)
            enter = "__aenter__" if node.asynchronous is not None else "__enter__"
            self.add_call(
                AttrExpr(value, enter),
                (),
                item.item,
                f"<{enter}> {text[:MAX_CALL_TEXT]}",
                CallKind.ENTER,
            )
        self.with_texts.extend(i.text for i in items)
        try:
            body = self.block(node.body)
        finally:
            del self.with_texts[len(self.with_texts) - len(items) :]
        self.emit(WithBlock(tuple(items), body, self.loc(node), node.asynchronous is not None))
        leave = "__aexit__" if node.asynchronous is not None else "__exit__"
        for item, with_item in zip(reversed(node.items), reversed(items)):
            self.add_call(
                AttrExpr(with_item.expr, leave),
                (),
                item.item,
                f"<{leave}> {with_item.text[:MAX_CALL_TEXT]}",
                CallKind.EXIT,
            )

    def stmt_Try(self, node: cst.Try | cst.TryStar) -> None:
        catches_import = any(_handler_catches_import_error(h) for h in node.handlers)
        if catches_import:
            self.import_guarded += 1
        body = self.block(node.body)
        if catches_import:
            self.import_guarded -= 1
        handlers: list[tuple[Flow, ...]] = []
        for h in node.handlers:
            if h.type is not None:
                self.expr(h.type)
            if h.name is not None and isinstance(h.name.name, cst.Name):
                self.bind(h.name.name.value)
            g = Guard(
                self.src.text(h.type) if h.type is not None else "BaseException",
                self.loc(h).line,
                False,
                GuardKind.EXCEPT,
            )
            with self.guard(g):
                handlers.append(self.block(h.body))
        orelse = self.block(node.orelse.body) if node.orelse is not None else ()
        final = self.block(node.finalbody.body) if node.finalbody is not None else ()
        self.emit(TryBlock(body, tuple(handlers), orelse, final, self.loc(node)))

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node: cst.Match) -> None:
        subject = self.expr(node.subject)
        del subject
        arms: list[Flow] = []
        for case in node.cases:
            self.bind_pattern_names(case.pattern)
            if case.guard is not None:
                self.expr(case.guard)
            text = "case " + self.src.text(case.pattern)
            if case.guard is not None:
                text += " if " + self.src.text(case.guard)
            g = Guard(text, self.loc(case).line, False, GuardKind.CASE)
            with self.guard(g):
                body = self.block(case.body)
            arms.append(Branch(g, body, (), self.loc(case)))
        # cases are alternatives: nest them as if/else chains
        chain: tuple[Flow, ...] = ()
        for arm in reversed(arms):
            assert isinstance(arm, Branch)
            chain = (Branch(arm.guard, arm.body, chain, arm.location),)
        for step in chain:
            self.emit(step)

    def bind_pattern_names(self, pattern: cst.CSTNode) -> None:
        if isinstance(pattern, cst.MatchAs) and pattern.name is not None:
            self.bind(pattern.name.value)
        elif isinstance(pattern, cst.MatchStar) and pattern.name is not None:
            self.bind(pattern.name.value)
        for child in pattern.children:
            if isinstance(
                child,
                (
                    cst.MatchPattern,
                    cst.MatchSequenceElement,
                    cst.MatchMappingElement,
                    cst.MatchKeywordElement,
                ),
            ):
                self.bind_pattern_names(child)

    # ---- expressions

    def add_call(
        self,
        func: Expr,
        args: tuple[Argument, ...],
        node: cst.CSTNode,
        text: str,
        kind: CallKind = CallKind.CALL,
    ) -> int:
        site = len(self.scope.calls)
        self.scope.calls.append(
            CallSite(
                func=func,
                args=args,
                location=self.loc(node),
                text=text,
                guards=tuple(self.guards),
                with_items=tuple(self.with_texts),
                kind=kind,
            )
        )
        self.emit(CallStep(site))
        return site

    def expr(self, node: cst.BaseExpression | None, load_attr: bool = True) -> Expr:
        if node is None:
            return OpaqueExpr("")
        t = type(node)
        if t is cst.Name:
            name = node.value  # type: ignore[attr-defined]
            if name in ("True", "False", "None"):
                return ConstExpr(name)
            self.emit(ReadStep(name, self.loc(node)))
            return NameExpr(name)
        if t is cst.Attribute:
            assert isinstance(node, cst.Attribute)
            if isinstance(node.value, cst.Name) and load_attr:
                base_name = node.value.value
                if self.is_import_alias(base_name):
                    self.emit(ReadStep(node.attr.value, self.loc(node), base=base_name))
                    return AttrExpr(NameExpr(base_name), node.attr.value)
            base = self.expr(node.value)
            dotted = self.import_rooted(node.value) if load_attr else None
            if dotted is not None:  # ``pkg.state.FLAG`` after ``import pkg.state``
                self.emit(ReadStep(node.attr.value, self.loc(node), base=dotted))
            return AttrExpr(base, node.attr.value)
        if t is cst.Call:
            assert isinstance(node, cst.Call)
            return self.call(node)
        if t in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString):
            return ConstExpr(node.value)  # type: ignore[attr-defined]
        if t is cst.ConcatenatedString or t is cst.FormattedString:
            if t is cst.FormattedString:
                for part in node.parts:  # type: ignore[attr-defined]
                    if isinstance(part, cst.FormattedStringExpression):
                        self.expr(part.expression)
            return ConstExpr(self.src.text(node, 60))
        if t is cst.Subscript:
            assert isinstance(node, cst.Subscript)
            base = self.expr(node.value)
            keys: list[Expr] = []
            for el in node.slice:
                if isinstance(el.slice, cst.Index):
                    keys.append(self.expr(el.slice.value))
                else:
                    for part in (el.slice.lower, el.slice.upper, el.slice.step):  # type: ignore[union-attr]
                        if part is not None:
                            self.expr(part)
            key = keys[0] if len(keys) == 1 else OpaqueExpr("")
            return SubscriptExpr(base, key)
        if t in (cst.List, cst.Tuple, cst.Set):
            kind = {
                cst.List: ContainerKind.LIST,
                cst.Tuple: ContainerKind.TUPLE,
                cst.Set: ContainerKind.SET,
            }[t]
            items = tuple(self.expr(el.value) for el in node.elements)  # type: ignore[attr-defined]
            return self.container(kind, items)
        if t is cst.Dict:
            assert isinstance(node, cst.Dict)
            ks: list[Expr | None] = []
            vs: list[Expr] = []
            for el in node.elements:
                if isinstance(el, cst.DictElement):
                    ks.append(self.expr(el.key))
                    vs.append(self.expr(el.value))
                else:
                    ks.append(None)
                    vs.append(self.expr(el.value))
            return self.container(ContainerKind.DICT, tuple(vs), tuple(ks))
        if t is cst.Lambda:
            assert isinstance(node, cst.Lambda)
            return self.lambda_(node)
        if t is cst.IfExp:
            assert isinstance(node, cst.IfExp)
            self.expr(node.test)
            a = self.expr(node.body)
            b = self.expr(node.orelse)
            return OpaqueExpr(self.src.text(node, 80), (a, b))
        if t is cst.BooleanOperation:
            assert isinstance(node, cst.BooleanOperation)
            a = self.expr(node.left)
            b = self.expr(node.right)
            return OpaqueExpr(self.src.text(node, 80), (a, b))
        if t is cst.NamedExpr:
            assert isinstance(node, cst.NamedExpr)
            value = self.expr(node.value)
            self.assign(node.target, value, self.src.text(node.value), node.value)
            return value
        if t in (cst.Await,):
            return self.expr(node.expression)  # type: ignore[attr-defined]
        if t is cst.Yield:
            assert isinstance(node, cst.Yield)
            self.scope.is_generator = True
            v: Expr = OpaqueExpr("")
            if isinstance(node.value, cst.From):
                v = self.expr(node.value.item)
            elif node.value is not None:
                v = self.expr(node.value)
            self.scope.yields.append(v)
            self.emit(YieldStep(self.loc(node)))
            return OpaqueExpr("yield")
        if t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            return self.comprehension(node)
        if t is cst.StarredElement:
            return self.expr(node.value)  # type: ignore[attr-defined]
        if t is cst.Ellipsis:
            return ConstExpr("...")
        # operators, comparisons, unary ops, f-strings...: walk for calls and reads
        parts: list[Expr] = []
        for child in _expr_children(node):
            parts.append(self.expr(child))
        return OpaqueExpr(self.src.text(node, 80))

    def comprehension(self, node: cst.BaseExpression) -> Expr:
        fors: list[cst.CompFor] = []
        comp: cst.CompFor | None = node.for_in  # type: ignore[attr-defined]
        while comp is not None:
            fors.append(comp)
            comp = comp.inner_for_in
        for c in fors:
            it = self.expr(c.iter)
            self.assign(c.target, it, self.src.text(c.iter), c.iter, iterates=True)
            for cond in c.ifs:
                self.expr(cond.test)
        if isinstance(node, cst.DictComp):
            self.expr(node.key)
            value = self.expr(node.value)
            return self.container(ContainerKind.DICT, (value,), (OpaqueExpr(""),))
        elt = self.expr(node.elt)  # type: ignore[attr-defined]
        kind = ContainerKind.SET if isinstance(node, cst.SetComp) else ContainerKind.LIST
        return self.container(kind, (elt,))

    def lambda_(self, node: cst.Lambda) -> Expr:
        parent = self.scope
        parent.lambda_count += 1
        name = f"<lambda{parent.lambda_count}>"
        params = self.parameters(node.params)
        child = ScopeBuilder(
            qualname=f"{parent.qualname}.{name}",
            kind=ScopeKind.LAMBDA,
            name=name,
            location=self.loc(node),
            parent=parent,
            params=params,
        )
        child.end_line = self.src.end_line(node)
        parent.children.append(child.qualname)
        self.enter_function(child, node.body, params)
        return FunctionRefExpr(child.qualname)

    def call(self, node: cst.Call) -> Expr:
        func_node = node.func
        if isinstance(func_node, cst.Name):
            func: Expr = NameExpr(func_node.value)
            if func_node.value == "super" and not node.args:
                func = NameExpr("super")
        elif isinstance(func_node, cst.Attribute):
            # a method call: the receiver is read, but the callee is not a "read"
            base = self.expr(func_node.value)
            func = AttrExpr(base, func_node.attr.value)
        else:
            func = self.expr(func_node)
        args: list[Argument] = []
        for a in node.args:
            value = self.expr(a.value)
            star = len(a.star) if a.star else 0
            args.append(Argument(value, a.keyword.value if a.keyword is not None else None, star))
        self.setattr_write(func, node, args)
        text = self.src.text(node, MAX_CALL_TEXT)
        site = self.add_call(func, tuple(args), node, text)
        if isinstance(func, NameExpr) and func.name == "super" and self._plain_super(node):
            return SuperExpr()
        return CallExpr(site)

    def _plain_super(self, node: cst.Call) -> bool:
        """``super()``, or the old spelling ``super(Cls, self)`` inside a method of ``Cls``."""
        if not node.args:
            return True
        parent = self.scope.parent
        first = node.args[0].value
        return (
            len(node.args) == 2
            and parent is not None
            and parent.kind is ScopeKind.CLASS
            and isinstance(first, cst.Name)
            and first.value == parent.name
        )

    def setattr_write(self, func: Expr, node: cst.Call, args: list[Argument]) -> None:
        """``setattr(mod, "X", v)`` writes the module global ``X``."""
        if not (isinstance(func, NameExpr) and func.name == "setattr" and len(args) == 3):
            return
        _, attr, value = args
        base = self.import_rooted(node.args[0].value)
        if base is not None and isinstance(attr.value, ConstExpr):
            literal = attr.value.value
            if literal[:1] in "'\"":
                name = literal.strip("'\"")
                text = self.src.text(node.args[2].value)
                self.emit(WriteStep(name, value.value, text, self.loc(node), base=base))


def _expr_children(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    for child in node.children:
        if isinstance(child, cst.BaseExpression):
            yield child
        elif isinstance(child, (cst.FormattedStringExpression, cst.ComparisonTarget)):
            yield from _expr_children(child)


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _name_of(node: cst.BaseExpression) -> str:
    return node.value if isinstance(node, cst.Name) else _dotted(node)


def _is_main_test(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    sides = {type(left), type(right)}
    if sides != {cst.Name, cst.SimpleString}:
        return False
    name = left if isinstance(left, cst.Name) else right
    string = right if isinstance(right, cst.SimpleString) else left
    return name.value == "__name__" and string.evaluated_value == "__main__"  # type: ignore[union-attr]


def _handler_catches_import_error(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    if handler.type is None:
        return True
    names: list[str] = []
    t = handler.type
    if isinstance(t, cst.Tuple):
        names = [_dotted(el.value) for el in t.elements]
    else:
        names = [_dotted(t)]
    return any(n.rpartition(".")[2] in _IMPORT_ERRORS for n in names)


def summarize_source(source: SourceFile, data: bytes) -> ModuleSummary:
    """Parse ``data`` as the file ``source`` and summarise it.

    Parse errors propagate as libcst exceptions: ``index.index_file`` turns
    them, and every other failure, into a ``Diagnostic``.
    """
    module = cst.parse_module(data)
    src = SourceSpans(module, source.path)
    return _Indexer(source, src).run(module)
