"""Every flag fixture under ``fixtures/flags/<case>`` yields the findings its expected.json states.

Each case is a mini project (``pkg/...``, analysed as the plain directory ``<case>``, so modules
are ``pkg.mod``) with ``expected.json`` beside it::

    {"description": "...", "args": ["--flag", ..., "--entry", ...], "exit_code": 1,
     "flags": [{"qualname", "initial", "setters", "readers", "entries", "entries_exact",
                "hazards"}],
     "errors_contain": [...]}

The test runs ``flagtrace.cli.main([case, *args, "--format", "json", "-o", out])`` and compares
the report with these rules (expected lists are *subsets* of the actual ones unless noted):

* the exit code is equal, and the flags reported are exactly the expected ones (by qualname);
* per flag: ``initial`` is equal; each expected setter matches an actual one on ``function``,
  ``kind`` and ``value``, with an EQUAL set of hazard kinds; each expected reader matches an
  actual one on ``function`` and ``via`` (null: a direct read); the set of (kind, function)
  hazards is EQUAL to the expected one;
* per expected entry (matched by ``entry``): ``observes_set`` is equal, and when given,
  ``evidence`` is equal, ``witness_functions`` equals the witness steps' functions with
  consecutive duplicates removed, ``witness_steps`` equals their ``step`` values, each of
  ``guards_contain`` is a substring of some step's ``guard``, ``reason_contains`` (a string or a
  list of them) is a substring of ``reason``; ``"entries_exact": true`` makes the set of
  reported entries equal to the expected one (entry discovery reports only observing entries);
* each of ``errors_contain`` is a substring of some ``errors[].message``.

Every mismatch of a case is collected and reported at once, with the actual JSON beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.registry import REPO

CASES = REPO / "fixtures" / "flags"
CASE_NAMES = sorted(path.parent.name for path in CASES.glob("*/expected.json"))

Json = dict[str, Any]

# The keys an expected.json may use, so a typo in a fixture fails loudly instead of checking less.
CASE_KEYS = {"description", "args", "exit_code", "flags", "errors_contain"}
FLAG_KEYS = {"qualname", "initial", "setters", "readers", "entries", "entries_exact", "hazards"}
SETTER_KEYS = {"function", "kind", "value", "hazards"}
READER_KEYS = {"function", "via"}
ENTRY_KEYS = {
    "entry",
    "observes_set",
    "evidence",
    "witness_functions",
    "witness_steps",
    "guards_contain",
    "reason_contains",
}
HAZARD_KEYS = {"kind", "function"}


# --------------------------------------------------------------------------
# The case and the run


@dataclass(frozen=True, slots=True)
class FlagCase:
    """One ``fixtures/flags/<name>`` directory and its expected findings."""

    name: str
    root: Path
    expected: Json

    @classmethod
    def load(cls, name: str) -> FlagCase:
        root = CASES / name
        expected: Json = json.loads((root / "expected.json").read_text(encoding="utf-8"))
        return cls(name, root, expected)

    @property
    def args(self) -> list[str]:
        return list(self.expected["args"])

    @property
    def flags(self) -> list[Json]:
        return list(self.expected["flags"])


@dataclass(frozen=True, slots=True)
class Run:
    """What ``flagtrace.cli.main`` returned, wrote and printed for one case."""

    exit_code: int | None
    report: Json | None  # None when no JSON report was written
    output: str  # captured stdout + stderr, shown when something is off


def run_cli(case: FlagCase, out: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    from flagtrace.cli import main  # imported here: a missing CLI fails the cases, not collection

    argv = [str(case.root), *case.args, "--format", "json", "-o", str(out)]
    try:
        code: int | None = main(argv)
    except SystemExit as stop:  # tolerated: a CLI that exits instead of returning its code
        code = stop.code if isinstance(stop.code, int) or stop.code is None else 2
    captured = capsys.readouterr()
    report = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None
    return Run(code, report, captured.out + captured.err)


# --------------------------------------------------------------------------
# Helpers


def snippet(value: object, limit: int = 2500) -> str:
    """Actual JSON for an assertion message, cut to a readable size."""
    text = json.dumps(value, indent=2, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "\n  ... (cut)"


def dedup_consecutive(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if not out or out[-1] != item:
            out.append(item)
    return out


def as_list(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def unknown_keys(where: str, item: Json, allowed: set[str]) -> list[str]:
    extra = sorted(set(item) - allowed)
    return [f"{where}: unknown key(s) {extra} in expected.json"] if extra else []


def validate_expected(case: FlagCase) -> list[str]:
    """Typos in a fixture's expected.json would silently check less; report them instead."""
    problems = unknown_keys(case.name, case.expected, CASE_KEYS)
    for key in ("description", "args", "exit_code", "flags"):
        if key not in case.expected:
            problems.append(f"{case.name}: expected.json lacks {key!r}")
    for flag in case.expected.get("flags", []):
        where = f"{case.name}: flag {flag.get('qualname')}"
        problems += unknown_keys(where, flag, FLAG_KEYS)
        for setter in flag.get("setters", []):
            problems += unknown_keys(f"{where} setter", setter, SETTER_KEYS)
        for reader in flag.get("readers", []):
            problems += unknown_keys(f"{where} reader", reader, READER_KEYS)
        for entry in flag.get("entries", []):
            problems += unknown_keys(f"{where} entry", entry, ENTRY_KEYS)
        for hazard in flag.get("hazards", []):
            problems += unknown_keys(f"{where} hazard", hazard, HAZARD_KEYS)
    return problems


