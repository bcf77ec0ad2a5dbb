"""The expression half of the summary walk, and the state the whole walk shares.

``ExpressionWalker`` turns a CST expression into the ``model.Expr`` value-flow
vocabulary, recording on the way what evaluating it does: the calls it makes
(``CallSite``), the globals it reads (``ReadStep``), the lambdas it defines and
the names a walrus or a comprehension binds. ``flagtrace.summarize._Indexer``
extends it with statements. Split this way because expressions never contain
statements (a lambda's body is an expression), so this half never needs the
other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import libcst as cst

from flagtrace.model import (
    Argument,
    Assignment,
    AttrExpr,
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
    GuardBool,
    GuardCall,
    GuardCompare,
    GuardConst,
    GuardExpr,
    GuardKind,
    GuardNot,
    GuardPath,
    GuardUnknown,
    Location,
    NameExpr,
    OpaqueExpr,
    Param,
    ParamKind,
    ReadStep,
    ReturnStep,
    ScopeKind,
    SourceFile,
    SubscriptExpr,
    SuperExpr,
    Target,
    WriteStep,
    YieldStep,
)
from flagtrace.positions import MAX_CALL_TEXT, SourceSpans
from flagtrace.scopes import Frame, ScopeBuilder

_CONSTANTS = ("True", "False", "None")
_SEQUENCES = {
    cst.List: ContainerKind.LIST,
    cst.Tuple: ContainerKind.TUPLE,
    cst.Set: ContainerKind.SET,
}
_Comprehension = cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
_COMPARE_OPS: dict[type[cst.BaseCompOp], str] = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.Is: "is",
    cst.IsNot: "is not",
    cst.In: "in",
    cst.NotIn: "not in",
}


class ExpressionWalker:
    """Per-module walk state, the current ``Frame``, and the expression walk."""

    frame: Frame

    def __init__(self, source: SourceFile, src: SourceSpans) -> None:
        self.source = source
        self.src = src
        self.module = source.module
        self.package = source.module if source.is_package else source.module.rpartition(".")[0]
        self.scopes: list[ScopeBuilder] = []  # in the order they are entered
        self.has_main_block = False
        self.all_names: tuple[str, ...] | None = None
        self.import_aliases: set[str] = set()  # any name bound by an import, anywhere
        self.defined_names: set[str] = set()  # module-level def/class names
        self.containers: list[ContainerExpr] = []  # displays so far (``ModuleSummary``)

    # ---- the frame

    @property
    def scope(self) -> ScopeBuilder:
        return self.frame.scope

    @contextmanager
    def within(self, frame: Frame) -> Iterator[Frame]:
        """Walk in ``frame`` until the block ends, then in the enclosing frame again
        (also when the walk raises, so a caller that goes on sees no leftovers)."""
        outer = self.frame
        self.frame = frame
        try:
            yield frame
        finally:
            self.frame = outer

    def emit(self, step: Flow) -> None:
        self.frame.flow.append(step)

    # ---- helpers

    def loc(self, node: cst.CSTNode) -> Location:
        return self.src.location(node)

    def bind(self, name: str) -> None:
        self.scope.local_names.add(name)

    def container(
        self, kind: ContainerKind, items: tuple[Expr, ...], keys: tuple[Expr | None, ...] = ()
    ) -> ContainerExpr:
        display = ContainerExpr(kind, items, keys, f"{self.module}:{len(self.containers) + 1}")
        self.containers.append(display)
        return display

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

    # ---- guards

    def guard(self, test: cst.BaseExpression, kind: GuardKind, negated: bool = False) -> Guard:
        """The condition ``test`` as a guard: its source and its parsed form."""
        return Guard(self.src.text(test), self.loc(test).line, negated, kind, self.guard_expr(test))

    def guard_expr(self, node: cst.BaseExpression) -> GuardExpr:
        """``node`` in the guard vocabulary (``model.GuardExpr``); what it does not
        cover stays ``GuardUnknown`` with its source, never a guess."""
        if isinstance(node, cst.Name):
            return GuardConst(node.value) if node.value in _CONSTANTS else GuardPath(node.value)
        if isinstance(node, cst.Attribute):
            path = _path(node)
            return GuardPath(path) if path else GuardUnknown(self.src.text(node))
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
            return GuardConst(node.value)
        if isinstance(node, cst.Call):
            path = _path(node.func)
            if path:
                return GuardCall(path, ", ".join(self.src.text(a) for a in node.args))
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return GuardNot(self.guard_expr(node.expression))
        elif isinstance(node, cst.BooleanOperation):
            op = "and" if isinstance(node.operator, cst.And) else "or"
            return GuardBool(op, tuple(self.guard_expr(o) for o in _operands(node)))
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            target = node.comparisons[0]
            return GuardCompare(
                self.guard_expr(node.left),
                _COMPARE_OPS[type(target.operator)],
                self.guard_expr(target.comparator),
            )
        return GuardUnknown(self.src.text(node))

    def add_call(
        self,
        func: Expr,
        args: tuple[Argument, ...],
        node: cst.CSTNode,
        text: str,
        kind: CallKind = CallKind.CALL,
    ) -> int:
        site = len(self.scope.calls)
        self.scope.reach.kill_items()  # the call may change any container
        self.scope.calls.append(
            CallSite(
                func=func,
                args=args,
                location=self.loc(node),
                text=text,
                guards=self.frame.guards,
                with_items=self.frame.with_texts,
                kind=kind,
            )
        )
        self.emit(CallStep(site))
        return site

    def iterate(self, iterable: Expr, node: cst.CSTNode) -> None:
        """Record the iteration protocol over ``node`` (whose value is ``iterable``)
        as implicit calls: ``iter(x)``, then ``__next__()`` on what that returned.
        ``for``, comprehensions and ``yield from`` iterate; the ``__next__`` is
        where a generator's body runs (``flagtrace.generators``)."""
        text = self.src.text(node, MAX_CALL_TEXT)
        it = self.add_call(
            AttrExpr(iterable, "__iter__"), (), node, f"<iter> {text}", CallKind.ITER
        )
        self.add_call(AttrExpr(CallExpr(it), "__next__"), (), node, f"<next> {text}", CallKind.NEXT)

    # ---- bindings (shared with statements: a walrus and a comprehension bind too)

    def assign(
        self,
        target: cst.BaseExpression,
        value: Expr,
        text: str,
        value_node: cst.CSTNode,
        *,
        annotation: str | None = None,
        augmented: bool = False,
        operator: str = "",
        iterates: bool = False,
        store: bool = True,
    ) -> None:
        """Record ``target = value`` (``operator``: of an augmented assignment, its
        ``+=`` or ``-=``, which a write to a global keeps: a counter's decrement
        undoes its increment)."""
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
            if store:
                self.scope.reach.define(name, len(self.scope.assignments), augmented)
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
                self.emit(
                    WriteStep(name, value, text, location, augmented=augmented, operator=operator)
                )
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
                        target.attr.value,
                        value,
                        text,
                        location,
                        base=dotted,
                        augmented=augmented,
                        operator=operator,
                    )
                )
            return
        if isinstance(target, cst.Subscript):
            base = self.expr(target.value)
            key: Expr = OpaqueExpr("")
            if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                key = self.expr(target.slice[0].slice.value)
            item = _item_name(target)
            if item is None or not store:
                self.scope.reach.kill_items()
            else:
                self.scope.reach.store_item(item, len(self.scope.assignments), augmented)
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

    def parameters(self, params: cst.Parameters) -> tuple[Param, ...]:
        """The parameters, in order; defaults are evaluated here, in the defining scope."""
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

    # ---- expressions

    def expr(self, node: cst.BaseExpression | None, load_attr: bool = True) -> Expr:
        """The value of ``node``, recording what evaluating it does.

        ``load_attr=False`` is for the target of ``x.attr = v``: a store, so
        ``mod.X = v`` is no read of ``mod.X``. Dispatch tests ``type(node) is``,
        most frequent kinds first: this runs for every expression of every file
        (libcst's concrete node classes have no subclasses, so it is exact).
        """
        if node is None:
            return OpaqueExpr("")
        if type(node) is cst.Name:
            return self.name(node)
        if type(node) is cst.Attribute:
            return self.attribute(node, load_attr)
        if type(node) is cst.Call:
            return self.call(node)
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
            return ConstExpr(node.value)
        if type(node) is cst.FormattedString:
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    self.expr(part.expression)
            return ConstExpr(self.src.text(node, 60))
        if type(node) is cst.ConcatenatedString:
            # TODO(issue 15): ``"a" f"{k()}"`` is not walked: the call k() is lost
            return ConstExpr(self.src.text(node, 60))
        if type(node) is cst.Subscript:
            return self.subscript(node)
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            items = tuple(self.expr(el.value) for el in node.elements)
            return self.container(_SEQUENCES[type(node)], items)
        if type(node) is cst.Dict:
            return self.dict_display(node)
        if type(node) is cst.Lambda:
            return self.lambda_(node)
        if type(node) is cst.IfExp:
            return self.conditional(node)
        if type(node) is cst.BooleanOperation:
            return self.boolean(node)
        if type(node) is cst.NamedExpr:
            value = self.expr(node.value)
            self.assign(node.target, value, self.src.text(node.value), node.value)
            return value
        if type(node) is cst.Await:
            value = self.expr(node.expression)
            self.scope.reach.kill_items()  # other tasks run meanwhile
            return value
        if type(node) is cst.Yield:
            return self.yield_(node)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self.comprehension(node)
        if type(node) is cst.StarredElement:
            return self.expr(node.value)
        if type(node) is cst.Ellipsis:
            return ConstExpr("...")
        return self.operation(node)

    def conditional(self, node: cst.IfExp) -> Expr:
        """``a if c else b``: ``a`` runs under ``c``, ``b`` under ``not c``."""
        self.expr(node.test)
        g = self.guard(node.test, GuardKind.IFEXP)
        reach = self.scope.reach
        before = reach.fork()
        with self.within(self.frame.guarded(g)):
            a = self.expr(node.body)
        after_a = reach.fork()
        reach.start(before)
        with self.within(self.frame.guarded(replace(g, negated=True))):
            b = self.expr(node.orelse)
        reach.join(after_a, reach.state)
        return OpaqueExpr(self.src.text(node, 80), (a, b))

    def boolean(self, node: cst.BooleanOperation) -> Expr:
        """``a and b and c``: each operand runs only if those before it were true
        (``or``: false), so each is guarded by the ones before it."""
        negated = isinstance(node.operator, cst.Or)
        frame = self.frame
        values: list[Expr] = []
        operands = _operands(node)
        reach = self.scope.reach
        for i, operand in enumerate(operands):
            before = reach.fork()
            with self.within(frame):
                values.append(self.expr(operand))
            if i:  # this operand may not run (a walrus in it may not bind)
                reach.join(before, reach.state)
            if i + 1 < len(operands):
                frame = frame.guarded(self.guard(operand, GuardKind.BOOL, negated))
        return OpaqueExpr(self.src.text(node, 80), tuple(values))

    def operation(self, node: cst.BaseExpression) -> Expr:
        """Operators, comparisons, ``not`` and the like: walked for their calls and
        reads; the value is opaque.

        TODO(issue 15): the operands' values are dropped here (``parts`` is
        built and not used), unlike ``a or b`` and ``x if c else y`` above. Only
        ``BinaryOperation``, ``Comparison`` and ``UnaryOperation`` get here (and
        two newer forms that lose more: a t-string's ``{f()}`` is not walked at
        all, nor the ``for`` part of ``{**d for d in ds}``). For comparisons and ``not``
        the result is a bool, so dropping is right; for ``+``, ``*`` and ``|``
        on displays it loses values: ``for fn in [a] + [b]: fn()`` leaves
        ``fn()`` unresolved, where ``for fn in [a, b]`` resolves to both. A fix
        would pass ``parts`` for ``BinaryOperation`` only, and bump
        ``model.SUMMARY_FORMAT``.
        """
        parts: list[Expr] = []
        for child in _expr_children(node):
            parts.append(self.expr(child))
        return OpaqueExpr(self.src.text(node, 80))

    def name(self, node: cst.Name) -> Expr:
        name = node.value
        if name in _CONSTANTS:
            return ConstExpr(name)
        self.emit(ReadStep(name, self.loc(node), None, self.frame.guards))
        return NameExpr(name, self.scope.reach.read(name))

    def attribute(self, node: cst.Attribute, load_attr: bool) -> Expr:
        if isinstance(node.value, cst.Name) and load_attr:
            base_name = node.value.value
            if self.is_import_alias(base_name):
                self.emit(ReadStep(node.attr.value, self.loc(node), base_name, self.frame.guards))
                return AttrExpr(NameExpr(base_name), node.attr.value)
        base = self.expr(node.value)
        dotted = self.import_rooted(node.value) if load_attr else None
        if dotted is not None:  # ``pkg.state.FLAG`` after ``import pkg.state``
            self.emit(ReadStep(node.attr.value, self.loc(node), dotted, self.frame.guards))
        return AttrExpr(base, node.attr.value)

    def subscript(self, node: cst.Subscript) -> Expr:
        base = self.expr(node.value)
        keys: list[Expr] = []
        for el in node.slice:
            if isinstance(el.slice, cst.Index):
                keys.append(self.expr(el.slice.value))
            elif isinstance(el.slice, cst.Slice):  # the only other kind
                for part in (el.slice.lower, el.slice.upper, el.slice.step):
                    if part is not None:
                        self.expr(part)
        key = keys[0] if len(keys) == 1 else OpaqueExpr("")
        item = _item_name(node)
        if item is not None:
            return SubscriptExpr(base, key, self.scope.reach.read(item[0] + item[1]))
        return SubscriptExpr(base, key)

    def dict_display(self, node: cst.Dict) -> Expr:
        keys: list[Expr | None] = []
        values: list[Expr] = []
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                keys.append(self.expr(el.key))
                values.append(self.expr(el.value))
            else:  # ``**other``
                keys.append(None)
                values.append(self.expr(el.value))
        return self.container(ContainerKind.DICT, tuple(values), tuple(keys))

    def yield_(self, node: cst.Yield) -> Expr:
        self.scope.is_generator = True
        value: Expr = OpaqueExpr("")
        if isinstance(node.value, cst.From):
            value = self.expr(node.value.item)
            self.iterate(value, node.value.item)  # ``yield from g`` runs g's body here
        elif node.value is not None:
            value = self.expr(node.value)
        self.scope.yields.append(value)
        self.scope.reach.kill_items()  # the consumer runs meanwhile
        self.emit(YieldStep(self.loc(node)))
        return OpaqueExpr("yield")

    def comprehension(self, node: _Comprehension) -> Expr:
        """A comprehension, walked in the enclosing scope (its own scope is not
        modelled): its targets bind there, its calls are made there.

        For flow-sensitive locals it is a loop after its first iterable; its
        targets are its own, so afterwards they hold what they held before
        (a walrus in it binds the enclosing scope, and stays). A generator
        expression runs when consumed, at a time unknown here: its reads and
        bindings after the first iterable are flow-insensitive."""
        fors: list[cst.CompFor] = []
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            fors.append(comp)
            comp = comp.inner_for_in
        reach = self.scope.reach
        lazy = isinstance(node, cst.GeneratorExp)
        before = reach.fork()
        head = before
        own: set[str] = set()
        frame = self.frame  # each ``if`` guards what comes after it
        for i, c in enumerate(fors):
            with self.within(frame):
                it = self.expr(c.iter)
                self.iterate(it, c.iter)
                if i == 0:
                    if lazy:
                        reach.suspend()
                    reach.loop_enter()
                    head = reach.fork()
                own.update(_bound_names(c.target))
                self.assign(c.target, it, self.src.text(c.iter), c.iter, iterates=True)
            for cond in c.ifs:
                with self.within(frame):
                    self.expr(cond.test)
                frame = frame.guarded(self.guard(cond.test, GuardKind.FILTER))
        value: Expr
        with self.within(frame):
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                value = self.expr(node.value)
            else:
                value = self.expr(node.elt)
        after, _ = reach.loop_exit(head)
        if lazy:
            reach.resume()
        reach.join(after)
        if reach.state is not None and before is not None:
            for name in own:
                if name in before.defs:
                    reach.state.defs[name] = before.defs[name]
                else:
                    reach.state.defs.pop(name, None)
        if isinstance(node, cst.DictComp):
            return self.container(ContainerKind.DICT, (value,), (OpaqueExpr(""),))
        kind = ContainerKind.SET if isinstance(node, cst.SetComp) else ContainerKind.LIST
        return self.container(kind, (value,))

    def lambda_(self, node: cst.Lambda) -> Expr:
        """A lambda is a scope of its own (``parent.<lambdaN>``) returning its body."""
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
        self.scopes.append(child)
        child.local_names.update(p.name for p in params)
        with self.within(self.frame.function(child)) as frame:
            value = self.expr(node.body)
            child.returns.append(value)
            self.emit(ReturnStep(self.loc(node.body), value))
        child.flow = tuple(frame.flow)
        return FunctionRefExpr(child.qualname)

    def call(self, node: cst.Call) -> Expr:
        func_node = node.func
        if isinstance(func_node, cst.Name):
            func: Expr = NameExpr(func_node.value, self.scope.reach.read(func_node.value))
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


