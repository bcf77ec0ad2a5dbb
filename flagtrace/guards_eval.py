"""Three-valued evaluation of guards under facts: true, false, or unknown.

The guards flagtrace records (``model.Guard``, parsed as ``model.GuardExpr``) are
evaluated Kleene-style: ``and``/``or``/``not``, ``is None``/``is not None``,
``==``/``!=``/``<``.../``in``/``not in`` against constants, the truthiness of a
name, attribute or call, and a local assigned once in the guard's function (its
value expression, evaluated in turn). What a fact does not decide is *unknown*,
and an unknown guard never prunes anything: only a guard that is surely false
under the facts does.

Every decision carries the facts it rests on (``Decision.facts``), so a pruned
hop can name the assumption that pruned it. The interface is meant for any
source of facts (``Env``): the ``--assume`` facts (``AssumedEnv``), and facts
flagtrace derives itself (constructor constants, attribute nullness) can supply
their own ``Env`` and reuse ``evaluate``.
"""

from __future__ import annotations

import ast
import enum
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from flagtrace.assume import NO_VALUE, Fact, Facts, literal
from flagtrace.model import (
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
    Scope,
)

__all__ = [
    "AssumedEnv",
    "Decision",
    "Env",
    "GuardEvaluator",
    "Truth",
    "evaluate",
    "parse_guard",
    "value_of",
]

#: how deep single-assignment locals are expanded (``a = b and c``; ``if a``)
MAX_LOCAL_DEPTH = 4
#: value texts longer than this are not parsed for expansion
MAX_LOCAL_TEXT = 2000


class Truth(enum.Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    def negate(self) -> Truth:
        if self is Truth.TRUE:
            return Truth.FALSE
        if self is Truth.FALSE:
            return Truth.TRUE
        return self


@dataclass(frozen=True, slots=True)
class Decision:
    """What a guard evaluates to, and the facts that decided it (empty when unknown)."""

    truth: Truth
    facts: tuple[Fact, ...] = ()

    @property
    def false(self) -> bool:
        return self.truth is Truth.FALSE


UNKNOWN = Decision(Truth.UNKNOWN)


class Env(Protocol):
    """Where evaluation gets its facts from."""

    def value(self, expr: GuardPath | GuardCall) -> tuple[object, tuple[Fact, ...]] | None:
        """The known value of a name, attribute chain or call, with the facts it
        rests on; None when nothing is known."""

    def local(self, name: str) -> GuardExpr | None:
        """The value expression of ``name`` when it is a local assigned once."""


def evaluate(expr: GuardExpr | None, env: Env, depth: int = 0) -> Decision:
    """The truth of ``expr`` under ``env``."""
    if expr is None:
        return UNKNOWN
    if isinstance(expr, GuardNot):
        d = evaluate(expr.operand, env, depth)
        return Decision(d.truth.negate(), d.facts)
    if isinstance(expr, GuardBool):
        return _bool(expr, env, depth)
    if isinstance(expr, GuardCompare):
        return _compare(expr, env, depth)
    value, facts = value_of(expr, env, depth)
    if value is not NO_VALUE:
        try:
            return Decision(Truth.TRUE if value else Truth.FALSE, facts)
        except Exception:  # a literal without a truth value cannot happen; be safe
            return UNKNOWN
    if isinstance(expr, GuardPath) and "." not in expr.path and depth < MAX_LOCAL_DEPTH:
        expansion = env.local(expr.path)
        if expansion is not None:
            return evaluate(expansion, env, depth + 1)
    return UNKNOWN


def value_of(expr: GuardExpr, env: Env, depth: int = 0) -> tuple[object, tuple[Fact, ...]]:
    """The constant ``expr`` evaluates to under ``env`` (``NO_VALUE`` if unknown)."""
    if isinstance(expr, GuardConst):
        return literal(expr.value), ()
    if isinstance(expr, GuardUnknown):  # a literal display: ``("a", "b")``, or ``n % 2``
        value = literal(expr.text)
        if value is NO_VALUE and depth < MAX_LOCAL_DEPTH:
            return _arithmetic(expr.text, env, depth + 1)
        return value, ()
    if isinstance(expr, (GuardPath, GuardCall)):
        known = env.value(expr)
        if known is not None:
            return known
        if isinstance(expr, GuardPath) and "." not in expr.path and depth < MAX_LOCAL_DEPTH:
            expansion = env.local(expr.path)
            if expansion is not None:
                return value_of(expansion, env, depth + 1)
        return NO_VALUE, ()
    d = evaluate(expr, env, depth)
    if d.truth is Truth.UNKNOWN:
        return NO_VALUE, ()
    return d.truth is Truth.TRUE, d.facts


#: integer arithmetic a guard may do on constants and locals (``n % 2 == 1``)
_ARITHMETIC: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
}
#: operands larger than this are not multiplied (the text is untrusted)
_MAX_OPERAND = 1 << 32


