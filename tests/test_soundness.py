"""Soundness oracle: random programs run for real, compared with flagtrace's verdicts.

hypothesis generates small packages (``tests/soundness/programs.py``: a flag in
``pkg/state.py``, context-manager, class and sticky setters, an accessor, functions that
call each other, recurse on a bounded argument, loop, branch, return early, raise and
catch, nest ``with`` blocks and read the flag in every spelling). Each program runs in a
subprocess (``tests/soundness/tracer.py``: a fresh forked interpreter per entry, and
per ordered pair of entries) with ``sys.settrace`` recording the flag's value at every
read. The oracle (``tests/soundness/oracle.py``) then requires, per entry:

* a fresh run read the flag set  ->  flagtrace says *observes set*;
* a run with another entry first read it set  ->  flagtrace says *observes set*, for an
  entry no program root reaches (it then assumes a sticky setter may have run first);
* a run of a program root (some programs have ``__main__`` blocks, a script module
  ``pkg/tool.py`` or a console script in ``pyproject.toml``) read it set while the entry
  ran  ->  flagtrace says *observes set* (a process runs one root: an entry a root
  reaches runs the way the root runs it, and a generated program has no input);
* every witness is a real chain: each step runs in the function the previous call step
  entered, each call/enter/set is on a line of that function that really calls/enters
  the named callee, and the last step is a real read of the flag.

Where flagtrace says *observes set* but no run saw it, the false positive is counted
with a guessed cause; the rate is printed at the end of the module (and recorded as
the ``soundness_*`` testsuite properties in JUnit XML).

Minimal programs on which the oracle failed are kept under ``fixtures/soundness/<name>/``
(``case.json``: entries, the violation kinds, and ``xfail`` with what flagtrace gets
wrong while it does); ``test_saved_case`` is a strict xfail for each until the engine is
fixed, then the ``xfail`` key is removed and the case guards against regressions.

``FLAGTRACE_SOUNDNESS_EXAMPLES`` overrides the number of programs (default 100);
``FLAGTRACE_SOUNDNESS_EXCLUDE=raise,write`` leaves constructs out of them (the names are
``EXCLUDABLE`` in ``tests/soundness/programs.py``), to check one fix at a time. CI sets neither.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.registry import REPO
from tests.soundness.oracle import (
    Outcome,
    SavedCase,
    Source,
    analyse,
    check_project,
    format_summary,
    run_program,
    saved_cases,
    summarize,
    witness_problems,
)
from tests.soundness.programs import Program, hypothesis_programs

SAVED = REPO / "fixtures" / "soundness"
EXAMPLES = int(os.environ.get("FLAGTRACE_SOUNDNESS_EXAMPLES", "100"))
# constructs to leave out while an engine bug in them is being fixed (see EXCLUDABLE); empty in CI
EXCLUDE = frozenset(x for x in os.environ.get("FLAGTRACE_SOUNDNESS_EXCLUDE", "").split(",") if x)

_outcomes: dict[str, Outcome] = {}  # program source -> outcome (deduplicated)


@pytest.fixture(scope="module")
def fp_summary(
    request: pytest.FixtureRequest, record_testsuite_property: Callable[[str, object], None]
) -> Iterator[dict[str, Outcome]]:
    """Collects outcomes; prints the false-positive rate when the module is done."""
    yield _outcomes
    if not _outcomes:
        return
    s = summarize(list(_outcomes.values()))
    record_testsuite_property("soundness_programs", s["programs"])
    record_testsuite_property("soundness_violations", sum(s["violations"].values()))
    record_testsuite_property("soundness_fp_rate", f"{s['fp_rate']:.4f}")
    record_testsuite_property("soundness_fp_rate_any_order", f"{s['fp_rate_any_order']:.4f}")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None:
        with (
            capture.global_and_fixture_disabled()
            if capture is not None
            else contextlib.nullcontext()
        ):
            reporter.write_line("")
            reporter.write_line(format_summary(s))


def _describe(program: Program, outcome: Outcome) -> str:
    return "\n".join(str(v) for v in outcome.violations) + "\n\nprogram:\n" + program.source()


# ----------------------------------------------------------------------------- the property


@pytest.mark.usefixtures("fp_summary")
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    # no "explain" phase: it reruns the failing example many times
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(program=hypothesis_programs(EXCLUDE))
def test_flagtrace_is_sound_on_random_programs(program: Program) -> None:
    outcome = _outcomes.get(program.source())
    if outcome is None:  # hypothesis repeats small programs: run each once
        with tempfile.TemporaryDirectory(prefix="flagtrace-soundness-") as tmp:
            root = program.write(Path(tmp))
            outcome = check_project(root, program.entries)
        _outcomes[program.source()] = outcome
    assert not outcome.violations, _describe(program, outcome)


# ----------------------------------------------------------------------------- saved minimal cases


class SoundnessViolation(AssertionError):
    """The oracle's verdict on a saved case (what its strict xfail expects)."""


