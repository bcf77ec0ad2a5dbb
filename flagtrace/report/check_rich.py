"""``flagtrace check --format rich`` (the default): a report that reads top-down.

For each flag, in this order:

1. the answer, one line: how many entry points can run a read of the flag while it is
   set, how many reads and setters there are, which hazards;
2. the entries that observe it set, grouped by what they reach: the read, and the step
   where the flag became set (the witness's ``enter``/``set`` step), each group a table of
   entries with their evidence and witness length;
3. full witnesses, only for the few that best explain the result: the strongest (then
   shortest) one of each read/setter group (``RenderOptions.witnesses`` of them; every entry's when
   the entries were named on the command line);
4. entries that never observe it set (only named entries are reported that way);
5. setters, then hazards.

Why this order: on SGLang the old layout printed a full 12-hop witness for each of 152
discovered entries, 7,918 lines, and the answer was nowhere in particular. Most of those
witnesses differ only in their first hops; the groups say that in one table, and one
witness per group is the proof.

Nothing is cut, on a terminal or not (a pre-commit or CI log is not): records wrap and long
names fold. To keep qualified names short at 80 columns, a dotted prefix that every name
shown shares is dropped, and stated once at the top ("names below are relative to
``sglang.srt.``"); the same for the directory every path shown shares.
"""

from __future__ import annotations

import io
import linecache
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from flagtrace.model import (
    AnalysisReport,
    CutKind,
    EntryVerdict,
    Evidence,
    FlagReport,
    PrunedHop,
    Resolution,
    StepKind,
    StickyScope,
    WitnessStep,
    WrittenValue,
)
from flagtrace.report.layout import Short as _Short
from flagtrace.report.layout import buffer_console
from flagtrace.report.layout import dir_prefix as _dir_prefix
from flagtrace.report.layout import dotted_prefix as _dotted_prefix
from flagtrace.report.layout import grid as _grid
from flagtrace.report.text import quote, safe

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the text is read where it is printed, errors included
HUMAN = True

#: spaces at the end of a line, before any escape codes that close its styles
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")

_STEP_STYLE = {
    StepKind.CALL: "cyan",
    StepKind.ENTER: "bold magenta",
    StepKind.SET: "bold magenta",
    StepKind.READ: "bold red",
}


@dataclass(frozen=True, slots=True)
class _Group:
    """The entries whose witnesses reach the same read after the same setting step."""

    read: WitnessStep
    setter: WitnessStep | None
    entries: tuple[EntryVerdict, ...]  # shortest witness first

    @property
    def best(self) -> EntryVerdict:
        """The witness that best explains the group: the strongest evidence, then the
        shortest, ties broken by name so that the choice does not depend on order."""
        return min(self.entries, key=_strength_first)


#: evidence grades, strongest first (``Evidence`` lists them in that order)
_GRADE = {grade: rank for rank, grade in enumerate(Evidence)}


def _strength_first(e: EntryVerdict) -> tuple[int, int, str]:
    return (_GRADE[e.evidence], len(e.witness), e.entry)


def _setting_step(e: EntryVerdict) -> WitnessStep | None:
    return next((s for s in e.witness if s.step.sets_flag), None)


def _read_step(e: EntryVerdict) -> WitnessStep:
    return next(s for s in reversed(e.witness) if s.step is StepKind.READ)


def _step_key(s: WitnessStep | None) -> tuple[str, str, str, int]:
    if s is None:
        return ("", "", "", 0)
    return (s.function, s.callee or "", s.location.path, s.location.line)


def _groups(entries: Iterable[EntryVerdict]) -> list[_Group]:
    """Observing entries grouped by (read, setting step); the largest group first."""
    by_key: dict[tuple[object, ...], list[EntryVerdict]] = {}
    for e in entries:
        if not any(s.step is StepKind.READ for s in e.witness):
            continue  # an observing verdict always ends in a read; be safe all the same
        by_key.setdefault((_step_key(_read_step(e)), _step_key(_setting_step(e))), []).append(e)
    groups = [
        _Group(
            _read_step(members[0]),
            _setting_step(members[0]),
            tuple(sorted(members, key=lambda e: (len(e.witness), e.entry))),
        )
        for members in by_key.values()
    ]
    groups.sort(key=lambda g: (-len(g.entries), len(g.best.witness), g.best.entry))
    return groups


