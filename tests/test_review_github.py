"""``flagtrace review --format github``: the pull-request comment.

The comments are rendered from ``ReviewReport`` values built on real ``check`` reports of
fixtures (``tests/review_reports.py``), then read back the way GitHub would: the markdown
through a CommonMark/GFM renderer (markdown-it-py's ``gfm-like`` preset), its mermaid blocks
through mermaid's own parser under node (``tests/js/mermaid_parse.mjs``).

The hostile fixture, ``fixtures/hostile_markdown/pr_from_a_fork``, is a package whose names,
comments and strings carry markdown, HTML, links, mermaid syntax, mentions, a fake all-clear,
backticks, pipes, ANSI escapes and a 1,200-character line on the witness; its golden check
report is ``expected.json`` beside it (``python tests/regen_goldens.py --cases-dir
fixtures/hostile_markdown`` rewrites it).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from flagtrace.model import Change, ReviewReport
from flagtrace.report import REVIEW, RenderOptions
from flagtrace.report.markup import ZWSP, code, inline, mermaid_label, visible
from flagtrace.report.review_github import (
    COMMENT_LIMIT,
    MARKER,
    comment,
    default_link_base,
    summary,
)
from tests import npm
from tests.conftest import OFFLINE_VARIABLE
from tests.regen_goldens import Case, problems, run_case
from tests.review_reports import (
    BASE_COMMIT,
    HEAD_COMMIT,
    analyse,
    leak_new_hazards_fixed,
    review_of,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
STORY = FIXTURES / "flags" / "sglang_story"
HOSTILE = FIXTURES / "hostile_markdown" / "pr_from_a_fork"
LINK_BASE = f"https://github.com/sgl-project/sglang/blob/{HEAD_COMMIT}"
MERMAID = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)


@pytest.fixture(scope="module")
def story() -> ReviewReport:
    report = analyse(
        STORY,
        ["_in_piecewise_cuda_graph"],
        ["pkg.speculative.eagle_worker.EAGLEWorker.verify"],
    )
    return review_of(report, STORY, leak_new_hazards_fixed)


@pytest.fixture(scope="module")
def hostile() -> ReviewReport:
    return review_of(
        analyse(HOSTILE, ["_flag"], ["pkg.api.handle_request"]), HOSTILE, leak_new_hazards_fixed
    )


class _Page(HTMLParser):
    """The rendered HTML as a browser shows it: its tags (with attributes) and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        #: the text outside ``<code>`` and ``<pre>``, where GitHub links mentions and references
        self.prose: list[str] = []
        self._in_code = 0
        #: the text of each ``<code>`` element
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_code += tag in ("code", "pre")

    def handle_endtag(self, tag: str) -> None:
        self._in_code -= tag in ("code", "pre")

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.tags and self.tags[-1][0] == "code":
            self.code.append(data)
        if not self._in_code:
            self.prose.append(data)


def _html(markdown: str) -> str:
    """GFM as GitHub renders it: tables, strikethrough, autolinks of URLs with a scheme
    (``fuzzy_link`` off: GitHub does not link ``pkg.state.is`` as a domain, linkify-it would)."""
    md = MarkdownIt("gfm-like")
    md.linkify.set({"fuzzy_link": False})
    return md.render(markdown)


def _page(markdown: str) -> _Page:
    page = _Page()
    page.feed(_html(markdown))
    page.close()
    return page


def _mermaid_text(label: str) -> str:
    """A mermaid label's text, its ``#NN;`` entities decoded (as mermaid does)."""
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), label)


# ------------------------------------------------------------------------ the comment


def test_registered_as_a_review_format(story: ReviewReport) -> None:
    reporter = REVIEW["github"]
    text = "".join(reporter.render(story, RenderOptions(link_base=LINK_BASE)))
    assert text == comment(story, LINK_BASE)


def test_marker_summary_table_and_details(story: ReviewReport) -> None:
    text = comment(story, LINK_BASE)
    lines = text.splitlines()
    assert lines[0] == MARKER and text.count(MARKER) == 1
    assert lines[1] == "**flagtrace:** 1 new leak, 2 hazards fixed"
    page = _page(text)
    rows = [line for line in lines if line.startswith("| FT")]
    assert [r.split(" | ")[:2] for r in rows] == [
        ["| FT001", "**new**"],
        ["| FT101", "fixed"],
        ["| FT102", "fixed"],
    ]
    assert "`EAGLEWorker.verify`" in rows[0] and "`_in_piecewise_cuda_graph`" in rows[0]
    # the new leak is anchored on the new read, linked at the head; the fixed ones at the base
    assert f"({LINK_BASE}/pkg/distributed/parallel_state.py#L19)" in rows[0]
    base = LINK_BASE.replace(HEAD_COMMIT, BASE_COMMIT)
    assert f"({base}/pkg/compilation/piecewise_context_manager.py#L21)" in rows[1]
    assert "(not on a changed line)" in rows[1] and "not on" not in rows[0]
    assert [t for t, _ in page.tags].count("details") == 3
    assert "reader added:" in text and "setter removed:" in text
    # the witness, step by step: the entry, the enter of the setter, the read with its guard
    assert "0. entry `pkg.speculative.eagle_worker.EAGLEWorker.verify`" in text
    assert "**enters** `pkg.compilation.piecewise_context_manager.enable_piecewise_cuda_graph`" in (
        text
    )
    assert "if `not (self.world_size == 1) and not (self.use_custom_allreduce)`" in text


