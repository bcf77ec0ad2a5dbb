"""The comparison half of ``flagtrace review``: two analysed sides and a diff in,
the findings only one side has (anchored on the changed lines) and what changed
about each flag's readers and setters out.

Pure but for reading source lines and, for anchoring a finding that no line of
its own changed, the head's function spans from the summaries. Kept apart from
``flagtrace.review`` (git, checkouts, the working directory) so the tests can
feed it two reports and a diff directly.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from flagtrace.fingerprint import Finding, SourceLines, findings, normalise
from flagtrace.gitrepo import FileDiff
from flagtrace.model import (
    AnalysisReport,
    Change,
    EntryVerdict,
    FlagChanges,
    FlagReport,
    Hazard,
    Location,
    ReaderFinding,
    RelatedLocation,
    ReviewFinding,
    ScopeKind,
    SetterFinding,
    StepKind,
    WitnessStep,
)
from flagtrace.rules import OBSERVES_SET

if TYPE_CHECKING:
    from flagtrace.cache import SummaryCache

_Row = TypeVar("_Row", ReaderFinding, SetterFinding)


@dataclass(frozen=True, slots=True)
class Side:
    """One side of the review, analysed: where its tree is and what was found there."""

    root: Path
    report: AnalysisReport
    lines: SourceLines


@dataclass(frozen=True, slots=True)
class Changed:
    """The diff as anchoring asks it: is this head line one the change made?"""

    files: tuple[FileDiff, ...]
    #: untracked files of a work-tree head: every line of them is new
    new_files: frozenset[str] = frozenset()
    _added: dict[str, frozenset[int]] = field(init=False, repr=False, compare=False)
    _near: dict[str, frozenset[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        heads = [f for f in self.files if f.path is not None]
        object.__setattr__(self, "_added", {f.path: f.added for f in heads})
        object.__setattr__(self, "_near", {f.path: f.near_removed for f in heads})

    def added(self, loc: Location) -> bool:
        return loc.path in self.new_files or loc.line in self._added.get(loc.path, ())

    def touched(self, loc: Location) -> bool:
        """Added, or next to lines that were removed."""
        return self.added(loc) or loc.line in self._near.get(loc.path, ())

    def lines_in(self, path: str, first: int, last: int) -> list[int]:
        """The changed head lines of ``path`` between ``first`` and ``last``, added first."""
        if path in self.new_files:
            return [first]
        added = sorted(n for n in self._added.get(path, ()) if first <= n <= last)
        near = sorted(n for n in self._near.get(path, ()) if first <= n <= last)
        return added + near

    @property
    def paths(self) -> tuple[str, ...]:
        names = {p for f in self.files for p in (f.path, f.old_path) if p is not None}
        return tuple(sorted(names | self.new_files))


# ----------------------------------------------------------------------------- comparison


def compare(
    base: Side, head: Side, changed: Changed, spans: Spans | None = None
) -> tuple[tuple[ReviewFinding, ...], tuple[FlagChanges, ...]]:
    """The findings only one side has, NEW then FIXED, each by path and line, and what
    changed about each flag's readers and setters."""
    head_found = list(findings(head.report, head.lines))
    base_found = list(findings(base.report, base.lines))
    new = _only_in(head_found, base_found)
    fixed = _only_in(base_found, head_found)
    out = [_new_finding(f, changed, spans) for f in new]
    out.sort(key=lambda r: (r.location.path, r.location.line, r.code, r.function, r.fingerprint))
    gone = [_fixed_finding(f) for f in fixed]
    gone.sort(key=lambda r: (r.location.path, r.location.line, r.code, r.function, r.fingerprint))
    return tuple(out + gone), _flag_changes(base, head)


def _only_in(these: list[Finding], others: list[Finding]) -> list[Finding]:
    """The findings of ``these`` that ``others`` does not match, counted as multisets."""
    left = Counter(f.fingerprint.digest for f in others)
    out = []
    for f in these:
        digest = f.fingerprint.digest
        if left[digest] > 0:
            left[digest] -= 1
        else:
            out.append(f)
    return out


def _steps_by_blame(witness: tuple[WitnessStep, ...]) -> list[WitnessStep]:
    """The witness steps in the order anchoring tries them: the read, then where the flag is
    set, then the calls from the read back to the entry (the deepest is the most specific)."""
    reads = [s for s in witness if s.step is StepKind.READ]
    sets = [s for s in witness if s.step.sets_flag]
    calls = [s for s in reversed(witness) if s.step is StepKind.CALL]
    return reads + sets + calls