def _chosen(f: FlagReport, groups: list[_Group], limit: int | None) -> list[EntryVerdict]:
    """The entries whose full witness is printed: every observing one when ``limit`` is
    None, else the best of each group, groups with the strongest, then shortest, best
    witness first."""
    if limit is None:
        return [e for e in f.entries if e.observes_set]
    best = sorted((g.best for g in groups), key=_strength_first)
    return best[:limit]


def _source(step: WitnessStep) -> str:
    """The step's source line as quoted: escaped and capped (``report.text``), as the
    analysed code wrote it."""
    return quote(linecache.getline(step.location.path, step.location.line))


def _step_rows(
    steps: tuple[WitnessStep, ...], short: _Short, folded: bool
) -> Iterator[tuple[Text, Text]]:
    """The rows of a witness. ``folded`` (the examples of a summary) gives a run of
    setting hops one row: its length, where it ends and its weakest grade; an entry
    asked about shows each hop (on SGLang the sticky setter's chain is eight calls)."""
    i = 0
    while i < len(steps):
        step = steps[i]
        run = 0
        while folded and i + run < len(steps) and steps[i + run].setting:
            run += 1
        if run < 2:
            yield _step_row(i + 1, step, short)
            i += 1
            continue
        hops = steps[i : i + run]
        label = Text(f"{i + 1}-{i + run}", style="dim")
        label.append(f"  {StepKind.CALL.value:<5}", style=_STEP_STYLE[StepKind.CALL])
        t = Text(f"{run} calls in the setter, down to {short.name(hops[-1].callee or '')}")
        weakest = max(
            (h.resolution for h in hops if h.resolution is not None),
            key=list(Resolution).index,
            default=Resolution.DIRECT,
        )
        if weakest is not Resolution.DIRECT:
            strong = weakest is Resolution.TYPED
            t.append(f"  [{weakest.value}]", style="dim" if strong else "yellow")
        t.append(f"\n{short.where(hops[-1].location)}", style="dim")
        src = _source(hops[-1])
        if src:
            t.append(f"  {src}", style="green")
        yield label, t
        i += run


def _step_row(i: int, step: WitnessStep, short: _Short) -> tuple[Text, Text]:
    """A witness step as a chain link: the caller is the previous line's function, so
    only what this step goes to is named (grimp's chain display), then where and the source."""
    label = Text(f"{i:>2} ", style="dim")
    if step.setting:  # a call inside the setter above: indented under its step
        label.append(f"  {step.step.value:<5}", style=_STEP_STYLE[step.step])
    else:
        label.append(f"{step.step.value:<5}", style=_STEP_STYLE[step.step])
    t = Text()
    callee = short.name(step.callee or "")
    if step.step is StepKind.CALL:
        t.append(callee)  # a setting hop too: the chain goes on from the setter above
        if step.approximation is not None:
            t.append(f"  ({step.approximation.value})", style="yellow")
    elif step.step is StepKind.ENTER:
        t.append(f"enters {callee}()  (flag set from here)")
        if step.approximation is not None:
            t.append(f"  ({step.approximation.value})", style="yellow")
    elif step.step is StepKind.SET:
        t.append(f"sticky setter {callee}()")
    else:
        t.append(f"reads the flag via {callee}()" if step.callee else "reads the flag")
    if step.resolution is not None and step.resolution is not Resolution.DIRECT:
        # by-name and jedi stand out; inferred too (value flow, not a declaration)
        strong = step.resolution is Resolution.TYPED
        t.append(f"  [{step.resolution.value}]", style="dim" if strong else "yellow")
    if step.before_entry and not step.setting:  # a setting hop is its step's, said there
        t.append(f"  (in {short.name(step.function)}, before the entry runs)", style="dim")
    t.append(f"\n{short.where(step.location)}", style="dim")
    src = _source(step)
    if src:
        t.append(f"  {src}", style="green")
    if step.guard:
        t.append("\nguarded by: ", style="dim")
        t.append(step.guard, style="yellow")
    return label, t


