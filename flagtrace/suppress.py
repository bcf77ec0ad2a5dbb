"""Suppressions: ``# flagtrace: ignore[FT101]`` comments and codes ignored everywhere.

A finding is dropped from the report (and so from the exit code) when

* its code is ignored everywhere (``[tool.flagtrace] ignore = ["FT104"]``,
  ``--ignore FT104``), or
* a ``# flagtrace: ignore[CODE,...]`` comment (or a bare ``# flagtrace: ignore``,
  for every code) is on one of its lines:

  - a hazard: the line the hazard points at (the ``yield`` whose body can raise,
    the constant reset, the set that is never undone), or the ``def`` line of
    the setter, or of the function the hazard's line is in (a class setter's
    FT102 belongs to ``__enter__`` and points into ``__exit__``: either ``def``).
    The hazard's line is where the reader of the report is sent; the ``def``
    line is there because a setter's hazards point at different lines of it
    (FT101 at the ``yield``, FT102 at the reset), and one comment on the
    ``def`` accepts the setter as it is;
  - an entry observing the flag set (FT001): the read's line (every entry that
    reaches that read) or the entry's ``def`` line (that entry only).

Why after the analysis and not inside it: comments are not in the summaries
(an added comment changes no summary, so ``flagtrace.results`` reuses the
stored report), and the files are read as they are now. Only the files that
hold a finding and contain the text ``flagtrace:`` are tokenised: the comments
are found by ``tokenize`` (a ``#`` inside a string is not a comment) and the
``def`` lines by ``ast`` (parsing only; nothing runs).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from flagtrace.fingerprint import Finding, SourceLines, findings
from flagtrace.model import AnalysisReport, FlagReport, Hazard, Location
from flagtrace.rules import OBSERVES_SET, RULES

#: every code a suppression may name
CODES = frozenset({OBSERVES_SET, *(r.code for r in RULES.values())})
_PRAGMA = re.compile(r"#\s*flagtrace:\s*ignore\b(?:\[([^\]]*)\])?", re.IGNORECASE)
#: a pragma without codes: it suppresses every code
ALL = frozenset({"*"})


class SuppressionError(Exception):
    """An unknown code in ``--ignore`` or ``[tool.flagtrace] ignore``: one line, exit code 2."""


def check_codes(codes: Iterable[str]) -> frozenset[str]:
    """The codes to ignore everywhere, upper-cased; ``FT101,FT102`` may be one item."""
    out = {c.strip().upper() for item in codes for c in item.split(",") if c.strip()}
    unknown = sorted(out - CODES)
    if unknown:
        raise SuppressionError(
            f"unknown code {', '.join(unknown)} (known: {', '.join(sorted(CODES))})"
        )
    return frozenset(out)


def parse_pragma(comment: str) -> frozenset[str] | None:
    """The codes a comment suppresses: ``ALL`` for a bare ``flagtrace: ignore``, None for
    a comment that is no suppression."""
    m = _PRAGMA.search(comment)
    if m is None:
        return None
    if m.group(1) is None:
        return ALL
    codes = frozenset(c.strip().upper() for c in m.group(1).split(",") if c.strip())
    return codes or ALL


class Pragmas:
    """The suppression comments of the analysed files, by file and line (read once)."""

    def __init__(self, lines: SourceLines) -> None:
        self.lines = lines
        self._comments: dict[str, dict[int, frozenset[str]]] = {}
        self._defs: dict[str, list[_Def]] = {}

    def at(self, path: str, line: int) -> frozenset[str]:
        return self._file(path).get(line, frozenset())

    def _file(self, path: str) -> dict[int, frozenset[str]]:
        found = self._comments.get(path)
        if found is None:
            found = {}
            text = self.lines.text(path)
            if "flagtrace:" in text.lower():
                for line, comment in _comments(text):
                    codes = parse_pragma(comment)
                    if codes is not None:
                        found[line] = codes
            self._comments[path] = found
        return found

    def def_line(self, function: str, inside: Location) -> int | None:
        """The ``def`` line of ``function`` (a qualname) for a finding at ``inside``: the
        innermost definition of its name around ``inside``, else a method of that name
        of the class around ``inside`` (a class setter's FT102 belongs to ``__enter__``
        but points into ``__exit__``); None when there is none (module code)."""
        defs = self._definitions(inside.path)
        name = function.rsplit(".", 1)[-1]
        line = inside.line
        named = [d.start for d in defs if d.name == name and d.start <= line <= d.end]
        if not named:
            named = [d.start for d in defs if d.name == name and d.owner[0] <= line <= d.owner[1]]
        return max(named) if named else None

    def enclosing_def(self, inside: Location) -> int | None:
        """The ``def`` line of the innermost function around ``inside``."""
        defs = self._definitions(inside.path)
        around = [d.start for d in defs if d.start <= inside.line <= d.end]
        return max(around) if around else None

    def _definitions(self, path: str) -> list[_Def]:
        if not self._file(path):
            return []  # no pragma anywhere in the file: no need to parse it
        defs = self._defs.get(path)
        if defs is None:
            defs = _definitions(self.lines.text(path))
            self._defs[path] = defs
        return defs

    def suppressed(self, finding: Finding) -> bool:
        """Is a comment on one of the finding's lines suppressing its code?"""
        subject = finding.subject
        places = [finding.location]
        inside: Location | None
        if isinstance(subject, Hazard):
            function, inside = subject.function, subject.location
        else:  # the entry's def: around its first step in the entry itself
            first = next((s for s in subject.witness if s.function == subject.entry), None)
            function, inside = subject.entry, first.location if first is not None else None
        if inside is not None:
            for line in (self.def_line(function, inside), self.enclosing_def(inside)):
                if line is not None:
                    places.append(Location(inside.path, line))
        for where in places:
            codes = self.at(where.path, where.line)
            if "*" in codes or finding.code in codes:
                return True
        return False


