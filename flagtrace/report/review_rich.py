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

from rich.text import Text

from flagtrace.model import Change, FlagChanges, Location, ReviewFinding, ReviewReport
from flagtrace.report.layout import buffer_console, strip_trailing
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


def _where(loc: Location) -> str:
    return f"{loc.path}:{loc.line}"


def _finding(f: ReviewFinding) -> Text:
    t = Text()
    new = f.change is Change.NEW
    t.append("new " if new else "fixed ", style="bold red" if new else "bold green")
    t.append(f"{f.code} ", style="bold")
    t.append(str(f.location))
    if new and not f.anchored:
        t.append("  (no changed line causes it: shown where it is)", style="dim")
    elif not new:
        t.append("  (in the base)", style="dim")
    t.append("\n   ")
    t.append(f.message)
    for r in f.related:
        t.append(f"\n   {r.role:<7}", style="dim")
        t.append(f"{_where(r.location)}  ", style="dim")
        t.append(r.message)
    return t


def _changes(c: FlagChanges) -> Text:
    t = Text(c.flag, style="bold")
    rows = [("+ reader", r.function, r.location) for r in c.readers_added] + [
        ("- reader", r.function, r.location) for r in c.readers_removed
    ]
    rows += [("+ setter", s.function, s.location) for s in c.setters_added]
    rows += [("- setter", s.function, s.location) for s in c.setters_removed]
    for sign, function, loc in rows:
        t.append(f"\n   {sign} ", style="green" if sign[0] == "+" else "red")
        t.append(function)
        t.append(f"  {_where(loc)}", style="dim")
    return t


def render(report: ReviewReport, options: RenderOptions) -> Iterator[str]:
    report = safe(report)  # no control character of the analysed code reaches the terminal
    console, buffer = buffer_console(options)
    console.print(Text(summary(report), style="bold"), overflow="fold")
    for f in report.findings:
        console.print(_finding(f), overflow="fold")
    if report.changes:
        console.print(Text("readers and setters:", style="dim"))
    for c in report.changes:
        console.print(_changes(c), overflow="fold")
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
