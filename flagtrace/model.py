"""Every type that crosses a pipeline stage.

Stages talk to each other only through the frozen, slotted dataclasses below.
They are small, picklable (the index runs in worker processes and its results
are cached on disk) and carry no CST nodes: a summary of a 5,000-line module
is a few hundred small tuples, not a tree.

The summary vocabulary has three layers:

* ``Expr``: a tiny expression language, just rich enough for value flow
  (which function does this name, attribute, subscript or call result hold?).
* ``CallSite`` / ``Assignment`` / ``GlobalAccess``: the facts a scope states,
  each with a ``Location``.
* ``Flow``: the statement tree of a scope in source order (calls, global
  reads/writes, ``with`` blocks, ``try/finally``, branches, yields, returns),
  which the flag engine interprets flow-sensitively.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Any:
        return lambda f: f


_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, order_default=False)
def record(cls: type[_T] | None = None, *, order: bool = False) -> Any:
    """A frozen, slotted dataclass that pickles as a plain tuple.

    Python's own pickling of slotted dataclasses calls ``dataclasses.fields()``
    for every object, which made loading cached summaries of SGLang take
    seconds; reducing to ``(cls, values)`` is several times faster and smaller.
    """

    def wrap(klass: type[_T]) -> type[_T]:
        dc: Any = dataclass(frozen=True, slots=True, order=order)(klass)
        names = [f.name for f in fields(dc)]
        _set_slots_directly(dc)
        if not names:
            dc.__reduce__ = lambda self: (dc, ())
        elif len(names) == 1:
            name = names[0]
            dc.__reduce__ = lambda self: (dc, (getattr(self, name),))
        else:
            getter = attrgetter(*names)
            dc.__reduce__ = lambda self: (dc, getter(self))
        return dc  # type: ignore[no-any-return]

    return wrap if cls is None else wrap(cls)


def _set_slots_directly(dc: Any) -> None:
    """Give the frozen record ``dc`` an ``__init__`` that stores each field through
    its slot's own descriptor.

    Why: a frozen dataclass's ``__init__`` stores each field with
    ``object.__setattr__``, which looks the name up along the class's MRO first.
    Records are built by the million (loading SGLang's summaries from the cache
    builds about 4M), and calling the slot's ``__set__`` directly makes each one
    about 40% cheaper: loading them 0.78 x the time (``bench_cache_load.py
    --inits``). The generated code is
    the dataclass's own in all but that; a record with anything more than plain
    defaults (a factory, ``__post_init__``) keeps the dataclass's.
    """
    record_fields = fields(dc)
    if hasattr(dc, "__post_init__") or any(
        f.default_factory is not MISSING or not f.init or f.kw_only for f in record_fields
    ):
        return
    namespace: dict[str, Any] = {}
    parameters, body = ["self"], []
    for i, f in enumerate(record_fields):
        namespace[f"_set{i}"] = dc.__dict__[f.name].__set__
        if f.default is MISSING:
            parameters.append(f.name)
        else:
            namespace[f"_default{i}"] = f.default
            parameters.append(f"{f.name}=_default{i}")
        body.append(f"    _set{i}(self, {f.name})")
    source = f"def __init__({', '.join(parameters)}) -> None:\n" + "\n".join(body or ["    pass"])
    exec(source, namespace)  # our own generated code, as dataclasses does
    init = namespace["__init__"]
    init.__qualname__ = f"{dc.__qualname__}.__init__"
    init.__module__ = dc.__module__
    dc.__init__ = init


# --------------------------------------------------------------------------
# The summary format

SUMMARY_FORMAT = 11  # bump when summaries change (the cache keys on it, see flagtrace.cache)

#: The files of ``flagtrace`` whose code decides what a summary holds. The cache
#: key (``cache.schema``) hashes each of them, so an edited walk never reads
#: summaries an older one wrote; a new module the walk imports belongs here
#: (``tests/test_index.py`` fails otherwise).
INDEXER_SOURCES = (
    "index.py",
    "summarize.py",
    "expressions.py",
    "positions.py",
    "scopes.py",
    "versions.py",
    "model.py",
    "parseguard.py",
    "memory.py",  # how indexing runs, not what it makes; listed since indexing loads it
)


# --------------------------------------------------------------------------
# Locations and files


@record(order=True)
class Location:
    """A point in a source file; line and column are 1-based."""

    path: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    @property
    def short(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True, order=True)
class SourceFile:
    """A Python file found by discovery, with the module name it stands for."""

    path: str
    module: str
    root: str
    is_package: bool = False  # an ``__init__.py``


@record
class Diagnostic:
    """A problem with the input (not a finding): the run goes on without it."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


