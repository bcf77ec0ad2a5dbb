"""``check`` with several flags judges them in forked workers, with the report one
process gives: on every flag fixture (all its flags asked at once, each twice, with
the case's own options), and where a verdict asks jedi (handed back to the parent, which asks
jedi and judges the flags after it on the graph jedi changed)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from flagtrace import api, forked
from flagtrace.cli import main
from tests.regen_goldens import CASES, Case, case_roots

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="flagtrace forks only on Linux"
)

CASE_NAMES = [root.name for root in case_roots(CASES)]


def _without_time(out: str) -> dict[str, object]:
    report = json.loads(out)
    report["stats"].pop("seconds")
    return dict(report)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_every_flag_of_a_fixture_judged_forked_as_in_one_process(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = Case.load(CASES / name)
    monkeypatch.chdir(case.root)
    monkeypatch.setattr(api, "FORK_FROM", 1)
    names = api.flag_names(["."], jobs=1)
    assert names, name
    args = ["check", ".", *case.args, "--format", "json", "-q", "--no-cache"]
    for flag in names * 2:  # each twice: a fixture with one flag forks too
        args += ["--flag", flag]
    alone = main([*args, "--jobs", "1"])
    one = capsys.readouterr().out
    assert main([*args, "--jobs", "2"]) == alone
    assert _without_time(capsys.readouterr().out) == _without_time(one)


def test_flags_are_handed_to_workers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[int] = []
    answer_all = forked.answer_all

    def counting(answer, count, jobs, stop=None):  # type: ignore[no-untyped-def]
        asked.append(count)
        return answer_all(answer, count, jobs, stop)

    monkeypatch.setattr(forked, "answer_all", counting)
    monkeypatch.setattr(api, "FORK_FROM", 2)
    root = CASES / "sglang_story"
    names = api.flag_names([str(root / "pkg")], jobs=1)
    assert len(names) >= 2
    args = ["check", str(root / "pkg"), "--no-cache", "-q", "--jobs", "2"]
    for flag in names:
        args += ["--flag", flag]
    assert main(args) == 1  # the story's setters leak
    assert asked == [len(names)]


STATE = """\
from contextlib import contextmanager

_on = False
_also = False
_third = False


def is_on():
    return _on or _also or _third


@contextmanager
def turned_on():
    global _on, _also, _third
    _on = _also = _third = True
    try:
        yield
    finally:
        _on = _also = _third = False
"""

WORK = """\
from pkg import state


def entry(handler):
    handler.run()  # nothing says what handler is: unresolved, jedi is asked
    return state.is_on()


def other():
    with state.turned_on():
        return state.is_on()
"""


def test_flags_whose_verdicts_ask_jedi_are_judged_in_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flagtrace.api import analyze_project, build_callgraph, load_project

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(STATE)
    (pkg / "work.py").write_text(WORK)
    project = load_project([pkg], jobs=1)
    flags = ["pkg.state._on", "pkg.state._also", "pkg.state._third"]

    def judged(jobs: int) -> tuple[object, int]:
        report, graph = analyze_project(
            project,
            build_callgraph(project),
            flags,
            ["pkg.work.entry"],
            jedi_budget=30.0,
            jobs=jobs,
        )
        assert not report.jedi_out_of_budget
        return replace(report, seconds=0.0), graph.jedi_queries

    one, one_queries = judged(1)
    monkeypatch.setattr(api, "FORK_FROM", 1)
    handed: list[int] = []
    answer_all = forked.answer_all

    def counting(answer, count, jobs, stop=None):  # type: ignore[no-untyped-def]
        answers = answer_all(answer, count, jobs, stop)
        handed.append(sum(a is None for a in answers))
        return answers

    monkeypatch.setattr(forked, "answer_all", counting)
    forked_, forked_queries = judged(2)
    assert one_queries >= 1  # the entry's verdict rests on handler.run(): jedi was asked
    assert handed and handed[0] >= 1  # a worker handed that flag back
    assert forked_queries == one_queries  # the parent asked: workers never do
    assert forked_ == one
