"""Text from the analysed code is escaped and capped before a terminal reporter prints it."""

from __future__ import annotations

from flagtrace.model import (
    AnalysisReport,
    EntryVerdict,
    Evidence,
    FlagReport,
    Location,
    Resolution,
    StepKind,
    WitnessStep,
)
from flagtrace.report.text import ELLIPSIS, LINE_LIMIT, PROSE_LIMIT, cap, escape, quote, safe


def test_escape_writes_controls_and_reordering_characters_as_python_escapes() -> None:
    assert escape("a\x1b[31mb\x07\x08\r\n\t\x7f\x9b") == "a\\x1b[31mb\\x07\\x08\\r\\n\\t\\x7f\\x9b"
    assert escape("abc\u202edef\u2066\u200b\ufeff") == "abc\\u202edef\\u2066\\u200b\\ufeff"
    # printable text in any script, and the backslashes of source escapes, are left alone
    assert escape('résumé 数据 "\\x1b" <b>@x</b>') == 'résumé 数据 "\\x1b" <b>@x</b>'


def test_cap_and_quote() -> None:
    assert cap("x" * LINE_LIMIT) == "x" * LINE_LIMIT
    assert cap("x" * (LINE_LIMIT + 1)) == "x" * (LINE_LIMIT - 1) + ELLIPSIS
    quoted = quote("    f('" + "\x1b" * 500 + "')\n")
    assert len(quoted) == LINE_LIMIT and quoted.startswith("f('\\x1b\\x1b") and "\x1b" not in quoted


def _report(guard: str, reason: str, path: str = "pkg/a.py") -> AnalysisReport:
    step = WitnessStep(
        StepKind.CALL, "pkg.f", Location(path, 3), "pkg.g", Resolution.DIRECT, guard=guard
    )
    verdict = EntryVerdict("pkg.f", True, Evidence.RESOLVED, reason, (step,))
    flag = FlagReport("pkg._x", Location(path, 1), "False", (), (), (verdict,), ())
    return AnalysisReport((flag,), ())


def test_safe_escapes_every_string_and_caps_by_field() -> None:
    long_path = "d/" * 300 + "a\x1b.py"
    report = safe(_report("x != '\x1b[2J" + "B" * 2000 + "'", "r\x07" * 2000, long_path))
    entry = report.flags[0].entries[0]
    step = entry.witness[0]
    assert step.guard is not None and step.guard.startswith("x != '\\x1b[2J")
    assert len(step.guard) == LINE_LIMIT and step.guard.endswith(ELLIPSIS)
    assert len(entry.reason) == PROSE_LIMIT  # prose is capped further out
    assert step.location.path == long_path.replace("\x1b", "\\x1b")  # escaped, never cut
    assert step.step is StepKind.CALL and entry.evidence is Evidence.RESOLVED  # words kept


def test_safe_keeps_a_clean_report_as_it_is() -> None:
    report = _report("a > 1", "it can be set")
    assert safe(report) is report


def test_concise_prints_hostile_messages_escaped() -> None:
    from flagtrace.model import Hazard, HazardKind
    from flagtrace.report import CHECK, RenderOptions

    hazard = Hazard(
        "FT101",
        HazardKind.EXCEPTION_LEAK,
        "pkg.f",
        Location("pkg/a\x1b[2J.py", 4, 1),
        "an exception leaves it set",
        "stays set if `log('\x1b[31mok\x07')` raises",
    )
    flag = FlagReport("pkg._x", Location("pkg/a.py", 1), "False", (), (), (), (hazard,))
    text = "".join(CHECK["concise"].render(AnalysisReport((flag,), ()), RenderOptions()))
    assert text == (
        "pkg/a\\x1b[2J.py:4:1: FT101 an exception leaves it set: "
        "stays set if `log('\\x1b[31mok\\x07')` raises (in pkg.f)\n"
    )


def _every_occurrence(value: object, own: int = LINE_LIMIT) -> object:
    """``safe`` as first written, visiting every occurrence of every record: the oracle
    for the walk that makes each shared record safe once."""
    import dataclasses
    import enum

    if isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        return cap(escape(value), own)
    if isinstance(value, tuple):
        return tuple(_every_occurrence(item, own) for item in value)
    if isinstance(value, Location):
        return dataclasses.replace(value, path=escape(value.path))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        prose = {"reason", "message", "detail", "summary"}
        return dataclasses.replace(
            value,  # type: ignore[type-var]
            **{
                f.name: _every_occurrence(
                    getattr(value, f.name), PROSE_LIMIT if f.name in prose else LINE_LIMIT
                )
                for f in dataclasses.fields(value)
            },
        )
    return value


def test_a_record_shared_by_prose_and_names_is_capped_for_each() -> None:
    """One string object as a step's guard (capped at LINE_LIMIT) and as the entry's
    reason (PROSE_LIMIT): made safe once per cap, not once for both."""
    text = "y\x1b" * 400
    report = _report(text, text)
    made = safe(report)
    entry = made.flags[0].entries[0]
    assert len(entry.witness[0].guard or "") == LINE_LIMIT
    assert len(entry.reason) == PROSE_LIMIT
    assert made == _every_occurrence(report)


def test_safe_is_the_walk_of_every_occurrence_on_real_reports() -> None:
    from tests.regen_goldens import CASES, HOSTILE_CASES
    from tests.report_samples import check_report

    names = sorted(p.name for root in (CASES, HOSTILE_CASES) for p in root.iterdir() if p.is_dir())
    checked = 0
    for name in names:
        try:
            report = check_report(name)
        except AssertionError:  # a case with arguments beyond --flag/--entry
            continue
        assert safe(report) == _every_occurrence(report), name
        checked += 1
    assert checked >= 40