def test_flowchart_shows_the_path_with_guards_on_edges(story: ReviewReport) -> None:
    (chart,) = MERMAID.findall(comment(story))
    labels = [_mermaid_text(label) for label in re.findall(r'"([^"]*)"', chart)]
    assert labels[0] == "EAGLEWorker.verify"
    assert "enter enable_piecewise_cuda_graph" in labels
    assert "read via is_in_piecewise_cuda_graph" in labels
    assert "not (forward_batch.is_decode)" in labels  # a guard, as an edge label
    # after the enter the flag is set: thick edges from there on
    assert chart.index("==>") > chart.index('|"enter"|')
    assert "==>" not in chart[: chart.index('|"enter"|')]


def test_without_link_base_locations_are_plain_text(story: ReviewReport) -> None:
    text = comment(story)
    assert "](http" not in text and "pkg/distributed/parallel\\_state.py:19" in text


def test_a_change_that_touches_no_flag_says_so_in_one_line() -> None:
    report = ReviewReport("main", BASE_COMMIT, None, None, ("pkg.m._flag",), (), (), ("a.py",))
    text = comment(report, LINK_BASE)
    assert text.splitlines()[:2] == [MARKER, "**flagtrace:** This change touches no flag."]
    assert "<details>" not in text and "| code |" not in text


def test_summary_words(story: ReviewReport) -> None:
    new = tuple(replace(f, change=Change.NEW) for f in story.findings)
    assert summary(replace(story, findings=new)) == "1 new leak, 2 new hazards"
    fixed = tuple(replace(f, change=Change.FIXED) for f in story.findings)
    assert summary(replace(story, findings=fixed)) == "1 leak fixed, 2 hazards fixed"
    assert summary(replace(story, findings=())) == (
        "No new or fixed findings; the readers or setters of 1 flag changed."
    )


def test_stays_under_githubs_limit_and_counts_the_rest(story: ReviewReport) -> None:
    leak = story.findings[0]
    many = tuple(
        replace(leak, function=f"pkg.m.entry_{i}", verdict=replace(leak.verdict, entry=f"e{i}"))
        for i in range(400)
    )
    text = comment(replace(story, findings=many), LINK_BASE)
    assert len(text) <= COMMENT_LIMIT
    shown = text.count("<details>")
    assert 10 <= shown < 400
    assert f"and {400 - shown} more findings not shown here" in text
    assert text.count("| FT001 |") == shown  # a finding is shown whole, row and details


def test_default_link_base() -> None:
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r"}
    assert default_link_base(env, "abc") == "https://github.com/o/r/blob/abc"
    assert default_link_base({**env, "GITHUB_SHA": "m"}, None) == "https://github.com/o/r/blob/m"
    assert default_link_base({**env, "GITHUB_SHA": "m"}, "h") == "https://github.com/o/r/blob/h"
    assert default_link_base({"GITHUB_REPOSITORY": "o/r"}, "abc") is None
    assert default_link_base(env, None) is None
    assert default_link_base({}, "abc") is None


# ------------------------------------------------------------------------ hostile input


def test_hostile_fixture_golden(tmp_path: Path) -> None:
    case = Case.load(HOSTILE)
    found = problems(case, run_case(case, tmp_path), case.golden.read_text(encoding="utf-8"))
    assert not found, "\n\n".join(found)


HOSTILE_STRINGS = (
    # guards and call texts on the witness, as the source has them
    "</code></details><img src=x onerror=alert(1)> | @octocat #1 [ok](https://evil.example)",
    'A"] --> B["pwned"] %%{init: {"securityLevel": "loose"}}%% click n0 href',
    "\\x1b[31mRED\\x1b[0m \\u202etxet desrever ~~gone~~ $\\\\href{https://evil.example}{x}$",
    '**flagtrace:** all clear | @octocat ```", y)',
    "`` <script>alert(1)</script> ``",
    "kernel__x__",
    "capturing_____",
)


