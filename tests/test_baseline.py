"""Baselines: ``--write-baseline`` records today's findings, ``--baseline`` (or
``[tool.flagtrace] baseline``) reports and fails only on the others, after the report
cache (the ``baseline_accepts`` flag fixture pins a report in a golden)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from flagtrace.api import analyze, filter_report
from flagtrace.baseline import Baseline, BaselineError, apply_baseline, load_baseline, make_baseline
from flagtrace.cache import SummaryCache
from flagtrace.cli import main
from flagtrace.fingerprint import SourceLines
from flagtrace.model import IndexResult
from tests.registry import REPO

CASE = REPO / "fixtures" / "flags" / "cm_no_finally"
ARGS = ["--flag", "_no_grad", "--entry", "pkg.train.evaluate", "--format", "json", "-q"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(CASE / "pkg", tmp_path / "pkg")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["check", ".", *ARGS, *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def _codes(report: dict[str, Any]) -> list[str]:
    flag = report["flags"][0]
    return [h["code"] for h in flag["hazards"]] + [
        f"FT001 {e['entry']}" for e in flag["entries"] if e["observes_set"]
    ]


def test_a_written_baseline_holds_every_finding_for_a_reader(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = _check(capsys, "--write-baseline", "bl.json")
    assert code == 0  # the findings were just accepted
    assert _codes(report) == ["FT101", "FT102", "FT001 pkg.train.evaluate"]
    body = json.loads((tree / "bl.json").read_text(encoding="utf-8"))
    assert (body["version"], body["tool"]) == (1, "flagtrace")
    entries = {e["code"]: e for e in body["findings"]}
    assert sorted(entries) == ["FT001", "FT101", "FT102"]
    assert entries["FT101"] == {
        "fingerprint": entries["FT101"]["fingerprint"],
        "code": "FT101",
        "flag": "pkg.flags._no_grad",
        "function": "pkg.flags.no_grad",
        "path": "pkg/flags.py",
        "text": "yield",
        "message": "an exception after the flag is set skips the reset and leaves the flag "
        "set: _no_grad stays set if the `with` body raises",
    }
    assert entries["FT001"]["read"] == "pkg.nn.Linear.forward"
    assert entries["FT001"]["setter"] == "pkg.flags.no_grad"
    assert "line" not in json.dumps(body)  # no line numbers: they change with every edit


def test_a_baseline_accepts_moved_findings_and_reports_new_and_stale(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(capsys, "--write-baseline", "bl.json")[0] == 0
    code, report, _ = _check(capsys, "--baseline", "bl.json")
    assert (code, _codes(report)) == (0, [])
    assert report["baseline"] == {"file": "bl.json", "matched": 3, "stale": 0}

    flags = tree / "pkg" / "flags.py"
    text = flags.read_text(encoding="utf-8")
    text = "# moved\n# down\n" + text.replace(
        "    yield\n", "    try:\n        yield\n    finally:\n"
    )
    flags.write_text(text.replace("    _no_grad = False\n", "        _no_grad = False\n"))
    code, report, _ = _check(capsys, "--baseline", "bl.json")
    # FT101 is fixed (a stale entry now); FT102 moved and re-indented, still matched
    assert (code, _codes(report)) == (0, [])
    assert report["baseline"] == {"file": "bl.json", "matched": 2, "stale": 1}

    train = tree / "pkg" / "train.py"
    train.write_text(
        train.read_text(encoding="utf-8")
        + "\n\ndef predict(model: Linear, x: float) -> float:\n"
        + "    with no_grad():\n        return model.forward(x)\n"
    )
    code, report, _ = _check(capsys, "--baseline", "bl.json", "--entry", "pkg.train.predict")
    assert (code, _codes(report)) == (1, ["FT001 pkg.train.predict"])
    assert report["baseline"]["matched"] == 2


def test_copies_of_a_finding_match_as_many_baseline_entries(tree: Path) -> None:
    """Fingerprints are matched as a multiset: one entry accepts one finding."""
    report = analyze(["."], ["_no_grad"], ["pkg.train.evaluate"], jobs=1)
    lines = SourceLines()
    baseline = make_baseline(report, lines)
    once = Baseline(baseline.entries[:1], "one.json")
    twice = Baseline(baseline.entries[:1] * 2, "two.json")
    doubled = report.flags[0]
    report2 = replace(report, flags=(replace(doubled, hazards=doubled.hazards * 2),))
    assert [h.code for h in report2.flags[0].hazards] == ["FT101", "FT102", "FT101", "FT102"]
    kept = apply_baseline(report2, once, lines)
    assert [h.code for h in kept.flags[0].hazards] == ["FT102", "FT101", "FT102"]
    kept = apply_baseline(report2, twice, lines)
    assert [h.code for h in kept.flags[0].hazards] == ["FT102", "FT102"]
    assert kept.baseline is not None and (kept.baseline.matched, kept.baseline.stale) == (2, 0)


def test_the_baseline_in_pyproject_is_relative_to_it(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "ci").mkdir()
    assert _check(capsys, "--write-baseline", "ci/flagtrace-baseline.json")[0] == 0
    (tree / "pyproject.toml").write_text(
        '[tool.flagtrace]\nflags = ["_no_grad"]\nbaseline = "ci/flagtrace-baseline.json"\n'
    )
    code, report, _ = _check(capsys)
    assert (code, _codes(report)) == (0, [])
    assert report["baseline"] == {
        "file": str(tree / "ci" / "flagtrace-baseline.json"),
        "matched": 3,
        "stale": 0,
    }
    # --baseline overrides the configured file
    (tree / "empty.json").write_text('{"version": 1, "findings": []}')
    code, report, _ = _check(capsys, "--baseline", "empty.json")
    assert code == 1 and report["baseline"]["stale"] == 0 and len(_codes(report)) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "bl.json: baseline file not found"),
        ("{not json", "bl.json: baseline is not JSON: "),
        ('{"version": 2, "findings": []}', "bl.json: not a flagtrace baseline of version 1"),
        ('{"version": 1}', "bl.json: baseline has no list of findings"),
        ('{"version": 1, "findings": [{"code": "FT101"}]}', "bl.json: finding 0 must be"),
        ("[1, 2]", "bl.json: not a flagtrace baseline of version 1"),
    ],
)
def test_a_missing_or_malformed_baseline_is_a_one_line_error(
    tree: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    if content is not None:
        (tree / "bl.json").write_text(content)
    code, report, err = _check(capsys, "--baseline", "bl.json")
    assert (code, report) == (2, {})
    assert err.startswith("flagtrace: error: " + message) and err.count("\n") == 1
    with pytest.raises(BaselineError):
        load_baseline(tree / "bl.json")


def test_editing_the_baseline_changes_the_outcome_on_a_warm_cache(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report cache stores reports before suppressions and baselines are applied, so a
    warm run answers from it and still reads the baseline as it is now."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert _check(capsys, *cache, "--write-baseline", "bl.json")[0] == 0
    code, report, _ = _check(capsys, *cache, "--baseline", "bl.json")
    assert (code, report["baseline"]["matched"]) == (0, 3)

    body = json.loads((tree / "bl.json").read_text(encoding="utf-8"))
    body["findings"] = [e for e in body["findings"] if e["code"] != "FT102"]
    (tree / "bl.json").write_text(json.dumps(body))
    capsys.readouterr()
    code = main(["check", ".", *ARGS[:-1], *cache, "--baseline", "bl.json"])
    out, err = capsys.readouterr()
    assert code == 1 and _codes(json.loads(out)) == ["FT102"]
    assert "4 files (4 cached)" in err  # answered from the stored report

    # the same through the API: the warm analysis indexes nothing
    indexed: list[IndexResult] = []
    report_warm = analyze(
        ["."],
        ["_no_grad"],
        ["pkg.train.evaluate"],
        jobs=1,
        jedi_budget=5.0,  # the CLI's default: the same options, the same stored report
        cache=SummaryCache(tmp_path / "cache"),
        on_result=indexed.append,
    )
    assert indexed == []
    kept = filter_report(report_warm, baseline=load_baseline(tree / "bl.json"))
    assert kept.baseline is not None and (kept.baseline.matched, kept.baseline.stale) == (2, 0)
    assert [h.code for h in kept.flags[0].hazards] == ["FT102"]


def test_writing_a_baseline_keeps_suppressed_findings_out_of_it(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(capsys, "--ignore", "FT101", "--write-baseline", "bl.json")[0] == 0
    codes = [e["code"] for e in json.loads((tree / "bl.json").read_text())["findings"]]
    assert sorted(codes) == ["FT001", "FT102"]


def test_the_rich_report_says_what_the_baseline_matched(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(capsys, "--write-baseline", "bl.json")[0] == 0
    capsys.readouterr()
    assert main(["check", ".", "--flag", "_no_grad", "-q", "--baseline", "bl.json"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "baseline bl.json: 3 finding(s) matched and not shown, 0 baseline entries" in out
