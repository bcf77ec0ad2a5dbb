"""The value domain of resolution: what a name, attribute or call may hold.

A value is a plain 3-tuple ``(kind, name, bound)``: resolution builds and
hashes millions of them on a codebase the size of SGLang, and a tuple display
with a ``str``-based enum costs a tenth of a ``NamedTuple``'s constructor while
hashing at C speed. ``bound`` is 1 only for bound methods; every other value has
0. Read one by unpacking: ``kind, name, bound = value``.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from flagtrace.model import AttrExpr, ConstExpr, Expr

# ``Final``-like tuning constants, measured on SGLang and the standard library.
MAX_VALUES = 48  # a variable holding more distinct values stops growing
MAX_EXTERNAL_DEPTH = 5  # ``a.b.c.d.e.f``: deeper library names are not worth tracking
#: an answer of more distinct values than this is widened to ``WIDE`` (``RoundMemo.solve``)
WIDEN_AT = 4096
BUILTINS = frozenset(dir(builtins))


class Same:
    """A memo key that stands for one expression of the program (its identity, not
    its value: hashing a parsed expression hashes all of it).

    Why not its ``id()``: a stored program (``flagtrace.program_store``) keeps the
    round memo, and an ``id`` from the process that resolved means nothing in the
    one that loads it: the entry was never found again, and could have answered for
    another expression that happened to get that address. A ``Same`` is stored with
    the expression it stands for, and the loading dict hashes it by the new id."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj

    def __repr__(self) -> str:
        return f"Same({self.obj!r})"


class ValueKind(str, enum.Enum):
    """What a value is. A ``str`` mixin keeps hashing and equality at C speed
    (a plain ``Enum`` hashes in Python), and the one-letter values keep the
    order of values, which decides what a capped variable keeps, as it was."""

    FUNCTION = "f"  # a function or lambda (``bound`` 1: a bound method)
    CLASS = "c"  # an analysed class
    INSTANCE = "i"  # an instance of an analysed class
    MODULE = "m"  # an analysed module
    BUILTIN = "b"  # a builtin, by name
    EXTERNAL = "x"  # a dotted name outside the analysed code (and its instances)
    SUPER = "s"  # ``super()`` inside a method of the class ``name``
    GENERATOR = "g"  # the generator object a generator function returns
    CONTAINER = "k"  # a list/tuple/set/dict display, by ``ContainerExpr.origin``
    ANYTHING = "a"  # anything at all: an answer widened past ``WIDEN_AT`` values


Value = tuple[ValueKind, str, int]
Values = frozenset[Value]
EMPTY: Values = frozenset()

FUNCTION = ValueKind.FUNCTION
CLASS = ValueKind.CLASS
INSTANCE = ValueKind.INSTANCE
MODULE = ValueKind.MODULE
BUILTIN = ValueKind.BUILTIN
EXTERNAL = ValueKind.EXTERNAL
SUPER = ValueKind.SUPER
GENERATOR = ValueKind.GENERATOR
CONTAINER = ValueKind.CONTAINER
ANYTHING = ValueKind.ANYTHING

#: the one value of a widened answer: what an expression holds when it may hold
#: more than ``WIDEN_AT`` distinct values.
#:
#: Why: on torch, ``pytree.tree_map`` and ``__torch_function__`` make the returns
#: of a few hundred functions flow into each other, and one component of lookups
#: met answers of 16,000-37,000 values, each evaluation of it a minute: the
#: whole package never finished resolving. A value that can be that many things
#: tells a reader nothing it can follow. ``WIDE`` is the top of the domain: what
#: is read from it (an attribute, a call's result, an item, an element) is
#: ``WIDE`` again, a call of it is unresolved (and said so, as any unresolved
#: call is), and an answer holding it holds nothing else. Widening keeps the
#: rules monotone, so the answers still do not depend on the order of questions.
ANY_VALUE: Value = (ANYTHING, "*", 0)
WIDE: Values = frozenset({ANY_VALUE})


def order_key(value: Value) -> str:
    """The order in which a capped variable keeps values: the text of the value
    as it was first written (``('f', 'pkg.f', 1)``, ``('c', 'pkg.C')``), so that
    the cap keeps the same values it always kept."""
    kind, name, bound = value
    if kind is FUNCTION:
        return repr((kind.value, name, bound))
    return repr((kind.value, name))