def _witness(e: EntryVerdict, short: _Short, reason: bool = True) -> Group:
    """An entry's full witness; ``reason`` adds the verdict's sentence, which repeats the
    steps in prose (worth it for an entry asked about, not for the examples of a summary)."""
    head = Text.assemble(
        ("OBSERVES SET ", "bold red"),
        (short.name(e.entry), "bold"),
        (f"  evidence: {e.evidence.value}, {len(e.witness)} steps", "dim"),
    )
    rows = [(Text("   entry", style="dim"), Text(short.name(e.entry)))]
    rows.extend(_step_rows(e.witness, short, folded=not reason))
    if not reason:  # an example of a summary: its group already shows the setting step
        return Group(head, _grid(rows))
    return Group(head, Text(e.reason, style="dim"), *_origin(e, short), _grid(rows))


def _origin(e: EntryVerdict, short: _Short) -> list[Text]:
    """Whose write the entry observes and what it writes, and why the witness may start
    before the entry (a program root's sticky write, or the fallback when none reaches it)."""
    out: list[Text] = []
    if e.set_by is not None:
        t = Text("value written by ", style="dim")
        t.append(short.name(e.set_by))
        if e.set_value is WrittenValue.CONSTANT:
            t.append(": a constant", style="dim")
        elif e.set_value is WrittenValue.UNKNOWN:
            t.append(": a value computed at run time (an argument, configuration)", style="yellow")
        out.append(t)
    first = next((s for s in e.witness if s.before_entry), None)
    if e.sticky_scope is StickyScope.ROOT and first is not None:
        t = Text("program root ", style="dim")
        t.append(short.name(first.function))
        t.append(" runs a sticky write, then the entry", style="dim")
        out.append(t)
    elif e.sticky_scope is StickyScope.IMPORT:
        out.append(Text("a sticky write runs on import, before any entry", style="dim"))
    elif e.sticky_scope is StickyScope.ANYWHERE:
        out.append(
            Text(
                "no program root reaches this entry: a sticky write anywhere may run before it",
                style="yellow",
            )
        )
    return out


def _pruned(hop: PrunedHop, short: _Short, tree: Tree) -> None:
    """Why the witness found without pruning cannot run: the hop cut (a branch of
    ``tree``), and under it the guard (and the ``--assume`` facts) or the class never
    instantiated that cuts it."""
    t = Text("cut: ", style="bold")
    t.append(short.name(hop.function))
    if hop.callee is not None:
        t.append(" -> ", style="dim")
        t.append(short.name(hop.callee))
    t.append(f" at {short.where(hop.location)}", style="dim")
    why = Text()
    if hop.kind is CutKind.NOT_INSTANTIATED and hop.cls is not None:
        why.append(short.name(hop.cls))
        why.append(" is never instantiated", style="yellow")
        if hop.guard is not None:
            why.append(": its construction runs only if ", style="dim")
    elif hop.guard is not None:
        why.append("runs only if ", style="dim")
    if hop.guard is not None:
        why.append(hop.guard, style="yellow")
        if hop.guard_location is not None:
            why.append(f" ({short.where(hop.guard_location)})", style="dim")
        if hop.facts:
            why.append(", false assuming ", style="dim")
            why.append(", ".join(hop.facts), style="cyan")
    branch = tree.add(t)
    if why:
        branch.add(why)


def _never(e: EntryVerdict, short: _Short) -> Tree:
    head = Text.assemble(
        ("never observes set ", "bold green"),
        (short.name(e.entry), "bold"),
        (f"  evidence: {e.evidence.value}", "dim"),
    )
    tree = Tree(head)
    hop = e.pruned
    if hop is None:
        tree.add(Text(e.reason))
    else:  # the cut hop as rows of short names, not the reason's one long sentence
        tree.add(Text(e.reason.removesuffix(f"; pruned: {hop.reason}")))
        _pruned(hop, short, tree)
    for loc in e.unresolved_sites:
        tree.add(Text(f"unresolved call at {short.where(loc)}", style="yellow"))
    return tree