def _case_param(case: SavedCase) -> object:
    marks = []
    if case.xfail:
        marks.append(pytest.mark.xfail(strict=True, raises=SoundnessViolation, reason=case.xfail))
    return pytest.param(case, id=case.name, marks=marks)


CASES = saved_cases(SAVED)


@pytest.mark.parametrize("case", [_case_param(c) for c in CASES])
def test_saved_case(case: SavedCase) -> None:
    outcome = check_project(case.root, case.entries)
    kinds = sorted({v.kind for v in outcome.violations})
    detail = "\n".join(str(v) for v in outcome.violations)
    if case.xfail and kinds and kinds != sorted(set(case.violations)):
        # failing, but not the way the case documents: a real failure, not the xfail
        pytest.fail(f"{case.name}: expected violations {case.violations}, got {kinds}:\n{detail}")
    if outcome.violations:
        raise SoundnessViolation(f"{case.name}:\n{detail}")


def test_saved_cases_exist() -> None:
    assert CASES, f"no saved cases under {SAVED}"
    for case in CASES:
        assert (case.root / "README.md").is_file(), (
            f"{case.name}: README.md explains what flagtrace got wrong"
        )
        assert Source(case.root).read_sites, f"{case.name}: no line is marked '# read'"


# ----------------------------------------------------------------------------- the oracle itself

GOOD = {
    "pkg/__init__.py": "",
    "pkg/state.py": """\
import contextlib

FLAG = False


@contextlib.contextmanager
def enabled():
    global FLAG
    prev = FLAG
    FLAG = True
    try:
        yield
    finally:
        FLAG = prev


def is_on():
    return FLAG
""",
    "pkg/m1.py": """\
from pkg import state


def inside():
    with state.enabled():
        helper()


def outside():
    helper()


def helper():
    v = state.is_on()  # read
""",
}


def _write(files: dict[str, str], root: Path) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_tracer_records_reads_and_calls(tmp_path: Path) -> None:
    root = _write(GOOD, tmp_path)
    fresh, after = run_program(root, ["pkg.m1.inside", "pkg.m1.outside"], Source(root).read_sites)
    inside, outside = fresh["pkg.m1.inside"], fresh["pkg.m1.outside"]
    assert inside.saw_set and inside.set_reads == [("pkg/m1.py", 14)]
    assert not outside.saw_set and outside.reads == [("pkg/m1.py", 14, "False")]
    assert ("pkg.m1.inside", "pkg.state.enabled") in inside.edges  # through contextlib's frames
    assert ("pkg.m1.inside", "pkg.m1.helper") in inside.edges
    assert ("pkg.m1.helper", "pkg.state.is_on") in inside.edges
    # the manager restores the flag, so running `inside` first changes nothing for `outside`
    assert not any(run.saw_set for _, run in after["pkg.m1.outside"])


def test_oracle_accepts_a_real_witness_and_rejects_bogus_ones(tmp_path: Path) -> None:
    root = _write(GOOD, tmp_path)
    outcome = check_project(root, ["pkg.m1.inside", "pkg.m1.outside"])
    assert not outcome.violations, "\n".join(map(str, outcome.violations))
    by_entry = {e.entry: e for e in outcome.entries}
    assert by_entry["pkg.m1.inside"].observes_set and not by_entry["pkg.m1.outside"].observes_set
    witness = by_entry["pkg.m1.inside"].witness
    src = Source(root)
    assert witness_problems(src, "pkg.m1.inside", witness) == []
    calls = [i for i, s in enumerate(witness) if s.step == "call"]
    assert calls, witness
    i = calls[0]
    bogus = [
        # a call to a function that line does not call
        witness[:i] + (replace(witness[i], callee="pkg.m1.outside"),) + witness[i + 1 :],
        # a step on a line of another function
        witness[:i]
        + (replace(witness[i], location=replace(witness[i].location, line=10)),)
        + witness[i + 1 :],
        # the chain does not end at a read
        witness[:-1],
        # the read is on a line that reads nothing
        witness[:-1] + (replace(witness[-1], location=replace(witness[-1].location, line=12)),),
    ]
    for w in bogus:
        assert witness_problems(src, "pkg.m1.inside", w), w


def test_oracle_reports_a_false_never(tmp_path: Path) -> None:
    """A read flagtrace cannot see (``getattr`` with a computed name) is caught."""
    files = dict(GOOD)
    files["pkg/m1.py"] = """\
from pkg import state


def inside():
    with state.enabled():
        v = getattr(state, "FL" + "AG")  # read
"""
    root = _write(files, tmp_path)
    outcome = check_project(root, ["pkg.m1.inside"])
    assert [v.kind for v in outcome.violations] == ["false-never"]
    assert analyse(root, ["pkg.m1.inside"]).flags[0].entries[0].observes_set is False
