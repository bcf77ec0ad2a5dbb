"""A later round reuses what an earlier one computed, and resolves exactly as
if it had computed everything again.

Each round records what every lookup and every call site read (other lookups'
answers, parameter values, a container's stores); a later round takes a
lookup's or a site's earlier answer when everything it read answers as it did
(``RoundMemo.current``, ``RoundMemo.holds``). On SGLang 0.5.9 about 80-88% of
the sites rounds 2-4 resolve again are then not resolved. A read that was not
recorded would leave a stale answer: ``Recomputing`` below is resolution with
nothing recorded (every round computes every lookup it asks), and every
fixture, generated programs and SGLang must resolve the same with and without
the records: callees, parameter values, container readers and stores. The
tables a stored program keeps may hold more with the records (answers recorded
in an earlier round that still hold), each the answer the lookup has at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from flagtrace.api import load_project
from flagtrace.memory import gc_paused
from flagtrace.resolve import Program, Resolver
from flagtrace.resolve.rounds import KEPT_ANSWERS
from tests.flag_cases import CASES
from tests.registry import REPO
from tests.soundness.programs import random_program

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

SCAN_CASES = sorted((REPO / "fixtures" / "scan").glob("*/case.json"))


class Recomputing(Resolver):
    """Resolution that records nothing, so reuses nothing: the reference."""

    def collect_stores(self, records: dict[int, list[Any]] | None = None) -> int:
        self.memo.recording = False
        return super().collect_stores(None)

    def _one_round(self, scopes: list[str] | None) -> set[str]:
        self.memo.recording = False
        return super()._one_round(scopes)


def outcome(resolver: Resolver) -> dict[str, Any]:
    """What resolution leaves behind that a later stage or a stored program reads,
    but for the kept memo tables (compared apart)."""
    with gc_paused():
        resolver.run()
    return {
        "callees": dict(resolver.site_callees),
        "empty": set(resolver.resolved_empty),
        "resumed": dict(resolver.resumed),
        "params": {k: set(v) for k, v in resolver.param_values.items() if v},
        "readers": {k: set(v) for k, v in resolver.container_readers.items()},
        "stores": resolver.memo.container_stores,
    }


def ask_again(resolver: Resolver, table: str, key: Any) -> Any:
    """The answer lookup ``key`` of ``table`` has after the rounds, computed now."""
    if table == "variables":
        return resolver.variable(*key)
    if table == "fields":
        return resolver.instance_attribute(*key)
    qn, name, reach = key
    scope = resolver.p.scopes[qn]
    if name == "[]":
        return frozenset().union(*(resolver.eval(qn, resolver.p.stored[qn][i]) for i in reach))
    return resolver._local_value(scope, name, reach)


def assert_resolves_alike(root: Path) -> Resolver:
    summaries = load_project([str(root)], jobs=1).summaries
    reusing = Resolver(Program(summaries))
    recomputing = Recomputing(Program(summaries))
    reused, reference = outcome(reusing), outcome(recomputing)
    for part, value in reused.items():
        assert value == reference[part], part
    for name in KEPT_ANSWERS:
        kept: dict[Any, Any] = getattr(reusing.memo, name)
        computed: dict[Any, Any] = getattr(recomputing.memo, name)
        assert computed.keys() <= kept.keys(), name
        for key, answer in computed.items():
            assert kept[key] == answer, (name, key)
        for key in sorted(kept.keys() - computed.keys(), key=repr)[:200]:
            assert kept[key] == ask_again(recomputing, name, key), (name, key)
    return reusing


@pytest.mark.parametrize("case", [*CASES, *SCAN_CASES], ids=lambda p: p.parent.name)
def test_fixtures_resolve_alike_with_records_kept_between_rounds(case: Path) -> None:
    assert_resolves_alike(case.parent)


@pytest.mark.parametrize("seed", range(20))
def test_generated_programs_resolve_alike_with_records_kept_between_rounds(
    seed: int, tmp_path: Path
) -> None:
    assert_resolves_alike(random_program(seed, frozenset()).write(tmp_path))


def write_package(root: Path, body: str) -> None:
    """``pkg.a`` under ``root``: two functions to call, ``handler`` and ``other``, then ``body``."""
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def handler():\n    pass\n\ndef other():\n    pass\n\n" + body)


def test_a_later_round_reuses_the_sites_that_read_nothing_new(tmp_path: Path) -> None:
    """``run`` gains ``fn = handler`` in round 1, so round 2 resolves ``run`` and
    its caller ``main`` again: ``fn()`` reads the parameter and now reaches
    ``handler``; ``helper()`` and ``run(handler)`` read nothing that changed
    and are taken from round 1."""
    write_package(
        tmp_path,
        "def helper():\n"
        "    other()\n"
        "\n"
        "def run(fn):\n"
        "    helper()\n"
        "    fn()\n"
        "\n"
        "def main():\n"
        "    run(handler)\n",
    )
    resolver = assert_resolves_alike(tmp_path)
    assert [c.qualname for c in resolver.site_callees[("pkg.a.run", 1)]] == ["pkg.a.handler"]
    assert [c.qualname for c in resolver.site_callees[("pkg.a.run", 0)]] == ["pkg.a.helper"]
    assert resolver.sites_reused >= 2


def test_collecting_reuses_the_stores_that_read_nothing_new(tmp_path: Path) -> None:
    """Round 2 collects the container stores again: ``REGISTRY["a"] = handler``
    read nothing that changed and is taken from round 1's collecting, while
    ``LATE["b"] = fn`` reads ``register``'s parameter, bound in round 1, and is
    evaluated again; its registry then holds ``other``, called in round 2."""
    write_package(
        tmp_path,
        "REGISTRY = {}\n"
        "LATE = {}\n"
        'REGISTRY["a"] = handler\n'
        "\n"
        "def register(fn):\n"
        '    LATE["b"] = fn\n'
        "\n"
        "def main():\n"
        "    register(other)\n"
        '    REGISTRY["a"]()\n'
        '    LATE["b"]()\n',
    )
    resolver = assert_resolves_alike(tmp_path)
    assert [c.qualname for c in resolver.site_callees[("pkg.a.main", 1)]] == ["pkg.a.handler"]
    assert [c.qualname for c in resolver.site_callees[("pkg.a.main", 2)]] == ["pkg.a.other"]
    assert resolver.stores_reused >= 1


@pytest.mark.slow
def test_sglang_resolves_alike_with_records_kept_between_rounds(
    registry: PytestRegistry,
) -> None:
    resolver = assert_resolves_alike(registry.download("sglang==0.5.9") / "sglang")
    assert resolver.sites_reused > 200_000  # 291,412 on 2026-12-05


def test_a_component_evaluated_again_takes_the_answers_whose_reads_hold(tmp_path: Path) -> None:
    """A ring of functions each returning the next one's result (or a handler of
    its own) is one component: its first evaluation meets ``f0`` under way, the
    second carries every handler round the ring, the third finds nothing
    changed. There each lookup of the ring takes its last answer from what it
    read (``RoundMemo._reads_hold``), and every function still returns every
    handler, as computing each again does (``Recomputing``)."""
    size = 12
    body = "".join(
        f"def h{i}():\n    pass\n\n"
        f"def f{i}(c):\n    if c:\n        return f{(i + 1) % size}(c)\n    return h{i}\n\n"
        for i in range(size)
    )
    write_package(tmp_path, body + "def use():\n    f0(True)()\n")
    resolver = assert_resolves_alike(tmp_path)
    called = {c.qualname for c in resolver.site_callees[("pkg.a.use", 1)]}
    assert called == {f"pkg.a.h{i}" for i in range(size)}
    assert resolver.memo.components >= 1
    assert resolver.memo.skipped >= size


def test_recomputing_takes_no_answer_from_reads(tmp_path: Path) -> None:
    """The reference computes every lookup of a component in every evaluation."""
    write_package(
        tmp_path,
        "def fa(c):\n    if c:\n        return fb(c)\n    return handler\n\n"
        "def fb(c):\n    if c:\n        return fa(c)\n    return other\n\n"
        "def use():\n    fa(True)()\n",
    )
    summaries = load_project([str(tmp_path)], jobs=1).summaries
    recomputing = Recomputing(Program(summaries))
    outcome(recomputing)
    assert recomputing.memo.components >= 1
    assert recomputing.memo.skipped == 0