def answer(f: FlagReport) -> Text:
    """The one-line answer for a flag: what a reader asked, before any detail."""
    name = f.qualname.rpartition(".")[2]
    observing = sum(e.observes_set for e in f.entries)
    judged = len(f.entries)
    if observing == 0:
        who = "no entry point" if judged == 0 else f"none of {judged} entry points"
        verb = "can"
    else:
        who = f"{observing} entry point{'s' if observing != 1 else ''}"
        if judged != observing:
            who = f"{observing} of {judged} entry points"
        verb = "can"
    codes = sorted({h.code for h in f.hazards})
    t = Text()
    t.append(f"{who} {verb} run a read of ", style="bold red" if observing else "bold green")
    t.append(name, style="bold cyan")
    t.append(" while it is set", style="bold red" if observing else "bold green")
    t.append(
        f"; {len(f.readers)} read{'s' if len(f.readers) != 1 else ''}, "
        f"{len(f.setters)} setter{'s' if len(f.setters) != 1 else ''}, "
    )
    t.append(f"hazards {' '.join(codes)}" if codes else "no hazards", style="bold" if codes else "")
    return t


def _shortener(f: FlagReport) -> _Short:
    """The prefixes every name and path shown in ``f``'s report share."""
    names: list[str] = [f.qualname]
    paths: list[str] = [f.location.path]
    for e in f.entries:
        names.append(e.entry)
        paths.extend(loc.path for loc in e.unresolved_sites)
        for s in e.witness:
            names.append(s.function)
            if s.callee:
                names.append(s.callee)
            paths.append(s.location.path)
    for setter in f.setters:
        names.append(setter.function)
        paths.append(setter.location.path)
    for r in f.readers:
        names.append(r.function)
        paths.append(r.location.path)
    for h in f.hazards:
        names.append(h.function)
        paths.append(h.location.path)
    return _Short(_dotted_prefix(names), _dir_prefix(paths))


def _step_text(step: WitnessStep, short: _Short, via: bool = True) -> Text:
    """The function of a read or setting step, what it goes through, and where, as one
    paragraph (wrapped under itself by the grid it sits in)."""
    t = Text(short.name(step.function))
    if step.step is StepKind.READ:
        if step.callee and via:
            t.append(f" via {short.name(step.callee)}()")
    else:
        how = "enters" if step.step is StepKind.ENTER else "calls sticky setter"
        t.append(f" {how} {short.name(step.callee or '')}()")
    t.append(f" at {short.where(step.location)}", style="dim")
    if step.before_entry:
        t.append(" (before the entry runs)", style="dim")
    return t


def _split(qualname: str) -> tuple[str, str]:
    """A qualified name as (module, name in it), for display only: the module ends before
    the first capitalised part (a class) or the last part (a function)."""
    parts = qualname.split(".")
    cut = next((i for i, p in enumerate(parts) if i and p[:1].isupper()), len(parts) - 1)
    return ".".join(parts[:cut]), ".".join(parts[cut:])


#: In a group's listing, at most this many modules and names per module, unless every
#: witness was asked for (``--witnesses all``): a group of 78 entries in 40 modules took 80
#: lines at 80 columns, more than the rest of the SGLang report; the JSON lists every entry.
LISTED_MODULES = 3
LISTED_NAMES = 4
#: Groups listed in full, unless every witness was asked for; the smaller ones after them
#: get a line each (SGLang's flag has 11 groups, most of one or two entries).
LISTED_GROUPS = 6


def _group_part(
    number: int,
    g: _Group,
    short: _Short,
    complete: bool,
    same_setter: int | None = None,
    via: bool = True,
) -> Group:
    """A group's read and setting step, then its entries module by module, each module one
    paragraph: 150 entries in 60 modules take about as many lines as modules, where a row per
    entry (with names folded at 80 columns) took over 300. Unless ``complete``, the modules
    with most entries come first and the listing stops after a few."""
    label = f"{number}."
    rows = [(Text(f"{label} read", style="bold red"), _step_text(g.read, short, via))]
    if g.setter is not None:
        set_label = Text(f"{' ' * len(label)} set ", style="bold magenta")
        if same_setter is None:
            rows.append((set_label, _step_text(g.setter, short)))
        else:
            rows.append((set_label, Text(f"as in group {same_setter}", style="dim")))
    n = len(g.entries)
    by_module: dict[str, list[str]] = {}
    for e in g.entries:
        module, rest = _split(short.name(e.entry))
        evidence = "" if e.evidence is Evidence.RESOLVED else f" ({e.evidence.value})"
        by_module.setdefault(module, []).append(rest + evidence)
    pad = Text(" " * (len(label) + 5))
    heading = f"{n} entr{'ies' if n != 1 else 'y'} in {len(by_module)} module"
    heading += "s" if len(by_module) != 1 else ""
    rows.append((pad, Text(heading + ":", style="bold")))
    modules = sorted(by_module)
    if not complete:
        modules.sort(key=lambda m: -len(by_module[m]))  # stable: ties stay alphabetical
    shown = modules if complete else modules[:LISTED_MODULES]
    for module in shown:
        names = by_module[module]
        listed = names if complete else names[:LISTED_NAMES]
        text = Text(f"{module}: " if module else "", style="dim")
        text.append(", ".join(listed))
        if len(listed) < len(names):
            text.append(f" and {len(names) - len(listed)} more", style="dim")
        rows.append((pad, text))
    if len(shown) < len(modules):
        hidden = sum(len(by_module[m]) for m in modules[len(shown) :])
        more = f"and {hidden} more in {len(modules) - len(shown)} other modules"
        rows.append(
            (pad, Text(more + " (--witnesses all or --format json lists them)", style="dim"))
        )
    return Group(_grid(rows))


