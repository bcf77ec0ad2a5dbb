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
    return _safe(value, limit, LINE_LIMIT)  # type: ignore[no-any-return]


def _safe(value: Any, limit: int, own: int) -> Any:
    if isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        return cap(escape(value), own)
    if isinstance(value, tuple):
        items = tuple(_safe(item, limit, own) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Location):
        # a path is escaped but never cut: reporters read the file by it (rich quotes lines)
        path = escape(value.path)
        return value if path is value.path else dataclasses.replace(value, path=path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            old = getattr(value, field.name)
            new = _safe(old, limit, PROSE_LIMIT if field.name in _PROSE_FIELDS else limit)
            if new is not old:
                changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value
