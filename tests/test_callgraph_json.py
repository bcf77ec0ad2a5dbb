"""``flagtrace callgraph --format json`` streams the document it used to build whole.

The streamed text must be exactly what ``json.dumps(..., indent=2)`` of the
document gives, so consumers see no change; these tests compare the two on real
fixtures, including empty lists and a file that does not parse.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from flagtrace.api import build_callgraph, load_project
from flagtrace.cli import main
from flagtrace.report import CallGraphReport
from flagtrace.report.callgraph_json import document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _document_via_api(path: Path) -> str:
    project = load_project([str(path)], jobs=1)
    graph = build_callgraph(project)
    return json.dumps(document(CallGraphReport(graph, tuple(project.diagnostics))), indent=2) + "\n"


def _document_via_cli(path: Path, out: Path) -> tuple[int, str]:
    code = main(
        [
            "callgraph",
            str(path),
            "--format",
            "json",
            "-o",
            str(out),
            "--no-cache",
            "-q",
            "-j",
            "1",
            "--jedi-budget",
            "0",
        ]
    )
    return code, out.read_text(encoding="utf-8")


def test_streamed_json_is_the_indented_document(tmp_path: Path) -> None:
    pkg = FIXTURES / "flags" / "sglang_story"
    code, text = _document_via_cli(pkg, tmp_path / "cg.json")
    assert code == 0
    assert text == _document_via_api(pkg)
    doc = json.loads(text)
    assert list(doc) == ["version", "nodes", "edges", "unresolved", "stats", "errors"]
    assert doc["edges"] and doc["nodes"]
    assert doc["stats"]["edges"] == len({(e["caller"], e["callee"]) for e in doc["edges"]})
    assert doc["errors"] == []


def test_streamed_json_with_no_edges_and_a_broken_file(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "broken.py").write_text("def f(:\n    pass\n")
    code, text = _document_via_cli(pkg, tmp_path / "cg.json")
    assert code == 2  # bad input: the graph is written, the exit code says so
    assert text == _document_via_api(pkg)
    doc = json.loads(text)
    assert doc["edges"] == [] and doc["unresolved"] == []
    assert '"edges": [],' in text
    [error] = doc["errors"]
    assert error["file"].endswith("broken.py") and error["line"] == 1


def test_streamed_json_to_stdout(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    pkg = tmp_path / "story"
    shutil.copytree(FIXTURES / "flags" / "sglang_story", pkg)
    assert main(["callgraph", str(pkg), "--no-cache", "-q", "-j", "1", "--jedi-budget", "0"]) == 0
    assert capsys.readouterr().out == _document_via_api(pkg)


class _ClosedPipe:
    """A stdout whose reader went away after the first write (``flagtrace ... | head -1``)."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes > 1:
            raise BrokenPipeError(32, "Broken pipe")
        return len(text)

    def writelines(self, lines) -> None:  # type: ignore[no-untyped-def]
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass


def test_a_reader_that_goes_away_is_not_reported_as_findings(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """click turns EPIPE into exit code 1, which means findings; it must be 2, without a
    traceback."""
    monkeypatch.setattr("sys.stdout", _ClosedPipe())
    code = main(
        [
            "callgraph",
            str(FIXTURES / "flags" / "sglang_story"),
            "--no-cache",
            "-q",
            "-j",
            "1",
            "--jedi-budget",
            "0",
        ]
    )
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err
