"""The libcst rewrites behind ``flagtrace fix``: put a setter's reset in ``finally``
(FT101) and make it restore the saved previous value (FT102).

The analysis says *which* setter to repair (its qualname, the line of the set);
this module finds that function in the file and rewrites it, and nothing else:
libcst keeps every comment, blank line and byte it is not asked to change.

Why the rewrite is structural rather than driven by line numbers: one function
may set several flags, and each repair moves statements; after the first, the
reported lines no longer point anywhere. So lines are used once, on the
unchanged tree, to find the set statement and how it spells the flag (``X`` or
``mod.X``); from then on a setter is *the two writes of that spelling* in the
function: the set, then the reset. Anything else (a third write, a reset in a
callee, a write through ``setattr``, a ``yield`` in a loop, a ``return`` that
would now reset the flag) raises :class:`Refused` with a sentence saying why,
and the function is left exactly as it was: never half-fixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from flagtrace.fix_class import MayReenter, repair_class
from flagtrace.fix_cst import (
    FT101,
    FT102,
    Refused,
    Spelling,
    Statement,
    TryNode,
    block,
    candidates,
    dotted,
    leading,
    names,
    restored,
    set_and_reset,
    split_leading,
    statement,
)


@dataclass(frozen=True, slots=True)
class Repair:
    """One setter to repair, as the analysis reported it (plain data, no nodes)."""

    function: str  # qualname: ``pkg.flags.no_grad``, ``pkg.mode.GraphMode.__enter__``
    kind: str  # setter kind: contextmanager, asynccontextmanager, class, function, ...
    flag: str  # the flag's bare name
    set_line: int  # the line of the write that sets the flag
    codes: frozenset[str]  # what to repair: FT101 and/or FT102
    line: int = 0  # where to point a "not fixed" message (the first hazard's line)


@dataclass(frozen=True, slots=True)
class Outcome:
    repair: Repair
    refused: str | None = None  # None: repaired


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The new source (the old one when nothing was repaired) and one outcome per repair."""

    code: bytes
    outcomes: tuple[Outcome, ...]


# ------------------------------------------------------------------------------ entry point


def rewrite(source: bytes, repairs: Sequence[Repair], may_reenter: MayReenter) -> Rewritten:
    """Repair ``repairs`` (all in this file) and return the new source.

    ``may_reenter(class_name, enter_returns_self)`` answers whether one instance
    of a class-based manager can be entered again before it exits; then the saved values go on a
    stack, else in one attribute. Repairs that touch the same function (or the
    same class) succeed or fail together.
    """
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError as exc:
        reason = f"the file does not parse any more: {exc.message}"
        return Rewritten(source, tuple(Outcome(r, reason) for r in repairs))
    module = wrapper.module
    finder = _Definitions()
    wrapper.visit(finder)
    outcomes: list[Outcome] = []
    groups: dict[int, list[tuple[Repair, _Target]]] = {}
    for repair in repairs:
        try:
            target = _target(finder, repair)
        except Refused as exc:
            outcomes.append(Outcome(repair, str(exc)))
            continue
        groups.setdefault(id(target.unit), []).append((repair, target))
    nested = _nested_units([targets[0][1] for targets in groups.values()], finder)
    replaced: dict[int, cst.FunctionDef] = {}
    for key, members in groups.items():
        if key in nested:
            reason = "it is inside another setter repaired in this run; run flagtrace fix again"
            outcomes.extend(Outcome(r, reason) for r, _ in members)
            continue
        # the set that comes last first: an outer setter then wraps the inner one whole
        members.sort(key=lambda m: -m[0].set_line)
        current: dict[int, cst.FunctionDef] = {}
        try:
            for repair, target in members:
                several = len({r.flag for r, _ in members}) > 1
                _apply(repair, target, current, finder.spans, may_reenter, several)
        except Refused as exc:
            outcomes.extend(Outcome(r, str(exc)) for r, _ in members)
            continue
        replaced.update(current)
        outcomes.extend(Outcome(r) for r, _ in members)
    if not replaced:
        return Rewritten(source, tuple(outcomes))
    new = module.visit(_Replace(replaced))
    return Rewritten(new.bytes, tuple(outcomes))


