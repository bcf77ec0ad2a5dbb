"""Summarize: one parsed module -> one ``ModuleSummary``.

This module and its two helpers, ``flagtrace.positions`` (where each node is,
and its source text) and ``flagtrace.expressions`` (the expression half of the
walk), are the only code that touches CST nodes. Everything they return is
plain frozen data from ``flagtrace.model``, small enough to pickle across
processes and to cache on disk; reading files, worker pools and the cache are
``flagtrace.index``'s job.

The walk goes over the statements itself (no ``CSTVisitor``: see
``flagtrace.positions`` for what that would cost), in source order, and keeps
its position in an immutable ``scopes.Frame``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from flagtrace.expressions import ExpressionWalker
from flagtrace.model import (
    Argument,
    Assignment,
    AttrExpr,
    Branch,
    CallExpr,
    CallKind,
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
    RaiseStep,
    ReadStep,
    ReturnStep,
    ScopeKind,
    SourceFile,
    Target,
    TryBlock,
    WithBlock,
    WithItem,
    WriteStep,
    walk,
)
from flagtrace.positions import MAX_CALL_TEXT, SourceSpans
from flagtrace.scopes import Frame, ScopeBuilder
from flagtrace.versions import State

_TYPE_CHECKING_TESTS = {"TYPE_CHECKING", "typing.TYPE_CHECKING", "t.TYPE_CHECKING"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
#: the augmented operators a summary keeps (``WriteStep.operator``): those a
#: counter counts up and down with
_COUNTING_OPERATORS: dict[type[cst.BaseAugOp], str] = {
    cst.AddAssign: "+=",
    cst.SubtractAssign: "-=",
}


def summarize_source(source: SourceFile, data: bytes) -> ModuleSummary:
    """Parse ``data`` as the file ``source`` and summarise it.

    Parse errors propagate as libcst exceptions: ``index.index_file`` turns
    them, and every other failure, into a ``Diagnostic``.
    """
    module = cst.parse_module(data)
    src = SourceSpans(module, source.path)
    return _Indexer(source, src).run(module)


class _Indexer(ExpressionWalker):
    """Walks a module's statements and builds the scopes, in source order."""

    # ---- entry

    def run(self, module: cst.Module) -> ModuleSummary:
        top = ScopeBuilder(
            qualname=self.module,
            kind=ScopeKind.MODULE,
            name=self.module.rpartition(".")[2],
            location=Location(self.source.path, 1, 1),
            parent=None,
        )
        self.frame = Frame(top)
        self.scopes.append(top)
        top.flow = self.block(module.body)
        top.end_line = self.src.line_count
        # a read can only be of a flag if the name is a module variable: bound by
        # assignment at module level or declared ``global`` somewhere
        declared = {n for sc in self.scopes for n in sc.globals_declared}
        assigned = {a.target.name for a in top.assignments if a.target.name is not None}
        module_globals = frozenset((assigned - self.defined_names) | declared)
        escaping = _escaping_names(self.scopes, declared)
        frozen = tuple(
            s.freeze(module_globals, escaping.get(s.qualname, set())) for s in self.scopes
        )
        return ModuleSummary(
            module=self.module,
            path=self.source.path,
            is_package=self.source.is_package,
            scopes=frozen,
            lines=self.src.line_count,
            has_main_block=self.has_main_block,
            all_names=self.all_names,
            containers=tuple(self.containers),
            step_names=tuple(
                sorted(
                    {
                        step.name
                        for scope in frozen
                        if scope.kind is not ScopeKind.CLASS
                        for step in walk(scope.flow)
                        if isinstance(step, (ReadStep, WriteStep))
                    }
                )
            ),
        )

    def block(
        self,
        body: Sequence[cst.BaseStatement] | cst.BaseSuite,
        frame: Frame | None = None,
    ) -> tuple[Flow, ...]:
        """The flow of ``body``, walked in ``frame`` (default: the current one)."""
        stmts = body.body if isinstance(body, cst.BaseSuite) else body
        with self.within((self.frame if frame is None else frame).block()) as inner:
            for stmt in stmts:
                self.statement(stmt)
                for g in self.dominating(stmt):
                    self.frame = self.frame.guarded(g)
        return tuple(inner.flow)

    def dominating(self, stmt: cst.BaseStatement | cst.BaseSmallStatement) -> list[Guard]:
        """What the statements after ``stmt`` in its block can rely on: ``assert C``
        gives ``C``; ``if C: return`` (``raise``, ``continue``, ``break``) gives
        ``not C``, and so does each ``elif`` that exits after it; an ``else``
        that exits gives the test of the arm before it.

        "Exits" is syntactic: the arm's last statement leaves the block, or is an
        ``if`` all of whose arms (``else`` included) do. Exits in a nested block
        (a ``with`` or ``try`` body) guard only what follows them in that block.
        """
        if isinstance(stmt, cst.SimpleStatementLine):
            return [
                self.guard(small.test, GuardKind.ASSERT)
                for small in stmt.body
                if isinstance(small, cst.Assert)
            ]
        out: list[Guard] = []
        arm: cst.CSTNode | None = stmt
        while isinstance(arm, cst.If):
            if _always_exits(arm.body):
                out.append(self.guard(arm.test, GuardKind.EXIT, negated=True))
                arm = arm.orelse
            else:
                if isinstance(arm.orelse, cst.Else) and _always_exits(arm.orelse.body):
                    out.append(self.guard(arm.test, GuardKind.EXIT))
                break
        return out

    # ---- statements

    def statement(self, node: cst.BaseStatement | cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(small)
            return
        # TODO(issue 15): the statements of a one-line suite (``def f(): return X``,
        # ``if c: import m``, ``def set_(): global X; X = True``) are small
        # statements, which have no ``stmt_`` method: they fall to the loop
        # below, which keeps only their expressions' calls and reads, and drops
        # the return, the import, the ``global`` and the write.
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
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
            self.assign(
                node.target,
                value,
                self.src.text(node.value),
                node.value,
                augmented=True,
                operator=_COUNTING_OPERATORS.get(type(node.operator), ""),
            )
        elif isinstance(node, cst.Return):
            returned = self.expr(node.value) if node.value is not None else None
            if returned is not None:
                self.scope.returns.append(returned)
            self.emit(ReturnStep(self.loc(node), returned))
            self.scope.reach.stop()
        elif isinstance(node, cst.Raise):
            self.raise_(node)
            self.scope.reach.stop()
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
            # ``assert TEST`` is ``if not TEST: raise AssertionError``: a statement that
            # can raise (hazards ask which statements can; nesting guards are asserts)
            self.expr(node.test)
            if node.msg is not None:
                self.expr(node.msg)
            g = self.guard(node.test, GuardKind.ASSERT, negated=True)
            self.emit(Branch(g, (RaiseStep(self.loc(node)),), (), self.loc(node)))
        elif isinstance(node, cst.Break):
            self.scope.reach.loop_break()
        elif isinstance(node, cst.Continue):
            self.scope.reach.loop_continue()
        # Pass: nothing to record

    def raise_(self, node: cst.Raise) -> None:
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
            self.expr(node.cause.item)
        self.emit(RaiseStep(self.loc(node)))

    def check_all(self, node: cst.Assign) -> None:
        """``__all__ = [...]`` at module level, when every element is a string literal."""
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
            self.scope.reach.delete(name)
            if name in self.scope.globals_declared:
                self.emit(WriteStep(name, None, "del", self.loc(target)))
        elif isinstance(target, cst.Attribute) and self.import_rooted(target.value) is not None:
            base = self.import_rooted(target.value)
            self.emit(WriteStep(target.attr.value, None, "del", self.loc(target), base=base))
        else:
            self.scope.reach.kill_items()
            self.expr(target)

    # ---- imports

    def stmt_import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = _dotted(alias.name)
            if alias.asname is not None:
                local = _name_of(alias.asname.name)
                self.add_import(ImportKind.MODULE, name, None, local, alias)
            else:
                # ``import a.b.c`` binds ``a`` (and makes a.b.c importable)
                self.add_import(ImportKind.MODULE, name, None, name.split(".")[0], alias)

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
            self.scope.reach.bind(alias)
            self.import_aliases.add(alias)
        self.scope.imports.append(
            Import(
                kind,
                module,
                name,
                alias,
                self.loc(node),
                type_checking=self.frame.type_checking,
                guarded=self.frame.import_guarded,
            )
        )

    # ---- definitions

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
        self.scopes.append(child)
        child.local_names.update(p.name for p in params)
        child.flow = self.block(node.body, self.frame.function(child))

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
        self.scopes.append(child)
        child.flow = self.block(node.body, self.frame.class_body(child))
        self.scope.reach.kill_items()  # the class body ran here, and may change containers

    def define(self, child: ScopeBuilder, node: cst.FunctionDef | cst.ClassDef) -> None:
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
        self.scope.reach.define(child.name, len(self.scope.assignments))
        self.scope.assignments.append(
            Assignment(Target(name=child.name), value, child.location, child.name)
        )

    def decorator_text(self, child: ScopeBuilder, dec: Expr) -> str:
        # ``index`` finds the first equal decorator: ``@a @a`` shows the first's text twice
        i = child.decorators.index(dec)
        return "@" + child.decorator_texts[i]

    def decorators(self, decs: Sequence[cst.Decorator]) -> tuple[tuple[Expr, ...], tuple[str, ...]]:
        exprs = tuple(self.expr(d.decorator) for d in decs)
        texts = tuple(self.src.text(d.decorator) for d in decs)
        return exprs, texts

    # ---- control flow

    def stmt_If(self, node: cst.If, kind: GuardKind = GuardKind.IF) -> None:
        self.expr(node.test)
        g = self.guard(node.test, kind)
        text = g.text
        if _is_main_test(node.test) and self.scope.kind is ScopeKind.MODULE:
            self.has_main_block = True
        frame = self.frame.guarded(g)
        if text in _TYPE_CHECKING_TESTS:
            frame = frame.only_type_checking()
        reach = self.scope.reach
        before = reach.fork()
        body = self.block(node.body, frame)
        after_body = reach.fork()
        reach.start(before)
        orelse: tuple[Flow, ...] = ()
        if node.orelse is not None:
            neg = self.frame.guarded(replace(g, negated=True, kind=GuardKind.ELSE))
            if isinstance(node.orelse, cst.If):
                with self.within(neg.block()) as inner:
                    self.stmt_If(node.orelse, GuardKind.ELIF)
                orelse = tuple(inner.flow)
            else:
                orelse = self.block(node.orelse.body, neg)
        reach.join(after_body, reach.state)
        self.emit(Branch(g, body, orelse, self.loc(node)))

    def stmt_While(self, node: cst.While) -> None:
        reach = self.scope.reach
        reach.loop_enter()  # the test runs at the head, each time round
        self.expr(node.test)
        head = reach.fork()
        g = self.guard(node.test, GuardKind.WHILE)
        body = self.block(node.body, self.frame.guarded(g))
        after, breaks = reach.loop_exit(head)
        reach.start(after)
        orelse = self.block(node.orelse.body) if node.orelse is not None else ()
        reach.join(reach.state, *breaks)
        self.emit(Branch(g, body, orelse, self.loc(node), loop=True))

    def stmt_For(self, node: cst.For) -> None:
        reach = self.scope.reach
        iterable = self.expr(node.iter)
        self.iterate(iterable, node.iter)
        reach.loop_enter()  # the target is bound at the head, each time round
        head = reach.fork()
        self.assign(node.target, iterable, self.src.text(node.iter), node.iter, iterates=True)
        body = self.block(node.body)
        after, breaks = reach.loop_exit(head)
        reach.start(after)
        orelse = self.block(node.orelse.body) if node.orelse is not None else ()
        reach.join(reach.state, *breaks)
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
        # a context manager may swallow an exception from anywhere in the body
        reach = self.scope.reach
        before, mark = reach.fork(), reach.mark()
        body = self.block(node.body, self.frame.within_with(tuple(i.text for i in items)))
        reach.join(reach.state, reach.exceptional(before, mark))
        self.emit(WithBlock(tuple(items), body, self.loc(node), node.asynchronous is not None))
        leave = "__aexit__" if node.asynchronous is not None else "__exit__"
        for item, with_item in zip(reversed(node.items), reversed(items), strict=True):
            self.add_call(
                AttrExpr(with_item.expr, leave),
                (),
                item.item,
                f"<{leave}> {with_item.text[:MAX_CALL_TEXT]}",
                CallKind.EXIT,
            )

    def stmt_Try(self, node: cst.Try | cst.TryStar) -> None:
        """Handlers start from any point of the body (every binding made in it
        may have run); ``finally`` from any point of the whole statement."""
        catches_import = any(_handler_catches_import_error(h) for h in node.handlers)
        reach = self.scope.reach
        before, mark, jumps = reach.fork(), reach.mark(), reach.pending_jumps()
        body = self.block(node.body, self.frame.guarding_imports() if catches_import else None)
        after_body = reach.fork()
        raised = reach.exceptional(before, mark)
        ends: list[State | None] = []
        handlers: list[tuple[Flow, ...]] = []
        for h in node.handlers:
            reach.start(raised)
            if h.type is not None:
                self.expr(h.type)
            if h.name is not None and isinstance(h.name.name, cst.Name):
                self.bind(h.name.name.value)
                reach.bind(h.name.name.value)
            g = Guard(
                self.src.text(h.type) if h.type is not None else "BaseException",
                self.loc(h).line,
                False,
                GuardKind.EXCEPT,
            )
            handlers.append(self.block(h.body, self.frame.guarded(g)))
            ends.append(reach.fork())
        reach.start(after_body)
        orelse = self.block(node.orelse.body) if node.orelse is not None else ()
        reach.join(reach.state, *ends)
        final: tuple[Flow, ...] = ()
        if node.finalbody is not None:
            reach.join(reach.state, reach.exceptional(before, mark))
            final = self.block(node.finalbody.body)
            reach.after_finally(jumps, reach.state)
        self.emit(TryBlock(body, tuple(handlers), orelse, final, self.loc(node)))

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node: cst.Match) -> None:
        self.expr(node.subject)
        arms: list[Branch] = []
        reach = self.scope.reach
        unmatched = reach.fork()  # no case so far has matched
        ends: list[State | None] = []
        for case in node.cases:
            reach.start(unmatched)
            self.bind_pattern_names(case.pattern)
            if case.guard is not None:
                self.expr(case.guard)
            unmatched = reach.merge((unmatched, reach.state))
            text = "case " + self.src.text(case.pattern)
            if case.guard is not None:
                text += " if " + self.src.text(case.guard)
            g = Guard(text, self.loc(case).line, False, GuardKind.CASE)
            body = self.block(case.body, self.frame.guarded(g))
            ends.append(reach.fork())
            arms.append(Branch(g, body, (), self.loc(case)))
        reach.join(unmatched, *ends)
        # cases are alternatives: nest them as if/else chains
        chain: tuple[Flow, ...] = ()
        for arm in reversed(arms):
            chain = (Branch(arm.guard, arm.body, chain, arm.location),)
        for step in chain:
            self.emit(step)

    def bind_pattern_names(self, pattern: cst.CSTNode) -> None:
        if isinstance(pattern, cst.MatchAs) and pattern.name is not None:
            self.bind(pattern.name.value)
            self.scope.reach.bind(pattern.name.value)
        elif isinstance(pattern, cst.MatchStar) and pattern.name is not None:
            self.bind(pattern.name.value)
            self.scope.reach.bind(pattern.name.value)
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