# --------------------------------------------------------------------------
# Expressions (value-flow vocabulary)


@record
class NameExpr:
    """A read of a bare name. ``at`` indexes the reading scope's ``reaching``
    table (the bindings that can reach this read, see ``flagtrace.versions``);
    -1 reads every binding of the name (flow-insensitive)."""

    name: str
    at: int = -1


@record
class AttrExpr:
    base: Expr
    attr: str


@record
class CallExpr:
    """The value a call returns; ``site`` indexes the scope's ``calls``."""

    site: int


@record
class SubscriptExpr:
    """``base[key]``. ``at`` indexes the scope's ``reaching`` table for an item
    of a local with a literal key (``d["a"]``, see ``flagtrace.versions``)."""

    base: Expr
    key: Expr
    at: int = -1


@record
class ConstExpr:
    """A literal. ``value`` is its source text (``True``, ``None``, ``'a'``, ``3``)."""

    value: str


class ContainerKind(enum.Enum):
    LIST = "list"
    TUPLE = "tuple"
    SET = "set"
    DICT = "dict"


@record
class ContainerExpr:
    """A display. For dicts ``keys`` is parallel to ``items`` (None for ``**x``)."""

    kind: ContainerKind
    items: tuple[Expr, ...]
    keys: tuple[Expr | None, ...] = ()
    #: ``module:n`` for the n-th display of its module: the resolver's name for
    #: the container (an ``id()`` would make set orders, and so results, vary)
    origin: str = ""


@record
class FunctionRefExpr:
    """A lambda (or any nested definition) used as a value: its scope qualname."""

    qualname: str


@record
class SuperExpr:
    """``super()`` inside a method."""


@record
class OpaqueExpr:
    """Anything else. ``parts`` are sub-expressions whose values may flow through
    (the branches of ``a if c else b``, the operands of ``a or b``)."""

    text: str
    parts: tuple[Expr, ...] = ()


Expr = (
    NameExpr
    | AttrExpr
    | CallExpr
    | SubscriptExpr
    | ConstExpr
    | ContainerExpr
    | FunctionRefExpr
    | SuperExpr
    | OpaqueExpr
)


# --------------------------------------------------------------------------
# Facts a scope states


class GuardKind(enum.Enum):
    """The statement a guard comes from."""

    IF = "if"
    ELIF = "elif"
    ELSE = "else"  # the negated test of the ``if`` an ``else`` belongs to
    WHILE = "while"
    EXCEPT = "except"  # ``text`` is the caught type
    CASE = "case"  # ``text`` is ``case PATTERN [if GUARD]``
    EXIT = "exit"  # ``if C: return`` (raise, continue, break) above: negated
    ASSERT = "assert"  # ``assert C`` above
    BOOL = "bool"  # an earlier operand of ``and`` (``or``: negated)
    IFEXP = "ifexp"  # ``x if C else y`` (``y``: negated)
    FILTER = "filter"  # a comprehension's ``if C``


@record
class GuardPath:
    """A name or attribute chain as written: ``cfg.use_fast_path``."""

    path: str


@record
class GuardConst:
    """A literal: ``True``, ``None``, ``3``, ``'a'`` (its source text)."""

    value: str


@record
class GuardCall:
    """A call of a name or attribute chain: ``is_cuda()``; ``args`` is their source."""

    path: str
    args: str = ""


@record
class GuardCompare:
    """``left OP right`` with one operator (``==``, ``is not``, ``in``, ``<``...)."""

    left: GuardExpr
    op: str
    right: GuardExpr


@record
class GuardBool:
    """``a and b and c`` (``op`` is ``and`` or ``or``), flattened."""

    op: str
    operands: tuple[GuardExpr, ...]


@record
class GuardNot:
    operand: GuardExpr


@record
class GuardUnknown:
    """Anything else (arithmetic, subscripts, calls of calls): only its source."""

    text: str


#: The parsed form of a guard's condition, for code that evaluates guards under
#: assumptions (``--assume``, issue 14): small and closed, so an evaluator can
#: match every case and treat ``GuardUnknown`` as "could be either".
GuardExpr = GuardPath | GuardConst | GuardCall | GuardCompare | GuardBool | GuardNot | GuardUnknown


