"""Hazard oracle: generated setters run for real, compared with flagtrace's FT101-FT103.

The generator and the driver are in ``tests/soundness/hazards.py`` (the shapes, and
what running a setter decides for each code). Two tests, both in CI:

* ``test_fixed_setters``: 300 setters from a fixed seed (``random.Random``), in
  batches of 50 per subprocess and per analysis; every disagreement is listed with
  the setter's source, what running it gave and flagtrace's hazards;
* ``test_hypothesis_setters``: hypothesis draws batches of setters (derandomized, so
  CI runs a fixed set) and, on a disagreement, shrinks the batch to one minimal
  setter before reporting it.

``FLAGTRACE_HAZARD_SEED`` / ``FLAGTRACE_HAZARD_EXAMPLES`` change the seed and the
number of setters of the first test; ``benchmarks/hazard_oracle.py`` runs thousands.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.soundness.hazards import Case, compare, hypothesis_cases, random_cases

SEED = int(os.environ.get("FLAGTRACE_HAZARD_SEED", "2026"))
EXAMPLES = int(os.environ.get("FLAGTRACE_HAZARD_EXAMPLES", "300"))


def _report(cases: list[Case]) -> str:
    with tempfile.TemporaryDirectory(prefix="flagtrace-hazards-") as tmp:
        diffs = compare(Path(tmp), cases)
    return "\n\n".join(str(d) for d in diffs)


def test_fixed_setters() -> None:
    cases = random_cases(SEED, EXAMPLES)
    assert len({c.shape for c in cases}) > 50  # the generator covers many shapes
    problems = _report(cases)
    assert not problems, f"flagtrace's hazards differ from running the setters:\n{problems}"


@settings(
    max_examples=6,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
@given(hypothesis_cases(20))
def test_hypothesis_setters(cases: list[Case]) -> None:
    problems = _report(cases)
    assert not problems, f"flagtrace's hazards differ from running the setters:\n{problems}"


def test_counter_setters() -> None:
    """Counters (``FLAG += 1`` on entry, ``FLAG -= 1`` on exit, in the setter's own
    function or in ``__enter__`` and ``__exit__``): the decrement restores what the
    setter found, nested uses included, so only where it stands decides a hazard
    (none in ``finally`` or ``__exit__``, FT101 after the ``yield`` or call, FT103
    when missing). Every combination of kind, write form, reset position, nesting
    guard, handler and a raising statement before the ``try``."""
    cases = [
        Case(kind, form, form, "count", reset_pos, guard, between, handler, "none")
        for kind in ("cm", "func")
        for form in ("global", "attr")
        for reset_pos in ("finally", "after", "none")
        for guard in ("none", "assert")
        for between in ((), ("fail",))
        for handler in ("none", "note")
    ]
    cases += [
        Case("class", form, form, "count", reset_pos, guard, between, "none", "none", exit_true)
        for form in ("global", "attr")
        for reset_pos in ("finally", "none")
        for guard in ("none", "assert")
        for between in ((), ("fail",))
        for exit_true in (False, True)
    ]
    problems = _report(cases)
    assert not problems, f"flagtrace's hazards differ from running the setters:\n{problems}"


def test_oracle_sees_a_leak() -> None:
    """The oracle itself can fail: a reset after the ``yield`` leaks, a constant reset
    clears an outer use, a missing reset is sticky (so a broken driver or an analysis
    that reports nothing cannot pass the tests above by agreeing on nothing)."""
    from tests.soundness.hazards import run_cases, write_package

    leaky = Case("cm", "global", "global", "const", "after", "none", (), "none", "none")
    sticky = Case("func", "global", "global", "const", "none", "none", (), "none", "none")
    safe = Case("cm", "global", "global", "local", "finally", "none", ("harmless",), "none", "none")
    with tempfile.TemporaryDirectory(prefix="flagtrace-hazards-") as tmp:
        write_package(Path(tmp), [leaky, sticky, safe])
        got = run_cases(Path(tmp), [leaky, sticky, safe])
    assert got == {0: ["FT101", "FT102"], 1: ["FT103"], 2: []}