# --------------------------------------------------------------------------
# Comparisons: each returns a list of human-readable mismatches


def check_flag_set(expected: list[Json], actual: list[Json]) -> list[str]:
    want = {flag["qualname"] for flag in expected}
    got = {flag.get("qualname") for flag in actual}
    if want == got:
        return []
    return [f"flags reported: expected {sorted(want)}, got {sorted(map(str, got))}"]


def hazard_kinds_of_setter(setter: Json, flag: Json) -> set[str]:
    """A setter's hazards as kind names; codes (``[code...]`` in the issue) map through the
    flag's hazard list, so either spelling compares equal."""
    code_to_kind = {h.get("code"): h.get("kind") for h in flag.get("hazards", [])}
    return {code_to_kind.get(item, item) for item in setter.get("hazards", [])}


def check_setters(expected: Json, actual: Json) -> list[str]:
    problems = []
    for want in expected.get("setters", []):
        key = (want["function"], want["kind"], want["value"])
        candidates = [
            s
            for s in actual.get("setters", [])
            if (s.get("function"), s.get("kind"), s.get("value")) == key
        ]
        if not candidates:
            problems.append(
                f"no setter with function/kind/value {key}; actual setters:\n"
                + snippet(actual.get("setters", []))
            )
            continue
        want_kinds = set(want["hazards"])
        got_kinds = [hazard_kinds_of_setter(s, actual) for s in candidates]
        if want_kinds not in got_kinds:
            problems.append(
                f"setter {want['function']}: hazard kinds expected {sorted(want_kinds)}, "
                f"got {[sorted(kinds) for kinds in got_kinds]}"
            )
    return problems


def check_readers(expected: Json, actual: Json) -> list[str]:
    got = {(r.get("function"), r.get("via")) for r in actual.get("readers", [])}
    missing = [
        (r["function"], r["via"])
        for r in expected.get("readers", [])
        if (r["function"], r["via"]) not in got
    ]
    if not missing:
        return []
    return [
        f"readers missing (function, via): {missing}; actual readers:\n"
        + snippet(actual.get("readers", []))
    ]


def check_hazards(expected: Json, actual: Json) -> list[str]:
    want = {(h["kind"], h["function"]) for h in expected.get("hazards", [])}
    got = {(h.get("kind"), h.get("function")) for h in actual.get("hazards", [])}
    if want == got:
        return []
    return [
        "hazards (kind, function) differ:\n"
        f"  missing:    {sorted(want - got)}\n"
        f"  unexpected: {sorted(got - want, key=str)}\n"
        "actual hazards:\n" + snippet(actual.get("hazards", []))
    ]


