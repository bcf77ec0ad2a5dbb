"""JSON reports written a piece at a time (``flagtrace.report.json_pieces``).

The text must be exactly ``json.dumps(document, indent=2) + "\\n"``: consumers of the
check report see no change, only a process that no longer holds the whole document (a
check of every flag of SGLang 0.5.9 made 870 MB of it). Compared on the check reports of
real fixtures (witnesses, guards, hazards, hostile strings, a file that does not parse)
and on documents with every shape of top-level value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from flagtrace.cli import main
from flagtrace.report import RenderOptions, json_pieces
from flagtrace.report.check_json import render, to_dict
from tests.report_samples import SARIF_CASES, case, chdir, check_args, check_report

CASES = (*SARIF_CASES, "flag_errors", "markup_and_escapes")


@pytest.mark.parametrize("name", CASES)
def test_check_json_is_the_indented_document(name: str) -> None:
    report = check_report(name)
    text = "".join(render(report, RenderOptions()))
    assert text == json.dumps(to_dict(report), indent=2) + "\n"
    assert json.loads(text)["flags"] == to_dict(report)["flags"]


def test_check_json_without_flags_or_errors() -> None:
    report = replace(check_report("sglang_story"), flags=(), errors=(), roots=())
    text = "".join(render(report, RenderOptions()))
    assert text == json.dumps(to_dict(report), indent=2) + "\n"
    assert json.loads(text)["flags"] == []


def test_cli_writes_the_same_text(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    with chdir(case("sglang_story").root):
        code = main([*check_args("sglang_story"), "--format", "json", "-o", str(out)])
        report = check_report("sglang_story")
    assert code == case("sglang_story").exit_code
    written = json.loads(out.read_text(encoding="utf-8"))
    expected = to_dict(report)
    written["stats"].pop("seconds")
    expected["stats"].pop("seconds")
    assert written == expected


def _shapes() -> Iterator[tuple[str, Any]]:
    yield "empty list", iter([])
    yield "one", iter([{"a": [1, {"b": "x\ny\u2028"}]}])
    yield "many", iter([[], {}, "s", 3, None, [[1], [2, [3]]]])
    yield "plain", {"nested": {"deep": [1, 2]}, "empty": {}}
    yield "text", "line\nbreak \x1b[2J"
    yield "none", None


def test_every_shape_of_value() -> None:
    text = "".join(json_pieces.render(_shapes()))
    assert text == json.dumps(json_pieces.document(_shapes()), indent=2) + "\n"


def test_an_empty_document() -> None:
    assert "".join(json_pieces.render(())) == json.dumps({}, indent=2) + "\n"


def test_items_are_made_as_they_are_written() -> None:
    """The second flag is not made before the first is written: a list item that
    fails to be made stops the text after the items before it."""

    def flags() -> Iterator[dict[str, int]]:
        yield {"first": 1}
        raise RuntimeError("made too early")

    pieces = json_pieces.render([("version", 1), ("flags", flags())])
    written = [next(pieces) for _ in range(4)]  # key, 1, key, the first item
    assert "".join(written) == '{\n  "version": 1,\n  "flags": [\n    {\n      "first": 1\n    }'
    with pytest.raises(RuntimeError, match="made too early"):
        next(pieces)


def test_iterators_below_the_top_level() -> None:
    """A SARIF log's results are two dicts and a list down: the envelope is written key
    by key, the iterator item by item, and the text is the whole document's."""

    def doc() -> dict[str, Any]:
        return {
            "$schema": "s",
            "runs": [{"tool": {"rules": [1, 2]}, "results": iter([{"a": 1}, {"b": [2]}])}],
            "empty": {"nothing": iter([])},
            "keys": {1: "one", False: "no", None: "none", 2.5: "half"},
        }

    text = "".join(json_pieces.dumps(doc()))
    assert text == json.dumps(json_pieces.made(doc()), indent=2) + "\n"
    assert json.loads(text)["runs"][0]["results"] == [{"a": 1}, {"b": [2]}]


@pytest.mark.parametrize("fmt", ["sarif", "rdjson"])
def test_sarif_and_rdjson_are_the_whole_documents(fmt: str) -> None:
    """The same text as the documents built whole, on every hazard and witness kind."""
    from flagtrace.fingerprint import SourceLines
    from flagtrace.report import CHECK
    from flagtrace.report.findings import check_items
    from flagtrace.report.rdjson import diagnostic
    from flagtrace.report.sarif import log, result
    from flagtrace.rules import BY_CODE

    for name in SARIF_CASES:
        report = check_report(name)
        with chdir(case(name).root):
            text = "".join(CHECK[fmt].render(report, RenderOptions()))
            lines = SourceLines()
            items = list(check_items(report, lines))
            if fmt == "sarif":
                whole = log(items, report.errors)
                index = {code: i for i, code in enumerate(BY_CODE)}
                whole["runs"][0]["results"] = [result(item, index) for item in items]
            else:
                whole = {"source": json.loads(text)["source"]}
                whole["diagnostics"] = [diagnostic(item, lines) for item in items]
        assert items, name
        assert text == json.dumps(whole, indent=2) + "\n", name