def arithmetic_operands(text: str) -> tuple[type[ast.operator], GuardExpr, GuardExpr] | None:
    """``a OP b`` with ``OP`` one of ``+ - * % //``: the operator and both operands
    in the guard vocabulary; None for anything else."""
    if len(text) > MAX_LOCAL_TEXT:
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.BinOp) or type(node.op) not in _ARITHMETIC:
        return None
    source = text.strip()
    try:
        return type(node.op), _from_ast(node.left, source), _from_ast(node.right, source)
    except RecursionError:
        return None


def _arithmetic(text: str, env: Env, depth: int) -> tuple[object, tuple[Fact, ...]]:
    """The value of ``a OP b`` on two known integers (``NO_VALUE`` otherwise)."""
    parts = arithmetic_operands(text)
    if parts is None:
        return NO_VALUE, ()
    op, left_expr, right_expr = parts
    left, lf = value_of(left_expr, env, depth)
    right, rf = value_of(right_expr, env, depth)
    if type(left) is not int or type(right) is not int:
        return NO_VALUE, ()
    if abs(left) > _MAX_OPERAND or abs(right) > _MAX_OPERAND:
        return NO_VALUE, ()
    try:
        return _ARITHMETIC[op](left, right), tuple(dict.fromkeys((*lf, *rf)))
    except ZeroDivisionError:
        return NO_VALUE, ()


def _bool(expr: GuardBool, env: Env, depth: int) -> Decision:
    """Kleene: ``and`` is false if one operand is, true if all are; ``or`` dually.
    A decided result names the facts of the operands that decide it."""
    decisive = Truth.FALSE if expr.op == "and" else Truth.TRUE
    unknown = False
    facts: list[Fact] = []
    for operand in expr.operands:
        d = evaluate(operand, env, depth)
        if d.truth is decisive:
            return Decision(decisive, d.facts)
        if d.truth is Truth.UNKNOWN:
            unknown = True
        else:
            facts.extend(d.facts)
    if unknown:
        return UNKNOWN
    return Decision(decisive.negate(), tuple(dict.fromkeys(facts)))


