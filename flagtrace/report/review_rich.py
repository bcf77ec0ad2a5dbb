"""``flagtrace review --format rich`` (the default): what the change does to the flags,
for a person at a terminal or reading a CI log.

The summary comes first ("2 new leaks, 1 hazard fixed", or "this change touches no
flag"), because it is all most runs need; then each new finding, anchored on the
line the change made, with where the entry, the set and the read are; the fixed
ones; the readers and setters that came or went, per flag; and input errors.

Why blocks and not a table, as in ``scan``: qualified names are what the reader
came for, and a table at 80 columns cuts or folds them; a block gives each the
whole width, wrapped, never cut."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from flagtrace.model import Change, FlagChanges, ReviewFinding, ReviewReport
from flagtrace.report.layout import (
    Short,
    buffer_console,
    dir_prefix,
    dotted_prefix,
    grid,
    strip_trailing,
)
from flagtrace.report.text import safe
from flagtrace.rules import OBSERVES_SET

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the text is read where it is printed, errors included
HUMAN = True


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(report: ReviewReport) -> str:
    """One line: what is new and what is fixed, or that nothing about the flags changed."""

    def count(change: Change, leak: bool) -> int:
        return sum(
            1 for f in report.findings if f.change is change and (f.code == OBSERVES_SET) == leak
        )

    parts = []
    for n, text in (
        (count(Change.NEW, True), "new leak"),
        (count(Change.NEW, False), "new hazard"),
    ):
        if n:
            parts.append(_plural(n, text))
    for n, word in ((count(Change.FIXED, True), "leak"), (count(Change.FIXED, False), "hazard")):
        if n:
            parts.append(f"{_plural(n, word)} fixed")
    if parts:
        return ", ".join(parts)
    if report.changes:
        return (
            "no new or fixed findings; "
            + _plural(len(report.changes), "flag")
            + (" with readers or setters changed")
        )
    return "this change touches no flag"


def _shortener(report: ReviewReport) -> Short:
    """The package prefix and directory every name and path shown shares (stated once)."""
    names = [f.function for f in report.findings] + [c.flag for c in report.changes]
    names += [r.function for c in report.changes for r in (*c.readers_added, *c.readers_removed)]
    names += [s.function for c in report.changes for s in (*c.setters_added, *c.setters_removed)]
    paths = [f.location.path for f in report.findings]
    paths += [r.location.path for f in report.findings for r in f.related]
    return Short(dotted_prefix(names), dir_prefix(paths))


def _finding(f: ReviewFinding, short: Short) -> Group:
    """A finding: what changed, where it is anchored, its message, then the places it
    refers to, each a row whose text wraps under itself."""
    head = Text()
    new = f.change is Change.NEW
    head.append("new " if new else "fixed ", style="bold red" if new else "bold green")
    head.append(f"{f.code} ", style="bold")
    head.append(f"{short.where(f.location)}:{f.location.column}")
    if new and not f.anchored:
        head.append("  (no changed line causes it: shown where it is)", style="dim")
    elif not new:
        head.append("  (in the base)", style="dim")
    rows = [(Text("  "), Text(f.message))]
    for r in f.related:
        text = Text(short.where(r.location), style="dim")
        text.append(f"\n{r.message}")
        rows.append((Text(f"  {r.role}", style="dim"), text))
    return Group(head, grid(rows))


def _changes(c: FlagChanges, short: Short) -> Group:
    rows = [("+ reader", r.function, r.location) for r in c.readers_added] + [
        ("- reader", r.function, r.location) for r in c.readers_removed
    ]
    rows += [("+ setter", s.function, s.location) for s in c.setters_added]
    rows += [("- setter", s.function, s.location) for s in c.setters_removed]
    lines = []
    for sign, function, loc in rows:
        text = Text(short.name(function))
        text.append(f"  {short.where(loc)}", style="dim")
        lines.append((Text(f"  {sign}", style="green" if sign[0] == "+" else "red"), text))
    return Group(Text(short.name(c.flag), style="bold"), grid(lines))


def render(report: ReviewReport, options: RenderOptions) -> Iterator[str]:
    report = safe(report)  # no control character of the analysed code reaches the terminal
    console, buffer = buffer_console(options)
    console.print(Text(summary(report), style="bold"), overflow="fold")
    short = _shortener(report)
    stated = [f"names are relative to {short.names}"] if short.names else []
    stated += [f"paths to {short.paths}"] if short.paths else []
    if stated and (report.findings or report.changes):
        console.print(Text(f"below, {' and '.join(stated)}", style="dim"))
    for f in report.findings:
        console.print(_finding(f, short))
    if report.changes:
        console.print(Text("readers and setters:", style="dim"))
    for c in report.changes:
        console.print(_changes(c, short))
    for d in report.errors:
        console.print(Text(f"error: {d}", style="red"), overflow="fold")
    head = f"{report.head} ({report.head_commit[:10]})" if report.head_commit else "the work tree"
    console.print(
        Text(
            f"{report.base} ({report.base_commit[:10]}) -> {head}: "
            f"{_plural(len(report.changed_files), 'file')} changed, "
            f"{_plural(len(report.flags), 'flag')} compared in {report.seconds:.1f}s",
            style="dim",
        ),
        overflow="fold",
    )
    yield strip_trailing(buffer.getvalue())