def _new_finding(f: Finding, changed: Changed, spans: Spans | None) -> ReviewFinding:
    flag = f.flag.qualname
    subject = f.subject
    if isinstance(subject, EntryVerdict):
        anchor = _anchor_entry(subject, f.flag, changed, spans)
        return ReviewFinding(
            Change.NEW,
            OBSERVES_SET,
            flag,
            subject.entry,
            anchor or f.location,
            anchor is not None,
            _entry_message(subject, flag, now=True),
            f.fingerprint.digest,
            _entry_related(subject, flag),
            verdict=subject,
        )
    anchor = _anchor_hazard(subject, changed, spans)
    return ReviewFinding(
        Change.NEW,
        subject.code,
        flag,
        subject.function,
        anchor or f.location,
        anchor is not None,
        f"{subject.message} (in {subject.function})",
        f.fingerprint.digest,
        _hazard_related(subject, f.flag, anchor),
        hazard=subject,
    )


def _fixed_finding(f: Finding) -> ReviewFinding:
    """A finding of the base the head no longer has, at its place in the base."""
    subject = f.subject
    flag = f.flag.qualname
    if isinstance(subject, EntryVerdict):
        return ReviewFinding(
            Change.FIXED,
            OBSERVES_SET,
            flag,
            subject.entry,
            f.location,
            False,
            _entry_message(subject, flag, now=False),
            f.fingerprint.digest,
            _entry_related(subject, flag),
            verdict=subject,
        )
    return ReviewFinding(
        Change.FIXED,
        subject.code,
        flag,
        subject.function,
        f.location,
        False,
        f"{subject.message} (in {subject.function})",
        f.fingerprint.digest,
        _hazard_related(subject, f.flag, None),
        hazard=subject,
    )


def _anchor_entry(
    verdict: EntryVerdict, flag: FlagReport, changed: Changed, spans: Spans | None
) -> Location | None:
    """The changed head line that makes ``verdict`` new: a step of its witness on an added
    line, else one next to removed lines, else a changed line inside a function of the
    path (from the read back to the entry), else inside the setter it enters."""
    steps = _steps_by_blame(verdict.witness)
    for test in (changed.added, changed.touched):
        for s in steps:
            if test(s.location):
                return s.location
    if spans is None:
        return None
    places = [(s.location, s.function) for s in reversed(verdict.witness)]
    setters = {s.function: s.location for s in flag.setters}
    places += [
        (setters[s.callee], s.callee)
        for s in verdict.witness
        if s.step.sets_flag and s.callee in setters
    ]
    for where, function in places:
        anchor = spans.changed_line(where, function, changed)
        if anchor is not None:
            return anchor
    return None


def _anchor_hazard(hazard: Hazard, changed: Changed, spans: Spans | None) -> Location | None:
    """The hazard's line if the change made it, else a changed line of the setter."""
    if changed.touched(hazard.location):
        return hazard.location
    if spans is not None:
        return spans.changed_line(hazard.location, hazard.function, changed)
    return None


def _name(qualname: str) -> str:
    return qualname.rpartition(".")[2]


def _setting_step(verdict: EntryVerdict) -> WitnessStep | None:
    return next((s for s in verdict.witness if s.step.sets_flag), None)


def _read_step(verdict: EntryVerdict) -> WitnessStep | None:
    return next((s for s in reversed(verdict.witness) if s.step is StepKind.READ), None)


def _entry_message(verdict: EntryVerdict, flag: str, *, now: bool) -> str:
    read = _read_step(verdict)
    setting = _setting_step(verdict)
    where = f" in {read.function}" if read is not None else ""
    via = f" via {read.callee}()" if read is not None and read.callee else ""
    how = ""
    if setting is not None:
        verb = "entered" if setting.step is StepKind.ENTER else "called"
        how = f" (set by {setting.callee}() {verb} in {setting.function})"
    when = "can now run" if now else "can no longer run"
    return f"{verdict.entry} {when} a read of {_name(flag)}{where}{via} while it is set{how}"


def _entry_related(verdict: EntryVerdict, flag: str) -> tuple[RelatedLocation, ...]:
    """The entry (its first hop), where the flag is set, and the read."""
    out: list[RelatedLocation] = []
    if verdict.witness:
        first = verdict.witness[0]
        out.append(RelatedLocation("entry", first.location, f"entry point {verdict.entry}"))
    setting = _setting_step(verdict)
    if setting is not None:
        verb = "enters" if setting.step is StepKind.ENTER else "calls the sticky setter"
        message = f"{setting.function} {verb} {setting.callee}(): {_name(flag)} is set"
        out.append(RelatedLocation("set", setting.location, message))
    read = _read_step(verdict)
    if read is not None:
        via = f" via {read.callee}()" if read.callee else ""
        out.append(
            RelatedLocation("read", read.location, f"{read.function} reads {_name(flag)}{via}")
        )
    return tuple(out)


