"""Class-based managers for ``flagtrace fix``: FT102 in ``__enter__``/``__exit__``,
and whether one instance of a class can be entered twice.

The previous value is saved on the instance in ``__enter__`` and restored in
``__exit__``. Whether that is one attribute or a stack depends on the callers:
``with Mode():`` creates a fresh instance per entry, but ``cm = Mode(); with cm:
... with cm:`` enters one instance twice, and one attribute would then be
overwritten by the inner entry, so the outer exit would restore the wrong
value: the very bug FT102 is about. :class:`ClassUses` looks at every use of
the class's name in the analysed files and allows one attribute only when
each use is a fresh instance entered right away.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

import libcst as cst

from flagtrace.fix_cst import (
    FT101,
    Refused,
    Spelling,
    block,
    candidates,
    dotted,
    names,
    restored,
    set_and_reset,
    statement,
)

#: ``may_reenter(class_name, enter_returns_self)``: can one instance be entered
#: again before it exits? (:meth:`ClassUses.may_reenter`)
MayReenter = Callable[[str, bool], bool]


def repair_class(
    cls: cst.ClassDef,
    enter: cst.FunctionDef,
    exit_: cst.FunctionDef,
    spelling: Spelling,
    codes: frozenset[str],
    may_reenter: MayReenter,
) -> tuple[cst.FunctionDef, cst.FunctionDef]:
    """FT102 in a class-based manager: ``__enter__`` saves the previous value on the
    instance, ``__exit__`` restores it. One attribute when each instance is entered
    once at a time; a stack when one instance may be entered again before it
    exits (``cm = C(); with cm: ... with cm:``), where one attribute would be
    overwritten by the inner entry and the outer exit would restore the wrong
    value: the very bug FT102 is about."""
    name = ".".join(spelling)
    if FT101 in codes:
        raise Refused(
            f"{exit_.name.value} already runs when the body raises; an exception-leak in a "
            "class comes from __enter__ itself, which the fix does not restructure"
        )
    if _has_slots(cls):
        raise Refused("the class defines __slots__: the fix cannot add an attribute to save into")
    if _frozen_dataclass(cls):
        raise Refused("the class is a frozen dataclass: the fix cannot save into the instance")
    enter_writes, _ = set_and_reset(enter, spelling)
    exit_writes, _ = set_and_reset(exit_, spelling)
    if len(enter_writes) != 1:
        raise Refused(f"{enter.name.value} writes {name} {len(enter_writes)} times")
    if len(exit_writes) != 1:
        raise Refused(f"{exit_.name.value} writes {name} {len(exit_writes)} times")
    set_line, _ = enter_writes[0]
    reset_line, reset_small = exit_writes[0]
    if not any(s is set_line for s in block(enter.body)):
        raise Refused(f"the set of {name} in {enter.name.value} is conditional")
    if not _unconditional(exit_, reset_line):
        raise Refused(f"the reset of {name} in {exit_.name.value} is conditional")
    me_enter, me_exit = _first_param(enter), _first_param(exit_)
    if me_enter is None or me_exit is None:
        raise Refused("__enter__ or __exit__ takes no `self`")
    used = names(cls) | _attributes(cls)
    bare = spelling[-1].lstrip("_") or "flag"
    stack = may_reenter(cls.name.value, _returns_self(enter, me_enter)) or _enters_itself(cls)
    suffix = "_stack" if stack else ""
    options = [f"{c}{suffix}" for c in candidates("_prev", bare)[1:]]
    attr = next(n for n in options if n not in used)
    if stack:
        save = f'{me_enter}.__dict__.setdefault("{attr}", []).append({name})'
        restore = f"{me_exit}.{attr}.pop()"
    else:
        save = f"{me_enter}.{attr} = {name}"
        restore = f"{me_exit}.{attr}"
    body = list(block(enter.body))
    s = next(i for i, stmt in enumerate(body) if stmt is set_line)
    body[s : s + 1] = [
        statement(save, set_line.leading_lines),
        set_line.with_changes(leading_lines=()),
    ]
    new_enter = enter.with_changes(body=enter.body.with_changes(body=body))
    new_exit = exit_.visit(_SwapLine(reset_line, restored(reset_line, reset_small, restore)))
    assert isinstance(new_exit, cst.FunctionDef)
    return new_enter, new_exit


class _SwapLine(cst.CSTTransformer):
    def __init__(self, old: cst.SimpleStatementLine, new: cst.SimpleStatementLine) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        return self.new if original_node is self.old else updated_node


def _unconditional(fn: cst.FunctionDef, line: cst.SimpleStatementLine) -> bool:
    """In the function's own block, or in the ``finally`` of a ``try`` there."""
    for stmt in block(fn.body):
        if stmt is line:
            return True
        if isinstance(stmt, (cst.Try, cst.TryStar)) and stmt.finalbody is not None:
            if any(s is line for s in block(stmt.finalbody.body)):
                return True
    return False