def _path(node: cst.BaseExpression) -> str:
    """``a.b.c`` for a chain of names and attributes, else ``""``."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return ""
    parts.append(node.value)
    return ".".join(reversed(parts))


def _operands(node: cst.BooleanOperation) -> list[cst.BaseExpression]:
    """The operands of a chain of one operator: ``a and b and c`` is
    ``(a and b) and c`` to libcst; parenthesised parts stay whole."""
    op = type(node.operator)
    out: list[cst.BaseExpression] = []
    for side in (node.left, node.right):
        if isinstance(side, cst.BooleanOperation) and type(side.operator) is op and not side.lpar:
            out.extend(_operands(side))
        else:
            out.append(side)
    return out


def _item_name(node: cst.Subscript) -> tuple[str, str] | None:
    """``d["a"]`` on a bare name with a literal string or integer key: the
    (base, ``[key]``) pair ``flagtrace.versions`` follows in statement order.
    Keys are compared by value (``"a"`` is ``'a'``, ``0x1`` is ``1``); any
    other key (``1.0``, ``True``, a name) is none of these."""
    if not isinstance(node.value, cst.Name) or len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if not isinstance(index, cst.Index):
        return None
    key = index.value
    if isinstance(key, cst.SimpleString):
        value = key.evaluated_value
        return (node.value.value, f"[s:{value}]") if isinstance(value, str) else None
    if isinstance(key, cst.Integer):
        return node.value.value, f"[n:{key.evaluated_value}]"
    return None


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    """The bare names an assignment target binds (``a``, ``a, (b, *c)``)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _bound_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _bound_names(target.value)


def _expr_children(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    for child in node.children:
        if isinstance(child, cst.BaseExpression):
            yield child
        elif isinstance(child, (cst.FormattedStringExpression, cst.ComparisonTarget)):
            yield from _expr_children(child)