def _smaller_groups(rest: list[_Group], before: int, short: _Short) -> Group:
    """The groups after the first few, a line each: the read, where, and how many entries."""
    total = sum(len(g.entries) for g in rest)
    heading = f"and {len(rest)} smaller groups, {total} entries (--witnesses all lists them):"
    rows = []
    for i, g in enumerate(rest, before + 1):
        n = len(g.entries)
        text = Text(short.name(g.read.function))
        text.append(f" at {short.where(g.read.location)}", style="dim")
        text.append(f", {n} entr{'ies' if n != 1 else 'y'}")
        rows.append((Text(f"{i}.", style="bold red"), text))
    return Group(Text(heading, style="bold"), _grid(rows))


def _setters(f: FlagReport, short: _Short) -> Group:
    rows = []
    for s in f.setters:
        text = Text(short.name(s.function), style="bold")
        text.append(f"\n{s.kind.value}, sets {s.value}, ")
        text.append(short.where(s.location), style="dim")
        text.append(f"\nhazards: {', '.join(k.value for k in s.hazards) or '-'}")
        if s.nesting_guarded:
            text.append(", refuses nested use")
        rows.append((Text("-"), text))
    return Group(Text("setters", style="bold"), _grid(rows, indent=1))


def _hazards(f: FlagReport, short: _Short) -> Group:
    rows = []
    for h in f.hazards:
        text = Text(h.kind.value, style="bold")
        text.append("  ")
        text.append(short.where(h.location), style="dim")
        text.append(f"\nin {short.name(h.function)}\n{h.detail or h.summary}")
        rows.append((Text(h.code, style="bold red"), text))
    return Group(Text("hazards", style="bold"), _grid(rows, indent=1))


def _flag(f: FlagReport, options: RenderOptions) -> Group:
    short = _shortener(f)
    parts: list[RenderableType] = [answer(f)]
    stated = []
    if short.names:
        stated.append(f"names are relative to {short.names}")
    if short.paths:
        stated.append(f"paths to {short.paths}")
    if stated:
        parts.append(Text(f"below, {' and '.join(stated)}", style="dim"))
    parts.append(
        Text.assemble(
            ("flag ", "bold"),
            (short.name(f.qualname), "bold cyan"),
            f"  (initially {f.initial}, {short.where(f.location)})",
        )
    )
    observing = [e for e in f.entries if e.observes_set]
    groups = _groups(observing)
    if groups:
        parts.append(Text())
        parts.append(
            Text(
                f"entries that observe it set, by read and setter "
                f"({len(groups)} group{'s' if len(groups) != 1 else ''})",
                style="bold",
            )
        )
        complete = options.witnesses is None
        listed = groups if complete else groups[:LISTED_GROUPS]
        accessors = {g.read.callee for g in groups}
        accessor = next(iter(accessors)) if len(accessors) == 1 and len(groups) > 1 else None
        if accessor is not None:
            parts.append(Text(f"every read goes through {short.name(accessor)}()", style="dim"))
        first_with: dict[tuple[object, ...], int] = {}
        for i, g in enumerate(listed, 1):
            key = _step_key(g.setter) if g.setter is not None else ()
            same = first_with.setdefault(key, i)
            same_setter = same if same != i else None
            part = _group_part(i, g, short, complete, same_setter, via=accessor is None)
            parts.extend((part, Text()))
        if len(listed) < len(groups):
            parts.append(_smaller_groups(groups[len(listed) :], len(listed), short))
            parts.append(Text())
    complete = options.witnesses is None
    chosen = _chosen(f, groups, options.witnesses)
    if chosen:
        if len(chosen) < len(observing):
            parts.append(
                Text(
                    f"witnesses: {len(chosen)} of {len(observing)}, "
                    "the strongest, then shortest, one of "
                    f"{'each group' if len(chosen) == len(groups) else 'the first groups'} "
                    "(--witnesses N or all for more)",
                    style="bold",
                )
            )
        for e in chosen:
            parts.extend((_witness(e, short, reason=complete), Text()))
    never = [e for e in f.entries if not e.observes_set]
    if never:
        for e in never:
            parts.extend((_never(e, short), Text()))
    if f.setters:
        parts.append(_setters(f, short))
    if f.hazards:
        parts.append(Text())
        parts.append(_hazards(f, short))
    parts.append(Text(f"{len(f.readers)} read site(s) of the flag", style="dim"))
    return Group(*parts)