def _comments(text: str) -> list[tuple[int, str]]:
    """Every comment of a file with its line; a file tokenize rejects is read line by line."""
    try:
        return [
            (tok.start[0], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return [
            (i, line[line.index("#") :])
            for i, line in enumerate(text.splitlines(), 1)
            if "#" in line
        ]


@dataclass(frozen=True, slots=True)
class _Def:
    """A function definition: its name, ``def`` line, last line, and the lines of the
    class it is a method of ((0, 0) for none)."""

    name: str
    start: int
    end: int
    owner: tuple[int, int]


def _definitions(text: str) -> list[_Def]:
    """Every function definition of a file."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[_Def] = []
    nodes: list[tuple[ast.AST, tuple[int, int]]] = [(tree, (0, 0))]
    while nodes:
        node, owner = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(_Def(node.name, node.lineno, node.end_lineno or node.lineno, owner))
        inner = (0, 0)
        if isinstance(node, ast.ClassDef):
            inner = (node.lineno, node.end_lineno or node.lineno)
        nodes.extend((child, inner) for child in ast.iter_child_nodes(node))
    return out


def apply_suppressions(
    report: AnalysisReport, lines: SourceLines, ignore: Collection[str] = ()
) -> AnalysisReport:
    """``report`` without the findings that ``ignore`` (codes) or a comment suppresses;
    ``suppressed`` counts them. Reads the source through ``lines`` and nothing else."""
    pragmas = Pragmas(lines)
    dropped: set[tuple[int, str, int]] = set()
    for finding in findings(report, lines):
        if finding.code in ignore or pragmas.suppressed(finding):
            dropped.add(finding.key)
    if not dropped:
        return report
    return replace(without(report, dropped), suppressed=report.suppressed + len(dropped))


def without(report: AnalysisReport, dropped: Collection[tuple[int, str, int]]) -> AnalysisReport:
    """``report`` without the findings whose ``Finding.key`` is in ``dropped``. A setter
    keeps a hazard kind in its ``hazards`` only while a hazard of that kind remains for
    its function."""
    return replace(
        report, flags=tuple(_flag_without(i, f, dropped) for i, f in enumerate(report.flags))
    )


def _flag_without(
    index: int, flag: FlagReport, dropped: Collection[tuple[int, str, int]]
) -> FlagReport:
    hazards = tuple(h for i, h in enumerate(flag.hazards) if (index, "hazard", i) not in dropped)
    entries = tuple(e for i, e in enumerate(flag.entries) if (index, "entry", i) not in dropped)
    if len(hazards) == len(flag.hazards) and len(entries) == len(flag.entries):
        return flag
    kept = {(h.function, h.kind) for h in hazards}
    gone = {(h.function, h.kind) for h in flag.hazards} - kept
    setters = tuple(
        replace(s, hazards=tuple(k for k in s.hazards if (s.function, k) not in gone))
        for s in flag.setters
    )
    return replace(flag, hazards=hazards, entries=entries, setters=setters)
