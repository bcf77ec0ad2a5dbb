"""A setter that refuses nested use is marked so by the engine (issue 15, item 5)."""

from __future__ import annotations

from flagtrace.api import analyze
from tests.registry import REPO

FIXTURE = REPO / "fixtures" / "flags" / "hazard_nesting_guard" / "pkg"


def test_nesting_guarded_setters() -> None:
    report = analyze([FIXTURE], ["_compiling"], jobs=1)
    (flag,) = report.flags
    got = {s.function.rpartition(".")[2]: s.nesting_guarded for s in flag.setters}
    # ``assert not _compiling`` and ``if _compiling: raise`` before the set; the third sets blindly
    assert got == {"compiling": True, "compiling_checked": True, "compiling_unguarded": False}
