"""The check reporters render the findings vocabulary, not text they parse.

The goldens (tests/test_flag_fixtures.py) pin the JSON of real runs; these tests build
findings by hand, so that each word of the vocabulary, and each way the rich reporter styles
it, is seen without depending on what the engine happens to find.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import replace
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
    assert doc["stats"] == {
        "files": 3,
        "lines": 40,
        "seconds": 1.25,
        "entries_left_out": 0,
        "jedi_out_of_budget": False,
    }


def _rich(report: AnalysisReport, options: RenderOptions) -> str:
    return "".join(CHECK["rich"].render(report, options))


def test_rich_plain_text_shows_every_word() -> None:
    text = _rich(sample_report(), RenderOptions(width=200))
    assert not ESCAPE.search(text)
    assert text.startswith(
        "1 of 2 entry points can run a read of _on while it is set; 1 read, 2 setters, "
        "hazards FT101 FT102\n"
    )
    assert "below, names are relative to pkg. and paths to pkg/\n" in text
    assert "OBSERVES SET main  evidence: by-name, 6 steps" in text
    assert "never observes set other  evidence: unresolved-calls" in text
    assert "unresolved call at mod.py:30" in text
    assert "   entry main\n" in text
    assert " 1 call  run\n" in text  # a direct call has no tag
    assert " 2 call  Model.forward  [by-name]" in text
    assert " 3 enter enters enabled()  (flag set from here)" in text
    assert " 4 call  step  [typed]" in text
    assert "guarded by: a > 1" in text
    assert " 5 set   sticky setter set_on()  (in step, before the entry runs)" in text
    assert " 6 read  reads the flag via is_on()" in text
    assert "hazards: exception-leak, non-reentrant" in text
    # the hazards' "why" is the detail, or the summary when there is no detail
    assert "_on stays set: the body raises" in text
    assert "an exception leaves it set" not in text
    assert "not reentrant" in text
    assert "error: pkg/bad.py:2: invalid syntax" in text and "error: <flag>: no x" in text
    assert text.endswith("3 files, 40 lines analysed in 1.2s\n")


def _observing(name: str, steps: int, evidence: Evidence, read_line: int) -> EntryVerdict:
    """An entry whose witness calls ``steps - 2`` times, enters ``pkg.cm`` and reads at
    ``read_line``."""
    calls = tuple(
        WitnessStep(StepKind.CALL, f"pkg.f{i}", _loc(40 + i), f"pkg.f{i + 1}", Resolution.DIRECT)
        for i in range(steps - 2)
    )
    tail = (
        WitnessStep(StepKind.ENTER, "pkg.f9", _loc(50), "pkg.cm"),
        WitnessStep(StepKind.READ, "pkg.g", _loc(read_line)),
    )
    return EntryVerdict(name, True, evidence, "it can be set", calls + tail)


def test_rich_shows_the_best_witness_of_each_read_and_setter_group() -> None:
    """Discovered entries: a table per (read, setter) group, and by default the shortest
    resolved witness of each group only; --witnesses all gives every one."""
    flag = sample_report().flags[0]
    entries = (
        _observing("pkg.a.long", 5, Evidence.RESOLVED, 60),
        _observing("pkg.a.short_by_name", 3, Evidence.BY_NAME, 60),
        _observing("pkg.a.short", 4, Evidence.RESOLVED, 60),
        _observing("pkg.b.other", 6, Evidence.RESOLVED, 61),
    )
    report = AnalysisReport((replace(flag, entries=entries),), ())
    text = _rich(report, RenderOptions(width=100))
    assert text.startswith("4 entry points can run a read of _on while it is set")
    assert "(2 groups)" in text
    # the larger group first, its entries module by module, shortest witness first, with the
    # evidence when it is not "resolved"
    assert "3 entries in 1 module:\n" in text and "1 entry in 1 module:\n" in text
    assert "a: short_by_name (by-name), short, long\n" in text
    assert text.index("a: short_by_name") < text.index("b: other\n")
    heads = re.findall(r"^OBSERVES SET (\S+)", text, re.MULTILINE)
    assert heads == ["a.short", "b.other"]  # resolved beats shorter by-name
    assert "witnesses: 2 of 4, the strongest, then shortest, one of each group" in text
    one = _rich(report, RenderOptions(width=100, witnesses=1))
    assert re.findall(r"^OBSERVES SET (\S+)", one, re.MULTILINE) == ["a.short"]
    every = _rich(report, RenderOptions(width=100, witnesses=None))
    assert len(re.findall(r"^OBSERVES SET ", every, re.MULTILINE)) == 4
    assert "witnesses:" not in every


def test_a_large_group_lists_its_largest_modules_and_counts_the_rest() -> None:
    """78 entries in 40 modules took 80 lines of SGLang's report; by default a group shows the
    modules with most entries, a few names each, and counts the rest; --witnesses all (like
    the JSON) lists every entry."""
    flag = sample_report().flags[0]
    entries = tuple(
        _observing(f"pkg.m{m}.f{k}", 3, Evidence.RESOLVED, 60)
        for m in range(12)
        for k in range(12 - m)  # module m0 has 12 entries, m11 has 1
    )
    report = AnalysisReport((replace(flag, entries=entries),), ())
    text = _rich(report, RenderOptions(width=100))
    assert "78 entries in 12 modules:\n" in text
    listed = re.findall(r"^\s+(m\d+): ", text, re.MULTILINE)
    assert listed == ["m0", "m1", "m2"]  # most entries first
    assert "m0: f0, f1, f10, f11 and 8 more\n" in text  # names in the order entries are sorted
    assert "and 45 more in 9 other modules" in text  # 9+8+...+1
    every = _rich(report, RenderOptions(width=100, witnesses=None))
    assert len(re.findall(r"^\s+m\d+: ", every, re.MULTILINE)) == 12
    assert "more in" not in every and "f11" in every


def test_many_groups_list_the_first_in_full_and_the_smaller_ones_a_line_each() -> None:
    """SGLang's flag has 11 groups behind one sticky setter and one accessor: the setter is
    written out once ("as in group 1"), the accessor stated once, and the groups after the
    first few get a line each, so the report stays near 150 lines at 80 columns."""
    flag = sample_report().flags[0]
    entries = tuple(
        replace(
            _observing(f"pkg.m{g}.f{k}", 3, Evidence.RESOLVED, 60 + g),
            witness=tuple(
                replace(s, callee="pkg.flags.is_on") if s.step is StepKind.READ else s
                for s in _observing("x", 3, Evidence.RESOLVED, 60 + g).witness
            ),
        )
        for g in range(9)
        for k in range(9 - g)  # group g has 9 - g entries, so the order is fixed
    )
    report = AnalysisReport((replace(flag, entries=entries),), ())
    text = _rich(report, RenderOptions(width=100))
    assert "(9 groups)" in text
    assert text.count("every read goes through flags.is_on()") == 1
    assert " via " not in text.split("witnesses:")[0]
    assert len(re.findall(r"^\d\. read ", text, re.MULTILINE)) == 6
    assert len(re.findall(r"^   set  as in group 1$", text, re.MULTILINE)) == 5
    assert "and 3 smaller groups, 6 entries (--witnesses all lists them):" in text
    assert re.search(r"^7\.\s+g at mod\.py:66, 3 entries$", text, re.MULTILINE), text
    every = _rich(report, RenderOptions(width=100, witnesses=None))
    assert len(re.findall(r"^\d\. read ", every, re.MULTILINE)) == 9
    assert "smaller groups" not in every


def test_rich_cuts_nothing_at_80_columns() -> None:
    """A name longer than the line folds onto the next line instead of ending in an ellipsis."""
    flag = sample_report().flags[0]
    long_name = "pkg." + ".".join(f"segment{i}" for i in range(12)) + ".entry"
    report = AnalysisReport(
        (replace(flag, entries=(_observing(long_name, 3, Evidence.RESOLVED, 60),)),), ()
    )
    text = _rich(report, RenderOptions(width=80))
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert long_name.removeprefix("pkg.") in text.replace("\n", "").replace(" ", "")


def test_concise_is_one_sorted_line_per_finding() -> None:
    flag = sample_report().flags[0]
    entries = (
        _observing("pkg.a.long", 5, Evidence.RESOLVED, 60),
        _observing("pkg.a.short", 4, Evidence.RESOLVED, 60),
        _observing("pkg.b.other", 6, Evidence.RESOLVED, 9),
    )
    report = AnalysisReport((replace(flag, entries=entries),), ())
    lines = "".join(CHECK["concise"].render(report, RenderOptions())).splitlines()
    assert lines == [
        "pkg/mod.py:9:5: FT001 pkg.b.other can run this read of _on while it is set, "
        "set by pkg.cm() entered in pkg.f9",
        "pkg/mod.py:11:5: FT101 an exception leaves it set: _on stays set: the body raises "
        "(in pkg.enabled)",
        "pkg/mod.py:12:5: FT102 not reentrant (in pkg.enabled)",
        "pkg/mod.py:60:5: FT001 pkg.a.short and 1 other entry can run this read of _on while "
        "it is set, set by pkg.cm() entered in pkg.f9",
    ]


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
    # the answer for each flag, each flag, then the errors and the summary
    assert len(pieces) == 4
    answer = "_on: " + pieces[1].partition("\n")[0] + "\n"
    assert pieces[0] == answer * 2 + "\n"
    assert pieces[1] == pieces[2] and pieces[1].startswith("1 of 2 entry points")


def test_the_read_step_shows_its_guards_in_rich_and_json() -> None:
    from flagtrace.model import Guard, GuardKind, GuardNot, GuardPath

    guards = (
        Guard("not cfg.capture", 3, True, GuardKind.EXIT, GuardNot(GuardPath("cfg.capture"))),
        Guard("cfg.fast", 4, False, GuardKind.IF, GuardPath("cfg.fast")),
    )
    read = WitnessStep(
        StepKind.READ, "pkg.step", _loc(8), None, guard="cfg.capture and cfg.fast", text="_on"
    )
    read = dataclasses.replace(read, guards=guards)
    base = sample_report()
    flag = dataclasses.replace(
        base.flags[0],
        entries=(EntryVerdict("pkg.main", True, Evidence.RESOLVED, "it can be set", (read,)),),
    )
    report = dataclasses.replace(base, flags=(flag,))
    text = _rich(report, RenderOptions(width=200))
    after_read = text.split(" 1 read  reads the flag\n", 1)[1]
    assert after_read.splitlines()[1].strip() == "guarded by: cfg.capture and cfg.fast"
    doc = json.loads("".join(CHECK["json"].render(report, RenderOptions())))
    (step,) = doc["flags"][0]["entries"][0]["witness"]
    assert step["guard"] == "cfg.capture and cfg.fast"
    assert step["guards"] == [
        {
            "kind": "exit",
            "text": "not cfg.capture",
            "negated": True,
            "line": 3,
            "expr": {"not": {"path": "cfg.capture"}},
        },
        {
            "kind": "if",
            "text": "cfg.fast",
            "negated": False,
            "line": 4,
            "expr": {"path": "cfg.fast"},
        },
    ]


def test_a_setter_that_refuses_nesting_says_so() -> None:
    """``nesting_guarded`` (issue 15, item 5): the rich setter row and the JSON say it."""
    report = sample_report()
    (flag,) = report.flags
    guarded = replace(flag.setters[0], hazards=(), nesting_guarded=True)
    report = replace(report, flags=(replace(flag, setters=(guarded, *flag.setters[1:])),))
    assert [s["nesting_guarded"] for s in _json(report)["flags"][0]["setters"]] == [True, False]
    rows = _rich(report, RenderOptions(width=200)).split("setters\n", 1)[1]
    assert rows.count("refuses nested use") == 1
    assert "hazards: -, refuses nested use" in rows
