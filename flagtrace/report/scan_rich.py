"""``flagtrace scan --format rich`` (the default): one block per flag, riskiest first:
its qualified name and hazard codes, how widely it is read, its setters, then each
hazard with where it is.

Why blocks and not a table: on SGLang a table at 80 columns folded every qualified
name over five lines (2,500 lines for 144 flags); a block gives each name the whole
width, and nothing is cut, only wrapped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from flagtrace.model import FlagInventory, ScanReport
from flagtrace.report.layout import (
    Short,
    buffer_console,
    dir_prefix,
    dotted_prefix,
    grid,
    strip_trailing,
)
from flagtrace.report.text import safe

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the text is read where it is printed, errors included
HUMAN = True


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _shortener(report: ScanReport) -> Short:
    """The prefixes every name and path of the inventory shares (stated once at the top)."""
    names = [f.qualname for f in report.flags]
    names += [s.function for f in report.flags for s in f.setters]
    paths = [f.location.path for f in report.flags]
    paths += [h.location.path for f in report.flags for h in f.hazards]
    return Short(dotted_prefix(names), dir_prefix(paths))


def _block(rank: int, f: FlagInventory, short: Short) -> Group:
    """A flag: its name and hazard codes, how widely it is read, each setter, each hazard,
    as label/text rows, so a wrapped name or message stays under itself."""
    head = Text(f"{rank}. ", style="dim")
    head.append(short.name(f.qualname), style="bold")
    codes = sorted({h.code for h in f.hazards})
    if codes:
        head.append("  " + " ".join(codes), style="bold red")
    pad = Text(" " * len(f"{rank}."))
    head.append(
        f"\n{pad}{_plural(f.reads, 'read')} in {_plural(f.reader_modules, 'module')}, "
        f"{_plural(len(f.accessors), 'accessor')}, {_plural(len(f.writers), 'writer')}",
        style="dim",
    )
    rows: list[tuple[Text, Text]] = []
    for s in f.setters:
        text = Text(short.name(s.function))
        text.append(f"\n{s.kind.value}, sets {s.value}, {short.where(s.location)}", style="dim")
        rows.append((pad + Text("set  "), text))
    if not f.setters:
        writers = ", ".join(short.name(w) for w in f.writers)
        rows.append((pad, Text(f"only reset or deleted by {writers}", style="dim")))
    for h in f.hazards:
        text = Text(short.where(h.location), style="dim")
        text.append(f"\n{h.detail or h.summary}", style="")
        rows.append((pad + Text(h.code, style="bold red"), text))
    return Group(head, grid(rows)) if rows else Group(head)


def render(report: ScanReport, options: RenderOptions) -> Iterator[str]:
    report = safe(report)  # no control character of the analysed code reaches the terminal
    console, buffer = buffer_console(options)
    short = _shortener(report)
    stated = [f"names are relative to {short.names}"] if short.names else []
    stated += [f"paths to {short.paths}"] if short.paths else []
    if stated:
        console.print(Text(f"below, {' and '.join(stated)}", style="dim"))
    for rank, f in enumerate(report.flags, 1):
        console.print(_block(rank, f, short))
    for d in report.errors:
        console.print(Text(f"error: {d}", style="red"))
    n = len(report.flags)
    hazardous = sum(1 for f in report.flags if f.hazards)
    console.print(
        Text(
            f"{_plural(n, 'flag')}, {hazardous} with hazards (flagtrace explain CODE); "
            f"{report.files} files, {report.lines} lines analysed in {report.seconds:.1f}s",
            style="dim",
        )
    )
    yield strip_trailing(buffer.getvalue())