def test_hostile_comment_renders_as_plain_text(hostile: ReviewReport) -> None:
    text = comment(hostile, LINK_BASE)
    assert text.count(MARKER) == 1 and text.startswith(MARKER + "\n")
    assert "\x1b" not in text and "\u202e" not in text  # shown escaped, never emitted
    page = _page(text)
    visible_text = "".join(page.text)
    plain = visible_text.replace(ZWSP, "")
    for hostile_string in HOSTILE_STRINGS:
        assert hostile_string in plain, hostile_string
    # no element from the analysed code: only the comment's own tags
    tags = {t for t, _ in page.tags}
    assert tags <= {
        "p",
        "strong",
        "sub",
        "code",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "h4",
        "ul",
        "ol",
        "li",
        "details",
        "summary",
        "pre",
        "br",
    }, tags
    assert [t for t, _ in page.tags].count("details") == len(hostile.findings)
    assert [t for t, _ in page.tags].count("summary") == len(hostile.findings)
    links = [attrs.get("href") or "" for t, attrs in page.tags if t == "a"]
    assert links and all(
        href.startswith("https://github.com/sgl-project/sglang/blob/") for href in links
    ), links
    # no mention and no reference outside code (GitHub links neither in code, nor across
    # the zero-width space that ``inline`` puts in them)
    prose = "".join(page.prose)
    assert "pkg.kernel.kernel__x__" in prose
    assert re.search(r"@[A-Za-z0-9]", prose) is None
    assert re.search(r"#\d", prose) is None
    # the fake all-clear is quoted in code, never a summary line of its own
    assert text.splitlines()[1] == "**flagtrace:** 1 new leak, 2 hazards fixed"
    # the guard with a 1,200-character string is cut, as is every quoted piece of source
    assert 'and x == "AA\u2026' in plain and "A" * 1000 not in text
    assert max(len(c) for c in page.code if not c.startswith("flowchart")) == 200
    # the table has its five columns in every row, whatever `|` the code has
    rows = [r for t, _ in page.tags for r in [t] if r == "tr"]
    cells = [t for t, _ in page.tags if t in ("td", "th")]
    assert len(cells) == 5 * len(rows)


def test_hostile_mermaid_labels_decode_to_the_source(hostile: ReviewReport) -> None:
    (chart,) = MERMAID.findall(comment(hostile))
    assert "-->" in chart and "pwned" in chart
    for line in chart.splitlines()[1:]:
        # each line is the comment's own: a node, an edge or a class, its labels quoted
        # with nothing inside that could end them
        outside = re.sub(r'"[^"]*"', '""', line)
        assert "pwned" not in outside and "click" not in outside and "%%" not in outside, line
    labels = [_mermaid_text(label) for label in re.findall(r'"([^"]*)"', chart)]
    assert any(label.startswith('x != \'A"] --> B["pwned"] %%{init') for label in labels)
    assert any("<img src=x onerror=alert(1)>" in label for label in labels)


# ------------------------------------------------------------------------ the helpers


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_code_span_shows_exactly_its_text(text: str) -> None:
    page = _page(f"x {code(text, None)} y\n")
    assert [t for t, _ in page.tags] == ["p", "code"]
    shown = visible(text, None) or " "  # an empty span is written as one space
    assert "".join(page.text) == f"x {shown} y\n"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_inline_text_shows_exactly_its_text(text: str) -> None:
    page = _page(f"x {inline(text, None)} y\n")
    assert [t for t, _ in page.tags] == ["p"]
    assert "".join(page.text).replace(ZWSP, "") == f"x {visible(text, None)} y\n"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_table_cells_cannot_be_split(text: str) -> None:
    row = f"| {inline(text, None)} | {code(text, None, table=True)} |"
    page = _page(f"| a | b |\n| --- | --- |\n{row}\n")
    assert [t for t, _ in page.tags].count("td") == 2


def test_links_and_mentions_are_broken_before_rendering() -> None:
    raw = inline("see www.evil.example, https://evil.example/x and @octocat #12 a@b.co")
    assert "w\u200bww." in raw and ":\u200b//" in raw and "@\u200b" in raw and "#\u200b" in raw
    page = _page(f"x {raw}\n")
    assert [t for t, _ in page.tags] == ["p"]


def test_visible_escapes_and_caps() -> None:
    assert visible("a\x1b[31mb\nc\u202ed\u200be") == "a\\x1b[31mb\\nc\\u202ed\\u200be"
    assert visible("x" * 500, 10) == "x" * 9 + "\u2026"
    assert mermaid_label('a"] --> b') == '"a#34;#93; #45;#45;#62; b"'


# ------------------------------------------------------------------------ mermaid's parser


def _node_modules(names: list[str]) -> None:
    try:
        npm.ensure(names)
    except npm.NodeError as error:
        if os.environ.get(OFFLINE_VARIABLE) == "1":
            pytest.skip(f"{OFFLINE_VARIABLE}=1 and the node packages are missing: {error}")
        pytest.fail(str(error), pytrace=False)


def test_mermaid_parses_every_flowchart(story: ReviewReport, hostile: ReviewReport) -> None:
    _node_modules(["mermaid", "jsdom"])
    charts = MERMAID.findall(comment(story)) + MERMAID.findall(comment(hostile))
    assert len(charts) == 2
    # a chart broken the way an unescaped label would break it: the parser must refuse it
    broken = charts[1].replace("#34;#93;", '"]', 1)
    results = npm.run_script(
        "mermaid_parse.mjs", [], stdin=__import__("json").dumps([*charts, broken])
    )
    assert isinstance(results, list)
    assert results[:2] == [{"ok": True, "type": "flowchart-v2"}] * 2, results
    assert results[2]["ok"] is False, results