def check_entry(want: Json, got: Json) -> list[str]:
    name = want["entry"]
    problems = []
    if got.get("observes_set") != want["observes_set"]:
        problems.append(
            f"entry {name}: observes_set expected {want['observes_set']}, "
            f"got {got.get('observes_set')}"
        )
    if "evidence" in want and got.get("evidence") != want["evidence"]:
        problems.append(
            f"entry {name}: evidence expected {want['evidence']!r}, got {got.get('evidence')!r}"
        )
    steps: list[Json] = got.get("witness") or []
    if "witness_functions" in want:
        functions = dedup_consecutive(str(step.get("function")) for step in steps)
        if functions != want["witness_functions"]:
            problems.append(
                f"entry {name}: witness functions (consecutive duplicates removed)\n"
                f"  expected {want['witness_functions']}\n  got      {functions}"
            )
    if "witness_steps" in want:
        kinds = [step.get("step") for step in steps]
        if kinds != want["witness_steps"]:
            problems.append(
                f"entry {name}: witness steps expected {want['witness_steps']}, got {kinds}"
            )
    guards = [str(step.get("guard") or "") for step in steps]
    for text in want.get("guards_contain", []):
        if not any(text in guard for guard in guards):
            problems.append(
                f"entry {name}: no witness step's guard contains {text!r}; guards: {guards}"
            )
    reason = str(got.get("reason") or "")
    for text in as_list(want.get("reason_contains", [])):
        if text not in reason:
            problems.append(f"entry {name}: reason does not contain {text!r}; reason: {reason!r}")
    if problems:
        problems.append(f"actual entry {name}:\n" + snippet(got))
    return problems


def check_entries(expected: Json, actual: Json) -> list[str]:
    if "entries" not in expected:
        return []
    by_name = {e.get("entry"): e for e in actual.get("entries", [])}
    problems = []
    for want in expected["entries"]:
        got = by_name.get(want["entry"])
        if got is None:
            problems.append(
                f"entry {want['entry']} not reported; reported: {sorted(map(str, by_name))}"
            )
            continue
        problems += check_entry(want, got)
    if expected.get("entries_exact"):
        want_names = {e["entry"] for e in expected["entries"]}
        if set(by_name) != want_names:
            problems.append(
                f"reported entries expected exactly {sorted(want_names)}, "
                f"got {sorted(map(str, by_name))}"
            )
    return problems


def check_flag(expected: Json, actual: Json) -> list[str]:
    problems = []
    if actual.get("initial") != expected["initial"]:
        problems.append(f"initial expected {expected['initial']!r}, got {actual.get('initial')!r}")
    problems += check_setters(expected, actual)
    problems += check_readers(expected, actual)
    problems += check_hazards(expected, actual)
    problems += check_entries(expected, actual)
    return [f"[{expected['qualname']}] {problem}" for problem in problems]


def check_errors(expected: Json, report: Json) -> list[str]:
    messages = [str(error.get("message", "")) for error in report.get("errors", [])]
    return [
        f"no error message contains {text!r}; errors: {messages}"
        for text in expected.get("errors_contain", [])
        if not any(text in message for message in messages)
    ]


def check_report(case: FlagCase, run: Run) -> list[str]:
    problems = []
    if run.exit_code != case.expected["exit_code"]:
        problems.append(f"exit code expected {case.expected['exit_code']}, got {run.exit_code}")
    report = run.report
    if report is None:
        problems.append("no JSON report was written to the -o file")
        return problems
    if report.get("version") != 1:
        problems.append(f"report version expected 1, got {report.get('version')!r}")
    actual_flags: list[Json] = report.get("flags", [])
    problems += check_flag_set(case.flags, actual_flags)
    by_qualname = {flag.get("qualname"): flag for flag in actual_flags}
    for expected in case.flags:
        actual = by_qualname.get(expected["qualname"])
        if actual is not None:
            problems += check_flag(expected, actual)
    problems += check_errors(case.expected, report)
    return problems


# --------------------------------------------------------------------------
# The tests


def test_there_is_a_flag_fixture_per_construct_and_hazard() -> None:
    assert len(CASE_NAMES) >= 15, CASE_NAMES


