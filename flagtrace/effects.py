"""Effects: what the analysed code does to one flag.

Finds the flag's definition, every write (``global X; X = v``, ``mod.X = v``,
``setattr(mod, "X", v)``, ``del X``), every read (``X``, ``mod.X``), the
*accessors* (functions that just return the flag or a simple expression of it;
calling one is a read), and the *setters*: context managers, class-based
context managers, plain setter functions and decorators that run the wrapped
function inside a setter.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from flagtrace.callgraph import CallGraph
from flagtrace.model import (
    AttrExpr,
    CallExpr,
    CallKind,
    CallStep,
    ConstExpr,
    ContainerExpr,
    DecoratorKind,
    Location,
    NameExpr,
    OpaqueExpr,
    ReadStep,
    ReturnStep,
    Scope,
    ScopeKind,
    WithBlock,
    WriteStep,
    walk,
)
from flagtrace.model import SetterKind as SetterKind  # defined there since findings name it
from flagtrace.resolve import Program


class FlagLookupError(Exception):
    """``--flag`` names nothing, or names several module globals."""


class ValueKind(enum.Enum):
    TRUE = "True"
    FALSE = "False"
    NONE = "None"
    CONSTANT = "constant"
    RESTORE = "restore"
    PARAMETER = "parameter"  # set_flag(v): the value comes from the caller
    UNKNOWN = "unknown"
    DELETE = "del"
    #: a write by a function ``--set-by`` leaves out: it replaces the value asked about
    OTHER = "other"
    #: the literal the flag starts with, written back (``count = 0`` for ``count = 0``):
    #: a reset, whatever that literal is
    INITIAL = "initial"


@dataclass(frozen=True, slots=True)
class Flag:
    module: str
    name: str
    location: Location
    initial: str  # source text of the module-level value

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def initial_kind(self) -> ValueKind:
        return classify_const(self.initial)


@dataclass(frozen=True, slots=True)
class Write:
    function: str
    location: Location
    kind: ValueKind
    text: str
    param: str | None = None  # for PARAMETER writes


@dataclass(frozen=True, slots=True)
class Setter:
    function: str
    kind: SetterKind
    value: ValueKind
    location: Location  # the write that sets the flag
    writes: tuple[Write, ...]


@dataclass(frozen=True, slots=True)
class Reader:
    function: str
    location: Location
    via: str | None  # the accessor, or None for a direct read


def classify_const(text: str, initial: str | None = None) -> ValueKind:
    """The kind of the literal ``text``; ``INITIAL`` when it is the flag's own
    ``initial`` literal (``0``, ``""``, ``"eager"``), which only ``True``,
    ``False`` and ``None`` already said.

    Why: a counter or a mode string starts at a literal that a reset writes back
    (torch's ``inductor.metrics.reset()`` writes ``0`` to a dozen counters that
    start at ``0``); another constant may differ from it, that one cannot. Both
    must be plain literals (an f-string's text is not its value) of one type and
    one value: ``''`` for ``""`` matches, ``0.0`` for ``0`` does not."""
    if text == "True":
        return ValueKind.TRUE
    if text == "False":
        return ValueKind.FALSE
    if text == "None":
        return ValueKind.NONE
    if initial is not None and _same_literal(text, initial):
        return ValueKind.INITIAL
    return ValueKind.CONSTANT


_NOT_A_LITERAL = object()


def _same_literal(text: str, other: str) -> bool:
    """Are ``text`` and ``other`` plain literals of one type and value?"""
    if text == other:
        return _literal(text) is not _NOT_A_LITERAL
    a, b = _literal(text), _literal(other)
    return a is not _NOT_A_LITERAL and type(a) is type(b) and a == b


@lru_cache(maxsize=4096)
def _literal(text: str) -> object:
    """The value of the literal ``text`` (a number, a string that is not an
    f-string), else ``_NOT_A_LITERAL``. ``ast.literal_eval`` parses, never runs,
    what it is given; memoised, since the interpreter asks again for a setter's
    constant argument each time it passes the call (the values are only compared)."""
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_A_LITERAL


# --------------------------------------------------------------------------- lookup


def find_flags(program: Program, spec: str) -> Flag:
    """The module global ``spec`` names (bare or qualified)."""
    candidates: list[Flag] = []
    all_names: list[str] = []
    for module, summary in program.modules.items():
        top = summary.module_scope
        seen: set[str] = set()
        for a in top.assignments:
            name = a.target.name
            if name is None or name in seen:
                continue
            if isinstance(a.value, CallExpr) and top.calls[a.value.site].kind is CallKind.DECORATOR:
                continue
            seen.add(name)
            all_names.append(f"{module}.{name}")
            if spec == name or spec == f"{module}.{name}":
                text = a.text if isinstance(a.value, ConstExpr) else (a.text or "<expression>")
                candidates.append(Flag(module, name, a.location, text))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        pool = all_names + sorted({n.rpartition(".")[2] for n in all_names})
        close = difflib.get_close_matches(spec, pool, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise FlagLookupError(f"no module-level variable named {spec!r} in the analysed code{hint}")
    names = ", ".join(sorted(c.qualname for c in candidates))
    raise FlagLookupError(
        f"{spec!r} is defined in several modules ({names}); pass the qualified name"
    )


# --------------------------------------------------------------------------- walking flows


# --------------------------------------------------------------------------- effects


@dataclass(frozen=True, slots=True)
class SharedIndex:
    """What every flag's ``FlagEffects`` would otherwise find by walking the whole
    program again: computed once by ``shared_index`` when many flags are analysed
    (``flagtrace scan``), which on SGLang turns ~0.7 s per flag into milliseconds.

    ``steps``: every ``ReadStep`` and ``WriteStep`` of a scope (classes left out),
    by name, in program order; ``forwarders``: functions that only return a call
    (candidates for accessors of accessors)."""

    steps: dict[str, list[tuple[str, ReadStep | WriteStep]]]
    forwarders: tuple[str, ...]


def shared_index(program: Program) -> SharedIndex:
    """One walk over every scope; see ``SharedIndex``."""
    steps: dict[str, list[tuple[str, ReadStep | WriteStep]]] = {}
    forwarders: list[str] = []
    for qn, scope in program.scopes.items():
        if scope.kind is ScopeKind.CLASS:
            continue
        if scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA) and _returns_only_call(scope):
            forwarders.append(qn)
        for step in walk(scope.flow):
            if isinstance(step, (ReadStep, WriteStep)):
                steps.setdefault(step.name, []).append((qn, step))
    return SharedIndex(steps, tuple(forwarders))


class FlagEffects:
    """Writes, reads, accessors and setters of one flag across the program."""

    def __init__(
        self,
        graph: CallGraph,
        flag: Flag,
        shared: SharedIndex | None = None,
        set_by: frozenset[str] = frozenset(),
    ) -> None:
        self.graph = graph
        #: only these functions' writes set the flag (``flagtrace.setby``; empty: all)
        self.set_by = set_by
        self.p = graph.program
        self.flag = flag
        self.writes: dict[str, list[Write]] = {}
        self.direct_reads: dict[str, list[ReadStep]] = {}
        self._write_step_kind: dict[int, Write] = {}
        self._alias_memo: dict[tuple[str, str], bool] = {}
        self._shared = shared
        self._saved_memo: dict[str, set[str]] = {}
        self._accessor_memo: dict[tuple[str, int], tuple[str, ...]] = {}
        self._find_writes_and_reads()
        self.accessors: set[str] = self._find_accessors()
        self.setters: dict[str, Setter] = self._find_setters()

    # -- per-step questions the interpreter asks

    def saved_in(self, scope: Scope) -> set[str]:
        """What holds the flag's saved value in ``scope``: local names, and the
        source text of ``self.<attr>`` / ``<stack>.pop()`` restores."""
        memo = self._saved_memo.get(scope.qualname)
        if memo is None:
            memo = _saved_names(scope, self.flag.name) | _saved_slots(self.p, scope, self.flag.name)
            self._saved_memo[scope.qualname] = memo
        return memo

    def is_flag_read(self, scope: Scope, step: ReadStep) -> bool:
        if step.name != self.flag.name:
            return False
        if step.base is None:
            return self.p.module_of.get(scope.qualname) == self.flag.module
        return self._alias_is_flag_module(scope.qualname, step.base)

    def counts_call(self, caller: str, setter: str) -> bool:
        """Does ``caller``'s call of the parameterised ``setter`` write a value asked
        about (always, unless ``set_by`` names other setters)?"""
        return not self.set_by or caller in self.set_by or setter in self.set_by

    def write_of(self, step: WriteStep) -> Write | None:
        return self._write_step_kind.get(id(step))

    def accessor_callees(self, scope: Scope, site: int) -> tuple[str, ...]:
        """The accessors (``is_on()``) a call site may call; memoised, as the
        interpreter asks at every run of the site and by-name sites are wide."""
        key = (scope.qualname, site)
        memo = self._accessor_memo.get(key)
        if memo is None:
            memo = self._accessor_memo[key] = tuple(
                c.qualname
                for c in self.graph.site_callees(scope.qualname, site)
                if c.qualname in self.accessors
            )
        return memo

    # -- discovery

    def _alias_is_flag_module(self, qn: str, alias: str) -> bool:
        """``alias`` (``st`` or ``pkg.state``, read in ``qn``) is the flag's module."""
        key = (qn, alias)
        memo = self._alias_memo.get(key)
        if memo is None:
            memo = self.graph.values.names_module(qn, alias, self.flag.module)
            self._alias_memo[key] = memo
        return memo

    def _steps(self) -> Iterator[tuple[str, Scope, Iterable[object]]]:
        """Each scope with the steps that may touch the flag: all the steps of
        the scopes of the modules that name it (``ModuleSummary.step_names``), or
        with a ``SharedIndex`` only the reads and writes of the flag's name."""
        p = self.p
        if self._shared is not None:
            by_scope: dict[str, list[object]] = {}
            for qn, step in self._shared.steps.get(self.flag.name, ()):
                by_scope.setdefault(qn, []).append(step)
            for qn, steps in by_scope.items():
                yield qn, p.scopes[qn], steps
            return
        name, module_of = self.flag.name, p.module_of
        naming = {m for m, summary in p.modules.items() if name in summary.step_names}
        for qn, scope in p.scopes.items():
            if scope.kind is not ScopeKind.CLASS and module_of[qn] in naming:
                yield qn, scope, walk(scope.flow)

    def _find_writes_and_reads(self) -> None:
        p = self.p
        flag = self.flag
        for qn, scope, steps in self._steps():
            in_module = p.module_of.get(qn) == flag.module
            for step in steps:
                if isinstance(step, WriteStep) and step.name == flag.name:
                    ours = (step.base is None and in_module) or (
                        step.base is not None and self._alias_is_flag_module(qn, step.base)
                    )
                    if ours and scope.kind is not ScopeKind.MODULE:
                        # ``saved_in`` only here: most scopes write no flag, and
                        # computing it for each of them was a third of this walk
                        saved = self.saved_in(scope)
                        w = Write(
                            qn,
                            step.location,
                            *_classify_write(step, scope, saved, flag.initial),
                        )
                        if self.set_by and qn not in self.set_by and w.kind in _SETTING:
                            w = Write(qn, w.location, ValueKind.OTHER, w.text)
                        self.writes.setdefault(qn, []).append(w)
                        self._write_step_kind[id(step)] = w
                elif isinstance(step, ReadStep) and self.is_flag_read(scope, step):
                    self.direct_reads.setdefault(qn, []).append(step)

    def _find_accessors(self) -> set[str]:
        p = self.p
        accessors: set[str] = set()
        for qn in self.direct_reads:
            if _looks_like_accessor(p.scopes[qn], self.flag.name) and qn not in self.writes:
                accessors.add(qn)
        # accessors of accessors: ``def in_graph(): return is_in_graph()``
        candidates = (
            self._shared.forwarders
            if self._shared is not None
            else [
                qn
                for qn, scope in p.scopes.items()
                if scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA)
                and _returns_only_call(scope)
            ]
        )
        changed = True
        while changed:
            changed = False
            for qn in candidates:
                if qn in accessors:
                    continue
                if any(c.qualname in accessors for c in self.graph.site_callees(qn, 0)):
                    accessors.add(qn)
                    changed = True
        return accessors

    def _find_setters(self) -> dict[str, Setter]:
        p = self.p
        initial = self.flag.initial_kind
        setters: dict[str, Setter] = {}
        for qn, writes in self.writes.items():
            scope = p.scopes[qn]
            set_writes = [w for w in writes if sets_flag(w.kind, initial) is not False]
            if not set_writes:
                continue
            first = set_writes[0]
            kind = SetterKind.FUNCTION
            decorated = self.graph.values.decorator_kinds(qn)
            if scope.is_generator and DecoratorKind.ASYNCCONTEXTMANAGER in decorated:
                kind = SetterKind.ASYNCCONTEXTMANAGER
            elif scope.is_generator and DecoratorKind.CONTEXTMANAGER in decorated:
                kind = SetterKind.CONTEXTMANAGER
            elif scope.name in ("__enter__", "__aenter__") and p.method_class(qn):
                kind = SetterKind.CLASS
            setters[qn] = Setter(qn, kind, first.kind, first.location, tuple(writes))
        setters.update(self._find_decorators(setters))
        return setters

    def _find_decorators(self, setters: dict[str, Setter]) -> dict[str, Setter]:
        """``def deco(fn): def wrapper(*a): with setter(): return fn(*a)``: the
        decorated function runs with the flag set; ``deco`` is a setter."""
        p = self.p
        out: dict[str, Setter] = {}
        cms = {qn: s for qn, s in setters.items() if s.kind is not SetterKind.FUNCTION}
        if not cms:
            return out  # a decorator enters a setter context manager: there is none
        for qn, scope in p.scopes.items():
            if scope.kind is not ScopeKind.FUNCTION or qn in setters:
                continue
            params = {prm.name for prm in scope.params}
            for child_qn in scope.children:
                child = p.scopes.get(child_qn)
                if child is None or child.kind is not ScopeKind.FUNCTION:
                    continue
                for step in walk(child.flow):
                    if not isinstance(step, WithBlock):
                        continue
                    entered = [
                        cms[c]
                        for item in step.items
                        for c in self._entered(child, item.expr)
                        if c in cms
                    ]
                    calls_wrapped = any(
                        isinstance(inner, CallStep)
                        and isinstance(child.calls[inner.site].func, NameExpr)
                        and child.calls[inner.site].func.name in params  # type: ignore[union-attr]
                        for inner in walk(step.body)
                    )
                    if entered and calls_wrapped:
                        out[qn] = Setter(
                            qn, SetterKind.DECORATOR, entered[0].value, step.location, ()
                        )
        return out

    def _entered(self, scope: Scope, expr: object) -> list[str]:
        names: list[str] = []
        if isinstance(expr, CallExpr):
            for c in self.graph.site_callees(scope.qualname, expr.site):
                names.append(c.qualname)
                names.append(f"{c.qualname}.__enter__")
        return names


