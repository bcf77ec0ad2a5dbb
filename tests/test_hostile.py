"""Hostile text in the analysed code never reaches a report raw (issue 13, item 3).

``fixtures/hostile/markup_and_escapes`` carries markdown, HTML, mermaid, ``@mentions``, raw
ANSI escapes (colour, screen clear, OSC hyperlinks and titles), BEL, a C1 control and a bidi
override in comments, string literals and guards on its witness lines, and lines of 1,200 and
1,500 characters there. Every ``check`` format is rendered, to a file and as for a colour
terminal: no control character of the code appears raw (the only escapes in the rich output
are rich's own colour codes), and no quoted line runs on past the cap.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import libcst as cst
import pytest

from flagtrace.positions import SourceSpans
from flagtrace.report import CHECK, REVIEW, RenderOptions
from flagtrace.report.text import ELLIPSIS, LINE_LIMIT
from tests.regen_goldens import HOSTILE_CASES, Case, case_roots, problems, run_case
from tests.report_samples import case, chdir, check_report
from tests.review_reports import review_of

NAME = "markup_and_escapes"
#: rich's own styling: SGR sequences, nothing else
_SGR = re.compile(r"\x1b\[[0-9;]*m")
#: what no output may carry raw: C0 but newline, DEL, C1, bidi controls
_RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

OPTIONS = {
    "file": RenderOptions(width=120),
    "terminal": RenderOptions(width=100, terminal="truecolor"),
}


def test_the_hostile_fixture_has_what_it_claims() -> None:
    root = HOSTILE_CASES / NAME
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(root.glob("pkg/*.py")))
    for needle in ("\x1b[", "\x1b]8;;", "\x07", "\x9b", "\u202e", "<script>", "-->", "@team"):
        assert needle in text, needle
    assert max(len(line) for line in text.splitlines()) > 1000
    assert [r.name for r in case_roots(HOSTILE_CASES)] == [NAME]


def test_the_hostile_fixture_matches_its_golden(tmp_path: Path) -> None:
    c = Case.load(HOSTILE_CASES / NAME)
    found = problems(c, run_case(c, tmp_path), c.golden.read_text(encoding="utf-8"))
    assert not found, "\n\n".join(found)


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    report = check_report(NAME)
    # the witness carries the hostile text: a guard with ESC and C1, a 1,500-character line
    guards = [s.guard or "" for e in report.flags[0].entries for s in e.witness]
    assert any("\x1b" in g for g in guards) and any("\x9b" in g for g in guards)
    out = {}
    with chdir(case(NAME).root):
        review = review_of(report, case(NAME).root)  # every finding new, as a bot shows it
        for fmt in CHECK.names():
            for where, options in OPTIONS.items():
                out[f"{fmt}/{where}"] = "".join(CHECK[fmt].render(report, options))
        for fmt in REVIEW.names():
            for where, options in OPTIONS.items():
                out[f"review-{fmt}/{where}"] = "".join(REVIEW[fmt].render(review, options))
    return out


def test_no_output_carries_a_raw_control_character(outputs: dict[str, str]) -> None:
    assert {k.partition("/")[0] for k in outputs} >= {"rich", "concise", "json", "sarif", "rdjson"}
    assert {"review-rich", "review-concise", "review-github"} <= {
        k.partition("/")[0] for k in outputs
    }
    for key, text in outputs.items():
        plain = _SGR.sub("", text) if key.endswith("rich/terminal") else text
        raw = sorted({repr(c) for c in _RAW.findall(plain)})
        assert raw == [], key


def test_terminal_outputs_show_the_escapes(outputs: dict[str, str]) -> None:
    for key in ("rich/file", "rich/terminal"):
        assert "\\x1b[" in outputs[key], key
    assert "\\x9b31m" in outputs["rich/file"] and "\\u202e" in outputs["rich/file"]


def test_quoted_lines_are_capped(outputs: dict[str, str]) -> None:
    # rich quotes the 1,500-character line of the call: at most LINE_LIMIT of it, cut with …
    rich = _SGR.sub("", outputs["rich/file"])
    unwrapped = re.sub(r"\n +", "", rich)
    assert "A" * 100 in unwrapped and "A" * LINE_LIMIT not in unwrapped
    assert ELLIPSIS in unwrapped
    for fmt in ("sarif",):
        doc = json.loads(outputs[f"{fmt}/file"])
        snippets = [
            r["locations"][0]["physicalLocation"]["region"]["snippet"]["text"]
            for r in doc["runs"][0]["results"]
        ]
        assert snippets and all(len(s) <= LINE_LIMIT for s in snippets)


def test_json_formats_keep_the_text_exact(outputs: dict[str, str]) -> None:
    """JSON, SARIF and rdjson escape through the encoder only: the guard's ESC is there, as
    ``\\u001b``, and decodes back to the character."""
    doc = json.loads(outputs["json/file"])
    guards = [s["guard"] or "" for s in doc["flags"][0]["entries"][0]["witness"]]
    assert any("\x1b[31m**ALL CLEAR**" in g for g in guards)
    assert "\\u001b" in outputs["sarif/file"] and "\\u001b" in outputs["rdjson/file"]


def test_a_file_ending_in_a_comment_with_a_backslash_is_indexed() -> None:
    """libcst drops the trailing newline of such a module after the last node's end was
    recorded; the end line of that node used to be an IndexError, and the file was reported
    as undecodable and left out of the analysis (a way to hide a file)."""
    module = cst.parse_module("def f(x):\n    return x  # a\\\n")
    spans = SourceSpans(module, "m.py")
    func = module.body[0]
    assert spans.end_line(func) == 2