@pytest.mark.parametrize("name", CASE_NAMES)
def test_expected_json_is_well_formed(name: str) -> None:
    case = FlagCase.load(name)
    problems = validate_expected(case)
    assert not problems, "\n".join(problems)
    assert (case.root / "pkg" / "__init__.py").is_file(), (
        f"{name}: the mini project lacks pkg/__init__.py"
    )


@pytest.mark.parametrize("name", CASE_NAMES)
def test_flag_fixture(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = FlagCase.load(name)
    run = run_cli(case, tmp_path / "report.json", capsys)
    problems = check_report(case, run)
    assert not problems, (
        f"{name}: {case.expected['description']}\n"
        f"flagtrace {' '.join(case.args)}\n\n"
        + "\n\n".join(problems)
        + (f"\n\nCLI output:\n{run.output[-3000:]}" if run.output.strip() else "")
    )


# --------------------------------------------------------------------------
# The checker itself, checked without the engine: a report built from expected.json passes,
# and a report that differs in one field fails with a message naming that field.


def synthetic_report(case: FlagCase) -> Json:
    """The smallest report that meets ``case``'s expectations."""
    flags = []
    for flag in case.flags:
        hazards = [
            {
                "code": f"FT{i}",
                "kind": h["kind"],
                "function": h["function"],
                "file": "x.py",
                "line": 1,
                "message": "",
            }
            for i, h in enumerate(flag.get("hazards", []))
        ]
        entries = []
        for entry in flag.get("entries", []):
            functions = entry.get("witness_functions", [])
            kinds = entry.get("witness_steps", ["call"] * len(functions))
            pad = len(kinds) - len(functions)  # the first steps repeat the entry function
            steps = [
                {
                    "function": functions[max(0, i - pad)] if functions else "?",
                    "step": kind,
                    "guard": None,
                }
                for i, kind in enumerate(kinds)
            ]
            if steps and entry.get("guards_contain"):
                steps[0]["guard"] = " and ".join(entry["guards_contain"])
            entries.append(
                {
                    "entry": entry["entry"],
                    "observes_set": entry["observes_set"],
                    "evidence": entry.get("evidence", "resolved"),
                    "reason": " ".join(as_list(entry.get("reason_contains", []))),
                    "witness": steps,
                }
            )
        flags.append(
            {
                "qualname": flag["qualname"],
                "initial": flag["initial"],
                "setters": [dict(s, file="x.py", line=1) for s in flag.get("setters", [])],
                "readers": [dict(r, file="x.py", line=1) for r in flag.get("readers", [])],
                "entries": entries,
                "hazards": hazards,
            }
        )
    errors = [
        {"file": None, "line": None, "message": m} for m in case.expected.get("errors_contain", [])
    ]
    return {"version": 1, "flags": flags, "errors": errors}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_checker_accepts_a_report_that_meets_the_expectations(name: str) -> None:
    case = FlagCase.load(name)
    run = Run(case.expected["exit_code"], synthetic_report(case), "")
    assert check_report(case, run) == []


def test_the_checker_names_each_mismatch() -> None:
    case = FlagCase.load("sglang_story")
    report = synthetic_report(case)
    flag = report["flags"][0]
    flag["setters"][0]["hazards"] = ["exception-leak"]
    flag["hazards"].append({"kind": "sticky", "function": "pkg.x.f"})
    flag["entries"][0]["witness"][3]["function"] = "pkg.elsewhere.f"
    flag["entries"][0]["witness"][0]["guard"] = "can_run_graph"
    flag["entries"][1]["observes_set"] = True
    problems = "\n".join(check_report(case, Run(0, report, "")))
    for text in (
        "exit code expected 1, got 0",
        "hazard kinds expected ['exception-leak', 'non-reentrant']",
        "unexpected: [('sticky', 'pkg.x.f')]",
        "witness functions",
        "guard contains 'self.piecewise_cuda_graph_runner is not None",
        "ModelRunner.forward_decode: observes_set expected False, got True",
    ):
        assert text in problems, problems
