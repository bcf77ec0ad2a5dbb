"""Answers widened to "anything" (``values.WIDE``).

A value that may be more than ``WIDEN_AT`` things is taken as anything: on
torch, pytree maps and ``__torch_function__`` made answers of 16,000-37,000
values and the whole package never finished resolving. A call through such a
value is unresolved, and a verdict that rests on it says so: it is never
quietly resolved to nothing. The real limit is thousands of values; these tests
lower it so that a program of a few classes crosses it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flagtrace.api import analyze, load_project
from flagtrace.model import EntryVerdict, Evidence
from flagtrace.resolve import Program, Resolver

SOURCE = """
from contextlib import contextmanager

FLAG = False


def is_on():
    return FLAG


@contextmanager
def switched_on():
    global FLAG
    FLAG = True
    try:
        yield
    finally:
        FLAG = False


class A0:
    def run(self):
        with switched_on():
            return is_on()


class A1:
    def run(self):
        pass


class A2:
    def run(self):
        pass


class A3:
    def run(self):
        pass


def pick(i):
    if i == 0:
        return A0()
    if i == 1:
        return A1()
    if i == 2:
        return A2()
    return A3()


def through_pick():
    return pick(0).run()


def through_param(obj):
    obj.run()


def through_attribute():
    method = pick(0).run
    method()


def main():
    through_param(pick(2))
    through_param(A0())


def direct():
    return A0().run()
"""


@pytest.fixture
def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(textwrap.dedent(SOURCE))
    return pkg


def _callees(package: Path, widen_at: int) -> tuple[dict[str, set[str]], set[str]]:
    """Each function's callees (short names), and the functions with an
    unresolved call."""
    resolver = Resolver(Program(load_project([str(package)], jobs=1).summaries))
    resolver.widen_at = widen_at
    resolver.run()
    callees: dict[str, set[str]] = {}
    unresolved: set[str] = set()
    for (scope, index), found in resolver.site_callees.items():
        name = scope.removeprefix("pkg.mod.")
        callees.setdefault(name, set()).update(c.qualname.removeprefix("pkg.mod.") for c in found)
        if not found and (scope, index) not in resolver.resolved_empty:
            unresolved.add(name)
    return callees, unresolved


def _verdicts(package: Path) -> dict[str, EntryVerdict]:
    report = analyze([package], ["FLAG"], ["pkg.mod.through_pick", "pkg.mod.direct"], jobs=1)
    assert not report.errors, report.errors
    (flag,) = report.flags
    return {v.entry.rpartition(".")[2]: v for v in flag.entries}


RUNS = {"A0.run", "A1.run", "A2.run", "A3.run"}


def test_an_answer_at_the_limit_is_kept(package: Path) -> None:
    callees, unresolved = _callees(package, widen_at=4)  # ``pick`` returns 4 instances
    assert RUNS <= callees["through_pick"]
    assert RUNS <= callees["through_attribute"]
    assert {"A0.run", "A2.run"} <= callees["through_param"]
    assert not unresolved


def test_an_answer_past_the_limit_is_anything_and_calls_through_it_unresolved(
    package: Path,
) -> None:
    callees, unresolved = _callees(package, widen_at=3)
    # the call of ``pick`` resolves; the call of what it returns does not, nor
    # of an attribute of it, nor through a parameter one call passes it to
    # (anything joined with ``A0()`` is anything)
    assert callees["through_pick"] == {"pick"}
    assert unresolved == {"through_pick", "through_attribute", "through_param"}
    assert callees["direct"] == {"A0.run"}


def test_a_verdict_through_a_widened_call_says_it_could_not_resolve_it(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = _verdicts(package)
    assert got["through_pick"].observes_set  # ``pick(0).run()`` may be ``A0.run``
    monkeypatch.setattr(Resolver, "widen_at", 3)
    got = _verdicts(package)
    assert got["direct"].observes_set
    widened = got["through_pick"]
    assert not widened.observes_set
    assert widened.evidence is Evidence.UNRESOLVED_CALLS
    assert [location.line for location in widened.unresolved_sites] == [
        SOURCE.splitlines().index("    return pick(0).run()") + 1
    ]
