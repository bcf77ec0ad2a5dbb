"""``flagtrace check --format concise``: one finding per line, ``path:line:col: CODE message``,
as ruff and flake8 print them, sorted by path and line.

This is what the pre-commit hook prints: a hook's log is read in a terminal or a CI page
where tables and trees are noise, and editors and CI annotators already parse this shape.

Two kinds of line:

* a hazard (FT101..FT104) at the hazard's location: ``summary: detail`` and the setter;
* FT001 at a read's location: entries that can run this read while the flag is set. One
  line per (read, step that set the flag) pair, naming the entry with the shortest witness
  and how many others reach the same pair. Why not one line per entry: on SGLang 152
  discovered entries reach a handful of reads through one setter, and 152 lines that
  differ only in the entry's name bury the hazards; the pair is what a fix changes, and
  the JSON report lists every entry. With one entry (``--entry``) the line names just it.

Input errors are printed by the CLI on stderr, as for every format that is not for people.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from flagtrace.model import AnalysisReport, EntryVerdict, Location, StepKind, WitnessStep
from flagtrace.report.text import safe
from flagtrace.rules import OBSERVES_SET

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


def _key(step: WitnessStep | None) -> tuple[str, str, str, int]:
    if step is None:
        return ("", "", "", 0)
    return (step.function, step.callee or "", step.location.path, step.location.line)


def _printed(step: WitnessStep) -> WitnessStep:
    """``step`` with what a line prints of it escaped (``text.safe``), and nothing else:
    its guards' trees (not printed) were most of this report's time, 17 of 25 s for
    a check of SGLang's 144 flags from the report cache."""
    return replace(
        step,
        function=safe(step.function),
        callee=safe(step.callee),
        location=safe(step.location),
        guards=(),
    )


def _observations(flag: str, entries: tuple[EntryVerdict, ...]) -> Iterator[tuple[Location, str]]:
    """One FT001 line per (read, setting step) pair the observing entries reach."""
    groups: dict[tuple[object, ...], list[EntryVerdict]] = {}
    steps: dict[tuple[object, ...], tuple[WitnessStep, WitnessStep | None]] = {}
    for e in entries:
        if not e.observes_set:
            continue
        read = next((s for s in reversed(e.witness) if s.step is StepKind.READ), None)
        if read is None:
            continue
        setting = next((s for s in e.witness if s.step.sets_flag), None)
        read = _printed(read)
        setting = _printed(setting) if setting is not None else None
        key = (_key(read), _key(setting))
        groups.setdefault(key, []).append(e)
        steps[key] = (read, setting)
    for pair, members in groups.items():
        read, setting = steps[pair]
        first = min(members, key=lambda e: (len(e.witness), safe(e.entry)))
        who = safe(first.entry)
        if len(members) > 1:
            who += f" and {len(members) - 1} other entr{'ies' if len(members) > 2 else 'y'}"
        where = f" via {read.callee}()" if read.callee else ""
        if setting is None:
            how = ""
        elif setting.step is StepKind.ENTER:
            how = f", set by {setting.callee}() entered in {setting.function}"
        else:
            how = f", set by sticky setter {setting.callee}() called in {setting.function}"
        yield read.location, f"{who} can run this read of {flag}{where} while it is set{how}"


def render(report: AnalysisReport, options: RenderOptions) -> Iterator[str]:
    """Every finding of every flag, one line each, sorted by path, line, column and code."""
    lines: list[tuple[str, int, int, str, str]] = []
    # what is printed is escaped (``text.safe``): no control character reaches the log
    for f in report.flags:
        name = safe(f.qualname).rpartition(".")[2]
        for h in safe(f.hazards):
            loc = h.location
            lines.append((loc.path, loc.line, loc.column, h.code, f"{h.message} (in {h.function})"))
        for loc, message in _observations(name, f.entries):
            lines.append((loc.path, loc.line, loc.column, OBSERVES_SET, message))
    for path, line, column, code, message in sorted(set(lines)):
        yield f"{path}:{line}:{column}: {code} {message}\n"