_ORDER: dict[str, Callable[[Any, Any], object]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
#: values whose identity Python guarantees (``x is None``, ``x is True``)
_SINGLETONS = (None, True, False)


def _compare(expr: GuardCompare, env: Env, depth: int) -> Decision:
    left, lf = value_of(expr.left, env, depth)
    right, rf = value_of(expr.right, env, depth)
    if left is NO_VALUE or right is NO_VALUE:
        return UNKNOWN
    facts = tuple(dict.fromkeys((*lf, *rf)))
    op = expr.op
    result: object
    try:
        if op in ("is", "is not"):
            if not any(left is s or right is s for s in _SINGLETONS):
                return UNKNOWN  # identity of other constants is an implementation detail
            same = left is right
            result = same if op == "is" else not same
        elif op in ("in", "not in"):
            if not isinstance(right, (tuple, frozenset, str, bytes)):
                return UNKNOWN
            found = left in right
            result = found if op == "in" else not found
        elif op in _ORDER:
            result = _ORDER[op](left, right)
        else:
            return UNKNOWN
    except Exception:  # ``1 < "a"``: Python would raise; say nothing
        return UNKNOWN
    return Decision(Truth.TRUE if result else Truth.FALSE, facts)


# --------------------------------------------------------------------------- locals


def unparen(text: str) -> str:
    """``(a and b)`` -> ``a and b`` when the parentheses wrap the whole text (a guard
    shown on its own, or negated, needs none of its source's)."""
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        depth = 0
        for i, ch in enumerate(t):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(t) - 1:
                return t
        t = t[1:-1].strip()
    return t


def parse_guard(text: str) -> GuardExpr:
    """``text`` (an expression's source) in the guard vocabulary, as the indexer
    parses guards (``expressions.guard_expr``), read with ``ast`` (parsing runs
    nothing). Anything it cannot read is ``GuardUnknown``."""
    if len(text) > MAX_LOCAL_TEXT:
        return GuardUnknown(text)
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return GuardUnknown(text)
    try:
        return _from_ast(node, text.strip())
    except RecursionError:
        return GuardUnknown(text)


_AST_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


def _from_ast(node: ast.expr, source: str) -> GuardExpr:
    def text(n: ast.AST) -> str:
        return ast.get_source_segment(source, n) or ast.unparse(n)

    if isinstance(node, ast.Name):
        if node.id in ("True", "False", "None"):
            return GuardConst(node.id)
        return GuardPath(node.id)
    if isinstance(node, ast.Constant):
        return GuardConst(text(node))
    if isinstance(node, ast.Attribute):
        path = _ast_path(node)
        return GuardPath(path) if path else GuardUnknown(text(node))
    if isinstance(node, ast.Call):
        path = _ast_path(node.func)
        if path:
            args = [text(a) for a in node.args] + [text(k) for k in node.keywords]
            return GuardCall(path, ", ".join(args))
        return GuardUnknown(text(node))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return GuardNot(_from_ast(node.operand, source))
    if isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        return GuardBool(op, tuple(_from_ast(v, source) for v in node.values))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _AST_OPS:
        return GuardCompare(
            _from_ast(node.left, source),
            _AST_OPS[type(node.ops[0])],
            _from_ast(node.comparators[0], source),
        )
    return GuardUnknown(text(node))


def _ast_path(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def single_assignments(scope: Scope) -> dict[str, str]:
    """Locals of ``scope`` bound exactly once, by a plain ``name = value``
    (no parameter, no augmented or unpacking assignment, no ``global`` or
    ``nonlocal``): name -> the value's source."""
    counts: dict[str, int] = {}
    texts: dict[str, str] = {}
    plain: set[str] = set()
    for a in scope.assignments:
        name = a.target.name
        if name is None:
            continue
        counts[name] = counts.get(name, 0) + 1
        texts[name] = a.text
        if not a.augmented and not a.iterates:
            plain.add(name)
    excluded = {p.name for p in scope.params}
    excluded.update(scope.globals_declared, scope.nonlocals_declared)
    return {
        name: text
        for name, text in texts.items()
        if counts[name] == 1 and name in plain and text and name not in excluded
    }


# --------------------------------------------------------------------------- the --assume env


class AssumedEnv:
    """The ``--assume`` facts, seen from one scope (whose single-assignment
    locals expand); ``derived`` is asked what the facts do not decide (facts
    flagtrace derives for this scope itself, such as constructor constants)."""

    def __init__(
        self, facts: Facts, locals_: dict[str, str] | None = None, derived: Env | None = None
    ) -> None:
        self.facts = facts
        self.texts = locals_ or {}
        self.derived = derived
        self._parsed: dict[str, GuardExpr | None] = {}

    def value(self, expr: GuardPath | GuardCall) -> tuple[object, tuple[Fact, ...]] | None:
        fact = self.facts.lookup(expr)
        if fact is None:
            return self.derived.value(expr) if self.derived is not None else None
        return fact.value, (fact,)

    def local(self, name: str) -> GuardExpr | None:
        if name not in self._parsed:
            text = self.texts.get(name)
            parsed = parse_guard(text) if text else None
            if isinstance(parsed, GuardUnknown):
                parsed = None
            self._parsed[name] = parsed
        return self._parsed[name]


class GuardEvaluator:
    """Evaluates the guards of a program's scopes under ``facts``, memoised.

    ``guard`` answers for one guard (its negation applied); ``first_false`` finds
    the guard of a hop that is surely false. Guards whose text mentions no fact
    (nor a local whose value does) are unknown without being evaluated: on SGLang
    almost all of them."""

    def __init__(self, facts: Facts, derived: Callable[[Scope], Env | None] | None = None) -> None:
        """``derived``: for a scope, an ``Env`` of facts flagtrace derives itself
        there, asked after the ``--assume`` facts (None: none)."""
        self.facts = facts
        self.derived = derived
        self._envs: dict[str, AssumedEnv] = {}
        #: by (scope, text, negated): the decision depends on nothing else (``expr`` is
        #: ``text`` parsed), and hashing a ``Guard`` hashes its whole parsed expression
        #: (a million lookups when pruning vLLM)
        self._memo: dict[tuple[str, str, bool], Decision] = {}

    def _env(self, scope: Scope) -> AssumedEnv:
        env = self._envs.get(scope.qualname)
        if env is None:
            extra = self.derived(scope) if self.derived is not None else None
            env = AssumedEnv(self.facts, single_assignments(scope), extra)
            self._envs[scope.qualname] = env
        return env

    def local_text(self, scope: Scope, name: str) -> str | None:
        """The value's source of ``name`` when it is a local of ``scope`` assigned once."""
        return self._env(scope).texts.get(name)

    def _closed(self, scope: Scope, expr: GuardExpr | None, depth: int = 0) -> bool:
        """Is ``expr`` made of constants, and of locals assigned once whose values
        are (``if False``, ``n = 2; if n == 0``)? Then it needs no fact at all: its
        value is the same in every run (a local assigned once holds that value
        wherever it is bound)."""
        if expr is None or depth > MAX_LOCAL_DEPTH:
            return False
        if isinstance(expr, GuardConst):
            return True
        if isinstance(expr, GuardUnknown):
            if literal(expr.text) is not NO_VALUE:
                return True
            parts = arithmetic_operands(expr.text)
            return parts is not None and all(self._closed(scope, e, depth + 1) for e in parts[1:])
        if isinstance(expr, GuardNot):
            return self._closed(scope, expr.operand, depth)
        if isinstance(expr, GuardBool):
            return all(self._closed(scope, o, depth) for o in expr.operands)
        if isinstance(expr, GuardCompare):
            return self._closed(scope, expr.left, depth) and self._closed(scope, expr.right, depth)
        if isinstance(expr, GuardPath) and "." not in expr.path:
            return self._closed(scope, self._env(scope).local(expr.path), depth + 1)
        return False

    def _may_decide(self, scope: Scope, text: str) -> bool:
        if any(name in text for name in self.facts.names):
            return True
        env = self._env(scope)
        if env.derived is not None:
            # a derived env may say which names it knows (``derived.DerivedEnv.names``)
            names: frozenset[str] | None = getattr(env.derived, "names", None)
            if names is None or any(name in text for name in names):
                return True
        return any(
            name in text and any(n in value for n in self.facts.names)
            for name, value in env.texts.items()
        )

    def guard(self, scope: Scope, guard: Guard) -> Decision:
        if guard.expr is None or guard.kind in (GuardKind.EXCEPT, GuardKind.CASE):
            return UNKNOWN
        key = (scope.qualname, guard.text, guard.negated)
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        d = UNKNOWN
        if self._may_decide(scope, guard.text) or self._closed(scope, guard.expr):
            d = evaluate(guard.expr, self._env(scope))
            if guard.negated:
                d = Decision(d.truth.negate(), d.facts)
        self._memo[key] = d
        return d

    def constant(self, scope: Scope, text: str) -> object:
        """The value of the expression ``text`` in ``scope`` when it is made of
        constants and locals assigned once (``n > 1`` after ``n = 0``); ``NO_VALUE``
        otherwise (facts are not asked: a value needs no assumption here)."""
        expr = parse_guard(text)
        if not self._closed(scope, expr):
            return NO_VALUE
        return value_of(expr, self._env(scope))[0]

    def first_false(self, scope: Scope, guards: Sequence[Guard]) -> tuple[Guard, Decision] | None:
        """The first of ``guards`` that is false under the facts, with its decision."""
        for g in guards:
            d = self.guard(scope, g)
            if d.false:
                return g, d
        return None
