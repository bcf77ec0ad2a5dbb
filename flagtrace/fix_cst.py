"""Shared pieces of the ``flagtrace fix`` rewrites: finding a flag's writes in a
function, and building statements that keep the comments and blank lines of
the ones they replace.

Every rewrite works on one function at a time and on *spellings* of the flag
(``X`` after ``global X``, or ``mod.X``), never on line numbers: after the first
repair of a function the reported lines no longer point anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

FT101 = "FT101"
FT102 = "FT102"

Statement = cst.BaseStatement
TryNode = cst.Try | cst.TryStar


class Refused(Exception):
    """The setter cannot be repaired safely; the message says why, in one sentence."""


Spelling = tuple[str, ...]  # ("X",) or ("mod", "X")


def dotted(node: cst.BaseExpression) -> Spelling | None:
    if isinstance(node, cst.Name):
        return (node.value,)
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else (*base, node.attr.value)
    return None


def _string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


class Writes(cst.CSTVisitor):
    """The writes of one spelling of the flag in one function (not in nested
    defs), the other ways the function writes it, and the shape facts the
    repair depends on (a ``yield`` inside a loop)."""

    def __init__(self, spelling: Spelling, root: cst.CSTNode) -> None:
        super().__init__()
        self.spelling = spelling
        self.root = root
        self.writes: list[tuple[cst.SimpleStatementLine, cst.BaseSmallStatement]] = []
        self.odd: list[str] = []
        self.yield_in_loop = False
        self._loops = 0
        self._line: cst.SimpleStatementLine | None = None

    @property
    def name(self) -> str:
        return ".".join(self.spelling)

    def _nested(self, node: cst.CSTNode) -> bool:
        return node is not self.root

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return not self._nested(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_For(self, node: cst.For) -> None:
        self._loops += 1
        if self._mentions(node.target):
            self.odd.append(f"{self.name} is the target of a `for` loop")

    def leave_For(self, original_node: cst.For) -> None:
        self._loops -= 1

    def visit_While(self, node: cst.While) -> None:
        self._loops += 1

    def leave_While(self, original_node: cst.While) -> None:
        self._loops -= 1

    def visit_Yield(self, node: cst.Yield) -> None:
        if self._loops:
            self.yield_in_loop = True

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def _mentions(self, target: cst.BaseExpression) -> bool:
        if dotted(target) == self.spelling:
            return True
        if isinstance(target, (cst.Tuple, cst.List)):
            return any(self._mentions(e.value) for e in target.elements)
        if isinstance(target, cst.StarredElement):
            return self._mentions(target.value)
        return False

    def _write(self, small: cst.BaseSmallStatement) -> None:
        assert self._line is not None
        self.writes.append((self._line, small))

    def visit_Assign(self, node: cst.Assign) -> None:
        hits = [t for t in node.targets if self._mentions(t.target)]
        if not hits:
            return
        if len(node.targets) == 1 and dotted(node.targets[0].target) == self.spelling:
            self._write(node)
        else:
            self.odd.append(f"{self.name} is assigned together with other names")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._mentions(node.target):
            if node.value is None:
                return  # a bare annotation writes nothing
            self._write(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._mentions(node.target):
            self.odd.append(f"{self.name} is changed by an augmented assignment")

    def visit_Del(self, node: cst.Del) -> None:
        if dotted(node.target) == self.spelling:
            self._write(node)
        elif self._mentions(node.target):
            self.odd.append(f"{self.name} is deleted together with other names")

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if self._mentions(node.target):
            self.odd.append(f"{self.name} is assigned by `:=`")

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None and self._mentions(node.asname.name):
            self.odd.append(f"{self.name} is the target of a `with ... as`")

    def visit_Call(self, node: cst.Call) -> None:
        if (
            isinstance(node.func, cst.Name)
            and node.func.value in ("setattr", "delattr")
            and len(node.args) >= 2
            and _string_value(node.args[1].value) == self.spelling[-1]
        ):
            self.odd.append(f"{self.spelling[-1]} is written through {node.func.value}()")


def writes(fn: cst.FunctionDef, spelling: Spelling) -> Writes:
    found = Writes(spelling, fn)
    fn.visit(found)
    return found


def set_and_reset(
    fn: cst.FunctionDef, spelling: Spelling
) -> tuple[list[tuple[cst.SimpleStatementLine, cst.BaseSmallStatement]], Writes]:
    found = writes(fn, spelling)
    if found.odd:
        raise Refused(found.odd[0])
    for line, _ in found.writes:
        if len(line.body) > 1:
            raise Refused(f"a write of {found.name} shares its line with other statements")
    return found.writes, found


def block(suite: cst.BaseSuite) -> Sequence[Statement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    return ()


def leading(stmt: Statement) -> Sequence[cst.EmptyLine]:
    if isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        return stmt.leading_lines
    return ()


def split_leading(
    lines: Sequence[cst.EmptyLine],
) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """Blank lines up to the first comment, and the comment lines from there:
    the blank lines stay outside a new ``try:`` / before ``finally:``, the comments
    stay with the statement they describe."""
    i = 0
    while i < len(lines) and lines[i].comment is None:
        i += 1
    return list(lines[:i]), list(lines[i:])


def statement(code: str, leading: Sequence[cst.EmptyLine] = ()) -> cst.SimpleStatementLine:
    stmt = cst.parse_statement(code)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt.with_changes(leading_lines=leading)


def restored(
    line: cst.SimpleStatementLine, small: cst.BaseSmallStatement, value: str
) -> cst.SimpleStatementLine:
    """The reset statement, writing ``value`` instead of its constant."""
    new_value = cst.parse_expression(value)
    if isinstance(small, (cst.Assign, cst.AnnAssign)):
        return line.with_changes(body=[small.with_changes(value=new_value)])
    assert isinstance(small, cst.Del) and isinstance(small.target, (cst.Name, cst.Attribute))
    assign = cst.Assign(targets=[cst.AssignTarget(target=small.target)], value=new_value)
    return line.with_changes(body=[assign])


def candidates(first: str, bare: str) -> list[str]:
    return [first, f"{first}_{bare}", *(f"{first}_{bare}_{i}" for i in range(2, 100))]


def names(node: cst.CSTNode) -> set[str]:
    used: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            used.add(node.value)

    node.visit(Names())
    return used