#: Write kinds that put a value in the flag (``--set-by`` turns other setters' into OTHER).
_SETTING = frozenset(
    {
        ValueKind.TRUE,
        ValueKind.FALSE,
        ValueKind.NONE,
        ValueKind.CONSTANT,
        ValueKind.INITIAL,
        ValueKind.UNKNOWN,
    }
)


def sets_flag(kind: ValueKind, initial: ValueKind) -> bool | None:
    """Does writing a value of this kind set the flag? None: cannot tell."""
    if kind in (ValueKind.RESTORE, ValueKind.OTHER):
        return False
    if kind in (ValueKind.UNKNOWN, ValueKind.PARAMETER):
        return None
    if kind in (ValueKind.DELETE, ValueKind.INITIAL):
        return False
    if initial in (ValueKind.TRUE, ValueKind.FALSE, ValueKind.NONE):
        return kind is not initial
    return (
        kind is not ValueKind.CONSTANT or None
    )  # other constants: may differ from the initial one


def _saved_names(scope: Scope, flag: str) -> set[str]:
    """Locals assigned from the flag (``prev = _flag``, ``old = mod._flag``,
    ``saved = (_flag, other)``: a tuple restored by ``_flag, other = saved``)."""
    out = set()
    for a in scope.assignments:
        if a.target.name is None:
            continue
        v = a.value
        if _is_flag_expr(v, flag) or a.text.split(".")[-1] == flag:
            out.add(a.target.name)
        elif isinstance(v, ContainerExpr) and any(_is_flag_expr(i, flag) for i in v.items):
            out.add(a.target.name)
    return out