@record
class Guard:
    """A condition a statement or expression runs under, within its own scope.

    ``text`` is the condition's source as written and ``expr`` its parsed form
    (None for ``except`` and ``case``, whose text is no expression);
    ``negated`` is True where the condition must be false (the else side, the
    code after ``if C: return``, the operand after ``C or``). ``kind`` says
    which construct put it there.
    """

    text: str
    line: int
    negated: bool = False
    kind: GuardKind = GuardKind.IF
    expr: GuardExpr | None = None

    def render(self) -> str:
        return f"not ({self.text})" if self.negated else self.text


@record
class Argument:
    value: Expr
    keyword: str | None = None  # ``f(x=...)``
    star: int = 0  # 1 for ``*args``, 2 for ``**kwargs``


class CallKind(enum.Enum):
    """What makes a call site call: written calls, and the calls Python makes
    implicitly for a statement (recorded so that value flow and effects follow
    them; their ``text`` shows the statement, e.g. ``<__enter__> lock``)."""

    CALL = "call"  # ``f(x)``
    DECORATOR = "decorator"  # ``@d`` applied to the definition below it
    RAISE = "raise"  # ``raise E`` instantiates ``E``
    ITER = "iter"  # ``for x in xs``: ``xs.__iter__()``
    NEXT = "next"  # ... and ``__next__()`` on what that returned
    ENTER = "enter"  # ``with cm``: ``cm.__enter__()`` (or ``__aenter__``)
    EXIT = "exit"  # ... and ``cm.__exit__()`` (or ``__aexit__``) after the body

    @property
    def implicit(self) -> bool:
        """A protocol call Python makes for a statement: it only matters when it
        reaches analysed code (a library ``__enter__`` is no unresolved call)."""
        return self not in (CallKind.CALL, CallKind.DECORATOR)


@record
class CallSite:
    """One call in a scope. ``func`` is the callee expression; ``text`` its source."""

    func: Expr
    args: tuple[Argument, ...]
    location: Location
    text: str
    guards: tuple[Guard, ...] = ()
    with_items: tuple[str, ...] = ()  # source of the ``with`` items it sits under
    kind: CallKind = CallKind.CALL


class ParamKind(enum.Enum):
    POSITIONAL = "positional"
    VAR_POSITIONAL = "var_positional"
    KEYWORD_ONLY = "keyword_only"
    VAR_KEYWORD = "var_keyword"


@record
class Param:
    name: str
    kind: ParamKind = ParamKind.POSITIONAL
    annotation: str | None = None
    default: Expr | None = None


@record
class Target:
    """Left-hand side of an assignment: a name, ``base.attr`` or ``base[key]``."""

    name: str | None = None
    base: Expr | None = None
    attr: str | None = None
    key: Expr | None = None


@record
class Assignment:
    """``target = value``. Tuple targets are split pairwise where the value is a
    display of the same length; otherwise each element gets an ``OpaqueExpr``
    whose part is the whole value (``for x in xs`` binds x the same way)."""

    target: Target
    value: Expr
    location: Location
    text: str  # source of the value, for guard display
    annotation: str | None = None
    augmented: bool = False
    iterates: bool = False  # the target takes the *elements* of value (for, unpacking)


class ImportKind(enum.Enum):
    MODULE = "module"  # import a.b [as c]
    FROM = "from"  # from a import b [as c]
    STAR = "star"  # from a import *


@record
class Import:
    """An import binding. ``module`` is absolute (relative imports are resolved
    against the importing module at index time); ``name`` is the imported
    member for FROM imports; ``alias`` is the local name bound."""

    kind: ImportKind
    module: str
    name: str | None
    alias: str
    location: Location
    type_checking: bool = False
    guarded: bool = False  # inside try/except ImportError


# --------------------------------------------------------------------------
# Flow: the statement tree the flag engine walks


@record
class CallStep:
    site: int


@record
class ReadStep:
    """A load of a global (``X``) or of a module attribute (``mod.X``)."""

    name: str
    location: Location
    base: str | None = None  # local alias of the module for ``mod.X``
    guards: tuple[Guard, ...] = ()  # as on a ``CallSite``


@record
class WriteStep:
    """A store to a global (``global X; X = v``), a module attribute
    (``mod.X = v``, ``setattr(mod, "X", v)``) or ``del X``."""

    name: str
    value: Expr | None  # None for ``del``
    value_text: str
    location: Location
    base: str | None = None
    augmented: bool = False
    #: of an augmented write, its operator (``"+="``, ``"-="``; ``""`` for the others)
    operator: str = ""


@record
class YieldStep:
    location: Location


