"""``flagtrace review --format github``: the pull-request comment, in GitHub-flavoured markdown.

What a reviewer sees, top-down:

1. a hidden marker, ``<!-- flagtrace -->``, on the first line: the workflow finds the
   comment by it and edits it on every push instead of adding one per push;
2. one line that answers "what does this change do to the flags?" ("2 new leaks, 1 hazard
   fixed"; "This change touches no flag.");
3. a table of the new and fixed findings: code, change, flag, function and the line it is
   anchored on, linked (``RenderOptions.link_base``);
4. the readers and setters each flag gained or lost;
5. each finding in a collapsed ``<details>`` block: its witness step by step, with a
   mermaid flowchart of the path (entry, calls, the ``enter`` of the setter, the read;
   guards as edge labels), or the hazard and its related locations.

Everything that comes from the analysed code (names, paths, guard and call texts,
messages) goes through ``flagtrace.report.markup``: a pull request from a fork writes that
text, and this comment is posted with the repository's token.

GitHub refuses a comment longer than 65,536 characters; findings are added while they fit,
whole (row and details), and the rest are counted ("and 12 more").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flagtrace.model import (
    Change,
    EntryVerdict,
    FlagChanges,
    Location,
    ReaderFinding,
    Resolution,
    ReviewFinding,
    ReviewReport,
    SetterFinding,
    StepKind,
    WitnessStep,
)
from flagtrace.report.markup import code, html_text, inline, mermaid_label, url_path
from flagtrace.rules import OBSERVES_SET

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

#: the first line of every comment: how the workflow finds the one to update
MARKER = "<!-- flagtrace -->"
#: GitHub's limit on a comment body, in characters
COMMENT_LIMIT = 65_536
#: kept free below the limit for the "and N more" line and the closing parts
_RESERVE = 600
#: readers or setters listed per flag and kind before "and N more"
LISTED_CHANGES = 10
#: input errors listed before "and N more"
LISTED_ERRORS = 5
_BLOB = re.compile(r"/blob/[^/]+$")


def default_link_base(environ: Mapping[str, str], head_sha: str | None = None) -> str | None:
    """The ``--link-base`` a GitHub Actions job implies: ``$GITHUB_SERVER_URL/
    $GITHUB_REPOSITORY/blob/SHA``, SHA being ``head_sha`` (the reviewed head commit) or
    else ``$GITHUB_SHA`` (the commit the job checked out: on ``pull_request`` the merge
    commit, whose lines are the ones reviewed). None outside Actions."""
    server = environ.get("GITHUB_SERVER_URL", "").rstrip("/")
    repository = environ.get("GITHUB_REPOSITORY", "").strip("/")
    sha = head_sha or environ.get("GITHUB_SHA", "")
    if not (server and repository and sha):
        return None
    return f"{server}/{repository}/blob/{sha}"


@dataclass(frozen=True, slots=True)
class _Links:
    """Links to lines: the head's under ``head``; the base's (fixed findings, removed
    readers and setters) under ``head`` with its ``/blob/REV`` made the base commit."""

    head: str | None
    base: str | None

    @classmethod
    def of(cls, link_base: str | None, report: ReviewReport) -> _Links:
        if not link_base:
            return cls(None, None)
        head = link_base.rstrip("/")
        if not (_BLOB.search(head) and report.base_commit):
            return cls(head, None)  # no revision to swap: the base's lines are not linked
        return cls(head, _BLOB.sub(f"/blob/{url_path(report.base_commit)}", head))

    def to(self, loc: Location, side: Change) -> str:
        """``path:line``, as a link to that line where there is a link base."""
        text = inline(f"{loc.path}:{loc.line}")
        base = self.base if side is not Change.NEW else self.head
        if base is None:
            return text
        return f"[{text}]({base}/{url_path(loc.path)}#L{loc.line})"


def _short(qualname: str) -> str:
    """A qualified name as a table shows it: from its class on (``Class.method``), else
    its last part; the details give it whole."""
    parts = qualname.split(".")
    for i in range(max(len(parts) - 3, 0), len(parts) - 1):
        if parts[i][:1].isupper():
            return ".".join(parts[i:])
    return parts[-1]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(report: ReviewReport) -> str:
    """The one-line answer: "2 new leaks, 1 hazard fixed" (FT001 findings are leaks,
    the others hazards); "This change touches no flag." when nothing changed."""

    def count(change: Change, leak: bool) -> int:
        return sum(f.change is change and (f.code == OBSERVES_SET) == leak for f in report.findings)

    new_leaks, new_hazards = count(Change.NEW, True), count(Change.NEW, False)
    fixed_leaks, fixed_hazards = count(Change.FIXED, True), count(Change.FIXED, False)
    parts = [
        text
        for n, text in (
            (new_leaks, f"{new_leaks} new {'leak' if new_leaks == 1 else 'leaks'}"),
            (new_hazards, f"{new_hazards} new {'hazard' if new_hazards == 1 else 'hazards'}"),
            (fixed_leaks, f"{_plural(fixed_leaks, 'leak')} fixed"),
            (fixed_hazards, f"{_plural(fixed_hazards, 'hazard')} fixed"),
        )
        if n
    ]
    if parts:
        return ", ".join(parts)
    touched = sum(not c.empty for c in report.changes)
    if touched:
        return (
            "No new or fixed findings; the readers or setters of "
            f"{_plural(touched, 'flag')} changed."
        )
    return "This change touches no flag."


def _row(f: ReviewFinding, links: _Links) -> str:
    change = "**new**" if f.change is Change.NEW else "fixed"
    where = links.to(f.location, f.change)
    if not f.anchored:
        where += " (not on a changed line)"
    cells = (
        inline(f.code),
        change,
        code(_short(f.flag), table=True),
        code(_short(f.function), table=True),
        where,
    )
    return "| " + " | ".join(cells) + " |\n"


_TABLE_HEAD = "| code | change | flag | function | where |\n| --- | --- | --- | --- | --- |\n"


def _step_line(i: int, s: WitnessStep, links: _Links, side: Change) -> str:
    """A witness step as a list item: what it does, where (linked), its source, its guard."""
    # by-name, jedi and inferred hops say so (value flow or a guess, not a declaration)
    how = (
        f" ({inline(s.resolution.value)})"
        if s.resolution is not None and (s.resolution.weak or s.resolution is Resolution.INFERRED)
        else ""
    )
    if s.step is StepKind.CALL:
        what = f"calls {code(_short(s.callee or '?'))}{how}"
        if s.approximation is not None:
            what += f" ({inline(s.approximation.value)})"
        if s.setting:
            what += ", which sets the flag for the step above"
    elif s.step is StepKind.ENTER:
        what = f"**enters** {code(s.callee or '?')}{how}: the flag is set from here"
        if s.approximation is not None:
            what += f" ({inline(s.approximation.value)})"
    elif s.step is StepKind.SET:
        what = f"**calls the sticky setter** {code(s.callee or '?')}{how}"
    else:
        what = "**reads the flag**"
        if s.callee:
            what += f" via {code(s.callee)}{how}"
    line = f"{i}. in {code(_short(s.function))}: {what}, at {links.to(s.location, side)}"
    if s.text:
        line += f": {code(s.text)}"
    if s.guard:
        line += f", if {code(s.guard)}"
    if s.before_entry:
        line += " (before the entry runs)"
    return line + "\n"


def flowchart(verdict: EntryVerdict) -> str:
    """The witness as a mermaid flowchart, top-down: a node per function (the entry
    first), an edge per call labelled with its guard, the setter's ``enter`` (or sticky
    ``set``) and the read as nodes of their own; edges after the flag is set are thick."""
    nodes: dict[str, str] = {}
    lines = ["flowchart TD"]

    def node(qualname: str) -> str:
        if qualname not in nodes:
            nodes[qualname] = f"n{len(nodes)}"
            lines.append(f"  {nodes[qualname]}[{mermaid_label(_short(qualname))}]")
        return nodes[qualname]

    entry = node(verdict.entry)
    is_set = False
    for i, s in enumerate(verdict.witness):
        src = node(s.function)
        guard = s.guard or ""
        if s.step is StepKind.CALL:
            dst, label = node(s.callee or "?"), guard
        elif s.step.sets_flag:
            dst = f"s{i}"
            verb = "enter" if s.step is StepKind.ENTER else "set"
            setter = mermaid_label(f"{verb} {_short(s.callee or '?')}")
            lines.append(f"  {dst}([{setter}])")
            lines.append(f"  class {dst} setter")
            label = f"{verb} if {guard}" if guard else verb
        else:
            dst = f"r{i}"
            read = mermaid_label(f"read via {_short(s.callee)}" if s.callee else "read")
            lines.append(f"  {dst}{{{{{read}}}}}")
            lines.append(f"  class {dst} read")
            label = guard
        arrow = "-.->" if s.before_entry else ("==>" if is_set else "-->")
        text = f"|{mermaid_label(label)}|" if label else ""
        lines.append(f"  {src} {arrow}{text} {dst}")
        is_set = is_set or s.step.sets_flag
    lines.append(f"  class {entry} entry")
    lines.append("  classDef entry stroke-width:3px")
    lines.append("  classDef setter fill:#f3e8ff,stroke:#8250df")
    lines.append("  classDef read fill:#ffebe9,stroke:#cf222e")
    return "\n".join(lines) + "\n"


def _related(f: ReviewFinding, links: _Links) -> str:
    return "".join(
        f"- {inline(r.role)}: {links.to(r.location, f.change)}: {inline(r.message)}\n"
        for r in f.related
    )


def _details(f: ReviewFinding, links: _Links) -> str:
    """A finding's collapsed block: the witness (and its flowchart) or the hazard."""
    change = "new" if f.change is Change.NEW else "fixed"
    v = f.verdict
    if f.code == OBSERVES_SET and v is not None and v.witness:
        head = (
            f"{html_text(f.code)} {change}: <code>{html_text(_short(v.entry))}</code> can run a "
            f"read of <code>{html_text(_short(f.flag))}</code> while it is set "
            f"({_plural(len(v.witness), 'step')})"
        )
    else:
        head = (
            f"{html_text(f.code)} {change}: <code>{html_text(_short(f.function))}</code> "
            f"({html_text(_short(f.flag))})"
        )
    out = [f"<details>\n<summary>{head}</summary>\n\n"]
    out.append(f"{inline(f.message, 400)}\n\n")
    out.append(f"flag {code(f.flag)}, function {code(f.function)}\n\n")
    if v is not None and v.witness:
        out.append(f"0. entry {code(v.entry)}\n")
        out.extend(_step_line(i, s, links, f.change) for i, s in enumerate(v.witness, 1))
        out.append(f"\n```mermaid\n{flowchart(v)}```\n\n")
    elif f.related:  # the witness shows the entry, the set and the read already
        out.append(_related(f, links) + "\n")
    out.append("</details>\n\n")
    return "".join(out)