def _is_flag_expr(expr: object, flag: str) -> bool:
    """``FLAG`` or ``mod.FLAG``."""
    if isinstance(expr, NameExpr):
        return expr.name == flag
    return isinstance(expr, AttrExpr) and expr.attr == flag


def _saved_slots(program: Program, scope: Scope, flag: str) -> set[str]:
    """Where the flag is saved outside locals, as the source text that restores it:
    ``self._prev`` (``self._prev = FLAG`` in a method of the same class) and
    ``stack.pop()`` (``stack.append(FLAG)`` in the same function or class). Without
    these a save/restore kept on the instance or on a stack looks like a set.

    In ``__exit__`` also ``-= n`` where ``__enter__`` counts the flag up by ``n``
    (``+= n``; and the other way round): a counter taken back on the way out."""
    owners = [scope]
    cls = program.method_class(scope.qualname)
    if cls is not None and cls in program.scopes:
        owners = [program.scopes[c] for c in program.scopes[cls].children if c in program.scopes]
    out: set[str] = set()
    exits = scope.name in _EXITS
    for owner in owners:
        if exits and owner.name in _ENTERS:
            for step in walk(owner.flow):
                if isinstance(step, WriteStep) and step.name == flag and step.augmented:
                    inverse = _UNDOES.get(step.operator)
                    if inverse is not None:
                        out.add(f"{inverse} {step.value_text}")
        for a in owner.assignments:
            t = a.target
            if (
                t.attr is not None
                and isinstance(t.base, NameExpr)
                and t.base.name == "self"
                and _is_flag_expr(a.value, flag)
            ):
                out.add(f"self.{t.attr}")
        for call in owner.calls:
            func = call.func
            if (
                isinstance(func, AttrExpr)
                and func.attr == "append"
                and isinstance(func.base, NameExpr)
                and len(call.args) == 1
                and _is_flag_expr(call.args[0].value, flag)
            ):
                out.add(f"{func.base.name}.pop()")
    return out