# ------------------------------------------------------------------------------ locating


@dataclass(frozen=True, slots=True)
class _Def:
    local: str  # qualname inside the module, as flagtrace builds it (``C.f``, ``f#2``)
    node: cst.FunctionDef | cst.ClassDef
    start: int
    end: int
    parent: cst.ClassDef | cst.FunctionDef | None


class _Definitions(cst.CSTVisitor):
    """Every def and class with flagtrace's module-local qualname and its lines,
    and the line span of every simple statement (to find the set by its line)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.defs: list[_Def] = []
        self.spans: dict[int, tuple[int, int]] = {}  # id(statement line) -> first, last line
        self._stack: list[tuple[str, dict[str, int], cst.ClassDef | cst.FunctionDef | None]] = [
            ("", {}, None)
        ]

    def _enter(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        prefix, counts, parent = self._stack[-1]
        name = node.name.value
        counts[name] = counts.get(name, 0) + 1
        local = f"{prefix}.{name}" if prefix else name
        if counts[name] > 1:
            local = f"{local}#{counts[name]}"
        pos = self.get_metadata(PositionProvider, node)
        self.defs.append(_Def(local, node, pos.start.line, pos.end.line, parent))
        self._stack.append((local, {}, node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        pos = self.get_metadata(PositionProvider, node)
        self.spans[id(node)] = (pos.start.line, pos.end.line)


@dataclass(frozen=True, slots=True)
class _Target:
    unit: cst.FunctionDef | cst.ClassDef  # what succeeds or fails as a whole
    setter: cst.FunctionDef  # the function that sets the flag
    reset: cst.FunctionDef  # the function that resets it (``__exit__`` for a class)
    is_class: bool


def _target(finder: _Definitions, repair: Repair) -> _Target:
    candidates = [
        d
        for d in finder.defs
        if isinstance(d.node, cst.FunctionDef)
        and (repair.function == d.local or repair.function.endswith("." + d.local))
        and d.start <= repair.set_line <= d.end
    ]
    if not candidates:
        raise Refused(f"no function {repair.function} around line {repair.set_line} any more")
    found = max(candidates, key=lambda d: len(d.local))
    fn = found.node
    assert isinstance(fn, cst.FunctionDef)
    if repair.kind in ("contextmanager", "asynccontextmanager", "function"):
        return _Target(fn, fn, fn, False)
    if repair.kind != "class":
        raise Refused(f"a {repair.kind} setter has no set and reset of its own to repair")
    cls = found.parent
    if not isinstance(cls, cst.ClassDef):
        raise Refused(f"{fn.name.value} is not a method of a class")
    exit_name = "__aexit__" if fn.name.value == "__aenter__" else "__exit__"
    exits = [
        s for s in block(cls.body) if isinstance(s, cst.FunctionDef) and s.name.value == exit_name
    ]
    if not exits:
        raise Refused(f"{exit_name} is not defined in the class itself (inherited?)")
    return _Target(cls, fn, exits[-1], True)


def _nested_units(targets: Sequence[_Target], finder: _Definitions) -> set[int]:
    """Units with a function inside a function another unit rewrites: the outer
    rewrite is built from the unchanged inner one, and would drop its edits. (A
    plain method of a class whose ``__enter__`` is repaired is not nested: only
    ``__enter__`` and ``__exit__`` are replaced.)"""
    spans = {id(d.node): (d.start, d.end) for d in finder.defs}
    out: set[int] = set()
    for inner in targets:
        for outer in targets:
            if outer is inner:
                continue
            for a in {spans[id(inner.setter)], spans[id(inner.reset)]}:
                for b in {spans[id(outer.setter)], spans[id(outer.reset)]}:
                    if b[0] <= a[0] and a[1] <= b[1] and a != b:
                        out.add(id(inner.unit))
    return out


class _Replace(cst.CSTTransformer):
    """Swap whole functions for their repaired versions; everything else is untouched."""

    def __init__(self, replaced: dict[int, cst.FunctionDef]) -> None:
        super().__init__()
        self.replaced = replaced

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        return self.replaced.get(id(original_node), updated_node)


def _spelling(fn: cst.FunctionDef, repair: Repair, spans: dict[int, tuple[int, int]]) -> Spelling:
    """How the function spells the flag, read off the statement on the set line."""
    lines = [
        s
        for s in _all_lines(fn)
        if id(s) in spans and spans[id(s)][0] <= repair.set_line <= spans[id(s)][1]
    ]
    if not lines:
        raise Refused(f"the set of {repair.flag} at line {repair.set_line} is not a statement")
    line = lines[-1]
    for small in line.body:
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            targets = (
                [t.target for t in small.targets]
                if isinstance(small, cst.Assign)
                else [small.target]
            )
            for t in targets:
                spelt = dotted(t)
                if spelt is not None and spelt[-1] == repair.flag:
                    return spelt
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Name) and func.value == "setattr":
                raise Refused(f"{repair.flag} is written through setattr()")
    raise Refused(f"line {repair.set_line} does not assign {repair.flag} directly")


def _all_lines(fn: cst.FunctionDef) -> list[cst.SimpleStatementLine]:
    out: list[cst.SimpleStatementLine] = []

    class Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            out.append(node)

    fn.visit(Lines())
    return out


# ------------------------------------------------------------------------------ applying


def _apply(
    repair: Repair,
    target: _Target,
    current: dict[int, cst.FunctionDef],
    spans: dict[int, tuple[int, int]],
    may_reenter: MayReenter,
    several: bool,
) -> None:
    """Repair one (setter, flag) on the current versions of the target's functions."""
    setter = current.get(id(target.setter), target.setter)
    # lines are only meaningful on the unchanged tree: read the spelling there
    spelling = _spelling(target.setter, repair, spans)
    if not target.is_class:
        current[id(target.setter)] = _repair_function(setter, spelling, repair.codes, several)
        return
    assert isinstance(target.unit, cst.ClassDef)
    exit_fn = current.get(id(target.reset), target.reset)
    new_enter, new_exit = repair_class(
        target.unit, setter, exit_fn, spelling, repair.codes, may_reenter
    )
    current[id(target.setter)] = new_enter
    current[id(target.reset)] = new_exit


