"""Text from the analysed code, made safe to show: escaped and capped.

The findings carry text that the analysed code chose: identifiers, paths, guard conditions,
call sources, initial values, and the source lines a reporter quotes. On a pull request from
a stranger that text is hostile. Two things go wrong when it is printed as it is:

* **control characters** (``ESC [ ... m``, ``ESC ] ... BEL`` hyperlinks, backspace, carriage
  return, the C1 range) are obeyed by a terminal or a CI log viewer, so a comment or a string
  literal can recolour, hide or rewrite what the report says ("no findings"); Unicode
  direction overrides (``U+202E``...) reorder what a reader sees the same way;
* **very long lines** (a minified or generated line, or a string literal of 10,000 characters
  on a witness line) bury the report.

So every reporter that writes text for people (``rich``, ``concise``, later ``markdown``)
shows such characters as Python escapes (``\\x1b``, ``\\u202e``), never raw, and caps what it
quotes (``LINE_LIMIT`` characters, the cut marked ``…``). The JSON formats (``json``,
``sarif``, ``rdjson``) need no escaping: ``json.dumps`` writes every control character as
``\\u00XX`` and the text stays exact for the tools that read it; they only cap the source lines
they quote (``cap``), as those are shown to people by whatever renders them.

Why one module: the markdown reporter needs the same escape before its own (code spans,
tables, mentions), and a terminal that sees one unescaped path is as forged as one that sees
them all. It imports only the model, like every reporter.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, TypeVar

from flagtrace.model import Location

#: characters longer than this in one quoted source line (or guard, call text, initial value)
#: are cut: about two lines of a wide terminal, enough to recognise any real line of code
LINE_LIMIT = 200
#: prose the engine writes (reasons, hazard messages) quotes source text too; it is longer
PROSE_LIMIT = 1000
#: the mark a cut string ends with
ELLIPSIS = "…"

#: C0 controls (newline and tab too: every value is shown on one line), DEL, the C1 range,
#: and the Unicode format characters that reorder or hide text (bidi embeddings, overrides
#: and isolates, zero-width marks, the BOM, the line and paragraph separators)
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)

#: the fields of the findings whose value is prose, capped at PROSE_LIMIT (the rest at LINE_LIMIT)
_PROSE_FIELDS = frozenset({"reason", "message", "detail", "summary"})

T = TypeVar("T")


#: the escapes everyone reads; any other character is written by its code
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` with every control and text-reordering character written as a Python escape:
    ``"a\\x1b[2Jb"`` shows as ``a\\x1b[2Jb``. Printable text (any script) is left alone."""
    return _UNSAFE.sub(_escape_char, text)


def cap(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def quote(line: str, limit: int = LINE_LIMIT) -> str:
    """A source line as a text report quotes it: stripped, escaped, then capped (so an escape
    cannot push the result past ``limit``)."""
    return cap(escape(line.strip()), limit)


def safe(value: T, limit: int = LINE_LIMIT) -> T:
    """``value`` (a report, or any record of the findings vocabulary) with every string in it
    escaped and capped: prose fields (``reason``, ``message``...) at ``PROSE_LIMIT``, every
    other string (names, paths, guards, call text, initial values) at ``limit``.

    Terminal reporters render ``safe(report)`` instead of the report, so no field can be
    forgotten (a new field of the model is covered the day it is added). Enum members (the
    vocabulary's words) are kept as they are; records are rebuilt only where a string changed,
    so a clean report costs one walk and no copies.
    """
    return _Escaper(limit).safe(value, LINE_LIMIT)  # type: ignore[no-any-return]


#: how ``_Escaper`` treats a value of each type, found once per type
_ENUM, _STR, _TUPLE, _LOCATION, _RECORD, _OTHER = range(6)
_KINDS: dict[type, int] = {str: _STR, tuple: _TUPLE, Location: _LOCATION}
#: values with no text in them
_PLAIN = frozenset({int, bool, float})
#: a record type's fields, each with whether it is prose
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _kind(t: type) -> int:
    kind = _KINDS.get(t)
    if kind is None:
        if issubclass(t, enum.Enum):
            kind = _ENUM
        elif issubclass(t, str):
            kind = _STR
        elif issubclass(t, tuple):
            kind = _TUPLE
        elif issubclass(t, Location):
            kind = _LOCATION
        elif dataclasses.is_dataclass(t):
            kind = _RECORD
            _FIELDS[t] = tuple((f.name, f.name in _PROSE_FIELDS) for f in dataclasses.fields(t))
        else:
            kind = _OTHER
        _KINDS[t] = kind
    return kind


class _Escaper:
    """One ``safe`` walk. A report shares its records (the report cache loads equal
    records as one object, and a witness's steps and guards recur across entries), so
    each record and tuple is made safe once per walk, by identity (every one of them is
    alive in the value walked, so no identity is reused), and each string once per cap.

    Why: walking every field of every record was 70 of 103 s of a check of all 144 flags
    of SGLang 0.5.9 rendered from the report cache (17M visits, ``dataclasses.fields``
    asked 3.5M times)."""

    __slots__ = ("limit", "_done", "_strings")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._done: dict[tuple[int, int], Any] = {}
        self._strings: dict[tuple[str, int], str] = {}

    def safe(self, value: Any, own: int) -> Any:
        kind = _kind(type(value))
        if kind == _STR:
            key = (value, own)
            done = self._strings.get(key)
            if done is None:
                done = self._strings[key] = cap(escape(value), own)
            return value if done == value else done
        if kind == _OTHER or kind == _ENUM:
            return value
        memo = (id(value), own)
        found = self._done.get(memo)
        if found is None:
            found = self._done[memo] = self._make_safe(value, kind, own)
        return found

    def _make_safe(self, value: Any, kind: int, own: int) -> Any:
        if kind == _TUPLE:
            items = tuple(self.safe(item, own) for item in value)
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if kind == _LOCATION:
            # a path is escaped but never cut: reporters read the file by it (rich quotes lines)
            path = escape(value.path)
            return value if path is value.path else dataclasses.replace(value, path=path)
        changes = {}
        limit = self.limit
        for name, prose in _FIELDS[type(value)]:
            old = getattr(value, name)
            if old is None or type(old) in _PLAIN:
                continue  # most fields of a witness: nothing to escape, no call
            new = self.safe(old, PROSE_LIMIT if prose else limit)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value
