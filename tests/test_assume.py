"""--assume: facts (flagtrace.assume), three-valued guards (flagtrace.guards_eval), and the
pruning they and instantiation make (flagtrace.prune), on small real packages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.assume import Fact, FactError, Facts, parse_fact, parse_facts
from flagtrace.guards_eval import AssumedEnv, Truth, evaluate, parse_guard
from flagtrace.model import GuardCall, GuardPath

# ----------------------------------------------------------------------------- facts


@pytest.mark.parametrize(
    ("text", "parts", "args", "value"),
    [
        ("server_args.enable_pcg=False", ("server_args", "enable_pcg"), None, False),
        ("self.is_draft_worker=True", ("self", "is_draft_worker"), None, True),
        ("batch.forward_mode.is_decode()=False", ("batch", "forward_mode", "is_decode"), "", False),
        ("mode.is_extend(draft=True)=True", ("mode", "is_extend"), "draft=True", True),
        ("envs.X=1", ("envs", "X"), None, 1),
        ("x=None", ("x",), None, None),
        ("backend='triton'", ("backend",), None, "triton"),
        ("backend=triton", ("backend",), None, "triton"),
        (" cfg.ratio = 0.5 ", ("cfg", "ratio"), None, 0.5),
    ],
)  # fmt: skip
def test_a_fact_is_a_path_and_a_literal(
    text: str, parts: tuple[str, ...], args: str | None, value: object
) -> None:
    fact = parse_fact(text)
    assert (fact.parts, fact.args, fact.value) == (parts, args, value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cfg.use_graph", "expected PATH=VALUE"),
        ("cfg.use_graph==False", "not a comparison"),
        ("1cfg=True", "is not a dotted name"),
        ("a(x).b=1", "is not a dotted name"),
        ("cfg.x=", "the value is missing"),
        ("cfg.x=f(1)", "is not a literal"),
        ("cfg.x=[1, 2]", "must be a constant"),
    ],
)
def test_a_malformed_fact_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(FactError) as exc:
        parse_fact(text)
    assert message in str(exc.value) and repr(text) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_fact_matches_by_the_tail_of_a_path_and_calls_by_their_arguments() -> None:
    facts = Facts(
        parse_facts(
            ["server_args.enable_graph=False", "enable_graph=True", "mode.is_decode()=False"]
        )
    )
    found = facts.lookup(GuardPath("self.server_args.enable_graph"))
    assert found is not None and found.value is False  # the longest matching path wins
    other = facts.lookup(GuardPath("cfg.enable_graph"))
    assert other is not None and other.value is True
    assert facts.lookup(GuardPath("server_args.enable")) is None
    assert facts.lookup(GuardPath("graph")) is None  # a tail is whole parts, not text
    assert facts.lookup(GuardCall("batch.mode.is_decode", "")) is not None
    assert facts.lookup(GuardCall("batch.mode.is_decode", "x")) is None
    assert facts.lookup(GuardPath("batch.mode.is_decode")) is None  # a path is no call


# ----------------------------------------------------------------------------- evaluation


def _truth(text: str, facts: list[str], locals_: dict[str, str] | None = None) -> Truth:
    env = AssumedEnv(Facts(parse_facts(facts)), locals_)
    return evaluate(parse_guard(text), env).truth


@pytest.mark.parametrize(
    ("guard", "facts", "truth"),
    [
        ("cfg.use_graph", ["cfg.use_graph=False"], Truth.FALSE),
        ("not cfg.use_graph", ["cfg.use_graph=False"], Truth.TRUE),
        ("cfg.use_graph and other()", ["cfg.use_graph=False"], Truth.FALSE),
        ("cfg.use_graph or other()", ["cfg.use_graph=False"], Truth.UNKNOWN),
        ("cfg.use_graph or other()", ["cfg.use_graph=True"], Truth.TRUE),
        ("not a or not b", ["a=True", "b=True"], Truth.FALSE),
        ("self.runner is None", ["runner=None"], Truth.TRUE),
        ("self.runner is not None", ["runner=None"], Truth.FALSE),
        ("self.runner is not None", ["runner=1"], Truth.TRUE),
        ("envs.X == 1", ["envs.X=1"], Truth.TRUE),
        ("envs.X != 1", ["envs.X=1"], Truth.FALSE),
        ("envs.X > 2", ["envs.X=1"], Truth.FALSE),
        ("args.backend in ('fa3', 'triton')", ["backend=triton"], Truth.TRUE),
        ("args.backend not in ('fa3', 'triton')", ["backend=triton"], Truth.FALSE),
        ("args.backend == 3", ["backend=triton"], Truth.FALSE),
        ("args.backend < 3", ["backend=triton"], Truth.UNKNOWN),  # Python would raise
        ("mode.is_decode()", ["mode.is_decode()=False"], Truth.FALSE),
        ("unknown_thing", ["cfg.use_graph=False"], Truth.UNKNOWN),
        ("x[0]", ["x=None"], Truth.UNKNOWN),
    ],
)
def test_guards_evaluate_three_valued(guard: str, facts: list[str], truth: Truth) -> None:
    assert _truth(guard, facts) is truth


def test_a_local_assigned_once_is_evaluated_as_its_value() -> None:
    locals_ = {"can_run": "(\n    self.runner is not None\n    and self.runner.can_run(b)\n)"}
    assert _truth("can_run", ["runner=None"], locals_) is Truth.FALSE
    assert _truth("not can_run", ["runner=None"], locals_) is Truth.TRUE
    assert _truth("can_run", ["other=1"], locals_) is Truth.UNKNOWN


def test_a_decision_names_the_facts_that_decide_it() -> None:
    env = AssumedEnv(Facts(parse_facts(["a=False", "b=True", "c=True"])))
    decided = evaluate(parse_guard("b and a and c"), env)
    assert decided.truth is Truth.FALSE
    assert [f.text for f in decided.facts] == ["a=False"]  # only the operand that decides it
    both = evaluate(parse_guard("b and c"), env)
    assert [f.text for f in both.facts] == ["b=True", "c=True"]


def test_another_source_of_facts_plugs_into_the_evaluator() -> None:
    """The interface for facts flagtrace derives itself (constructor constants)."""

    class Constants:
        def value(self, expr: GuardPath | GuardCall) -> tuple[object, tuple[Fact, ...]] | None:
            if isinstance(expr, GuardPath) and expr.path == "self.is_draft_worker":
                return True, (Fact("ModelRunner(is_draft_worker=True)", (), None, True),)
            return None

        def local(self, name: str) -> None:
            return None

    d = evaluate(parse_guard("not self.is_draft_worker"), Constants())
    assert d.truth is Truth.FALSE and d.facts[0].text == "ModelRunner(is_draft_worker=True)"
    # per scope, after the --assume facts, through the evaluator the pruning uses
    from flagtrace.guards_eval import GuardEvaluator
    from flagtrace.model import Guard, GuardKind, Location, Scope, ScopeKind

    scope = Scope("pkg.M.f", ScopeKind.FUNCTION, "f", Location("pkg/m.py", 1), "pkg.M")
    evaluator = GuardEvaluator(Facts(parse_facts(["other=1"])), lambda s: Constants())
    guard = Guard(
        "self.is_draft_worker", 3, True, GuardKind.EXIT, parse_guard("self.is_draft_worker")
    )
    assert evaluator.guard(scope, guard).truth is Truth.FALSE  # negated: below the early exit


# ----------------------------------------------------------------------------- pruning


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(
        "import contextlib\n_on = False\n\n@contextlib.contextmanager\ndef enabled():\n"
        "    global _on\n    prev = _on\n    _on = True\n    try:\n        yield\n"
        "    finally:\n        _on = prev\n\ndef set_on():\n    global _on\n    _on = True\n"
    )
    for name, text in files.items():
        (pkg / name).write_text(text)
    return tmp_path


def _verdicts(root: Path, entries: list[str], assume: list[str]) -> dict[str, bool]:
    report = analyze([str(root)], ["_on"], entries, jobs=1, assume=assume)
    return {e.entry: e.observes_set for e in report.flags[0].entries}


def test_a_write_in_a_branch_that_the_facts_make_false_does_not_set(tmp_path: Path) -> None:
    """The interpreter prunes as the graph does: a setter call or a direct write behind a
    false guard does not set the flag (here a sticky setter, seen before any entry)."""
    root = _package(
        tmp_path,
        {
            "boot.py": "from pkg import state\n\ndef boot(cfg):\n    if cfg.debug:\n"
            "        state.set_on()\n",
            "work.py": "from pkg import state\n\ndef work():\n    return state._on\n",
        },
    )
    entries = ["pkg.work.work"]
    assert _verdicts(root, entries, []) == {"pkg.work.work": True}  # boot may run first
    assert _verdicts(root, entries, ["cfg.debug=False"]) == {"pkg.work.work": False}


def test_an_early_exit_that_the_facts_take_cuts_the_rest_of_the_function(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "work.py": "from pkg import state\n\ndef read():\n    return state._on\n\n"
            "def work(cfg):\n    if not cfg.graph:\n        return None\n"
            "    with state.enabled():\n        return read()\n",
        },
    )
    entries = ["pkg.work.work"]
    assert _verdicts(root, entries, ["cfg.graph=True"]) == {"pkg.work.work": True}
    assert _verdicts(root, entries, ["cfg.graph=False"]) == {"pkg.work.work": False}


def test_instantiation_counts_classes_handed_on_as_values_and_library_subclasses(
    tmp_path: Path,
) -> None:
    """RTA keeps a by-name hop to a class used as a value (a registry may build it) or
    with a library base (a factory may build it); it cuts one to a class nothing makes."""
    body = (
        "from pkg import state\n\ndef read():\n    return state._on\n\n"
        "class {name}{base}:\n    def run_{name}(self):\n        with state.enabled():\n"
        "            return read()\n\n"
        "def call_{name}(obj):\n    return obj.run_{name}()\n"
    )
    root = _package(
        tmp_path,
        {
            "plain.py": body.format(name="Plain", base=""),
            "registered.py": body.format(name="Registered", base="")
            + "\nREGISTRY = {'r': Registered}\n",
            "module.py": "import torch.nn as nn\n" + body.format(name="Module", base="(nn.Module)"),
        },
    )
    entries = ["pkg.plain.call_Plain", "pkg.registered.call_Registered", "pkg.module.call_Module"]
    assert _verdicts(root, entries, []) == {
        "pkg.plain.call_Plain": False,
        "pkg.registered.call_Registered": True,
        "pkg.module.call_Module": True,
    }


def test_the_cli_reports_a_malformed_fact_as_one_line_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flagtrace.cli import main

    root = _package(tmp_path, {})
    assert main([str(root), "--flag", "_on", "--assume", "cfg.x==1", "--no-cache", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "flagtrace: error: --assume 'cfg.x==1': write PATH=VALUE, not a comparison"


def test_facts_come_from_pyproject_too_and_the_report_lists_their_use(tmp_path: Path) -> None:
    from flagtrace.cli import main

    root = _package(
        tmp_path,
        {
            "work.py": "from pkg import state\n\ndef read():\n    return state._on\n\n"
            "def work(cfg):\n    if cfg.graph:\n        with state.enabled():\n"
            "            return read()\n",
        },
    )
    (root / "pyproject.toml").write_text(
        "[tool.flagtrace]\nassume = ['cfg.graph=False']\njedi-budget = 0\n"
    )
    out = root / "report.json"
    argv = [str(root), "--flag", "_on", "--entry", "pkg.work.work", "--assume", "nothing.x=1"]
    code = main([*argv, "--format", "json", "-o", str(out), "--no-cache", "-q"])
    report = json.loads(out.read_text())
    assert code == 1  # set_on has a hazard (FT103); work itself never observes the flag set
    work = str(root / "pkg" / "work.py")
    assert report["assumptions"] == [
        {"fact": "cfg.graph=False", "used": True, "guards": [{"file": work, "line": 7}]},
        {"fact": "nothing.x=1", "used": False, "guards": []},
    ]
    (verdict,) = report["flags"][0]["entries"]
    assert not verdict["observes_set"]
    assert verdict["pruned"]["kind"] == "guard"
    assert verdict["pruned"]["facts"] == ["cfg.graph=False"]
    assert (verdict["pruned"]["guard_file"], verdict["pruned"]["guard_line"]) == (work, 7)


def test_a_malformed_fact_in_pyproject_is_a_config_error(tmp_path: Path) -> None:
    from flagtrace.config import ConfigError, load_config

    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.flagtrace]\nassume = ['cfg.graph']\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(path) in str(exc.value) and "'cfg.graph'" in str(exc.value)


def test_review_checks_its_facts_as_check_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flagtrace.cli import main

    root = _package(tmp_path, {})
    assert main(["review", str(root), "--base", "HEAD", "--assume", "cfg.x", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("flagtrace: error: --assume 'cfg.x': expected PATH=VALUE")


def test_questions_on_one_graph_answer_as_on_a_fresh_one(tmp_path: Path) -> None:
    """Pruning is computed once per call graph and shared by later questions
    (``prune.pruning_for``); which guards each fact decided is noted while a
    flag is analysed, and must not leak into the next question's report: the
    guard on ``cfg.trace`` is decided only while ``_on`` is analysed, and must
    not show in the report on ``_off`` that comes after it."""
    from flagtrace.api import analyze_project, build_callgraph, load_project

    root = _package(
        tmp_path,
        {
            "other.py": "import contextlib\n_off = False\n\n@contextlib.contextmanager\n"
            "def disabled():\n    global _off\n    prev = _off\n    _off = True\n    try:\n"
            "        yield\n    finally:\n        _off = prev\n",
            "work.py": "from pkg import other, state\n\ndef traced(cfg):\n"
            "    with state.enabled():\n        if cfg.trace:\n            return state._on\n\n"
            "def quiet(cfg):\n    with other.disabled():\n        if cfg.quiet:\n"
            "            return other._off\n\ndef work(cfg):\n    traced(cfg)\n    quiet(cfg)\n",
        },
    )
    facts = ["cfg.trace=True", "cfg.quiet=True"]
    project = load_project([str(root)], jobs=1)
    graph = build_callgraph(project)
    on_then_off = [
        analyze_project(project, graph, [flag], ["pkg.work.work"], assume=facts)[0]
        for flag in ("pkg.state._on", "pkg.other._off")
    ]
    alone = [
        analyze_project(project, build_callgraph(project), [flag], ["pkg.work.work"], assume=facts)[
            0
        ]
        for flag in ("pkg.state._on", "pkg.other._off")
    ]
    assert [r.assumptions for r in on_then_off] == [r.assumptions for r in alone]
    assert [r.flags for r in on_then_off] == [r.flags for r in alone]
    # the second question decided the quiet guard only, however many came before
    used = {u.fact: [g.line for g in u.guards] for u in on_then_off[1].assumptions}
    assert used == {"cfg.trace=True": [], "cfg.quiet=True": [10]}