def _listed(
    items: Sequence[ReaderFinding] | Sequence[SetterFinding],
    what: str,
    side: Change,
    links: _Links,
) -> Iterator[str]:
    for item in items[:LISTED_CHANGES]:
        line = f"  - {what} {code(item.function)} at {links.to(item.location, side)}"
        if isinstance(item, ReaderFinding) and item.via:
            line += f" via {code(item.via)}"
        if isinstance(item, SetterFinding):
            line += f" ({inline(item.kind.value)}, sets {code(item.value)})"
        yield line + "\n"
    if len(items) > LISTED_CHANGES:
        yield f"  - and {len(items) - LISTED_CHANGES} more {what}\n"


def _changes(changes: Sequence[FlagChanges], links: _Links, budget: int) -> str:
    """Readers and setters added and removed, flag by flag, while they fit in ``budget``
    characters (a change to a module that every flag lives in touches them all)."""
    shown = [c for c in changes if not c.empty]
    if not shown:
        return ""
    out = ["#### Readers and setters\n\n"]
    used = len(out[0])
    for n, c in enumerate(shown):
        part = [f"- {code(c.flag)}\n"]
        part.extend(_listed(c.readers_added, "reader added:", Change.NEW, links))
        part.extend(_listed(c.readers_removed, "reader removed:", Change.REMOVED, links))
        part.extend(_listed(c.setters_added, "setter added:", Change.NEW, links))
        part.extend(_listed(c.setters_removed, "setter removed:", Change.REMOVED, links))
        size = sum(map(len, part))
        if used + size > budget:
            out.append(f"- and {_plural(len(shown) - n, 'more flag')}\n")
            break
        used += size
        out.extend(part)
    return "".join(out) + "\n"


