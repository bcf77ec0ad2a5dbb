"""A picture of the pull-request comment: markdown to HTML (GitHub-like), mermaid drawn, then a
headless Chromium screenshot.

Why: the README shows what a reviewer sees on a pull request, and that picture must be one
anyone can make again from the code as it is, not a screenshot taken by hand once. The HTML
is rendered the way the tests read the comment (markdown-it-py's GFM preset), styled with a
few rules in the spirit of GitHub's, and the mermaid blocks are drawn by the mermaid bundle
from npm (``tests/npm.py`` installs it under ``.cache/npm``). The first ``<details>`` block
is opened, so the picture shows a witness and its flowchart.

How, from the repository root (Chromium from Debian: ``apt-get install -y chromium``)::

    python benchmarks/render_comment.py                          # the sglang_story fixture
    python benchmarks/render_comment.py --markdown comment.md    # a comment flagtrace wrote
    python benchmarks/render_comment.py -o docs/review-comment.png --width 900

Without ``--markdown`` the comment is built from a real ``check`` of
``fixtures/flags/sglang_story`` made into a review (``tests/review_reports.py``): the leak
new, the setter's hazards fixed.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from markdown_it import MarkdownIt  # noqa: E402

from tests import npm  # noqa: E402

CSS = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
       color: #1f2328; background: #fff; margin: 0; padding: 16px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; max-width: 100%; }
.comment > header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
                    color: #59636e; border-radius: 6px 6px 0 0; }
.comment > header b { color: #1f2328; }
.body { padding: 16px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
       background: rgba(175,184,193,.2); padding: .2em .4em; border-radius: 6px; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
a { color: #0969da; text-decoration: none; }
details { margin: 8px 0; }
summary { cursor: pointer; font-weight: 600; }
pre.mermaid { background: #fff; text-align: center; }
h4 { margin: 16px 0 8px; }
sub { color: #59636e; }
"""


def page(markdown: str, mermaid_js: Path) -> str:
    """The comment as a standalone HTML page, its mermaid blocks ready for mermaid.run()."""
    md = MarkdownIt("gfm-like")
    md.linkify.set({"fuzzy_link": False})
    body = md.render(markdown)
    body = body.replace('<pre><code class="language-mermaid">', '<pre class="mermaid">')
    body = body.replace("</code></pre>", "</pre>")
    body = body.replace("<details>", "<details open>", 1)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><style>{CSS}</style>
<script src="{html.escape(mermaid_js.as_uri())}"></script></head>
<body><div class="comment"><header><b>github-actions</b> bot commented</header>
<div class="body">{body}</div></div>
<script>mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
mermaid.run({{querySelector: "pre.mermaid"}});</script>
</body></html>
"""


def story_comment() -> str:
    """The comment for the sglang_story fixture, the leak new and the hazards fixed."""
    from flagtrace.report.review_github import comment
    from tests.review_reports import HEAD_COMMIT, analyse, leak_new_hazards_fixed, review_of

    root = REPO / "fixtures" / "flags" / "sglang_story"
    report = analyse(
        root, ["_in_piecewise_cuda_graph"], ["pkg.speculative.eagle_worker.EAGLEWorker.verify"]
    )
    review = review_of(report, root, leak_new_hazards_fixed)
    return comment(review, f"https://github.com/sgl-project/sglang/blob/{HEAD_COMMIT}")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("render_comment: no chromium on PATH (Debian: apt-get install -y chromium)")


def screenshot(html_file: Path, png: Path, width: int, height: int) -> None:
    """Chromium, headless, with a fresh profile and nothing reaching out to the network."""
    with tempfile.TemporaryDirectory(prefix="flagtrace-chromium-") as profile:
        command = [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=10000",
            f"--screenshot={png}",
            html_file.as_uri(),
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=180)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument(
        "--markdown", type=Path, help="a comment flagtrace wrote (default: a fixture)"
    )
    parser.add_argument("-o", "--output", type=Path, default=REPO / "docs" / "review-comment.png")
    parser.add_argument("--html", type=Path, help="also keep the HTML page here")
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=2200)
    args = parser.parse_args(argv)
    markdown = args.markdown.read_text(encoding="utf-8") if args.markdown else story_comment()
    mermaid_js = npm.ensure(["mermaid"]) / "mermaid" / "dist" / "mermaid.min.js"
    with tempfile.TemporaryDirectory(prefix="flagtrace-comment-") as tmp:
        html_file = Path(tmp) / "comment.html"
        html_file.write_text(page(markdown, mermaid_js), encoding="utf-8")
        if args.html:
            shutil.copyfile(html_file, args.html)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        screenshot(html_file, args.output.resolve(), args.width, args.height)
    print(f"wrote {args.output} ({args.output.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
