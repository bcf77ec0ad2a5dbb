"""Fingerprints identify a finding by what it is, not where: they survive lines inserted
above it and change when the finding's own line or function changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.fingerprint import Fingerprint, SourceLines, findings, normalise
from flagtrace.model import AnalysisReport, Location
from tests.registry import REPO

CASE = REPO / "fixtures" / "flags" / "cm_no_finally"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(CASE / "pkg", tmp_path / "pkg")
    monkeypatch.chdir(tmp_path)  # report paths are relative, as the CLI's are
    return tmp_path


def _report() -> AnalysisReport:
    return analyze(["."], ["_no_grad"], ["pkg.train.evaluate"], jobs=1)


def _prints(report: AnalysisReport) -> dict[str, tuple[Fingerprint, Location]]:
    """Each finding's code and subject function -> its fingerprint and location."""
    out = {}
    for f in findings(report, SourceLines()):
        out[f"{f.code} {f.fingerprint.function}"] = (f.fingerprint, f.location)
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_normalised_text_drops_the_comment_and_collapses_whitespace() -> None:
    assert normalise("    if  not\tflags._no_grad:   # read here\n") == "if not flags._no_grad:"
    assert normalise('x = "# not a comment"  # a comment') == 'x = "# not a comment"'
    assert normalise("foo(a,   # an unclosed call") == "foo(a,"
    assert normalise("") == ""


def test_every_finding_has_the_parts_of_its_kind(tree: Path) -> None:
    prints = _prints(_report())
    assert sorted(prints) == [
        "FT001 pkg.train.evaluate",
        "FT101 pkg.flags.no_grad",
        "FT102 pkg.flags.no_grad",
    ]
    leak, _ = prints["FT101 pkg.flags.no_grad"]
    assert (leak.flag, leak.text) == ("pkg.flags._no_grad", "yield")
    observes, where = prints["FT001 pkg.train.evaluate"]
    assert (observes.read, observes.setter) == ("pkg.nn.Linear.forward", "pkg.flags.no_grad")
    assert observes.text == "if not flags._no_grad:"
    assert where == Location("pkg/nn.py", 12, 16)


def test_fingerprints_survive_lines_inserted_above_the_findings(tree: Path) -> None:
    before = _prints(_report())
    for name in ("flags.py", "nn.py", "train.py"):
        path = tree / "pkg" / name
        path.write_text("# a\n# new\n# header\n" + path.read_text(encoding="utf-8"))
    _edit(
        tree / "pkg" / "flags.py",
        "    global _no_grad",
        "    # why it is global\n    global _no_grad",
    )
    after = _prints(_report())
    assert sorted(after) == sorted(before)
    for key, (fingerprint, location) in before.items():
        assert after[key][0] == fingerprint and after[key][0].digest == fingerprint.digest
        assert after[key][1].line > location.line  # the finding did move


def test_a_changed_line_changes_only_its_findings_fingerprint(tree: Path) -> None:
    before = _prints(_report())
    _edit(tree / "pkg" / "flags.py", "    yield\n", "    yield None\n")
    after = _prints(_report())
    assert after["FT101 pkg.flags.no_grad"][0].digest != before["FT101 pkg.flags.no_grad"][0].digest
    for key in ("FT102 pkg.flags.no_grad", "FT001 pkg.train.evaluate"):
        assert after[key][0].digest == before[key][0].digest


def test_a_renamed_setter_changes_its_findings_fingerprints(tree: Path) -> None:
    before = _prints(_report())
    _edit(tree / "pkg" / "flags.py", "def no_grad():", "def inference_mode():")
    _edit(tree / "pkg" / "train.py", "import no_grad", "import inference_mode")
    _edit(tree / "pkg" / "train.py", "with no_grad():", "with inference_mode():")
    after = _prints(_report())
    assert sorted(after) == [
        "FT001 pkg.train.evaluate",
        "FT101 pkg.flags.inference_mode",
        "FT102 pkg.flags.inference_mode",
    ]
    old = {fp.digest for fp, _ in before.values()}
    # the hazards moved to another function, and the entry now enters another setter
    assert not old & {fp.digest for fp, _ in after.values()}


def test_a_file_that_cannot_be_read_gives_empty_lines(tmp_path: Path) -> None:
    lines = SourceLines(tmp_path)
    assert lines.line(Location("missing.py", 3)) == ""
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n")
    assert lines.line(Location("latin.py", 2)) == "name = 'été'"
    assert lines.line(Location("latin.py", 9)) == ""