def _first_param(fn: cst.FunctionDef) -> str | None:
    params = [*fn.params.posonly_params, *fn.params.params]
    return params[0].name.value if params else None


def _attributes(node: cst.CSTNode) -> set[str]:
    out: set[str] = set()

    class Attributes(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            out.add(node.attr.value)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            value = node.evaluated_value
            if isinstance(value, str) and value.isidentifier():
                out.add(value)  # getattr(self, "_prev_x"), __slots__ entries

    node.visit(Attributes())
    return out


def _has_slots(cls: cst.ClassDef) -> bool:
    for stmt in block(cls.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets: list[cst.BaseExpression] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                if any(dotted(t) == ("__slots__",) for t in targets):
                    return True
    return any(
        re.search(r"\bslots\s*=\s*True", _code(d.decorator)) is not None for d in cls.decorators
    )


def _frozen_dataclass(cls: cst.ClassDef) -> bool:
    return any(
        re.search(r"\bfrozen\s*=\s*True", _code(d.decorator)) is not None for d in cls.decorators
    )


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _enters_itself(cls: cst.ClassDef) -> bool:
    """``with self:`` in one of the class's own methods."""
    found: list[bool] = []

    class Items(cst.CSTVisitor):
        def visit_WithItem(self, node: cst.WithItem) -> None:
            if isinstance(node.item, cst.Name) and node.item.value == "self":
                found.append(True)

    cls.visit(Items())
    return bool(found)


def _returns_self(enter: cst.FunctionDef, me: str) -> bool:
    """Does ``__enter__`` return the instance (``with C() as c`` then names it)?"""
    found: list[bool] = []

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is enter

        def visit_Return(self, node: cst.Return) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == me:
                found.append(True)

    enter.visit(Returns())
    return bool(found)


class ClassUses:
    """Whether one instance of a class may be entered twice, judged from every
    use of the class's name in the analysed files.

    One attribute is enough only when every use is ``with C(...):`` (or ``async
    with``, or ``with C(...) as c:`` when ``__enter__`` does not return the
    instance): a fresh instance entered at once and never seen again. Anything
    else (``cm = C()``, ``C`` passed along, subclassed, in an annotation, imported
    under another name, a file that cannot be parsed) may let one instance be
    entered twice, so the saved values go on a stack. This is a conservative
    reading of the names, not of the call graph; the cost of a wrong "may" is a
    list where one attribute would do, never a wrong restore.

    Files are read with :mod:`ast` (CPython's own parser refuses what is too deep
    instead of crashing, and runs nothing), and only those that mention the name.
    """

    def __init__(self, sources: Callable[[], Iterable[bytes]]) -> None:
        self._sources = sources
        self._memo: dict[tuple[str, bool], bool] = {}

    def may_reenter(self, name: str, enter_returns_self: bool) -> bool:
        key = (name, enter_returns_self)
        if key not in self._memo:
            self._memo[key] = self._scan(name, enter_returns_self)
        return self._memo[key]

    def _scan(self, name: str, returns_self: bool) -> bool:
        pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        for source in self._sources():
            if pattern.search(source) is None:
                continue
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return True
            if _reused_in(tree, name, returns_self):
                return True
        return False


def _reused_in(tree: ast.AST, name: str, returns_self: bool) -> bool:
    fresh: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if not isinstance(call, ast.Call) or (returns_self and item.optional_vars):
                    continue
                fresh.add(id(call.func))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported = alias.name.rpartition(".")[2]
                if imported == name and alias.asname not in (None, name):
                    return True  # known under another name from here on
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and id(node) not in fresh:
            return True
        if isinstance(node, ast.Attribute) and node.attr == name and id(node) not in fresh:
            return True
    return False