def _classify_write(
    step: WriteStep, scope: Scope, saved: set[str], initial: str | None = None
) -> tuple[ValueKind, str, str | None]:
    v = step.value
    if v is None:
        return ValueKind.DELETE, "del", None
    if step.augmented:
        if f"{step.operator} {step.value_text}" in saved or _undoes_earlier_count(step, scope):
            return ValueKind.RESTORE, step.value_text, None
        return ValueKind.UNKNOWN, step.value_text, None
    if isinstance(v, ConstExpr):
        return classify_const(v.value, initial), step.value_text, None
    if step.value_text in saved:  # ``self._prev``, ``stack.pop()``
        return ValueKind.RESTORE, step.value_text, None
    if isinstance(v, CallExpr) and v.site < len(scope.calls):
        if scope.calls[v.site].text in saved:  # ``X, Y = stack.pop(), y``
            return ValueKind.RESTORE, step.value_text, None
    if isinstance(v, AttrExpr) and isinstance(v.base, NameExpr):
        if f"{v.base.name}.{v.attr}" in saved:  # ``X, Y = self._prev, y``
            return ValueKind.RESTORE, step.value_text, None
    if isinstance(v, NameExpr):
        if v.name in saved:
            return ValueKind.RESTORE, step.value_text, None
        if any(p.name == v.name for p in scope.params):
            return ValueKind.PARAMETER, step.value_text, v.name
    return ValueKind.UNKNOWN, step.value_text, None


