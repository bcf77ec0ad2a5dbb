"""``ReviewReport`` values made from real ``check`` reports of the fixtures, for the review
reporters' tests and for ``benchmarks/render_comment.py``.

A review compares two revisions; until ``flagtrace review`` exists on this branch, its
reporters are tested on what it will hand them: the findings of one real analysis, each
declared NEW or FIXED, with fingerprints from ``flagtrace.fingerprint`` and the readers and
setters as ``FlagChanges``. Only the analysis is real here, not the matching.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from flagtrace import api
from flagtrace.fingerprint import Finding, SourceLines, findings
from flagtrace.model import (
    AnalysisReport,
    Change,
    EntryVerdict,
    FlagChanges,
    Hazard,
    RelatedLocation,
    ReviewFinding,
    ReviewReport,
    StepKind,
)
from flagtrace.rules import OBSERVES_SET

BASE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
HEAD_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def analyse(root: Path, flags: Sequence[str], entries: Sequence[str] = ()) -> AnalysisReport:
    """``flagtrace check`` of ``root`` (paths in the report relative to it), in-process."""
    cwd = Path.cwd()
    os.chdir(root)
    try:
        return api.analyze(["."], flags, entries, jobs=1)
    finally:
        os.chdir(cwd)


def _related(finding: Finding) -> tuple[RelatedLocation, ...]:
    subject = finding.subject
    if isinstance(subject, Hazard):
        return (RelatedLocation("setter", subject.location, f"in {subject.function}"),)
    related = [RelatedLocation("entry", subject.witness[0].location, f"entry {subject.entry}")]
    related.extend(
        RelatedLocation("set", s.location, f"{s.function} enters {s.callee}")
        for s in subject.witness
        if s.step.sets_flag
    )
    read = subject.witness[-1]
    if read.step is StepKind.READ:
        related.append(RelatedLocation("read", read.location, f"{read.function} reads the flag"))
    return tuple(related)


def review_of(
    report: AnalysisReport,
    root: Path,
    change: Callable[[Finding], Change | None] = lambda f: Change.NEW,
    *,
    readers: Change | None = Change.NEW,
    setters: Change | None = Change.REMOVED,
) -> ReviewReport:
    """A review whose findings are ``report``'s, each as ``change`` says (None: on both
    sides, not reported), and whose every reader and setter was added or removed as
    ``readers``/``setters`` say (None: unchanged)."""
    lines = SourceLines(root)
    reviewed: list[ReviewFinding] = []
    for finding in findings(report, lines):
        side = change(finding)
        if side is None:
            continue
        subject = finding.subject
        reviewed.append(
            ReviewFinding(
                change=side,
                code=finding.code,
                flag=finding.flag.qualname,
                function=subject.entry if isinstance(subject, EntryVerdict) else subject.function,
                location=finding.location,
                anchored=side is Change.NEW,
                message=finding.message,
                fingerprint=finding.fingerprint.digest,
                related=_related(finding),
                verdict=subject if isinstance(subject, EntryVerdict) else None,
                hazard=subject if isinstance(subject, Hazard) else None,
            )
        )
    reviewed.sort(key=lambda f: (f.change is not Change.NEW, f.location))
    changes = tuple(
        FlagChanges(
            flag.qualname,
            readers_added=flag.readers if readers is Change.NEW else (),
            readers_removed=flag.readers if readers is Change.REMOVED else (),
            setters_added=flag.setters if setters is Change.NEW else (),
            setters_removed=flag.setters if setters is Change.REMOVED else (),
        )
        for flag in report.flags
    )
    paths = sorted({f.location.path for f in reviewed})
    return ReviewReport(
        base="origin/main",
        base_commit=BASE_COMMIT,
        head=None,
        head_commit=HEAD_COMMIT,
        flags=tuple(flag.qualname for flag in report.flags),
        findings=tuple(reviewed),
        changes=tuple(c for c in changes if not c.empty),
        changed_files=tuple(paths),
        errors=report.errors,
    )


def leak_new_hazards_fixed(finding: Finding) -> Change:
    """The usual story: the change adds the leak and fixes the setter's hazards."""
    return Change.NEW if finding.code == OBSERVES_SET else Change.FIXED
