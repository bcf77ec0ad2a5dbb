"""Suppressions: ``# flagtrace: ignore[...]`` comments (the ``suppressions`` flag fixture
pins them in a golden), ``[tool.flagtrace] ignore`` and ``--ignore``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flagtrace.api import analyze, filter_report
from flagtrace.cli import main
from flagtrace.fingerprint import SourceLines
from flagtrace.model import HazardKind
from flagtrace.suppress import ALL, SuppressionError, check_codes, parse_pragma
from tests.registry import REPO

CASES = REPO / "fixtures" / "flags"
ARGS = ["--flag", "_no_grad", "--entry", "pkg.train.evaluate", "--format", "json", "-q"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(CASES / "cm_no_finally" / "pkg", tmp_path / "pkg")
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
        "FT001" for e in flag["entries"] if e["observes_set"]
    ]


def test_a_pragma_names_codes_or_all() -> None:
    assert parse_pragma("# flagtrace: ignore[FT101]") == {"FT101"}
    assert parse_pragma("#flagtrace:ignore[ft101, FT102 ]") == {"FT101", "FT102"}
    assert parse_pragma("# flagtrace: ignore") == ALL
    assert parse_pragma("# noqa  # flagtrace: ignore[]  why") == ALL
    assert parse_pragma("# flagtrace: ignored") is None
    assert parse_pragma("# flagtrace is fine here") is None


def test_codes_to_ignore_are_checked() -> None:
    assert check_codes(["ft101,FT102", " FT001 "]) == {"FT101", "FT102", "FT001"}
    with pytest.raises(SuppressionError, match="unknown code FT999"):
        check_codes(["FT101,FT999"])


def test_an_ignored_code_leaves_the_report_and_the_setters_hazards(tree: Path) -> None:
    report = analyze(["."], ["_no_grad"], ["pkg.train.evaluate"], jobs=1)
    kept = filter_report(report, ignore={"FT101"}, lines=SourceLines())
    assert kept.suppressed == 1 and kept.baseline is None
    flag = kept.flags[0]
    assert [h.code for h in flag.hazards] == ["FT102"]
    assert flag.setters[0].hazards == (HazardKind.NON_REENTRANT,)
    assert flag.entries == report.flags[0].entries
    assert filter_report(report, lines=SourceLines()) is report  # nothing to drop


def test_ignore_on_the_command_line_and_in_pyproject(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = _check(capsys)
    assert (code, _codes(report), report["suppressed"]) == (1, ["FT101", "FT102", "FT001"], 0)
    code, report, _ = _check(capsys, "--ignore", "FT101,ft102", "--ignore", "FT001")
    assert (code, _codes(report), report["suppressed"]) == (0, [], 3)
    (tree / "pyproject.toml").write_text('[tool.flagtrace]\nignore = ["FT102"]\n')
    code, report, _ = _check(capsys, "--ignore", "FT101")
    assert (code, _codes(report), report["suppressed"]) == (1, ["FT001"], 2)


def test_an_unknown_code_is_a_one_line_error(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = _check(capsys, "--ignore", "FT109")
    assert (code, report) == (2, {})
    known = "FT001, FT101, FT102, FT103, FT104"
    assert err == f"flagtrace: error: --ignore: unknown code FT109 (known: {known})\n"
    (tree / "pyproject.toml").write_text('[tool.flagtrace]\nignore = ["E501"]\n')
    code, report, err = _check(capsys)
    assert code == 2 and err.count("\n") == 1
    assert "pyproject.toml: [tool.flagtrace] ignore: unknown code E501" in err


def test_a_pragma_added_on_a_warm_cache_is_honoured(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A comment changes no summary, so the stored report is reused; the suppression is
    read from the file as it is now, after the cache."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    code, report, _ = _check(capsys, *cache)
    assert (code, _codes(report)) == (1, ["FT101", "FT102", "FT001"])
    flags = tree / "pkg" / "flags.py"
    text = flags.read_text(encoding="utf-8")
    flags.write_text(text.replace("def no_grad():", "def no_grad():  # flagtrace: ignore"))
    code, report, _ = _check(capsys, *cache)
    assert (code, _codes(report), report["suppressed"]) == (1, ["FT001"], 2)
    nn = tree / "pkg" / "nn.py"
    nn.write_text(nn.read_text().replace("# read here", "# flagtrace: ignore[FT001]"))
    code, report, _ = _check(capsys, *cache)
    assert (code, _codes(report), report["suppressed"]) == (0, [], 3)


def test_the_rich_report_says_how_many_were_suppressed(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["check", ".", "--flag", "_no_grad", "-q", "--ignore", "FT101,FT102"])
    assert code == 1
    assert "2 finding(s) suppressed" in capsys.readouterr().out


def test_a_class_setters_hazard_is_suppressed_on_the_def_it_points_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """GraphMode's FT102 is the hazard of ``__enter__`` (the setter) but points at the
    constant reset in ``__exit__``: a comment on either ``def`` line accepts it."""
    shutil.copytree(CASES / "class_cm" / "pkg", tmp_path / "pkg")
    monkeypatch.chdir(tmp_path)
    mode = tmp_path / "pkg" / "mode.py"
    text = mode.read_text(encoding="utf-8")
    args = ["check", ".", "--flag", "_graph_mode", "--format", "json", "-q", "--ignore", "FT001"]

    def hazards() -> tuple[list[str], int]:
        capsys.readouterr()
        main(args)
        report = json.loads(capsys.readouterr().out)
        return [h["code"] for h in report["flags"][0]["hazards"]], report["suppressed"]

    codes, ignored = hazards()  # ignored: the entries' FT001s
    assert codes == ["FT102"]
    for line in (
        "    def __exit__(self, exc_type, exc, tb) -> bool:",
        '    def __enter__(self) -> "GraphMode":',
    ):
        assert line in text
        mode.write_text(text.replace(line, line + "  # flagtrace: ignore[FT102]"))
        assert hazards() == ([], ignored + 1)
