"""Lookups that need each other are solved together, whatever the order of questions.

Two fields stored from each other, or two functions returning each other's
result, form a cycle of lookups. Resolution used to answer "nothing" for the
inner lookup of a cycle and memoise the outer one's answer as it stood: which
lookup got the full answer depended on which call site asked first, and the
other site missed a callee it can reach at run time. ``RoundMemo.solve`` now
evaluates such a component again until its answers stop changing; these tests
resolve the same programs with the scopes of every round in other orders
(``Resolver.round_order``) and ask for the same call graph.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace.api import load_project
from flagtrace.resolve import Program, Resolver
from tests.real_runs import calls_made
from tests.registry import REPO

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

Order = str  # "forward", "reversed", or a shuffle's seed


class _Reordered(Resolver):
    """A resolver whose rounds visit the scopes in another order."""

    def __init__(self, program: Program, order: Order, widen_at: int | None = None) -> None:
        super().__init__(program)
        self._order = order
        if widen_at is not None:
            self.widen_at = widen_at

    def round_order(self, scopes: list[str]) -> list[str]:
        scopes = list(scopes)
        if self._order == "reversed":
            scopes.reverse()
        elif self._order != "forward":
            random.Random(self._order).shuffle(scopes)
        return scopes


def _resolved(
    root: Path, order: Order, widen_at: int | None = None
) -> tuple[dict[tuple[str, int], list[str]], Resolver]:
    resolver = _Reordered(Program(load_project([str(root)], jobs=1).summaries), order, widen_at)
    resolver.run()
    callees = {
        site: sorted(f"{c.qualname} {c.resolution.value}" for c in found)
        for site, found in resolver.site_callees.items()
    }
    return callees, resolver


def _package(tmp_path: Path, source: str) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(source)
    return package


ORDERS: tuple[Order, ...] = ("forward", "reversed", "1", "2")

_SWAPPED_FIELDS = """\
def fa():
    pass


def fb():
    pass


class Box:
    def __init__(self):
        self.a = fa
        self.b = fb

    def swap(self):
        old = self.a
        self.a = self.b
        self.b = old

    def use_a(self):
        return self.a()

    def use_b(self):
        return self.b()
"""

_MUTUAL_RETURNS = """\
def fa():
    pass


def fb():
    pass


def pick_a(flag):
    if flag:
        return fa
    return pick_b(not flag)


def pick_b(flag):
    if flag:
        return fb
    return pick_a(not flag)


def use_a():
    pick_a(True)()


def use_b():
    pick_b(True)()
"""


#: after ``swap`` the fields hold each other's function
_SWAP_AND_CALL = """
import pkg.a as a
box = a.Box()
box.swap()
traced()
box.use_a()
box.use_b()
untraced()
"""


def test_the_swapped_fields_call_what_a_real_run_calls(tmp_path: Path) -> None:
    package = _package(tmp_path, _SWAPPED_FIELDS)
    observed = calls_made(tmp_path, _SWAP_AND_CALL)
    assert ("use_b", "fa") in observed  # after swap, ``b`` holds ``fa``
    for order in ORDERS:
        callees, _ = _resolved(package, order)
        for user in ("use_a", "use_b"):
            static = {c.split()[0].rsplit(".", 1)[1] for c in callees[(f"pkg.a.Box.{user}", 0)]}
            ran = {callee for caller, callee in observed if caller == user}
            assert ran <= static, (order, user, ran - static)


@pytest.mark.parametrize("order", ORDERS)
def test_fields_stored_from_each_other_both_hold_both_functions(
    tmp_path: Path, order: Order
) -> None:
    """After ``swap`` either field may hold either function: ``self.b()`` can
    run ``fa``. Resolving ``use_a`` first used to leave ``use_b`` with ``fb``
    alone (the field ``b`` was memoised while ``a`` was still under way)."""
    callees, resolver = _resolved(_package(tmp_path, _SWAPPED_FIELDS), order)
    both = ["pkg.a.fa typed", "pkg.a.fb typed"]
    assert callees[("pkg.a.Box.use_a", 0)] == both
    assert callees[("pkg.a.Box.use_b", 0)] == both
    assert resolver.memo.unsettled == 0


@pytest.mark.parametrize("order", ORDERS)
def test_functions_returning_each_others_result_both_return_both(
    tmp_path: Path, order: Order
) -> None:
    callees, _ = _resolved(_package(tmp_path, _MUTUAL_RETURNS), order)
    use_a = [site for site in callees if site[0] == "pkg.a.use_a"]
    use_b = [site for site in callees if site[0] == "pkg.a.use_b"]
    # each function makes two calls: ``pick_x(True)``, then what it returned
    assert callees[use_a[-1]] == ["pkg.a.fa typed", "pkg.a.fb typed"]
    assert callees[use_b[-1]] == ["pkg.a.fa typed", "pkg.a.fb typed"]


def _fixture_roots() -> list[Path]:
    roots = [p for p in sorted((REPO / "fixtures" / "flags").iterdir()) if p.is_dir()]
    roots += [p for p in sorted((REPO / "fixtures" / "soundness").iterdir()) if p.is_dir()]
    return roots


def test_every_fixture_resolves_to_the_same_call_graph_in_any_order_of_scopes() -> None:
    roots = _fixture_roots()
    assert len(roots) > 20
    for root in roots:
        expected, resolver = _resolved(root, "forward")
        assert resolver.memo.unsettled == 0, root.name
        for order in ORDERS[1:]:
            found, other = _resolved(root, order)
            assert found == expected, (root.name, order)
            assert other.resolved_empty == resolver.resolved_empty, (root.name, order)
            assert other.resumed == resolver.resumed, (root.name, order)


def test_answers_widened_to_anything_do_not_depend_on_the_order_either() -> None:
    """With answers of more than 2 values widened (``values.WIDE``; the real
    limit is thousands), most fixtures widen some: what widens, and so which
    calls are unresolved, must still not depend on the order of questions."""
    widened = 0
    for root in _fixture_roots():
        expected, resolver = _resolved(root, "forward", widen_at=1)
        widened += expected != _resolved(root, "forward")[0]
        for order in ORDERS[1:]:
            found, other = _resolved(root, order, widen_at=1)
            assert found == expected, (root.name, order)
            assert other.resolved_empty == resolver.resolved_empty, (root.name, order)
    assert widened >= 8


@pytest.mark.slow
def test_sglang_resolves_to_the_same_call_graph_with_its_scopes_reversed(
    registry: PytestRegistry,
) -> None:
    """On SGLang 0.5.9, 42 sites had other callees when the rounds visited the
    scopes in reverse, before cycles were solved; 13 after, until a field's
    fallback to the library base's attribute was held back inside components
    (``RoundMemo.if_empty``)."""
    root = registry.download("sglang==0.5.9") / "sglang"
    forward, resolver = _resolved(root, "forward")
    reversed_, _ = _resolved(root, "reversed")
    assert resolver.memo.components > 100  # SGLang has cycles to solve
    assert sum(map(len, forward.values())) > 150_000
    assert reversed_ == forward
