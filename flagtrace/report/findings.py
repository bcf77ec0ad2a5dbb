"""The findings of a check or a review as the code-scanning formats (SARIF, rdjson) list them.

A check report holds findings per flag (hazards, and entries that observe the flag set); a
review report holds them as NEW or FIXED ``ReviewFinding``\\ s with their anchor and related
locations already chosen. The code-scanning formats want one shape for both: a coded result at
one place, with the places it refers to and the witness's hops. ``Item`` is that shape, built
once here so that SARIF and rdjson, for check and for review, say the same thing in the same
words (``step_message``).

Why not ``ReviewFinding`` for both: a check has no change and no anchor; building fake review
findings would put words (``anchored``, ``change``) into a check that it never decided.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from flagtrace.fingerprint import SourceLines, findings
from flagtrace.model import (
    AnalysisReport,
    Change,
    EntryVerdict,
    FlagReport,
    Hazard,
    Location,
    RelatedLocation,
    Resolution,
    ReviewReport,
    StepKind,
    WitnessStep,
)
from flagtrace.report.text import cap
from flagtrace.rules import OBSERVES_SET

Level = Literal["error", "warning"]


def level(code: str) -> Level:
    """A hazard is a defect in a setter (error); an entry that observes the flag set is a
    risk to judge, as the reader may mean to see it (warning)."""
    return "warning" if code == OBSERVES_SET else "error"


@dataclass(frozen=True, slots=True)
class Item:
    """One finding, as code-scanning formats list it."""

    code: str
    flag: str  # qualname
    function: str  # the entry (FT001) or the setter (hazards)
    location: Location
    message: str
    fingerprint: str  # Fingerprint.digest
    related: tuple[RelatedLocation, ...] = ()
    witness: tuple[WitnessStep, ...] = ()
    #: a review's NEW or FIXED; None in a check
    change: Change | None = None
    #: the source line at ``location``, stripped and capped; "" when not read (a review)
    snippet: str = ""


def _name(qualname: str) -> str:
    return qualname.rpartition(".")[2]


def _approximated(step: WitnessStep) -> str:
    """`` (classmethod-factory)``: the idiom a hop was inferred from, if any."""
    return f" ({step.approximation.value})" if step.approximation is not None else ""


def step_message(step: WitnessStep, flag: str) -> str:
    """What a witness hop does, in one sentence, with the conditions it runs under.

    Guards are source text of the analysed code: capped here (``report.text.cap``); the
    JSON encoder escapes the rest."""
    callee = step.callee or ""
    res = step.resolution
    if step.step is StepKind.CALL:
        how = f" [{res.value}]" if res is not None else ""
        text = f"{step.function} calls {callee}{how}{_approximated(step)}"
        if step.setting:
            text += f", which is how the setter above sets {_name(flag)}"
    elif step.step is StepKind.ENTER:
        how = f" [{res.value}]" if res is not None and res is not Resolution.DIRECT else ""
        text = (
            f"{step.function} enters {callee}(){how}{_approximated(step)}: "
            f"{_name(flag)} is set from here"
        )
    elif step.step is StepKind.SET:
        how = f" [{res.value}]" if res is not None and res is not Resolution.DIRECT else ""
        text = f"{step.function} calls the sticky setter {callee}(){how}: {_name(flag)} is set"
    else:
        via = f" via {callee}()" if callee else ""
        how = f" [{res.value}]" if res is not None and res is not Resolution.DIRECT else ""
        text = f"{step.function} reads {_name(flag)}{via}{how} while it is set"
    if step.before_entry:
        text += " (before the entry runs)"
    if step.guard:
        text += f", if {cap(step.guard)}"
    return text


def _observes(flag: FlagReport, verdict: EntryVerdict) -> tuple[str, tuple[RelatedLocation, ...]]:
    """An observing entry's message and the places it names: where the entry's witness starts,
    where the flag is set, and the read."""
    name = _name(flag.qualname)
    read = verdict.witness[-1] if verdict.witness else None
    setting = next((s for s in verdict.witness if s.step.sets_flag), None)
    message = f"{verdict.entry} can run this read of {name} while it is set"
    if setting is not None:
        how = "entered" if setting.step is StepKind.ENTER else "called (a sticky setter)"
        message += f": {setting.callee}() is {how} in {setting.function}"
    message += f" ({len(verdict.witness)} steps, evidence: {verdict.evidence.value})"
    related = []
    if verdict.witness:
        first = verdict.witness[0]
        related.append(
            RelatedLocation("entry", first.location, f"entry point {verdict.entry} starts here")
        )
    if setting is not None:
        related.append(RelatedLocation("set", setting.location, step_message(setting, name)))
    if read is not None:
        related.append(RelatedLocation("read", read.location, step_message(read, name)))
    return message, tuple(related)


def _hazard(flag: FlagReport, hazard: Hazard) -> tuple[RelatedLocation, ...]:
    related = [
        RelatedLocation("setter", s.location, f"setter {s.function} ({s.kind.value})")
        for s in flag.setters
        if s.function == hazard.function
    ]
    related.append(
        RelatedLocation("flag", flag.location, f"flag {flag.qualname}, initially {flag.initial}")
    )
    return tuple(related)


def check_items(report: AnalysisReport, lines: SourceLines) -> Iterator[Item]:
    """Every finding of a check report, flag by flag: hazards, then observing entries."""
    for finding in findings(report, lines):
        flag, subject = finding.flag, finding.subject
        snippet = cap(lines.line(finding.location).strip())
        if isinstance(subject, Hazard):
            message = f"{subject.message} (in {subject.function})"
            yield Item(
                subject.code,
                flag.qualname,
                subject.function,
                finding.location,
                message,
                finding.fingerprint.digest,
                _hazard(flag, subject),
                snippet=snippet,
            )
        else:
            message, related = _observes(flag, subject)
            yield Item(
                OBSERVES_SET,
                flag.qualname,
                subject.entry,
                finding.location,
                message,
                finding.fingerprint.digest,
                related,
                subject.witness,
                snippet=snippet,
            )


def review_items(report: ReviewReport) -> Iterator[Item]:
    """Every finding of a review, NEW then FIXED, as the review chose their places."""
    for f in report.findings:
        yield Item(
            f.code,
            f.flag,
            f.function,
            f.location,
            f.message,
            f.fingerprint,
            f.related,
            f.verdict.witness if f.verdict is not None else (),
            f.change,
        )