def _hazard_related(
    hazard: Hazard, flag: FlagReport, anchor: Location | None
) -> tuple[RelatedLocation, ...]:
    """The setter's definition, and the hazard's own line when the anchor is elsewhere."""
    out = [
        RelatedLocation("setter", s.location, f"setter {s.function} ({s.kind.value}, {s.value})")
        for s in flag.setters
        if s.function == hazard.function
    ]
    if anchor is not None and anchor != hazard.location:
        out.append(RelatedLocation("hazard", hazard.location, hazard.summary))
    return tuple(out)


def _flag_changes(base: Side, head: Side) -> tuple[FlagChanges, ...]:
    """Readers and setters only one side has, per flag, matched by (function, normalised
    line text) as multisets, so moving a read down a file is no change."""
    by_flag_base = {f.qualname: f for f in base.report.flags}
    by_flag_head = {f.qualname: f for f in head.report.flags}
    out = []
    for name in sorted(by_flag_base.keys() | by_flag_head.keys()):
        b = by_flag_base.get(name)
        h = by_flag_head.get(name)
        b_readers = b.readers if b is not None else ()
        h_readers = h.readers if h is not None else ()
        b_setters = b.setters if b is not None else ()
        h_setters = h.setters if h is not None else ()
        changes = FlagChanges(
            name,
            readers_added=_unmatched(h_readers, b_readers, head.lines, base.lines, _reader_key),
            readers_removed=_unmatched(b_readers, h_readers, base.lines, head.lines, _reader_key),
            setters_added=_unmatched(h_setters, b_setters, head.lines, base.lines, _setter_key),
            setters_removed=_unmatched(b_setters, h_setters, base.lines, head.lines, _setter_key),
        )
        if not changes.empty:
            out.append(changes)
    return tuple(out)


def _reader_key(r: ReaderFinding, lines: SourceLines) -> tuple[str, ...]:
    return (r.function, r.via or "", normalise(lines.line(r.location)))


def _setter_key(s: SetterFinding, lines: SourceLines) -> tuple[str, ...]:
    return (s.function, s.kind.value, s.value, normalise(lines.line(s.location)))


def _unmatched(
    these: tuple[_Row, ...],
    others: tuple[_Row, ...],
    these_lines: SourceLines,
    other_lines: SourceLines,
    key: Callable[[_Row, SourceLines], tuple[str, ...]],
) -> tuple[_Row, ...]:
    """The rows of ``these`` that ``others`` does not match by ``key``, as multisets."""
    left = Counter(key(o, other_lines) for o in others)
    out = []
    for t in these:
        k = key(t, these_lines)
        if left[k] > 0:
            left[k] -= 1
        else:
            out.append(t)
    return tuple(sorted(out, key=lambda t: (t.location, t.function)))


# ----------------------------------------------------------------------------- function spans


class Spans:
    """Where functions begin and end in the head's files, for anchoring a finding on a
    changed line of its setter or entry when no line of its own changed.

    The report keeps no spans; the summaries do (``Scope.location``, ``end_line``).
    A file is summarised again only when asked about, through the summary cache (warm:
    one entry read), and only files with a new finding that is not anchored otherwise."""

    def __init__(self, root: Path, cache: SummaryCache | None) -> None:
        self.root = root
        self.cache = cache
        self._scopes: dict[str, list[tuple[int, int, str]]] = {}

    def _of(self, path: str) -> list[tuple[int, int, str]]:
        known = self._scopes.get(path)
        if known is None:
            known = []
            from flagtrace.discover import discover
            from flagtrace.index import index_many

            with inside(self.root):
                found = discover([path])
                for r in index_many(found.files, jobs=1, cache=self.cache):
                    if r.summary is None:
                        continue
                    for s in r.summary.scopes:
                        if s.kind is not ScopeKind.MODULE and s.end_line:
                            known.append((s.location.line, s.end_line, s.name))
            self._scopes[path] = known
        return known

    def changed_line(self, inside: Location, function: str, changed: Changed) -> Location | None:
        """A changed line of the function named ``function`` around ``inside`` (the innermost
        scope of that name holding it; else the innermost holding it)."""
        if not changed.lines_in(inside.path, 1, 10**9):
            return None
        holding = [s for s in self._of(inside.path) if s[0] <= inside.line <= s[1]]
        if not holding:
            return None
        holding.sort(key=lambda s: s[1] - s[0])  # innermost first
        named = [s for s in holding if s[2] == _name(function)]
        first, last, _ = (named or holding)[0]
        lines = changed.lines_in(inside.path, first, last)
        return Location(inside.path, lines[0], 1) if lines else None


@contextmanager
def inside(directory: Path) -> Iterator[None]:
    """Run the block with ``directory`` as the working directory, then go back."""
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)
