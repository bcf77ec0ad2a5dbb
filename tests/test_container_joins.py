"""Container reads memoised for the round resolve exactly as reads made afresh.

Resolution keeps, per round, what each container holds under any key, and the
join of several containers' items (``RoundMemo.container_values``,
``container_joins``), once their contents are complete. On SGLang 0.5.23 the
joins made again at every read were half of the last two rounds. A memo that
answers for a container still being filled would answer with part of it; one
that skipped recording a reader would leave a registry's readers unresolved when
a later round stores more into it. ``Afresh`` below is resolution with those two
tables keeping nothing (every read joins again), and every fixture, generated
programs and SGLang must resolve the same with and without the memo: callees,
parameter values, container readers and the tables a stored program keeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from flagtrace.api import load_project
from flagtrace.memory import gc_paused
from flagtrace.resolve import Program, Resolver
from flagtrace.resolve.rounds import KEPT_ANSWERS
from flagtrace.resolve.values import (
    Values,
)
from tests.flag_cases import CASES
from tests.registry import REPO
from tests.soundness.programs import random_program

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

SCAN_CASES = sorted((REPO / "fixtures" / "scan").glob("*/case.json"))


class _Forgetful(dict[Any, Any]):
    """A memo table that keeps nothing: every read is made again."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class Afresh(Resolver):
    """Resolution with every container read made again: the reference. The same
    code and the same lookups (so cycles of lookups are solved through the same
    ones, ``RoundMemo.solve``), but the round's tables of container values and
    joins keep nothing."""

    def _one_round(self, scopes: list[str] | None) -> set[str]:
        self.memo.container_values = _Forgetful()
        self.memo.container_joins = _Forgetful()
        return super()._one_round(scopes)


def outcome(resolver: Resolver) -> dict[str, Any]:
    """Everything resolution leaves behind that a later stage or a stored program reads."""
    with gc_paused():
        resolver.run()
    memo = resolver.memo
    return {
        "callees": dict(resolver.site_callees),
        "empty": set(resolver.resolved_empty),
        "resumed": dict(resolver.resumed),
        "params": {k: set(v) for k, v in resolver.param_values.items() if v},
        "readers": {k: set(v) for k, v in resolver.container_readers.items()},
        "stores": memo.container_stores,
        **{name: dict(getattr(memo, name)) for name in KEPT_ANSWERS},
    }


def assert_resolves_alike(root: Path) -> Program:
    summaries = load_project([str(root)], jobs=1).summaries
    joined = outcome(Resolver(Program(summaries)))
    afresh = outcome(Afresh(Program(summaries)))
    for part, value in joined.items():
        assert value == afresh[part], part
    return Program(summaries)


@pytest.mark.parametrize("case", [*CASES, *SCAN_CASES], ids=lambda p: p.parent.name)
def test_fixtures_resolve_alike_with_the_container_memo(case: Path) -> None:
    assert_resolves_alike(case.parent)


@pytest.mark.parametrize("seed", range(20))
def test_generated_programs_resolve_alike_with_the_container_memo(
    seed: int, tmp_path: Path
) -> None:
    assert_resolves_alike(random_program(seed, frozenset()).write(tmp_path))


class Counting(Resolver):
    """Counts the joins of several containers the round memo answered."""

    joins_remembered = 0

    def _items_of(self, containers: Values, key: str | None, reader: str | None) -> Values:
        if len(containers) > 1 and (containers, key) in self.memo.container_joins:
            self.joins_remembered += 1
        return super()._items_of(containers, key, reader)


def called_from(resolver: Resolver, qn: str) -> set[str]:
    return {
        c.qualname
        for i in range(len(resolver.p.scopes[qn].calls))
        for c in resolver.site_callees[(qn, i)]
    }


def test_a_name_that_holds_several_containers_reaches_every_ones_items() -> None:
    """Not vacuous: the fixture's reads join two lists, or two dicts under one key,
    and the memo answers some of them."""
    root = REPO / "fixtures" / "flags" / "container_joins"
    resolver = Counting(Program(load_project([str(root)], jobs=1).summaries))
    with gc_paused():
        resolver.run()
    handlers = {f"pkg.handlers.{f}" for f in ("fast_a", "fast_b", "slow_a", "slow_b")}
    assert handlers <= called_from(resolver, "pkg.runner.run_all")
    named = called_from(resolver, "pkg.runner.run_named")
    assert {"pkg.handlers.slow_a", "pkg.handlers.slow_b"} <= named
    assert not {"pkg.handlers.fast_a", "pkg.handlers.fast_b"} & named
    assert {"pkg.handlers.fast_a", "pkg.handlers.slow_b"} <= called_from(
        resolver, "pkg.runner.run_defaults"
    )
    assert resolver.joins_remembered > 0


@pytest.mark.slow
def test_sglang_resolves_alike_with_the_container_memo(registry: PytestRegistry) -> None:
    assert_resolves_alike(registry.download("sglang==0.5.9") / "sglang")
