"""``flagtrace scan --format rich`` (the default): one block per flag, riskiest first:
its qualified name and hazard codes, how widely it is read, its setters, then each
hazard with where it is.

Why blocks and not a table: on SGLang a table at 80 columns folded every qualified
name over five lines (2,500 lines for 144 flags); a block gives each name the whole
width, and nothing is cut, only wrapped."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from flagtrace.model import FlagInventory, ScanReport

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the text is read where it is printed, errors included
HUMAN = True


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _block(rank: int, f: FlagInventory) -> Text:
    t = Text()
    t.append(f"{rank}. ", style="dim")
    t.append(f.qualname, style="bold")
    codes = sorted({h.code for h in f.hazards})
    if codes:
        t.append("  " + " ".join(codes), style="bold red")
    t.append(
        f"\n   {_plural(f.reads, 'read')} in {_plural(f.reader_modules, 'module')}, "
        f"{_plural(len(f.accessors), 'accessor')}, {_plural(len(f.writers), 'writer')}",
        style="dim",
    )
    for s in f.setters:
        t.append("\n   set by ")
        t.append(s.function)
        t.append(f" ({s.kind.value}, {s.value}) {s.location.path}:{s.location.line}", style="dim")
    if not f.setters:
        t.append("\n   only reset or deleted by " + ", ".join(f.writers), style="dim")
    for h in f.hazards:
        t.append(f"\n   {h.code} ", style="bold red")
        t.append(f"{h.location.path}:{h.location.line} ")
        t.append(h.detail or h.summary)
    return t


def render(report: ScanReport, options: RenderOptions) -> Iterator[str]:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=options.width,
        color_system=options.terminal,
        force_terminal=options.terminal is not None,
        no_color=not options.color,
        legacy_windows=False,
        highlight=False,
    )
    for rank, f in enumerate(report.flags, 1):
        console.print(_block(rank, f), overflow="fold")
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
    yield buffer.getvalue()