def ordered(values: Collection[Value]) -> Iterable[Value]:
    """``values`` in a fixed order, where evaluating them can recurse.

    Why: a recursive lookup that meets itself is cut (it answers "nothing" and
    the outer lookup's partial answer is kept for the round), so which way a
    cycle is cut follows the order values are visited in. Sets of values iterate
    in the order of Python's per-process random string hashes; visited in sorted
    order, the same program always resolves to the same call graph, whatever
    ``PYTHONHASHSEED`` is.
    """
    size = len(values)
    if size < 2:
        return values
    if size < _SORT_CACHED_AT or type(values) is not frozenset:
        return sorted(values)
    found = _SORTED.get(values)
    if found is None:
        if len(_SORTED) >= _SORT_CACHE_SIZE:
            _SORTED.clear()
        found = _SORTED[values] = tuple(sorted(values))
    return found


#: ``ordered`` keeps the sorted order of sets of this many values or more, up to
#: ``_SORT_CACHE_SIZE`` sets (emptied when full, and by ``forget_orders`` when
#: resolution ends). Why: on SGLang 0.5.23 thousands of
#: lookups answer the same set of ~1,900 values, each visited in order by every
#: lookup that reads it; sorting it again each time was 6% of a cold run. A set
#: found here is one of the resolver's interned answers (``RoundMemo.interned``),
#: so finding it is a hash the set keeps and an identity test.
_SORT_CACHED_AT = 64
_SORT_CACHE_SIZE = 512
_SORTED: dict[Values, tuple[Value, ...]] = {}


def forget_orders() -> None:
    """Drop the orders ``ordered`` keeps (and the sets they keep alive)."""
    _SORTED.clear()


@dataclass(frozen=True, slots=True)
class ElementsExpr:
    """Resolution's marker for "the elements of ``value``": the target of
    ``for x in xs`` or of unpacking takes what iterating the value yields."""

    value: Expr


def key_text(key: Expr | None) -> str | None:
    """A container key we can match on: literal strings and numbers, kept apart
    (``d[1]`` and ``d["1"]`` are different keys)."""
    if isinstance(key, ConstExpr):
        text = key.value
        lowered = text.lower()
        for prefix in ("rb", "br", "b", "u", "r", ""):
            if lowered.startswith(prefix) and text[len(prefix) : len(prefix) + 1] in ("'", '"'):
                return "s:" + text[len(prefix) :].strip("'\"")
        return "n:" + text
    return None


def looks_like_class(dotted: str) -> bool:
    """``ext.Cls`` (CapWords) is a class; ``torch.zeros`` is a function whose
    result we know nothing about."""
    last = dotted.rpartition(".")[2]
    return last[:1].isupper()


#: the last part of a library value's name that stands for "some attribute"
ANY_ATTRIBUTE = "*"


def library_attribute(name: str, attr: str) -> Values:
    """``value.attr`` for the library value ``name``: a longer library name while
    it can name something the library defines (a module's member, a class's
    attribute: ``torch.nn.functional.relu``, ``torch.nn.Module.weight``). Past
    that (``torch.nn.Module.weight.data``: an attribute of an instance's
    attribute, which no name we can see defines) it is one value,
    ``torch.nn.Module.weight.*``, whatever attributes follow: still library
    code, so a call of it calls nothing of ours.

    Why: each such chain was a value of its own, and values that flow through
    parameters and fields collected every chain the program spells; SGLang
    0.5.23 had 1.67M call-site callees named so
    (``abc.ABC.scheduler.timesteps.input_layernorm``), more than its analysed
    ones. A class is a CapWords part after the first (``looks_like_class``)."""
    parts = name.split(".")
    if parts[-1] == ANY_ATTRIBUTE:
        return frozenset({(EXTERNAL, name, 0)})
    if len(parts) > MAX_EXTERNAL_DEPTH:
        return EMPTY
    if any(part[:1].isupper() for part in parts[1:-1]) and not parts[-1][:1].isupper():
        # ``Cls.attr`` (or ``Cls.Inner.attr``): its attributes are an instance's
        return frozenset({(EXTERNAL, f"{name}.{ANY_ATTRIBUTE}", 0)})
    return frozenset({(EXTERNAL, f"{name}.{attr}", 0)})


def root_of(expr: Expr) -> Expr:
    """The innermost base of an attribute chain (``a`` for ``a.b.c``)."""
    while isinstance(expr, AttrExpr):
        expr = expr.base
    return expr


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
