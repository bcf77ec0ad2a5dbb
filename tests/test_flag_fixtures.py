"""Every flag fixture under ``fixtures/flags/<case>`` yields exactly its golden report.

A case is a mini project (``pkg/...``) with ``case.json`` (hand-written: description, CLI
arguments, exit code) and ``expected.json`` (the whole ``--format json`` report, written by
``tests/regen_goldens.py``; see there). The test runs the CLI as that script does and compares
the exit code, the whole report (a unified diff on a difference) and the error lines on stderr.

After a deliberate change of the output, ``python tests/regen_goldens.py`` rewrites the goldens
and ``git diff fixtures/flags`` shows what changed, for review.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.regen_goldens import CASES, Case, case_roots, main, problems, run_case

CASE_NAMES = [root.name for root in case_roots()]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("golden-cache")


def test_there_is_a_flag_fixture_per_construct_and_hazard() -> None:
    assert len(CASE_NAMES) >= 15, CASE_NAMES
    # a directory with a golden but no case.json would silently not be tested
    assert sorted(p.parent.name for p in CASES.glob("*/expected.json")) == CASE_NAMES


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_is_well_formed(name: str) -> None:
    case = Case.load(CASES / name)  # raises on a missing, extra or mistyped key
    assert (case.root / "pkg" / "__init__.py").is_file(), f"{name}: no pkg/__init__.py"
    golden = json.loads(case.golden.read_text(encoding="utf-8"))
    assert golden["version"] == 1 and golden["stats"]["seconds"] == 0.0


@pytest.mark.parametrize("name", CASE_NAMES)
def test_flag_fixture(name: str, cache_dir: Path) -> None:
    case = Case.load(CASES / name)
    found = problems(case, run_case(case, cache_dir), case.golden.read_text(encoding="utf-8"))
    assert not found, f"{name}: {case.description}\n{case.command}\n\n" + "\n\n".join(found)


def test_check_mode_fails_on_a_changed_golden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``regen_goldens.py --check`` passes on a copy of a case and fails, with a diff naming the
    changed value, once one value of the copy's golden is changed; it rewrites nothing."""
    cases = tmp_path / "cases"
    shutil.copytree(CASES / "cm_no_finally", cases / "cm_no_finally")
    assert main(["--check", "--cases-dir", str(cases)]) == 0
    golden = cases / "cm_no_finally" / "expected.json"
    report = json.loads(golden.read_text(encoding="utf-8"))
    assert report["flags"][0]["initial"] == "False"
    report["flags"][0]["initial"] = "True"
    changed = json.dumps(report, indent=2) + "\n"
    golden.write_text(changed, encoding="utf-8")
    capsys.readouterr()
    assert main(["--check", "--cases-dir", str(cases)]) == 1
    out = capsys.readouterr().out
    assert "FAIL cm_no_finally" in out
    assert '-      "initial": "True",\n+      "initial": "False",' in out
    assert golden.read_text(encoding="utf-8") == changed


def test_check_mode_fails_on_a_wrong_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(CASES / "never_observes", cases / "never_observes")
    spec_path = cases / "never_observes" / "case.json"
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    spec["exit_code"] = 1
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    assert main(["--check", "--cases-dir", str(cases)]) == 1
    assert "exit code: expected 1 (case.json), got 0" in capsys.readouterr().out
