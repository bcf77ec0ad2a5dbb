"""JSON documents written a piece at a time, as ``json.dumps(doc, indent=2)`` writes them.

Why: a report's long lists (a call graph's edges, a check's flags with every entry's
witness, a SARIF log's results) are the document's bulk. Made as one dict and then one
string, a ``check`` of all 144 flags of SGLang 0.5.9 (870 MB of JSON) took 5.1 GiB, its
SARIF log (857 MB) 5.2 GiB. Here a long list is an iterator in the document: each of its
items becomes text and is written before the next one is made. The text is exactly
``json.dumps(document, indent=2) + "\\n"`` of the same document with every iterator made
a list (``tests/test_json_pieces.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

#: a document's top-level keys in order, each with its value; a long list as an
#: iterator, made as it is written
Parts = Iterable[tuple[str, Any]]


def render(parts: Parts) -> Iterator[str]:
    """The text of the document whose top-level keys and values ``parts`` gives in order
    (a value is made when the text reaches it)."""
    yield from _dict_chunks(iter(parts), 0)
    yield "\n"


def dumps(document: Any) -> Iterator[str]:
    """The text of ``document``, whose lists may be iterators at any depth: the dicts
    and lists above an iterator are written key by key and item by item, everything
    else (an iterator's items too) whole."""
    yield from _chunks(document, 0)
    yield "\n"


def document(parts: Parts) -> dict[str, Any]:
    """The same document as one dict (small reports, tests)."""
    return {key: made(value) for key, value in parts}


def made(value: Any) -> Any:
    """``value`` with every iterator in it made a list."""
    if isinstance(value, Iterator):
        return [made(item) for item in value]
    if isinstance(value, dict):
        return {k: made(v) for k, v in value.items()}
    if isinstance(value, list):
        return [made(item) for item in value]
    return value


def _chunks(value: Any, depth: int) -> Iterator[str]:
    if isinstance(value, Iterator):
        return _list_chunks(value, depth, whole=True)
    if isinstance(value, dict) and _holds_iterator(value):
        return _dict_chunks(iter(value.items()), depth)
    if isinstance(value, list) and _holds_iterator(value):
        return _list_chunks(iter(value), depth, whole=False)
    return iter((_whole(value, depth),))


def _dict_chunks(pairs: Iterator[tuple[Any, Any]], depth: int) -> Iterator[str]:
    pad = "\n" + "  " * (depth + 1)
    first = True
    for key, value in pairs:
        # a key as ``json.dumps`` writes one: a string, or a number's text quoted
        name = key if isinstance(key, str) else json.dumps(key)
        yield ("{" if first else ",") + pad + json.dumps(name) + ": "
        first = False
        yield from _chunks(value, depth + 1)
    yield "{}" if first else "\n" + "  " * depth + "}"


def _list_chunks(items: Iterator[Any], depth: int, whole: bool) -> Iterator[str]:
    """A list item by item; an iterator's items (``whole``) are not searched for
    iterators of their own: they are the bulk, and are written as one piece each."""
    pad = "\n" + "  " * (depth + 1)
    first = True
    for item in items:
        prefix = ("[" if first else ",") + pad
        first = False
        if whole:
            yield prefix + _whole(item, depth + 1)
        else:
            yield prefix
            yield from _chunks(item, depth + 1)
    yield "[]" if first else "\n" + "  " * depth + "]"


def _whole(value: Any, depth: int) -> str:
    """``value`` in one piece, indented for ``depth`` (JSON text has no raw newline
    inside a string, so indenting every line is safe)."""
    return json.dumps(value, indent=2).replace("\n", "\n" + "  " * depth)


def _holds_iterator(value: dict[Any, Any] | list[Any]) -> bool:
    """Whether an iterator is somewhere in ``value``'s dicts and lists."""
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Iterator):
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False
