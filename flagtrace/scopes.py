"""The summary walk's state: scopes under construction and the frame it walks in.

No CST here: ``flagtrace.summarize`` walks the tree and fills these; ``freeze``
turns a builder into the frozen ``model.Scope`` that leaves the indexer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from flagtrace.model import (
    Assignment,
    Branch,
    CallSite,
    Expr,
    Flow,
    Guard,
    Import,
    Location,
    Param,
    ReadStep,
    Scope,
    ScopeKind,
    TryBlock,
    WithBlock,
)
from flagtrace.versions import LocalFlow


@dataclass
class ScopeBuilder:
    """A module, class, function or lambda while it is being walked: what it has
    stated so far, in source order."""

    qualname: str
    kind: ScopeKind
    name: str
    location: Location
    parent: ScopeBuilder | None
    decorators: tuple[Expr, ...] = ()
    decorator_texts: tuple[str, ...] = ()
    bases: tuple[Expr, ...] = ()
    params: tuple[Param, ...] = ()
    returns_annotation: str | None = None
    is_async: bool = False
    is_generator: bool = False
    globals_declared: set[str] = field(default_factory=set)
    nonlocals_declared: set[str] = field(default_factory=set)
    local_names: set[str] = field(default_factory=set)
    imports: list[Import] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    returns: list[Expr] = field(default_factory=list)
    yields: list[Expr] = field(default_factory=list)
    flow: tuple[Flow, ...] = ()
    children: list[str] = field(default_factory=list)
    lambda_count: int = 0
    defined: dict[str, int] = field(default_factory=dict)  # def/class name -> times defined
    end_line: int = 0
    #: which bindings reach each read of a local (``flagtrace.versions``)
    reach: LocalFlow = field(default_factory=LocalFlow)

    def child_qualname(self, name: str) -> str:
        """``parent.name`` for the first def or class of that name in this scope,
        ``parent.name#2`` for the second, and so on (a property's setter, an
        ``@overload``, ``try: def f... except: def f...``). Every definition is
        its own scope: they share the binding, so a call through the name
        resolves to all of them, and none overwrites another's calls."""
        count = self.defined.get(name, 0) + 1
        self.defined[name] = count
        return f"{self.qualname}.{name}" if count == 1 else f"{self.qualname}.{name}#{count}"

    def freeze(self, module_globals: frozenset[str], escaping: set[str]) -> Scope:
        """The frozen scope. ``escaping``: names whose reads here stay
        flow-insensitive besides this scope's own ``global``/``nonlocal`` ones
        (see ``flagtrace.versions``)."""
        flow = filter_reads(self.flow, module_globals, self._shadowing_names())
        reaching = self.reach.freeze(
            escaping | self.globals_declared | self.nonlocals_declared, self.local_names
        )
        return Scope(
            qualname=self.qualname,
            kind=self.kind,
            name=self.name,
            location=self.location,
            parent=self.parent.qualname if self.parent else None,
            decorators=self.decorators,
            decorator_texts=self.decorator_texts,
            bases=self.bases,
            params=self.params,
            returns_annotation=self.returns_annotation,
            is_async=self.is_async,
            is_generator=self.is_generator,
            globals_declared=tuple(sorted(self.globals_declared)),
            nonlocals_declared=tuple(sorted(self.nonlocals_declared)),
            local_names=tuple(sorted(self.local_names)),
            imports=tuple(self.imports),
            calls=tuple(self.calls),
            assignments=tuple(self.assignments),
            returns=tuple(self.returns),
            yields=tuple(self.yields),
            flow=flow,
            children=tuple(self.children),
            end_line=self.end_line,
            reaching=reaching,
        )

    def _shadowing_names(self) -> set[str]:
        """Names that, read here, are *not* the module global: locals of this
        function and of enclosing functions (closures), minus ``global`` ones."""
        names: set[str] = set()
        scope: ScopeBuilder | None = self
        while scope is not None and scope.kind is not ScopeKind.MODULE:
            if scope.kind is not ScopeKind.CLASS or scope is self:
                names |= scope.local_names - scope.globals_declared
            scope = scope.parent
        return names - self.globals_declared


def filter_reads(
    flow: tuple[Flow, ...], module_globals: frozenset[str], shadow: set[str]
) -> tuple[Flow, ...]:
    """Keep only reads of names that really are module globals here.

    Why after the walk: whether a bare name is a global is known only once the
    whole module has been seen (a global may be assigned below its reader), so
    the walk records every bare-name read and this drops the others.
    """
    out: list[Flow] = []
    for step in flow:
        if isinstance(step, ReadStep):
            if step.base is None and (step.name in shadow or step.name not in module_globals):
                continue
            out.append(step)
        elif isinstance(step, WithBlock):
            out.append(
                WithBlock(
                    step.items,
                    filter_reads(step.body, module_globals, shadow),
                    step.location,
                    step.is_async,
                )
            )
        elif isinstance(step, TryBlock):
            out.append(
                TryBlock(
                    filter_reads(step.body, module_globals, shadow),
                    tuple(filter_reads(h, module_globals, shadow) for h in step.handlers),
                    filter_reads(step.orelse, module_globals, shadow),
                    filter_reads(step.finalbody, module_globals, shadow),
                    step.location,
                )
            )
        elif isinstance(step, Branch):
            out.append(
                Branch(
                    step.guard,
                    filter_reads(step.body, module_globals, shadow),
                    filter_reads(step.orelse, module_globals, shadow),
                    step.location,
                    step.loop,
                )
            )
        else:
            out.append(step)
    return tuple(out)


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """Where the walk is: the scope it adds facts to, the list it emits flow
    steps into, and what holds for every statement here.

    Frames are never changed, only replaced: the walker enters a new one for a
    block, a guarded arm, a ``with`` body or a new scope, and gets the old one
    back when that ends (``ExpressionWalker.within``), so no state can leak out
    of a scope or a block, on any path. The scope builder and the flow list are
    the two things a frame points at that do change: they collect what the walk
    finds.

    ``guards`` and ``with_texts`` are relative to the scope: a call site records
    the ``if``/``else``/``while``/``except``/``case`` arms and ``with`` items
    between it and the top of its own scope, so both start empty in every new
    scope. ``type_checking`` and ``import_guarded`` say whether an import runs
    only for type checkers (``if TYPE_CHECKING:``) or under ``try: ... except
    ImportError``: they hold where the code runs, so a class body, which runs
    where it is written, keeps them, while a function or lambda body, which runs
    when called, starts without.
    """

    scope: ScopeBuilder
    flow: list[Flow] = field(default_factory=list)
    guards: tuple[Guard, ...] = ()
    with_texts: tuple[str, ...] = ()
    type_checking: bool = False
    import_guarded: bool = False

    def function(self, scope: ScopeBuilder) -> Frame:
        """The frame of a function or lambda body: nothing carries over."""
        return Frame(scope)

    def class_body(self, scope: ScopeBuilder) -> Frame:
        """The frame of a class body: it runs here, so the import context carries over."""
        return Frame(scope, type_checking=self.type_checking, import_guarded=self.import_guarded)

    def block(self) -> Frame:
        """The same context, emitting into a fresh flow list (a nested block)."""
        return replace(self, flow=[])

    def guarded(self, guard: Guard) -> Frame:
        return replace(self, guards=(*self.guards, guard))

    def within_with(self, texts: tuple[str, ...]) -> Frame:
        return replace(self, with_texts=self.with_texts + texts)

    def only_type_checking(self) -> Frame:
        return replace(self, type_checking=True)

    def guarding_imports(self) -> Frame:
        return replace(self, import_guarded=True)
