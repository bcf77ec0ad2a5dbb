"""JSON documents written a piece at a time, as ``json.dumps(doc, indent=2)`` writes them.

Why: a report's long lists (a call graph's edges, a check's flags with every entry's
witness) are the document's bulk. Made as one dict and then one string, a ``check`` of
all 144 flags of SGLang 0.5.9 (870 MB of JSON) took 5.7 GB; written here, each item
becomes text and is written before the next one is made. The text is exactly
``json.dumps(document(parts), indent=2) + "\\n"`` (``tests/test_json_pieces.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

#: a document's top-level keys in order, each with its value; a long list as an
#: iterator, made as it is written
Parts = Iterable[tuple[str, Any]]


def render(parts: Parts) -> Iterator[str]:
    """The document's text, a top-level value (or a list's item) per piece."""
    yield "{"
    first = True
    for key, value in parts:
        yield ("\n" if first else ",\n") + "  " + json.dumps(key) + ": "
        first = False
        if isinstance(value, Iterator):
            yield from _list_chunks(value)
        else:
            yield json.dumps(value, indent=2).replace("\n", "\n  ")
    yield "}\n" if first else "\n}\n"


def document(parts: Parts) -> dict[str, Any]:
    """The same document as one dict (small reports, tests)."""
    return {key: list(value) if isinstance(value, Iterator) else value for key, value in parts}


def _list_chunks(items: Iterator[Any]) -> Iterator[str]:
    """A top-level list value as ``json.dumps(..., indent=2)`` writes it, item by item
    (JSON text has no raw newline inside a string, so indenting every line is safe)."""
    empty = True
    for item in items:
        yield ("[\n    " if empty else ",\n    ") + json.dumps(item, indent=2).replace(
            "\n", "\n    "
        )
        empty = False
    yield "[]" if empty else "\n  ]"
