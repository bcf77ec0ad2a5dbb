"""The check reporters render the findings vocabulary, not text they parse.

The goldens (tests/test_flag_fixtures.py) pin the JSON of real runs; these tests build
findings by hand, so that each word of the vocabulary, and each way the rich reporter styles
it, is seen without depending on what the engine happens to find.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flagtrace.model import (
    AnalysisReport,
    Diagnostic,
    EntryVerdict,
    Evidence,
    FlagReport,
    Hazard,
    HazardKind,
    Location,
    ReaderFinding,
    Resolution,
    SetterFinding,
    SetterKind,
    StepKind,
    WitnessStep,
)
from flagtrace.report import CHECK, RenderOptions

ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def _loc(line: int) -> Location:
    return Location("pkg/mod.py", line, 5)


def sample_report() -> AnalysisReport:
    witness = (
        WitnessStep(StepKind.CALL, "pkg.main", _loc(3), "pkg.run", Resolution.DIRECT),
        WitnessStep(StepKind.CALL, "pkg.run", _loc(4), "pkg.Model.forward", Resolution.BY_NAME),
        WitnessStep(StepKind.ENTER, "pkg.Model.forward", _loc(5), "pkg.enabled", text="with x:"),
        WitnessStep(
            StepKind.CALL, "pkg.Model.forward", _loc(6), "pkg.step", Resolution.TYPED, guard="a > 1"
        ),
        WitnessStep(StepKind.SET, "pkg.step", _loc(7), "pkg.set_on", before_entry=True),
        WitnessStep(StepKind.READ, "pkg.step", _loc(8), "pkg.is_on", text="_on"),
    )
    flag = FlagReport(
        qualname="pkg.mod._on",
        location=_loc(1),
        initial="False",
        setters=(
            SetterFinding(
                "pkg.enabled",
                SetterKind.CONTEXTMANAGER,
                "True",
                _loc(10),
                (HazardKind.EXCEPTION_LEAK, HazardKind.NON_REENTRANT),
            ),
            SetterFinding("pkg.set_on", SetterKind.FUNCTION, "unknown", _loc(20)),
        ),
        readers=(ReaderFinding("pkg.step", _loc(8), "pkg.is_on"),),
        entries=(
            EntryVerdict("pkg.main", True, Evidence.BY_NAME, "it can be set", witness),
            EntryVerdict(
                "pkg.other",
                False,
                Evidence.UNRESOLVED_CALLS,
                "no read runs while it is set; 1 call on the way could not be resolved",
                unresolved_count=1,
                unresolved_sites=(_loc(30),),
            ),
        ),
        hazards=(
            Hazard(
                "FT101",
                HazardKind.EXCEPTION_LEAK,
                "pkg.enabled",
                _loc(11),
                "an exception leaves it set",
                "_on stays set: the body raises",
            ),
            Hazard("FT102", HazardKind.NON_REENTRANT, "pkg.enabled", _loc(12), "not reentrant"),
        ),
    )
    errors = (Diagnostic("pkg/bad.py", 2, "invalid syntax"), Diagnostic("<flag>", None, "no x"))
    return AnalysisReport((flag,), errors, files=3, lines=40, seconds=1.25)


def _json(report: AnalysisReport) -> Any:
    return json.loads("".join(CHECK["json"].render(report, RenderOptions())))


def test_json_gives_the_vocabulary_as_its_strings() -> None:
    doc = _json(sample_report())
    flag = doc["flags"][0]
    steps = flag["entries"][0]["witness"]
    assert [s["step"] for s in steps] == ["call", "call", "enter", "call", "set", "read"]
    assert [s["resolution"] for s in steps] == ["direct", "by-name", None, "typed", None, None]
    assert [e["evidence"] for e in flag["entries"]] == ["by-name", "unresolved-calls"]
    assert [s["kind"] for s in flag["setters"]] == ["contextmanager", "function"]
    assert flag["setters"][0]["hazards"] == ["exception-leak", "non-reentrant"]
    assert [h["kind"] for h in flag["hazards"]] == ["exception-leak", "non-reentrant"]
    # message is summary and detail joined, or the summary alone, as it always was
    assert [h["message"] for h in flag["hazards"]] == [
        "an exception leaves it set: _on stays set: the body raises",
        "not reentrant",
    ]
    assert doc["stats"] == {"files": 3, "lines": 40, "seconds": 1.25, "entries_left_out": 0}


def _rich(report: AnalysisReport, options: RenderOptions) -> str:
    return "".join(CHECK["rich"].render(report, options))


def test_rich_plain_text_shows_every_word() -> None:
    text = _rich(sample_report(), RenderOptions(width=200))
    assert not ESCAPE.search(text)
    assert "OBSERVES SET pkg.main  evidence: by-name" in text
    assert "never observes set pkg.other  evidence: unresolved-calls" in text
    assert "unresolved call at pkg/mod.py:30" in text
    assert " 1. call  pkg.main -> pkg.run\n" in text  # a direct call has no tag
    assert " 2. call  pkg.run -> pkg.Model.forward  [by-name]" in text
    assert " 3. enter pkg.Model.forward enters pkg.enabled()  (flag set from here)" in text
    assert " 4. call  pkg.Model.forward -> pkg.step  [typed]" in text
    assert "guarded by: a > 1" in text
    assert " 5. set   pkg.step calls sticky setter pkg.set_on()  (before the entry runs)" in text
    assert " 6. read  pkg.step reads the flag via pkg.is_on()" in text
    assert "exception-leak, non-reentrant" in text
    # the hazard table's "why" is the detail, or the summary when there is no detail
    assert "_on stays set: the body raises" in text
    assert "an exception leaves it set" not in text
    assert "not reentrant" in text
    assert "error: pkg/bad.py:2: invalid syntax" in text and "error: <flag>: no x" in text
    assert text.endswith("3 files, 40 lines analysed in 1.2s\n")


def test_rich_lays_out_for_the_width_and_terminal_it_is_given() -> None:
    report = sample_report()
    narrow = _rich(report, RenderOptions(width=60))
    assert max(len(line) for line in narrow.splitlines()) <= 60
    styled = _rich(report, RenderOptions(width=200, terminal="truecolor"))
    assert "\x1b[1;31mOBSERVES SET \x1b[0m" in styled  # bold red
    assert ESCAPE.sub("", styled) == _rich(report, RenderOptions(width=200))
    no_color = _rich(report, RenderOptions(width=200, terminal="truecolor", color=False))
    assert "\x1b[1mOBSERVES SET \x1b[0m" in no_color  # bold only
    assert not re.search(r"\x1b\[[0-9;]*3[0-9]m", no_color)  # no foreground colour


def test_rich_hands_the_text_on_flag_by_flag() -> None:
    report = sample_report()
    two = AnalysisReport(report.flags * 2, (), files=1, lines=1)
    pieces = list(CHECK["rich"].render(two, RenderOptions()))
    assert len(pieces) == 3  # each flag, then the errors and the summary
    assert pieces[0] == pieces[1] and pieces[0].startswith("flag pkg.mod._on")
