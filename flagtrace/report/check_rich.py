"""``flagtrace check --format rich`` (the default): verdicts first, the witness as a
tree with file:line and the source line, setters and hazards as tables."""

from __future__ import annotations

import io
import linecache
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from flagtrace.model import (
    AnalysisReport,
    EntryVerdict,
    FlagReport,
    Resolution,
    StepKind,
    WitnessStep,
)

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the text is read where it is printed, errors included
HUMAN = True

_STEP_STYLE = {
    StepKind.CALL: "cyan",
    StepKind.ENTER: "bold magenta",
    StepKind.SET: "bold magenta",
    StepKind.READ: "bold red",
}


def _source(step: WitnessStep) -> str:
    return linecache.getline(step.location.path, step.location.line).strip()


def _step_label(step: WitnessStep) -> Text:
    t = Text()
    t.append(f"{step.step.value:<5} ", style=_STEP_STYLE[step.step])
    if step.step is StepKind.CALL:
        t.append(f"{step.function} -> {step.callee}")
        if step.resolution is not None and step.resolution is not Resolution.DIRECT:
            t.append(
                f"  [{step.resolution.value}]",
                style="yellow" if step.resolution.weak else "dim",
            )
    elif step.step is StepKind.ENTER:
        t.append(f"{step.function} enters {step.callee}()  (flag set from here)")
    elif step.step is StepKind.SET:
        t.append(f"{step.function} calls sticky setter {step.callee}()")
    else:
        via = f" via {step.callee}()" if step.callee else ""
        t.append(f"{step.function} reads the flag{via}")
    if step.before_entry:
        t.append("  (before the entry runs)", style="dim")
    t.append(f"\n      {step.location.path}:{step.location.line}", style="dim")
    src = _source(step)
    if src:
        t.append(f"  {src}", style="green")
    if step.guard:
        t.append("\n      guarded by: ", style="dim")
        t.append(step.guard, style="yellow")
    return t


def _entry(e: EntryVerdict) -> Tree | Text:
    if e.observes_set:
        head = Text.assemble(
            ("OBSERVES SET ", "bold red"),
            (e.entry, "bold"),
            (f"  evidence: {e.evidence.value}", "dim"),
        )
        tree = Tree(head)
        tree.add(Text(e.reason, style="dim"))
        path = tree.add(Text("witness (entry first):", style="dim"))
        for i, step in enumerate(e.witness, 1):
            label = Text(f"{i:>2}. ", style="dim")
            label.append_text(_step_label(step))
            path.add(label)
        return tree
    head = Text.assemble(
        ("never observes set ", "bold green"),
        (e.entry, "bold"),
        (f"  evidence: {e.evidence.value}", "dim"),
    )
    tree = Tree(head)
    tree.add(Text(e.reason))
    for loc in e.unresolved_sites:
        tree.add(Text(f"unresolved call at {loc.path}:{loc.line}", style="yellow"))
    return tree


def _flag(f: FlagReport) -> Group:
    parts: list[RenderableType] = [
        Text.assemble(
            ("flag ", "bold"),
            (f.qualname, "bold cyan"),
            f"  (initially {f.initial}, {f.location.path}:{f.location.line})",
        )
    ]
    for e in f.entries:
        parts.append(_entry(e))
    if not f.entries:
        parts.append(Text("no entry point observes the flag set", style="green"))
    if f.setters:
        t = Table(title="setters", title_justify="left", show_edge=False)
        for col in ("function", "kind", "sets", "where", "hazards"):
            t.add_column(col)
        for s in f.setters:
            t.add_row(
                s.function,
                s.kind.value,
                s.value,
                f"{s.location.path}:{s.location.line}",
                ", ".join(kind.value for kind in s.hazards) or "-",
            )
        parts.append(t)
    if f.hazards:
        t = Table(title="hazards", title_justify="left", show_edge=False)
        for col in ("code", "hazard", "function", "where"):
            t.add_column(col)
        t.add_column("why", overflow="fold")
        for h in f.hazards:
            t.add_row(
                h.code,
                h.kind.value,
                h.function,
                f"{h.location.path}:{h.location.line}",
                h.detail or h.summary,
            )
        parts.append(t)
    parts.append(Text(f"{len(f.readers)} read site(s) of the flag", style="dim"))
    return Group(*parts)


def render(report: AnalysisReport, options: RenderOptions) -> Iterator[str]:
    """The report laid out by rich for the destination ``options`` describes, handed on
    flag by flag (rich writes into a buffer; the CLI writes the text where it goes)."""
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
    for f in report.flags:
        console.print(_flag(f))
        console.print()
        yield _take(buffer)
    for d in report.errors:
        console.print(Text(f"error: {d}", style="red"))
    if report.entries_left_out:
        n = report.entries_left_out
        console.print(
            Text(
                f"{n} discovered test entry point{'s' if n != 1 else ''} left out "
                "(--include-tests to judge them)",
                style="dim",
            )
        )
    console.print(
        Text(
            f"{report.files} files, {report.lines} lines analysed in {report.seconds:.1f}s",
            style="dim",
        )
    )
    yield _take(buffer)


def _take(buffer: io.StringIO) -> str:
    """What was written to ``buffer`` since the last call."""
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text
