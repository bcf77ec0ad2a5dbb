"""The demand-driven jedi fallback: where it asks, what it keeps, its budget."""

from __future__ import annotations

from pathlib import Path

from flagtrace.jedi_fallback import callee_column, settle
from flagtrace.model import Location, Resolution, UnresolvedCall

SOURCE = """\
class Worker:
    def step(self):
        return helper()


def helper():
    return 1


def run(w):
    return helper() + Worker().step()
"""


def _project(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(SOURCE)
    return pkg / "ops.py"


def test_callee_column_points_at_the_called_name() -> None:
    assert callee_column("helper()", 5) == 5
    assert callee_column("self.runner.replay(batch)", 9) == 9 + len("self.runner.")
    assert callee_column("get(x)[0](y)", 1) == 1  # the first call's name
    assert callee_column('opts["f"]()', 1) is None  # nothing named to ask about


def test_jedi_settles_a_call_to_an_analysed_function_and_a_constructor(tmp_path: Path) -> None:
    path = _project(tmp_path)
    line = 11
    sites = [
        (
            "pkg.ops.run",
            UnresolvedCall(
                "pkg.ops.run", Location(str(path), line, 12), "helper()", 0, "pkg.ops.run"
            ),
        ),
        (
            "pkg.ops.run",
            UnresolvedCall(
                "pkg.ops.run", Location(str(path), line, 23), "Worker()", 1, "pkg.ops.run"
            ),
        ),
    ]
    known = {"pkg.ops.helper", "pkg.ops.run", "pkg.ops.Worker.step"}
    result = settle(sites, [str(tmp_path)], known, budget=30.0)
    assert result.queries == 2
    assert [(e.callee, e.resolution) for e in result.edges] == [("pkg.ops.helper", Resolution.JEDI)]
    # Worker has no analysed __init__: jedi finds the class, flagtrace keeps nothing
    assert result.settled_sites == {("pkg.ops.run", 0)}


def test_a_zero_budget_asks_jedi_nothing(tmp_path: Path) -> None:
    path = _project(tmp_path)
    site = UnresolvedCall("pkg.ops.run", Location(str(path), 11, 12), "helper()", 0, "pkg.ops.run")
    result = settle([("pkg.ops.run", site)], [str(tmp_path)], {"pkg.ops.helper"}, budget=0)
    assert result.queries == 0 and result.edges == []
