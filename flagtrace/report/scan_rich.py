"""``flagtrace scan --format rich`` (the default): one table row per flag, riskiest
first, then each hazard on its own line with where it is.

Nothing is cut: cells fold long qualified names onto more lines rather than
ending them in an ellipsis, since the name is what the reader needs."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flagtrace.model import FlagInventory, ScanReport

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the text is read where it is printed, errors included
HUMAN = True


def _setters(f: FlagInventory) -> Text:
    t = Text()
    for i, s in enumerate(f.setters):
        if i:
            t.append("\n")
        t.append(s.function)
        t.append(f" ({s.kind.value}, {s.value})", style="dim")
    if not f.setters:
        t.append("resets only", style="dim")
    return t


def _codes(f: FlagInventory) -> Text:
    codes = sorted({h.code for h in f.hazards})
    return Text(" ".join(codes), style="bold red") if codes else Text("-", style="dim")


def _table(report: ScanReport) -> Table:
    table = Table(title="Flags (riskiest first)", title_justify="left", show_lines=True)
    table.add_column("flag", overflow="fold", ratio=3)
    table.add_column("setters", overflow="fold", ratio=4)
    table.add_column("reads", justify="right", no_wrap=True)
    table.add_column("accessors", justify="right", no_wrap=True)
    table.add_column("hazards", no_wrap=True)
    for f in report.flags:
        modules = f"{f.reader_modules} module{'s' if f.reader_modules != 1 else ''}"
        table.add_row(
            Text(f.qualname, style="bold"),
            _setters(f),
            f"{f.reads} in {modules}",
            str(len(f.accessors)),
            _codes(f),
        )
    return table


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
    if report.flags:
        console.print(_table(report))
    hazardous = [f for f in report.flags if f.hazards]
    if hazardous:
        console.print()
        console.print(Text("Hazards", style="bold"))
        for f in hazardous:
            for h in f.hazards:
                line = Text()
                line.append(f"{h.code} ", style="bold red")
                line.append(f"{h.location.path}:{h.location.line} ")
                line.append(f"{h.function}: ", style="bold")
                line.append(h.message)
                console.print(line, overflow="fold")
    for d in report.errors:
        console.print(Text(f"error: {d}", style="red"))
    n = len(report.flags)
    console.print(
        Text(
            f"{n} flag{'s' if n != 1 else ''}, {len(hazardous)} with hazards "
            "(flagtrace explain CODE); "
            f"{report.files} files, {report.lines} lines analysed in {report.seconds:.1f}s",
            style="dim",
        )
    )
    yield buffer.getvalue()