def render(report: AnalysisReport, options: RenderOptions) -> Iterator[str]:
    """The report laid out by rich for the destination ``options`` describes, handed on
    flag by flag (rich writes into a buffer; the CLI writes the text where it goes)."""
    report = safe(report)  # no control character of the analysed code reaches the terminal
    console, buffer = buffer_console(options)
    for line in assumption_lines(report):
        console.print(Text(line, style="cyan"))
    if len(report.flags) > 1:
        for f in report.flags:
            console.print(Text.assemble((f.qualname.rpartition(".")[2] + ": ", "bold"), answer(f)))
        console.print()
        yield _take(buffer)
    for f in report.flags:
        console.print(_flag(f, options))
        console.print()
        yield _take(buffer)
    for d in report.errors:
        console.print(Text(f"error: {d}", style="red"))
    for line in _left_out(report):
        console.print(Text(line, style="dim"))
    if report.entries_left_out:
        n = report.entries_left_out
        console.print(
            Text(
                f"{n} discovered test entry point{'s' if n != 1 else ''} left out "
                "(--include-tests to judge them)",
                style="dim",
            )
        )
    if report.jedi_out_of_budget:
        console.print(
            Text(
                "jedi's time budget ran out before it settled every unresolved call "
                "a verdict rests on (--jedi-budget to give it more)",
                style="yellow",
            )
        )
    console.print(
        Text(
            f"{report.files} files, {report.lines} lines analysed in {report.seconds:.1f}s",
            style="dim",
        )
    )
    yield _take(buffer)


#: guard locations shown per fact; the JSON report has them all
SHOWN_GUARDS = 3


def assumption_lines(report: AnalysisReport) -> list[str]:
    """One line per ``--assume`` fact: the guards it decided, or that it matched none."""
    out = []
    for a in report.assumptions:
        if not a.guards:
            out.append(f"assuming {a.fact}: unused, it decides no guard")
            continue
        shown = ", ".join(g.short for g in a.guards[:SHOWN_GUARDS])
        more = len(a.guards) - SHOWN_GUARDS
        rest = f" and {more} more" if more > 0 else ""
        n = len(a.guards)
        out.append(f"assuming {a.fact}: decides {n} guard{'s' if n != 1 else ''} ({shown}{rest})")
    return out


def _left_out(report: AnalysisReport) -> list[str]:
    """The findings the report does not show: suppressed ones, and the baseline's."""
    out = []
    if report.suppressed:
        out.append(f"{report.suppressed} finding(s) suppressed (flagtrace: ignore, ignored codes)")
    b = report.baseline
    if b is not None:
        out.append(
            f"baseline {b.path}: {b.matched} finding(s) matched and not shown, "
            f"{b.stale} baseline entr{'y' if b.stale == 1 else 'ies'} no longer match"
        )
    return out


def _take(buffer: io.StringIO) -> str:
    """What was written to ``buffer`` since the last call, without the spaces rich pads
    lines with (a log or a golden file should not carry them)."""
    text = "".join(_TRAILING.sub(r"\1", line) + "\n" for line in buffer.getvalue().splitlines())
    buffer.seek(0)
    buffer.truncate()
    return text
