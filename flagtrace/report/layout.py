"""Layout helpers the human-readable reporters share: names and paths shortened by a
prefix stated once, and label/text grids whose text wraps under itself.

Why: at 80 columns (a pre-commit or CI log) a fully qualified SGLang name takes most of
a line; dropping the ``sglang.srt.`` every name shares, and saying so once, keeps the
part the reader came for, and a hanging indent keeps a wrapped record readable. Nothing
is ever cut.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flagtrace.model import Location

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


@dataclass(frozen=True, slots=True)
class Short:
    """Shortens names and paths by the prefixes stated once at the top of a flag's report."""

    names: str = ""  # a dotted prefix ending in ".", or ""
    paths: str = ""  # a directory ending in "/", or ""

    def name(self, qualname: str) -> str:
        return qualname[len(self.names) :] if qualname.startswith(self.names) else qualname

    def where(self, loc: Location) -> str:
        path = loc.path[len(self.paths) :] if loc.path.startswith(self.paths) else loc.path
        return f"{path}:{loc.line}"


def dotted_prefix(names: Iterable[str]) -> str:
    """The longest dotted prefix (``a.b.``) that every name has and none is equal to."""
    # each name once: a report of many flags repeats a few thousand names a million times
    parts = [n.split(".") for n in set(names)]
    if not parts:
        return ""
    common: list[str] = []
    for column in zip(*(p[:-1] for p in parts), strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return ".".join(common) + "." if common else ""


def dir_prefix(paths: Iterable[str]) -> str:
    """The longest directory (``a/b/``) that every path is under."""
    parts = [p.split("/")[:-1] for p in set(paths)]
    if not parts:
        return ""
    common: list[str] = []
    for column in zip(*parts, strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return "/".join(common) + "/" if common else ""


def grid(rows: Iterable[tuple[Text, Text]], indent: int = 0) -> Table:
    """Label and text side by side: wrapped text stays in its column (a hanging indent)."""
    grid = Table.grid(padding=(0, 1, 0, 0), pad_edge=False)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, text in rows:
        grid.add_row(Text(" " * indent) + label, text)
    return grid


#: spaces at the end of a line, before any escape codes that close its styles
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def strip_trailing(text: str) -> str:
    """``text`` without the spaces a grid pads its last column with (a log keeps them,
    and a diff of two reports shows them)."""
    return _TRAILING.sub(r"\1", text)


def buffer_console(options: RenderOptions) -> tuple[Console, io.StringIO]:
    """A rich console writing into a buffer for the destination ``options`` describes.

    Markup, emoji codes and highlighting are off: text from the analysed code
    (``[bold]``, ``:smile:``, numbers and paths) is printed as it is, never interpreted.
    """
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=options.width,
        color_system=options.terminal,
        force_terminal=options.terminal is not None,
        no_color=not options.color,
        legacy_windows=False,
        highlight=False,
        emoji=False,
        markup=False,
    )
    return console, buffer
