"""``flagtrace scan``: the inventory of every flag, checked three ways.

* the scan fixtures (``fixtures/scan/<case>``) yield exactly their golden JSON report, as the
  flag fixtures do (``tests/regen_goldens.py`` writes both);
* the one-pass index agrees with the per-flag engine: for every flag of every flag fixture,
  the setters and hazards ``scan`` lists are those ``check --flag`` finds;
* flags judged in forked workers (``flagtrace.forked``) are judged as in one process, on
  every fixture and on SGLang;
* on the real SGLang 0.5.9 (slow), the flags the project exists for are listed with their setters.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace import api
from flagtrace.api import analyze_project, build_callgraph, load_project, scan
from flagtrace.cli import main
from flagtrace.inventory import flag_names, inventory
from tests.regen_goldens import CASES, SCAN_CASES, Case, case_roots, problems, run_case

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

SCAN_CASE_NAMES = [root.name for root in case_roots(SCAN_CASES)]
FLAG_CASE_NAMES = [root.name for root in case_roots(CASES)]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scan-golden-cache")


@pytest.mark.parametrize("name", SCAN_CASE_NAMES)
def test_scan_fixture(name: str, cache_dir: Path) -> None:
    case = Case.load(SCAN_CASES / name)
    assert case.subcommand == "scan"
    found = problems(case, run_case(case, cache_dir), case.golden.read_text(encoding="utf-8"))
    assert not found, f"{name}: {case.description}\n{case.command}\n\n" + "\n\n".join(found)


@pytest.mark.parametrize("name", FLAG_CASE_NAMES)
def test_scan_agrees_with_check_on_every_flag(name: str) -> None:
    """The one-pass inventory and ``check`` run the same setter and hazard rules: each flag
    the scan lists, analysed alone, has the same setters and hazards."""
    project = load_project([str(CASES / name / "pkg")], jobs=1)
    graph = build_callgraph(project)
    listed = inventory(graph)
    assert listed, f"{name}: no flag found"
    # what the review bot asks about when no flag is configured: the same flags, unjudged
    assert flag_names(graph) == sorted(f.qualname for f in listed)
    for flag in listed:
        report, _ = analyze_project(project, graph, [flag.qualname])
        (alone,) = report.flags
        assert flag.setters == alone.setters, flag.qualname
        assert flag.hazards == alone.hazards, flag.qualname
        assert flag.reads == len(alone.readers), flag.qualname


@pytest.mark.parametrize("name", SCAN_CASE_NAMES)
def test_flag_names_are_the_flags_scan_lists(name: str) -> None:
    paths = [str(SCAN_CASES / name / "pkg")]
    listed = scan(paths, jobs=1).flags
    assert api.flag_names(paths, jobs=1) == tuple(sorted(f.qualname for f in listed))


def test_risk_order_puts_hazards_first_then_wider_readers() -> None:
    report = scan([str(SCAN_CASES / "inventory" / "pkg")], jobs=1)
    order = [f.qualname.rpartition(".")[2] for f in report.flags]
    assert order == ["_capturing", "_debug", "_mode", "_cache"]
    assert "VERSION" not in order  # read, never written from a function: not a flag


def test_scan_rich_names_every_flag_and_hazard_uncut(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(SCAN_CASES / "inventory")  # paths relative, as a hook prints them
    code = main(["scan", "pkg", "--no-cache", "-q"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FT101 " in out and "FT102 " in out and "FT103 " in out
    assert out.startswith("below, names are relative to pkg. and paths to pkg/\n")
    assert "  set   config.enable_debug\n        function, sets True, config.py:13\n" in out
    assert "  FT103 config.py:13\n        _debug is left set when enable_debug() returns\n" in out
    assert not [line for line in out.splitlines() if line.endswith(" ")]
    assert "…" not in out
    assert "4 flags, 3 with hazards" in out


def test_scan_of_clean_code_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(SCAN_CASES / "clean" / "pkg"), "--no-cache", "-q"]) == 0
    assert "0 with hazards" in capsys.readouterr().out


def test_scan_of_no_python_file_is_exit_2(tmp_path: Path) -> None:
    assert main(["scan", str(tmp_path / "missing"), "--no-cache", "-q", "--format", "json"]) == 2


@pytest.mark.parametrize("name", FLAG_CASE_NAMES + SCAN_CASE_NAMES)
def test_flags_judged_in_forked_workers_are_judged_as_in_one_process(name: str) -> None:
    root = CASES / name if name in FLAG_CASE_NAMES else SCAN_CASES / name
    graph = build_callgraph(load_project([str(root / "pkg")], jobs=1))
    alone = inventory(graph, jobs=1)
    assert inventory(graph, jobs=2, fork_from=1) == alone


@pytest.mark.slow
def test_scan_lists_the_sglang_flags(registry: PytestRegistry) -> None:
    root: Path = registry.download("sglang==0.5.9")
    project = load_project([str(root / "sglang")])
    assert project.diagnostics == ()
    graph = build_callgraph(project)
    flags = inventory(graph, jobs=2)  # 144 flags judged by 2 forked workers
    # each flag is judged on what was built before the fork, as one process judges it
    assert flags == inventory(graph, jobs=1)
    by_name = {f.qualname.rpartition(".")[2]: f for f in flags}
    for name in (
        "_in_piecewise_cuda_graph",
        "_in_pcg_torch_compile",
        "_pcg_capture_stream",
        "_forward_context",
    ):
        assert name in by_name, name
        assert by_name[name].setters, name
    pcg = by_name["_in_piecewise_cuda_graph"]
    assert any(s.function.endswith("enable_piecewise_cuda_graph") for s in pcg.setters)
    assert pcg.hazards and pcg.reader_modules > 1


def test_scan_of_a_directory_without_python_says_so_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # the line unwrapped
    assert main(["scan", str(tmp_path), "--no-cache", "-q"]) == 2
    assert f"error: {tmp_path}: a directory with no Python files to analyse" in (
        capsys.readouterr().out
    )