@record
class ReturnStep:
    location: Location
    value: Expr | None = None


@record
class RaiseStep:
    location: Location


@record
class WithItem:
    """One ``with`` item: its context expression (usually a call) and source."""

    expr: Expr
    text: str
    location: Location
    alias: str | None = None


@record
class WithBlock:
    items: tuple[WithItem, ...]
    body: tuple[Flow, ...]
    location: Location
    is_async: bool = False


@record
class TryBlock:
    body: tuple[Flow, ...]
    handlers: tuple[tuple[Flow, ...], ...]
    orelse: tuple[Flow, ...]
    finalbody: tuple[Flow, ...]
    location: Location


@record
class Branch:
    """``if``/``while``/``for``/``match`` arms. ``loop`` arms may run zero or more times."""

    guard: Guard | None
    body: tuple[Flow, ...]
    orelse: tuple[Flow, ...]
    location: Location
    loop: bool = False


Flow = (
    CallStep
    | ReadStep
    | WriteStep
    | YieldStep
    | ReturnStep
    | RaiseStep
    | WithBlock
    | TryBlock
    | Branch
)


def walk(flow: tuple[Flow, ...]) -> Iterator[Flow]:
    """Every step of a flow tree, in source order."""
    for step in flow:
        yield step
        if isinstance(step, WithBlock):
            yield from walk(step.body)
        elif isinstance(step, TryBlock):
            yield from walk(step.body)
            for h in step.handlers:
                yield from walk(h)
            yield from walk(step.orelse)
            yield from walk(step.finalbody)
        elif isinstance(step, Branch):
            yield from walk(step.body)
            yield from walk(step.orelse)


# --------------------------------------------------------------------------
# Scopes and modules


class DecoratorKind(enum.Enum):
    """What a decorator makes of a function, as resolution recognises it: by
    what the decorator expression resolves to (``contextlib.contextmanager``,
    the builtin ``staticmethod``), or by its text when it resolves to nothing."""

    STATICMETHOD = "staticmethod"
    CLASSMETHOD = "classmethod"
    PROPERTY = "property"
    PROPERTY_SETTER = "property-setter"  # ``@x.setter``
    CONTEXTMANAGER = "contextmanager"
    ASYNCCONTEXTMANAGER = "asynccontextmanager"


