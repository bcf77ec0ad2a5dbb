"""The demand-driven jedi fallback: where it asks, what it keeps, its budget."""

from __future__ import annotations

from pathlib import Path

import pytest

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


STATE = """\
from contextlib import contextmanager

_on = False


def is_on():
    return _on


@contextmanager
def turned_on():
    global _on
    _on = True
    try:
        yield
    finally:
        _on = False
"""

WORK = """\
from pkg import state


def entry(handler):
    handler.run()  # nothing says what handler is: unresolved, jedi is asked
    return state.is_on()
"""


def _flag_project(tmp_path: Path) -> Path:
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(STATE)
    (pkg / "work.py").write_text(WORK)
    return tmp_path / "src"


def _stored_reports(cache: Path) -> int:
    return len(list((cache / "results").glob("v*/??/*.pkl")))


def test_a_verdict_resting_on_an_unresolved_call_asks_jedi(tmp_path: Path) -> None:
    from flagtrace.api import analyze_project, build_callgraph, load_project

    project = load_project([_flag_project(tmp_path)], jobs=1)
    report, graph = analyze_project(
        project, build_callgraph(project), ["pkg.state._on"], ["pkg.work.entry"], jedi_budget=30.0
    )
    assert graph.jedi_queries == 1
    assert not report.jedi_out_of_budget
    assert [(e.observes_set, e.unresolved_count) for e in report.flags[0].entries] == [(False, 1)]


def test_a_run_jedi_finished_is_stored_one_it_ran_out_of_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flagtrace.cli import main

    src, cache = _flag_project(tmp_path), tmp_path / "cache"
    base = ["check", str(src), "--flag", "pkg.state._on", "--entry", "pkg.work.entry"]
    base += ["--cache-dir", str(cache), "--jobs", "1"]

    def run(budget: str) -> str:
        assert main([*base, "--jedi-budget", budget]) == 1  # the setter has a hazard
        return capsys.readouterr().out

    finished = run("30")
    assert "budget ran out" not in finished
    stored = _stored_reports(cache)
    assert stored > 0  # jedi answered all it was asked: the next run is a lookup
    assert run("30") == finished

    out = run("0.000000001")  # gone before jedi is asked anything
    assert "jedi's time budget ran out before it settled every unresolved call" in out
    assert _stored_reports(cache) == stored