def _containing_block(fn: cst.FunctionDef, stmt: Statement) -> cst.IndentedBlock:
    found: list[cst.IndentedBlock] = []

    class Finder(cst.CSTVisitor):
        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            if any(s is stmt for s in node.body):
                found.append(node)

    fn.visit(Finder())
    if not found:
        raise Refused("a write of the flag is on one line with its `if`/`try`/`def`")
    return found[0]


class _SwapBlock(cst.CSTTransformer):
    def __init__(self, old: cst.IndentedBlock, new: cst.IndentedBlock) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return self.new if original_node is self.old else updated_node


def _replace_block(
    fn: cst.FunctionDef, old: cst.IndentedBlock, body: Sequence[Statement]
) -> cst.FunctionDef:
    new = fn.visit(_SwapBlock(old, old.with_changes(body=body)))
    assert isinstance(new, cst.FunctionDef)
    return new


@dataclass(frozen=True, slots=True)
class _ResetAt:
    """Where the reset is, relative to the block holding the set."""

    index: int  # in the block: the reset itself, or the ``try`` holding it
    clause: str = ""  # "" (in the block), "finally" or "body" of that ``try``
    inner: int = 0  # its index in that clause


def _find_reset(body: Sequence[Statement], s: int, reset: Statement, flag: str) -> _ResetAt:
    for i, stmt in enumerate(body):
        if stmt is reset:
            if i < s:
                raise Refused(f"{flag} is reset before it is set")
            return _ResetAt(i)
        if isinstance(stmt, (cst.Try, cst.TryStar)) and i > s:
            if stmt.finalbody is not None:
                for j, inner in enumerate(block(stmt.finalbody.body)):
                    if inner is reset:
                        return _ResetAt(i, "finally", j)
            for j, inner in enumerate(block(stmt.body)):
                if inner is reset:
                    return _ResetAt(i, "body", j)
    raise Refused(
        f"the reset of {flag} is not in the block of its set (conditional, or in a clause "
        "the fix cannot move)"
    )