class ScopeKind(enum.Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    LAMBDA = "lambda"


@record
class Scope:
    """A module body, class body, function or lambda, with what it states.

    ``qualname`` is the full dotted name (``pkg.mod.Class.method``; module code
    is ``pkg.mod``; lambdas are ``pkg.mod.<lambda1>`` numbered per module).
    """

    qualname: str
    kind: ScopeKind
    name: str
    location: Location
    parent: str | None
    decorators: tuple[Expr, ...] = ()
    decorator_texts: tuple[str, ...] = ()
    bases: tuple[Expr, ...] = ()
    params: tuple[Param, ...] = ()
    returns_annotation: str | None = None
    is_async: bool = False
    is_generator: bool = False
    globals_declared: tuple[str, ...] = ()
    nonlocals_declared: tuple[str, ...] = ()
    local_names: tuple[str, ...] = ()  # names bound in this scope
    imports: tuple[Import, ...] = ()  # imports executed in this scope
    calls: tuple[CallSite, ...] = ()
    assignments: tuple[Assignment, ...] = ()
    returns: tuple[Expr, ...] = ()
    yields: tuple[Expr, ...] = ()
    flow: tuple[Flow, ...] = ()
    children: tuple[str, ...] = ()  # qualnames of nested defs/classes declared here
    end_line: int = 0
    #: for each ``NameExpr.at``: the indices into ``assignments`` whose binding
    #: can reach that read (-1: the value on entry, i.e. parameters, imports,
    #: the enclosing scope for a class body), or None to read every binding
    reaching: tuple[tuple[int, ...] | None, ...] = ()


@record
class ModuleSummary:
    """Everything later stages need to know about one module."""

    module: str
    path: str
    is_package: bool
    scopes: tuple[Scope, ...]
    lines: int
    has_main_block: bool = False
    all_names: tuple[str, ...] | None = None  # ``__all__`` when literal
    #: every container display, in the order of their ``origin`` numbers: a
    #: stored resolved program names the displays it met by origin, and finds
    #: the very objects here again (``flagtrace.program_store``)
    containers: tuple[ContainerExpr, ...] = ()
    #: the names the read and write steps of its functions and module body name
    #: (class bodies left out, as the flag analysis leaves them), sorted: a flag's
    #: reads and writes are looked for only in the modules that name it. A tuple,
    #: as everything here: a set would pickle in hash-seed order, and the result
    #: cache keys on a summary's pickle (``index.summary_digest``)
    step_names: tuple[str, ...] = ()

    @property
    def module_scope(self) -> Scope:
        return self.scopes[0]

    @property
    def imported_modules(self) -> frozenset[str]:
        """Every module this one imports anywhere (for cache invalidation)."""
        return frozenset(i.module for s in self.scopes for i in s.imports)


@record
class IndexResult:
    """The outcome of indexing one file: a summary, or a diagnostic, and the
    cost (for the progress summary and the cache statistics)."""

    source: SourceFile
    summary: ModuleSummary | None
    diagnostic: Diagnostic | None = None
    cached: bool = False
    #: ``index.summary_digest`` of the summary as first built: equal digests,
    #: equal summaries but for ``lines`` (the whole-run result cache keys on it)
    digest: str | None = None
    #: ``index.summary_digests``' second: of the summary with every position
    #: zeroed (a stored resolved program keys on it, ``flagtrace.program_store``)
    shape: str | None = None


# --------------------------------------------------------------------------
# Call graph


class Word(str, enum.Enum):
    """A word of the findings vocabulary: prints, formats and compares as its value."""

    def __str__(self) -> str:
        return str(self.value)


class Approximation(Word):
    """Which approximation of a dynamic pattern a call edge rests on: the edge is
    no declaration's consequence but the resolver's reading of a framework idiom,
    and the witness says which, so a reader can judge the hop.

    Each member dispatches to *every* candidate the idiom allows (sound for "can
    this run?"), so an approximated hop may be one the program never takes."""

    #: ``cls(...)``/``cls.m()`` in a classmethod, ``type(self)(...)``,
    #: ``self.__class__(...)``: built as an analysed subclass of the class that
    #: defines the method (class-hierarchy dispatch)
    CLASSMETHOD_FACTORY = "classmethod-factory"
    #: a context manager taken from a list, tuple or set (filled anywhere, possibly
    #: returned by another function) and entered in a loop, through
    #: ``ExitStack.enter_context`` or a helper class's ``__enter__``
    CONTAINER_CONTEXT = "container-context"
    #: a class (or function) looked up in a dict by a key that is no literal
    #: (``MODELS[name]``, ``REGISTRY.get(key)``): every value stored in the dict
    DICT_REGISTRY = "dict-registry"
    #: calling an instance runs its class's ``__call__`` (a wrapper assigned over an
    #: attribute that held something else: every value the attribute ever held)
    CALL_WRAPPER = "call-wrapper"


class Resolution(enum.Enum):
    """How strong the evidence for a call edge is, strongest first."""

    DIRECT = "direct"  # names bound by def/class/import
    #: the callee rests on a declaration: an annotation, ``self``/``cls``/``super()``,
    #: a constructor call whose result flows straight to the receiver, a def/class/import
    TYPED = "typed"
    #: the callee came through value flow only: a parameter's bound arguments, a
    #: container, a lambda or a factory's return value (a flow-insensitive analysis
    #: can merge what the program keeps apart, so this is likely, not certain)
    INFERRED = "inferred"
    BY_NAME = "by-name"  # unknown receiver: every method of that name
    JEDI = "jedi"  # settled on demand by jedi

    #: by identity (members are singletons, and equal only to themselves): the
    #: inherited ``Enum.__hash__`` runs in Python, and every ``Callee`` hashed (a
    #: hub's hundreds, at every site of it) hashed one; on a new question on
    #: transformers that was 5.7M calls. Neither hash is stable across processes
    __hash__ = object.__hash__

    @property
    def weak(self) -> bool:
        return self in (Resolution.BY_NAME, Resolution.JEDI)


@record
class Callee:
    """One resolved target of a call site."""

    qualname: str  # analysed scope, ``<builtin>.x`` or an external dotted name
    resolution: Resolution
    analysed: bool
    #: the framework idiom the edge was inferred from, if any (see ``Approximation``)
    approximation: Approximation | None = None


@record
class CallEdge:
    caller: str
    callee: str
    location: Location
    resolution: Resolution
    guards: tuple[Guard, ...] = ()
    site: int = -1  # index into the caller scope's ``calls``
    text: str = ""
    approximation: Approximation | None = None


@record
class UnresolvedCall:
    """A call flagtrace could not attach to any callee in or out of the code."""

    caller: str
    location: Location
    text: str
    site: int
    scope: str = ""  # the scope whose ``calls[site]`` this is (a class body's caller is its module)


@record
class GraphStats:
    nodes: int
    edges: int
    by_resolution: tuple[tuple[str, int], ...]
    unresolved: int
    jedi_queries: int = 0
    jedi_edges: int = 0
    #: call sites whose edge rests on an ``Approximation``, by its value
    by_approximation: tuple[tuple[str, int], ...] = ()


# --------------------------------------------------------------------------
# Findings: what the flag engine reports (reporters read only these)
#
# The words of the findings are enums, so the engine states them once and every
# reporter renders the same thing. Each enum's values are the strings the JSON
# report has always used; members compare equal to those strings, so code that
# reads findings as strings keeps working.


class StepKind(Word):
    """What a witness step does (see ``WitnessStep``)."""

    CALL = "call"
    ENTER = "enter"
    SET = "set"
    READ = "read"

    @property
    def sets_flag(self) -> bool:
        """The step where the flag becomes set (a context manager entered, a sticky setter)."""
        return self in (StepKind.ENTER, StepKind.SET)


class Evidence(Word):
    """How strong a verdict is."""

    RESOLVED = "resolved"  # every hop is a direct or typed call
    INFERRED = "inferred"  # some hop rests on value flow, none on by-name dispatch
    BY_NAME = "by-name"  # some hop needed by-name dispatch
    UNRESOLVED_CALLS = "unresolved-calls"  # a *never* verdict with unresolved calls on the way


class SetterKind(Word):
    """How a setter sets the flag."""

    CONTEXTMANAGER = "contextmanager"
    ASYNCCONTEXTMANAGER = "asynccontextmanager"
    CLASS = "class"  # ``__enter__``/``__exit__``
    FUNCTION = "function"  # a plain setter: ``set_flag(True)``
    DECORATOR = "decorator"  # runs the wrapped function inside a setter


class RootKind(Word):
    """How a program root was found (see ``flagtrace.programs``)."""

    MAIN = "main"  # a module's ``if __name__ == "__main__":`` block, or a ``__main__.py``
    SCRIPT = "console-script"  # a console script declared in pyproject.toml or setup.cfg
    CONFIGURED = "configured"  # ``--root`` or ``[tool.flagtrace] roots``


class StickyScope(Word):
    """Why a witness may start with the flag already set (its ``before_entry`` steps)."""

    ROOT = "root"  # a program root reaches both the sticky write and the entry
    IMPORT = "import"  # the sticky write runs when a module is imported
    ANYWHERE = "anywhere"  # no program root reaches the entry: any sticky write may come first


class WrittenValue(Word):
    """What the write an entry observes puts in the flag."""

    CONSTANT = "constant"  # a literal (``FLAG = True``, ``set_flag(True)``)
    UNKNOWN = "unknown"  # computed at run time, typically configuration (``FLAG = args.x``)


@record
class ProgramRoot:
    """Where a process can start: a ``__main__`` module, a console script's function,
    or a configured one; ``declared`` says where it was found, for the report."""

    qualname: str
    kind: RootKind
    declared: str


class HazardKind(Word):
    """What is wrong with a setter; ``rules.RULES`` gives each its code and explanation."""

    EXCEPTION_LEAK = "exception-leak"
    NON_REENTRANT = "non-reentrant"
    STICKY = "sticky"
    THREAD_UNSAFE = "thread-unsafe"


@record
class WitnessStep:
    """One step of the proof that an entry can observe a flag set.

    ``step`` is ``CALL`` (``function`` calls ``callee`` at ``location``, resolved
    as ``resolution``), ``ENTER`` (``function`` enters the setter context manager
    ``callee``), ``SET`` (``function`` calls the sticky setter ``callee``) or
    ``READ`` (``function`` reads the flag, through the accessor ``callee`` if
    any). ``setting`` CALL steps follow an ``ENTER``/``SET`` step: the calls from
    its setter down to the function that writes the flag. ``guards`` are the
    conditions the hop runs under in ``function`` (each
    once: ``if``/``elif``/``else``, ``while``, ``case``, ``except``, early exits
    and ``assert`` above it, ``and``/``or`` operands, conditional expressions,
    comprehension filters) and ``guard`` their display, joined with ``and``
    (a local assigned once shows its value); ``text`` is the source of the call
    (the flag's name for a read). ``before_entry`` marks steps that
    happen before the entry runs (a sticky setter reachable elsewhere left the
    flag set).
    """

    step: StepKind
    function: str
    location: Location
    callee: str | None = None
    #: how surely the step's callee is reached: a CALL's edge; for ENTER/SET how the
    #: setter was reached (``flagtrace.setting``); for a READ, the accessor's call
    resolution: Resolution | None = None
    guard: str | None = None
    text: str = ""
    before_entry: bool = False
    #: the hop's conditions, each once, as recorded (``guard`` is their display)
    guards: tuple[Guard, ...] = ()
    #: CALL and ENTER steps: the framework idiom the hop was inferred from, if any
    approximation: Approximation | None = None
    #: a call inside the setter of the ``enter``/``set`` step above it, on the way
    #: from that setter down to the function that writes the flag: it proves the
    #: setting, not the path to the read (the next unmarked step goes on from the
    #: function of that ``enter``/``set`` step)
    setting: bool = False


class CutKind(Word):
    """Why a hop cannot run (``flagtrace.prune``)."""

    GUARD = "guard"  # a guard of the hop is false under the assumptions
    NOT_INSTANTIATED = "not-instantiated"  # a method of a class never instantiated


@record
class PrunedHop:
    """A step of a witness that cannot run: behind a guard that the assumptions
    make false (``guard`` as shown, at ``guard_location``, decided by ``facts``), or a
    call of a method of ``cls``, a class never instantiated (when that is because
    its constructions sit behind a false guard, that guard and its facts)."""

    kind: CutKind
    function: str
    callee: str | None
    location: Location
    reason: str
    guard: str | None = None
    guard_location: Location | None = None
    facts: tuple[str, ...] = ()
    cls: str | None = None


@record
class AssumptionUse:
    """An ``--assume`` fact and the guards it decided (FILE:LINE); none: it matched nothing."""

    fact: str
    guards: tuple[Location, ...] = ()


@record
class EntryVerdict:
    """Can ``entry`` observe the flag set: yes with a ``witness``, or no with a ``reason``."""

    entry: str
    observes_set: bool
    evidence: Evidence
    reason: str
    witness: tuple[WitnessStep, ...] = ()
    unresolved_count: int = 0
    unresolved_sites: tuple[Location, ...] = ()  # the first few of them
    #: a *never* verdict under assumptions or instantiation: the hop of the witness
    #: found without pruning that cannot run
    pruned: PrunedHop | None = None
    #: the program roots that reach the entry (empty: none does; see ``flagtrace.programs``)
    roots: tuple[str, ...] = ()
    #: why the witness starts before the entry (None: it starts at the entry with the flag unset)
    sticky_scope: StickyScope | None = None
    #: the setter whose write the entry observes, and what that write puts in the flag
    set_by: str | None = None
    set_value: WrittenValue | None = None


@record
class SetterFinding:
    function: str
    kind: SetterKind
    value: str  # what it sets the flag to: True, False, None, constant, restore, unknown
    location: Location
    hazards: tuple[HazardKind, ...] = ()
    #: it refuses nested use before it sets the flag (``assert not FLAG``,
    #: ``if FLAG: raise``): nesting fails loudly, so a constant reset is no FT102
    nesting_guarded: bool = False


@record
class ReaderFinding:
    function: str
    location: Location
    via: str | None = None


@record
class Hazard:
    """A hazard in a setter: the rule's one-line ``summary`` and what this
    instance is about (``detail``), kept apart so reporters need not split text."""

    code: str
    kind: HazardKind
    function: str
    location: Location
    summary: str
    detail: str = ""

    @property
    def message(self) -> str:
        """Summary and detail in one line, as the JSON report gives them."""
        return f"{self.summary}: {self.detail}" if self.detail else self.summary


@record
class FlagReport:
    qualname: str
    location: Location
    initial: str
    setters: tuple[SetterFinding, ...]
    readers: tuple[ReaderFinding, ...]
    entries: tuple[EntryVerdict, ...]
    hazards: tuple[Hazard, ...]


@record
class BaselineOutcome:
    """What a baseline did to a report: ``matched`` findings were in it (and left the
    report); ``stale`` of its entries matched nothing (fixed, or changed beyond recognition)."""

    path: str
    matched: int
    stale: int


@record
class AnalysisReport:
    flags: tuple[FlagReport, ...]
    errors: tuple[Diagnostic, ...]
    files: int = 0
    lines: int = 0
    seconds: float = 0.0
    #: findings dropped by ``# flagtrace: ignore`` comments and ignored codes
    suppressed: int = 0
    baseline: BaselineOutcome | None = None
    #: discovered entry points not judged because they are tests (``--include-tests``)
    entries_left_out: int = 0
    #: the ``--assume`` facts, each with the guards it decided
    assumptions: tuple[AssumptionUse, ...] = ()
    #: the program roots found (``__main__`` modules, console scripts, configured ones)
    roots: tuple[ProgramRoot, ...] = ()
    #: jedi's time budget ran out before it was asked about every unresolved call
    #: a verdict rested on: those verdicts may say less than a larger budget's
    jedi_out_of_budget: bool = False


@record
class FlagInventory:
    """One flag as ``flagtrace scan`` lists it: a module global some function writes."""

    qualname: str
    location: Location  # the module-level assignment
    initial: str
    #: functions that set it (the ones ``check`` would analyse), with their hazard kinds
    setters: tuple[SetterFinding, ...]
    #: every function that writes it (setters, resets, ``del``), sorted
    writers: tuple[str, ...]
    #: functions that just return it (calling one is a read)
    accessors: tuple[str, ...]
    #: read sites: direct reads, and calls of accessors
    reads: int
    #: distinct modules those reads are in
    reader_modules: int
    hazards: tuple[Hazard, ...]


@record
class ScanReport:
    """What ``flagtrace scan`` reports: every flag, riskiest first (hazards, then
    readers in more modules, then more reads)."""

    flags: tuple[FlagInventory, ...]
    errors: tuple[Diagnostic, ...]
    files: int = 0
    lines: int = 0
    seconds: float = 0.0


# --------------------------------------------------------------------------- review


class Change(Word):
    """What a change (base to head) did to a finding, reader or setter."""

    NEW = "new"  # the head has it, the base had not
    FIXED = "fixed"  # the base had it, the head has not (findings); REMOVED for readers/setters
    REMOVED = "removed"


@record
class RelatedLocation:
    """A place a review finding refers to besides its anchor: the entry point, the
    set site, the read (``role`` says which, ``message`` what happens there)."""

    role: str  # "entry", "set", "read", "setter", "call"
    location: Location
    message: str


@record
class ReviewFinding:
    """A finding one side of a review has and the other has not, matched by fingerprint
    (``flagtrace.fingerprint``), never by line.

    ``location`` is the anchor: for a NEW finding, the head-side changed line that
    causes it (the new read, the edited setter line, the new call or ``with`` on the
    witness), else the finding's own place with ``anchored`` False; for a FIXED one,
    its place in the base (paths are repository-relative on both sides).
    ``verdict``/``hazard`` carry the finding itself (the witness of an FT001 from the
    side that has it).
    """

    change: Change
    code: str  # rules.OBSERVES_SET or a hazard code
    flag: str
    function: str  # the entry (FT001) or the setter (hazards)
    location: Location
    anchored: bool
    message: str
    fingerprint: str  # Fingerprint.digest
    related: tuple[RelatedLocation, ...] = ()
    verdict: EntryVerdict | None = None
    hazard: Hazard | None = None


@record
class FlagChanges:
    """What a change did to one flag's readers and setters (matched by function and
    normalised line text), besides the findings."""

    flag: str
    readers_added: tuple[ReaderFinding, ...] = ()
    readers_removed: tuple[ReaderFinding, ...] = ()
    setters_added: tuple[SetterFinding, ...] = ()
    setters_removed: tuple[SetterFinding, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.readers_added or self.readers_removed or self.setters_added or self.setters_removed
        )


@record
class ReviewReport:
    """What ``flagtrace review`` reports: the difference a change makes to the flags.

    ``base``/``head`` are the revisions as given and ``base_commit``/``head_commit``
    the commits they name (``head_commit`` None for the work tree). ``flags`` were
    compared (configured, or every flag either side has); ``changes`` has a row only
    for flags whose readers or setters changed; ``findings`` lists NEW then FIXED,
    each by path and line. ``changed_files`` are repository-relative.
    """

    base: str
    base_commit: str
    head: str | None
    head_commit: str | None
    flags: tuple[str, ...]
    findings: tuple[ReviewFinding, ...]
    changes: tuple[FlagChanges, ...]
    changed_files: tuple[str, ...]
    errors: tuple[Diagnostic, ...] = ()
    seconds: float = 0.0

    @property
    def new(self) -> tuple[ReviewFinding, ...]:
        return tuple(f for f in self.findings if f.change is Change.NEW)

    @property
    def fixed(self) -> tuple[ReviewFinding, ...]:
        return tuple(f for f in self.findings if f.change is Change.FIXED)
