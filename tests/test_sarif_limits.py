"""A SARIF log past GitHub code scanning's limits is written, and said so on stderr.

GitHub keeps 5,000 results of a run and rejects an upload of more than 25,000, with a message
that does not say which flag made the log so large; every flag of SGLang 0.5.9 with entries
discovered is 28k results. The counts are the findings the log holds (one result each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flagtrace.cli import main
from flagtrace.report import sarif
from tests.report_samples import case, chdir, check_args


def test_upload_warnings_by_count() -> None:
    assert sarif.upload_warnings(sarif.RESULTS_KEPT) == []
    (kept,) = sarif.upload_warnings(sarif.RESULTS_KEPT + 1)
    assert kept.startswith("the SARIF log has 5,001 results: GitHub code scanning keeps 5,000")
    (refused,) = sarif.upload_warnings(28_210)
    assert "28,210 results" in refused and "rejects a run of more than 25,000" in refused


def _check_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, int, str]:
    out = tmp_path / "flagtrace.sarif"
    with chdir(case("sglang_story").root):
        code = main([*check_args("sglang_story"), "--format", "sarif", "-o", str(out)])
    results = len(json.loads(out.read_text(encoding="utf-8"))["runs"][0]["results"])
    return code, results, capsys.readouterr().err


def test_a_check_past_the_limit_warns_and_keeps_its_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, results, err = _check_sarif(tmp_path, capsys)
    assert results > 1 and "warning" not in err
    monkeypatch.setattr(sarif, "RESULTS_KEPT", results - 1)
    again, same, err = _check_sarif(tmp_path, capsys)
    assert (again, same) == (code, results)
    assert err.splitlines() == [
        f"flagtrace: warning: the SARIF log has {results} results: GitHub code scanning keeps "
        f"{results - 1} results of a run (name the flags to check, or the entries)"
    ]