def _repair_function(
    fn: cst.FunctionDef, spelling: Spelling, codes: frozenset[str], several: bool
) -> cst.FunctionDef:
    """FT101 and FT102 in a generator context manager or a plain function."""
    writes, found = set_and_reset(fn, spelling)
    name = found.name
    if len(writes) < 2:
        raise Refused(f"{name} is set here but reset elsewhere (in a callee?)")
    if len(writes) > 2:
        raise Refused(f"{name} is written {len(writes)} times; the fix handles one set, one reset")
    if found.yield_in_loop:
        raise Refused("it yields inside a loop: an iterator, not a context manager")
    (set_line, _), (reset_line, reset_small) = writes
    holder = _containing_block(fn, set_line)
    body = list(holder.body)
    s = next(i for i, stmt in enumerate(body) if stmt is set_line)
    prev = _free_name(fn, spelling, several) if FT102 in codes else None
    try:
        where = _find_reset(body, s, reset_line, name)
    except Refused:
        enclosing = _enclosing_try(fn, holder, reset_line)
        if enclosing is None:
            raise
        return _restore_around_try(fn, enclosing, reset_line, reset_small, name, prev, codes)
    new_reset = restored(reset_line, reset_small, prev) if prev else reset_line
    head: list[Statement] = list(body[:s])
    if prev is not None:
        head.append(statement(f"{prev} = {name}", set_line.leading_lines))
        head.append(set_line.with_changes(leading_lines=()))
    else:
        head.append(set_line)
    tail = list(body[where.index + 1 :])
    if not where.clause:
        region = list(body[s + 1 : where.index])
        if FT101 in codes:
            _no_escape(region, name)
            region = _protect(region, new_reset, name)
        else:
            region.append(new_reset)
        return _replace_block(fn, holder, head + region + tail)
    t = body[where.index]
    assert isinstance(t, (cst.Try, cst.TryStar))
    mid = list(body[s + 1 : where.index])
    t = _replace_in_clause(t, where, new_reset)
    if FT101 in codes:
        if where.clause == "finally":
            middle = _extend_finally_try(t, mid, where.inner, name)
        else:
            middle = _move_reset_from_body(t, mid, where.inner, name)
    else:
        middle = [*mid, t]
    return _replace_block(fn, holder, head + middle + tail)


def _enclosing_try(
    fn: cst.FunctionDef, holder: cst.IndentedBlock, reset: Statement
) -> tuple[cst.IndentedBlock, int] | None:
    """The block and index of the ``try`` whose body is ``holder`` and whose
    ``finally`` holds ``reset`` (``try: X = True; yield finally: X = False``)."""
    found: list[tuple[cst.IndentedBlock, int]] = []

    class Finder(cst.CSTVisitor):
        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            for i, stmt in enumerate(node.body):
                if (
                    isinstance(stmt, (cst.Try, cst.TryStar))
                    and stmt.body is holder
                    and stmt.finalbody is not None
                    and any(r is reset for r in block(stmt.finalbody.body))
                ):
                    found.append((node, i))

    fn.visit(Finder())
    return found[0] if found else None