def _escaping_names(scopes: Sequence[ScopeBuilder], declared: set[str]) -> dict[str, set[str]]:
    """Per scope, the names whose values other code may change between its
    statements, so that its reads of them stay flow-insensitive: at module
    level, the names some function declares ``global``; in a function, the
    names a function nested in it declares ``nonlocal``."""
    out: dict[str, set[str]] = {}
    for sc in scopes:
        if sc.kind is ScopeKind.MODULE:
            out.setdefault(sc.qualname, set()).update(declared)
        if sc.nonlocals_declared:
            outer = sc.parent
            while outer is not None and outer.kind is not ScopeKind.MODULE:
                out.setdefault(outer.qualname, set()).update(sc.nonlocals_declared)
                outer = outer.parent
    return out


def _dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` for a chain of names and attributes, else ``""``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _name_of(node: cst.BaseExpression) -> str:
    return node.value if isinstance(node, cst.Name) else _dotted(node)


_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _always_exits(body: cst.BaseSuite) -> bool:
    """The block cannot fall through: its last statement returns, raises,
    continues or breaks, or is a ``with`` whose body cannot fall through, or an
    ``if`` whose every arm (an ``else`` too) cannot. (A context manager that
    swallows an exception could let a ``raise`` in its body fall through: the
    guard then claims a little too much, as a witness guard may.)"""
    if not body.body:
        return False
    last = body.body[-1]
    if isinstance(last, _EXITS):  # ``if c: return`` on one line
        return True
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, _EXITS) for small in last.body)
    if isinstance(last, cst.With):  # ``with lock: ...; return x``
        return _always_exits(last.body)
    if isinstance(last, cst.If):
        arm: cst.If | cst.Else | None = last
        while isinstance(arm, cst.If):
            if not _always_exits(arm.body):
                return False
            arm = arm.orelse
        return arm is not None and _always_exits(arm.body)
    return False


def _is_main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.Name) and isinstance(right, cst.SimpleString):
        name, string = left, right
    elif isinstance(right, cst.Name) and isinstance(left, cst.SimpleString):
        name, string = right, left
    else:
        return False
    return name.value == "__name__" and string.evaluated_value == "__main__"


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
