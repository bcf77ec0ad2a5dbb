"""Escaping for text from the analysed code on its way into markdown, HTML and mermaid.

A review comment quotes what a pull request wrote: identifiers, paths, guard conditions,
call texts. On a pull request from a fork that text is an attacker's, and GitHub renders it
for everyone who opens the pull request. Each helper here turns such text into markup that
shows it as plain characters, whatever it holds:

* ``visible``: control and format characters (ANSI escapes, bidi overrides, zero-width
  characters, newlines) written as Python escapes, and the length capped, before anything
  else; every other helper starts with it;
* ``inline``: markdown text (a table cell, a list item) with no markup of its own: HTML
  special characters as entities, markdown punctuation backslash-escaped (a ``|`` cannot
  end a table cell), ``@mentions``, ``#12`` references and autolinks (``https://``,
  ``www.``) broken by a zero-width space, which GitHub's filters do not cross;
* ``code``: a code span that cannot be closed from inside (its fence is longer than any
  run of backticks in the text), with ``|`` escaped where it sits in a table;
* ``html_text``: text inside raw HTML (a ``<summary>``), where markdown is not parsed;
* ``mermaid_label``: a quoted mermaid label with every character that could end the quote,
  the node or the edge written as a ``#NN;`` entity;
* ``url_path``: a path in a link's URL, percent-encoded.

Why one module and why this strict: escaping by context is where injections come from
(one helper forgotten in one place), so a reporter writes analysed text only through these;
and each escapes everything that might matter rather than what is known to, since GitHub's
renderer (markdown, then HTML sanitising, then mentions, links and math) has more than one
stage that reads characters. The name has no registry prefix: it is no format.
"""

from __future__ import annotations

import html
import re
import unicodedata
from urllib.parse import quote

#: Unicode categories never written as they are: controls (ESC, newline, DEL), format
#: characters (bidi overrides, zero-width joiners), line and paragraph separators,
#: surrogates left by undecodable bytes, private use
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})
#: the default length cap of a quoted piece of source (a guard, a call, a name)
LIMIT = 200
ELLIPSIS = "\u2026"
#: written after ``@`` and inside ``://``/``www.``: GitHub links neither across it
ZWSP = "\u200b"
#: ASCII punctuation that means something to CommonMark, GFM tables, strikethrough or
#: GitHub's math (``$``); each is written backslash-escaped, which CommonMark allows for all
_MARKDOWN = frozenset("\\`*_{}[]()#+-!|~$")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_AUTOLINK = re.compile(r"(?i)(://|www\.)")
_BACKTICKS = re.compile(r"`+")
#: characters a mermaid label keeps as they are; every other one becomes ``#<code>;``
_MERMAID_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,")


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, limit: int | None = LIMIT) -> str:
    """``text`` with every control and format character written as its Python escape
    (``\\x1b``, ``\\n``, ``\\u202e``), then cut to ``limit`` characters with an ellipsis:
    what it shows is what the source holds, on one line, and nothing a terminal or a
    renderer would act on."""
    shown = "".join(_escaped(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in text)
    if limit is not None and len(shown) > limit:
        return shown[: max(limit - 1, 0)] + ELLIPSIS
    return shown


def _unlinked(text: str) -> str:
    """Mentions (``@user``), references (``#12``, ``owner/repo#12``: each would notify
    that issue) and autolinks broken by a zero-width space. GitHub finds all of them in
    the rendered text, after markdown escapes are gone, so this comes before escaping."""
    text = _AUTOLINK.sub(lambda m: m.group(1)[0] + ZWSP + m.group(1)[1:], text)
    # a space on both sides of ``@``: after it no user name starts, before it no e-mail
    # address ends (linkify-style renderers take a space after it as part of the domain)
    return text.replace("@", ZWSP + "@" + ZWSP).replace("#", "#" + ZWSP)


def inline(text: str, limit: int | None = LIMIT) -> str:
    """``text`` as markdown that renders as exactly its characters (after ``visible``),
    in a paragraph, list item or table cell. It must not start a line: the caller writes
    something of its own first (a list marker, a word, a cell's ``| ``)."""
    out = []
    for ch in _unlinked(visible(text, limit)):
        if ch in _HTML:
            out.append(_HTML[ch])
        elif ch in _MARKDOWN:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def code(text: str, limit: int | None = LIMIT, *, table: bool = False) -> str:
    """``text`` (after ``visible``) as a code span whose fence no run of backticks inside
    can match, so it cannot be closed early; in a table cell (``table``) its ``|`` are
    escaped, which GFM undoes inside the span. Nothing in a code span is markup, mention
    or link."""
    shown = visible(text, limit)
    if table:
        shown = shown.replace("|", "\\|")
    runs = _BACKTICKS.findall(shown)
    fence = "`" * (max((len(r) for r in runs), default=0) + 1)
    if not shown:
        return "` `"  # an empty span does not exist: two backticks are text
    # CommonMark strips one space from each end when both ends have one and the span is not
    # all spaces, and a backtick at an end would merge with the fence: pad with spaces then
    padded = shown.startswith(" ") and shown.endswith(" ") and shown.strip(" ")
    if shown.startswith("`") or shown.endswith("`") or padded:
        shown = f" {shown} "
    return f"{fence}{shown}{fence}"


def html_text(text: str, limit: int | None = LIMIT) -> str:
    """``text`` (after ``visible``) inside raw HTML such as ``<summary>``: entities for
    the HTML special characters (markdown is not parsed there), mentions and links
    broken."""
    return html.escape(_unlinked(visible(text, limit)), quote=True)


def mermaid_label(text: str, limit: int | None = 80) -> str:
    """``text`` (after ``visible``) as a double-quoted mermaid label: letters, digits,
    spaces and ``_.,`` as they are, every other character as a ``#<decimal>;`` entity
    (mermaid's escape), so no quote, bracket, pipe, arrow, backtick or HTML tag survives."""
    body = "".join(ch if ch in _MERMAID_SAFE else f"#{ord(ch)};" for ch in visible(text, limit))
    return f'"{body}"'


def url_path(path: str) -> str:
    """A repository path as the path part of a URL: every character but letters, digits
    and ``/-_.~`` percent-encoded (``(``, ``)``, spaces and ``<`` cannot end the link)."""
    return quote(path, safe="/")