def _restore_around_try(
    fn: cst.FunctionDef,
    enclosing: tuple[cst.IndentedBlock, int],
    reset_line: cst.SimpleStatementLine,
    reset_small: cst.BaseSmallStatement,
    name: str,
    prev: str | None,
    codes: frozenset[str],
) -> cst.FunctionDef:
    """The set is inside the ``try`` whose ``finally`` resets: the reset already
    runs on every exit, so only FT102 is left. The previous value is saved before
    that ``try``, so the ``finally`` never reads an unbound name even when the body
    raises before the set."""
    if FT101 in codes or prev is None:
        raise Refused(
            f"the set of {name} is inside a `try` whose `finally` resets it; the fix has "
            "nothing to move"
        )
    outer, index = enclosing
    t = outer.body[index]
    assert isinstance(t, (cst.Try, cst.TryStar)) and t.finalbody is not None
    final = [
        restored(reset_line, reset_small, prev) if r is reset_line else r
        for r in block(t.finalbody.body)
    ]
    suite = t.finalbody.body.with_changes(body=final)
    new_t = t.with_changes(finalbody=t.finalbody.with_changes(body=suite), leading_lines=())
    body = list(outer.body)
    body[index : index + 1] = [statement(f"{prev} = {name}", t.leading_lines), new_t]
    return _replace_block(fn, outer, body)


def _protect(region: list[Statement], reset: Statement, flag: str) -> list[Statement]:
    """``region; reset`` -> ``try: region finally: reset``, extending a ``try`` that
    ends the region instead of nesting it in a new one."""
    if not region:
        raise Refused(f"nothing runs between the set and the reset of {flag}")
    *mid, last = region
    if isinstance(last, (cst.Try, cst.TryStar)) and _is_block_try(last):
        if not mid:
            return [_add_to_finally(last, reset, at_start=False)]
        if not last.handlers:
            return [_add_to_finally(_prepend(last, mid), reset, at_start=False)]
    return [_wrap(region, reset)]


def _extend_finally_try(t: TryNode, mid: list[Statement], inner: int, flag: str) -> list[Statement]:
    """The reset is already in the ``finally`` of a ``try`` after the set: what
    leaks are the calls in between; they move into that ``try``."""
    if not mid:
        raise Refused(f"the reset of {flag} is already in finally right after the set")
    _no_escape(mid, flag)
    if not _is_block_try(t):
        raise Refused("the `try` is written on one line")
    if not t.handlers:
        return [_prepend(t, mid)]
    # with `except` clauses the calls cannot join that `try` (they would be caught
    # there): an outer try/finally takes the reset, if it was the last to run anyway
    assert t.finalbody is not None
    final = list(block(t.finalbody.body))
    if inner != len(final) - 1:
        raise Refused(
            f"the reset of {flag} is not the last statement of a `finally` whose `try` has "
            "`except` clauses"
        )
    reset = final.pop()
    inner_try = t.with_changes(
        finalbody=t.finalbody.with_changes(body=t.finalbody.body.with_changes(body=final))
        if final
        else None
    )
    return [_wrap([*mid, inner_try], reset)]


def _move_reset_from_body(
    t: TryNode, mid: list[Statement], inner: int, flag: str
) -> list[Statement]:
    """The reset ends the body of a ``try`` after the set: it moves to the start of
    that ``try``'s ``finally``, so it still runs before the old ``finally`` code."""
    body = list(block(t.body))
    if inner != len(body) - 1:
        raise Refused(f"statements follow the reset of {flag} inside its `try`")
    if t.orelse is not None:
        raise Refused(f"the `try` has an `else` clause that runs after the reset of {flag}")
    if len(body) == 1:
        raise Refused(f"the reset of {flag} is alone in its `try`")
    if not _is_block_try(t):
        raise Refused("the `try` is written on one line")
    _no_escape([*mid, t], flag)
    reset = body.pop()
    rest = t.with_changes(body=t.body.with_changes(body=body))
    if not mid or not t.handlers:
        out = _add_to_finally(rest, reset, at_start=True)
        return [_prepend(out, mid) if mid else out]
    if t.finalbody is None:
        return [_wrap([*mid, rest], reset)]
    raise Refused(
        f"calls run between the set of {flag} and a `try` with both `except` and `finally`"
    )


def _replace_in_clause(t: TryNode, where: _ResetAt, reset: Statement) -> TryNode:
    if where.clause == "finally":
        assert t.finalbody is not None
        final = list(block(t.finalbody.body))
        final[where.inner] = reset
        suite = t.finalbody.body.with_changes(body=final)
        return t.with_changes(finalbody=t.finalbody.with_changes(body=suite))
    body = list(block(t.body))
    body[where.inner] = reset
    return t.with_changes(body=t.body.with_changes(body=body))