def _errors(report: ReviewReport) -> str:
    if not report.errors:
        return ""
    out = [f"{_plural(len(report.errors), 'file')} could not be analysed:\n\n"]
    out.extend(
        f"- {inline(str(d.path))}"
        f"{'' if d.line is None else ':' + str(d.line)}: {inline(d.message)}\n"
        for d in report.errors[:LISTED_ERRORS]
    )
    if len(report.errors) > LISTED_ERRORS:
        out.append(f"- and {len(report.errors) - LISTED_ERRORS} more\n")
    return "".join(out) + "\n"


def comment(report: ReviewReport, link_base: str | None = None) -> str:
    """The whole comment, at most ``COMMENT_LIMIT`` characters."""
    links = _Links.of(link_base, report)
    head = [f"{MARKER}\n**flagtrace:** {summary(report)}\n\n"]
    revisions = f"base {code(report.base_commit[:12] or report.base)}"
    if report.head_commit:
        revisions += f", head {code(report.head_commit[:12])}"
    head.append(
        f"<sub>{_plural(len(report.flags), 'flag')} compared, "
        f"{_plural(len(report.changed_files), 'changed file')}, {revisions}</sub>\n\n"
    )
    tail = [_changes(report.changes, links, COMMENT_LIMIT // 2), _errors(report)]
    budget = COMMENT_LIMIT - _RESERVE - sum(map(len, head)) - sum(map(len, tail))
    budget -= len(_TABLE_HEAD) + 1
    rows: list[str] = []
    blocks: list[str] = []
    for f in report.findings:
        row, block = _row(f, links), _details(f, links)
        if len(row) + len(block) > budget:
            break
        budget -= len(row) + len(block)
        rows.append(row)
        blocks.append(block)
    left = len(report.findings) - len(rows)
    body = list(head)
    if rows:
        body.extend((_TABLE_HEAD, *rows, "\n"))
    if left:
        body.append(
            f"and {left} more finding{'s' if left != 1 else ''} not shown here (GitHub's "
            "comment limit); `flagtrace review` lists them all.\n\n"
        )
    body.extend(tail)
    body.extend(blocks)
    return "".join(body).rstrip("\n") + "\n"


def render(report: ReviewReport, options: RenderOptions) -> Iterator[str]:
    """The comment as one piece: it is small (GitHub takes at most 64 KiB) and the size
    limit is kept by measuring the whole."""
    yield comment(report, options.link_base)
