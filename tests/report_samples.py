"""Reports of real fixtures, for the reporter tests: check reports made by running flagtrace
on ``fixtures/flags/<case>``, and review reports made from them.

The review command (``flagtrace review``) builds ``ReviewReport``\\ s from two checks; these
are made the same way by hand: one case's findings as NEW, another's as FIXED, each with the
related locations and witness the check found, so a reporter sees real witnesses, guards and
hazards in the review vocabulary.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flagtrace.api import analyze
from flagtrace.fingerprint import EntryVerdict, SourceLines, findings
from flagtrace.model import AnalysisReport, Change, Hazard, ReviewFinding, ReviewReport
from flagtrace.report.findings import check_items
from tests.regen_goldens import CASES, HOSTILE_CASES, Case

#: cases with witnesses through calls, enters and sticky sets, guards, and each hazard code
SARIF_CASES = (
    "sglang_story",
    "cm_no_finally",
    "sticky_setter",
    "thread_unsafe",
    "guards_statements",
)


@contextmanager
def chdir(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def case(name: str) -> Case:
    root = CASES / name
    return Case.load(root if root.is_dir() else HOSTILE_CASES / name)


def check_args(name: str) -> list[str]:
    """``check . ARGS`` of a case, for ``flagtrace.cli.main`` run in the case directory."""
    return ["check", ".", *case(name).args, "-q", "--no-cache"]


def check_report(name: str) -> AnalysisReport:
    """The check report of a case, analysed in its directory (paths relative to it)."""
    c = case(name)
    flags = [v for k, v in zip(c.args, c.args[1:], strict=False) if k == "--flag"]
    entries = [v for k, v in zip(c.args, c.args[1:], strict=False) if k == "--entry"]
    assert 2 * (len(flags) + len(entries)) == len(c.args), f"{name}: args beyond --flag/--entry"
    with chdir(c.root):
        return analyze(["."], flags, entries, jobs=1)


def review_findings(name: str, change: Change) -> tuple[ReviewFinding, ...]:
    """A case's findings as a review reports them: each at its own place, with the related
    locations and witness of the check."""
    report = check_report(name)
    lines = SourceLines(case(name).root)
    out = []
    for found, item in zip(findings(report, lines), check_items(report, lines), strict=True):
        subject = found.subject
        out.append(
            ReviewFinding(
                change,
                item.code,
                item.flag,
                item.function,
                item.location,
                True,
                item.message,
                item.fingerprint,
                item.related,
                verdict=subject if isinstance(subject, EntryVerdict) else None,
                hazard=subject if isinstance(subject, Hazard) else None,
            )
        )
    return tuple(out)


def review_report(new: str, fixed: str) -> ReviewReport:
    """A review whose NEW findings are case ``new``'s and FIXED ones case ``fixed``'s."""
    found = review_findings(new, Change.NEW) + review_findings(fixed, Change.FIXED)
    flags = tuple(sorted({f.flag for f in found}))
    files = tuple(sorted({f.location.path for f in found}))
    return ReviewReport("HEAD~1", "a" * 40, None, None, flags, found, (), files)