def _is_block_try(t: TryNode) -> bool:
    suites = [t.body, *(h.body for h in t.handlers)]
    if t.orelse is not None:
        suites.append(t.orelse.body)
    if t.finalbody is not None:
        suites.append(t.finalbody.body)
    return all(isinstance(s, cst.IndentedBlock) for s in suites)


# ------------------------------------------------------------------------------ building blocks


def _finally(reset: Statement) -> cst.Finally:
    blank, rest = split_leading(leading(reset))
    return cst.Finally(
        body=cst.IndentedBlock(body=[reset.with_changes(leading_lines=rest)]),
        leading_lines=blank,
    )


def _wrap(region: list[Statement], reset: Statement) -> cst.Try:
    first, *others = region
    blank, rest = split_leading(leading(first))
    return cst.Try(
        body=cst.IndentedBlock(body=[first.with_changes(leading_lines=rest), *others]),
        finalbody=_finally(reset),
        leading_lines=blank,
    )


def _add_to_finally(t: TryNode, reset: Statement, *, at_start: bool) -> TryNode:
    if t.finalbody is None:
        return t.with_changes(finalbody=_finally(reset))
    final = list(block(t.finalbody.body))
    final = [reset, *final] if at_start else [*final, reset]
    suite = t.finalbody.body.with_changes(body=final)
    return t.with_changes(finalbody=t.finalbody.with_changes(body=suite))


def _prepend(t: TryNode, mid: list[Statement]) -> TryNode:
    """Move ``mid`` (the statements just before ``t``) to the start of its body;
    ``t``'s own leading comments go with what was its first statement."""
    body = list(block(t.body))
    first, *others = mid
    blank, rest = split_leading(leading(first))
    old_first = body[0].with_changes(leading_lines=[*t.leading_lines, *leading(body[0])])
    new_body = [first.with_changes(leading_lines=rest), *others, old_first, *body[1:]]
    return t.with_changes(leading_lines=blank, body=t.body.with_changes(body=new_body))


def _free_name(fn: cst.FunctionDef, spelling: Spelling, several: bool) -> str:
    """``prev``, or ``prev_<flag>``..., whichever no name in the function uses;
    ``prev_<flag>`` first when the function sets several flags."""
    used = names(fn)
    bare = spelling[-1].lstrip("_") or "flag"
    for candidate in candidates("prev", bare)[1 if several else 0 :]:
        if candidate not in used:
            return candidate
    raise AssertionError("unreachable: the candidates never run out")


class _Escapes(cst.CSTVisitor):
    """A ``return``, or a ``break``/``continue`` leaving the statements visited."""

    def __init__(self) -> None:
        super().__init__()
        self.loops = 0
        self.found: str | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_For(self, node: cst.For) -> bool:
        self._loop_body(node.body, node.orelse)
        return False

    def visit_While(self, node: cst.While) -> bool:
        self._loop_body(node.body, node.orelse)
        return False

    def _loop_body(self, body: cst.BaseSuite, orelse: cst.Else | None) -> None:
        self.loops += 1
        body.visit(self)
        self.loops -= 1
        if orelse is not None:
            orelse.visit(self)

    def visit_Return(self, node: cst.Return) -> None:
        self.found = self.found or "return"

    def visit_Break(self, node: cst.Break) -> None:
        if not self.loops:
            self.found = self.found or "break"

    def visit_Continue(self, node: cst.Continue) -> None:
        if not self.loops:
            self.found = self.found or "continue"


def _no_escape(statements: Sequence[Statement], flag: str) -> None:
    """A ``return`` (or ``break``/``continue``) between the set and the reset leaves
    the flag set on that path today; inside ``try`` it would reset it: a change on
    a path where nothing raises, which is not the fix's to make."""
    v = _Escapes()
    for s in statements:
        s.visit(v)
    if v.found:
        raise Refused(
            f"a `{v.found}` between the set and the reset leaves {flag} set on purpose or by "
            "mistake; in `try` it would reset it"
        )
