"""Assumptions: facts about the configuration a verdict is asked under (``--assume``).

A fact is ``PATH=VALUE``: ``server_args.enable_piecewise_cuda_graph=False``,
``self.is_draft_worker=True``, ``forward_batch.forward_mode.is_decode()=False``,
``envs.X=1``, ``x=None``. ``PATH`` is a dotted chain of names, whose last part may
be a call (``is_decode()``, ``is_extend(include_draft_extend_v2=True)``); ``VALUE``
is a Python literal (``True``, ``False``, ``None``, a number, a quoted string) or a
bare word, read as that string.

A fact *matches* a name or attribute chain by its tail: the fact's parts are the
last parts of the chain (``server_args.enable_piecewise_cuda_graph`` matches
``self.server_args.enable_piecewise_cuda_graph``, not ``server_args.enable``). A
call fact matches calls of such a chain with the same arguments as written
(whitespace aside). Facts are taken as true wherever they match, for the whole run:
they describe a configuration, not one moment.

This module only parses and matches; ``flagtrace.guards_eval`` evaluates guards with
them, and nothing here looks at the analysed code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from flagtrace.model import GuardCall, GuardPath

__all__ = ["Fact", "FactError", "Facts", "literal", "parse_fact", "parse_facts"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PATH = re.compile(rf"^({_NAME}(?:\.{_NAME})*)(\((.*)\))?$", re.DOTALL)
#: a literal longer than this is not worth reading (and ``ast`` should not see it)
MAX_LITERAL = 2000


class FactError(ValueError):
    """A fact that cannot be read: one line naming it (exit code 2)."""


class _NoValue:
    """The result of reading something that is no literal."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE = _NoValue()


@dataclass(frozen=True, slots=True)
class Fact:
    """One assumption: ``parts`` of the path, ``args`` for a call fact (None for a
    plain path) and the literal ``value``; ``text`` is the fact as the user wrote it."""

    text: str
    parts: tuple[str, ...]
    args: str | None
    value: object

    @property
    def path(self) -> str:
        return ".".join(self.parts)

    def matches(self, parts: Sequence[str], args: str | None) -> bool:
        """Does this fact speak about a chain ``parts`` (called with ``args``)?"""
        if (self.args is None) != (args is None):
            return False
        if self.args is not None and _squash(self.args) != _squash(args or ""):
            return False
        n = len(self.parts)
        return len(parts) >= n and tuple(parts[-n:]) == self.parts


def literal(text: str) -> object:
    """The value of a Python literal written as ``text`` (``True``, ``3``, ``'a'``,
    ``(1, 2)``, ``-1``), or ``NO_VALUE``. Reads, never runs: ``ast.literal_eval``
    on short text only."""
    text = text.strip()
    if not text or len(text) > MAX_LITERAL:
        return NO_VALUE
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO_VALUE


def parse_fact(text: str) -> Fact:
    """``PATH=VALUE`` as a ``Fact``; a ``FactError`` naming the fact otherwise."""
    path, sep, value_text = _split(text)
    if not sep:
        raise FactError(f"--assume {text!r}: expected PATH=VALUE, e.g. cfg.use_graph=False")
    m = _PATH.match(path.strip())
    if m is None:
        raise FactError(
            f"--assume {text!r}: {path.strip()!r} is not a dotted name "
            "(optionally ending in a call, e.g. mode.is_decode())"
        )
    args = m.group(3)
    if args is not None and "(" in m.group(1):
        raise FactError(f"--assume {text!r}: only the last part of the path may be a call")
    value_text = value_text.strip()
    if not value_text:
        raise FactError(f"--assume {text!r}: the value is missing")
    value = literal(value_text)
    if value is NO_VALUE:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", value_text):
            value = value_text  # a bare word: the string (``mode=fast``)
        else:
            raise FactError(
                f"--assume {text!r}: the value {value_text!r} is not a literal "
                "(True, False, None, a number or a quoted string)"
            )
    if isinstance(value, (list, dict, set)):
        raise FactError(f"--assume {text!r}: the value must be a constant, not a display")
    return Fact(text.strip(), tuple(m.group(1).split(".")), args, value)


def _split(text: str) -> tuple[str, str, str]:
    """Split at the first ``=`` outside brackets that is no part of ``==``/``!=``."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "=" and depth == 0:
            if text[i + 1 : i + 2] == "=" or text[i - 1 : i] in ("!", "<", ">", "="):
                raise FactError(f"--assume {text!r}: write PATH=VALUE, not a comparison")
            return text[:i], "=", text[i + 1 :]
    return text, "", ""


def parse_facts(texts: Iterable[str]) -> tuple[Fact, ...]:
    """Every fact, in order, each once; the first malformed one raises."""
    out: dict[str, Fact] = {}
    for text in texts:
        fact = parse_fact(text)
        out.setdefault(fact.text, fact)
    return tuple(out.values())


def _squash(text: str) -> str:
    return "".join(text.split())


class Facts:
    """The facts of a run, indexed by the last part of their path (a guard looks
    up only the few that could match it)."""

    def __init__(self, facts: Iterable[Fact]) -> None:
        self.facts = tuple(facts)
        self._by_last: dict[str, list[Fact]] = {}
        for fact in self.facts:
            self._by_last.setdefault(fact.parts[-1], []).append(fact)
        #: the last parts: a guard whose text has none of them cannot be decided by a fact
        self.names = frozenset(self._by_last)

    def __bool__(self) -> bool:
        return bool(self.facts)

    def lookup(self, expr: GuardPath | GuardCall) -> Fact | None:
        """The fact about ``expr``: the one with the longest matching path (the
        most specific), the first given among equals."""
        parts = expr.path.split(".")
        args = expr.args if isinstance(expr, GuardCall) else None
        best: Fact | None = None
        for fact in self._by_last.get(parts[-1], ()):
            if fact.matches(parts, args) and (best is None or len(fact.parts) > len(best.parts)):
                best = fact
        return best