_UNDOES = {"+=": "-=", "-=": "+="}
_ENTERS = ("__enter__", "__aenter__")
_EXITS = ("__exit__", "__aexit__")


def _undoes_earlier_count(step: WriteStep, scope: Scope) -> bool:
    """``X -= n`` after ``X += n`` in the same function (or ``+=`` after ``-=``):
    a counter taken back by what was added, so the global holds what it held
    before, nested uses included (``_depth += 1; try: yield; finally: _depth -= 1``).
    Another amount, or the other step missing, is a write of a value computed at
    run time."""
    inverse = _UNDOES.get(step.operator)
    if inverse is None:
        return False
    return any(
        isinstance(s, WriteStep)
        and s.augmented
        and s.operator == inverse
        and (s.name, s.base, s.value_text) == (step.name, step.base, step.value_text)
        and s.location < step.location
        for s in walk(scope.flow)
    )


def _looks_like_accessor(scope: Scope, flag: str) -> bool:
    """A function that returns the flag or a simple expression of it."""
    if scope.kind not in (ScopeKind.FUNCTION, ScopeKind.LAMBDA) or scope.is_generator:
        return False
    returns = [s for s in walk(scope.flow) if isinstance(s, ReturnStep)]
    if not returns or any(r.value is None for r in returns):
        return False
    if any(isinstance(s, (WithBlock, WriteStep)) for s in walk(scope.flow)):
        return False
    if len(scope.calls) > 2:
        return False
    return any(_mentions(r.value, flag) for r in returns)


def _mentions(expr: object, name: str) -> bool:
    if isinstance(expr, NameExpr):
        return expr.name == name
    if isinstance(expr, OpaqueExpr):
        return name in expr.text or any(_mentions(p, name) for p in expr.parts)
    if isinstance(expr, AttrExpr):
        return expr.attr == name or _mentions(expr.base, name)
    return False


def _returns_only_call(scope: Scope) -> bool:
    if len(scope.calls) != 1:  # first: asked of every function, and most make other calls
        return False
    steps = list(walk(scope.flow))
    return all(isinstance(s, (CallStep, ReturnStep, ReadStep)) for s in steps) and any(
        isinstance(s, ReturnStep) and isinstance(s.value, CallExpr) for s in steps
    )
