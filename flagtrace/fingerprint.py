"""Fingerprints: what identifies a finding across runs and revisions.

A baseline (``flagtrace check --baseline``) and the review bot (base against
head) both ask "is this the finding we saw before?" after unrelated edits moved
it. Line numbers cannot answer that: a line inserted above a setter moves every
hazard below it. A fingerprint is made of what the finding *is* instead:

* a hazard: (code, flag qualname, the setter function's qualname, the
  normalised text of the line the hazard points at);
* an entry that observes the flag set (``rules.OBSERVES_SET``): (code, flag
  qualname, entry qualname, the function that reads the flag, the setter -- the
  callee of the witness's ``enter``/``set`` step -- and the normalised text of
  the read's line).

Normalised text is the source line without its trailing comment, stripped, with
runs of whitespace collapsed, so re-indenting a block (wrapping it in ``if``) or
commenting a line keeps its fingerprints. Two
findings of the same kind on identical lines of one function share a
fingerprint; matching counts them (a multiset), so a copy of a baselined line
is still a new finding.

Why a module of its own, below the engine, rather than fingerprints stored in
the findings: the engine's findings (and the reports cached by
``flagtrace.results``, and the JSON goldens) stay free of source text, and a
plain ``check`` reads no source line; the lines are read only when something
matches findings (a baseline, a review), from the files as they are now, one
read per file (``SourceLines``). Reporters may import it (SARIF's
``partialFingerprints``): it is data about the model, as ``rules`` is.
"""

from __future__ import annotations

import functools
import hashlib
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from flagtrace.model import AnalysisReport, EntryVerdict, FlagReport, Hazard, Location, StepKind
from flagtrace.rules import OBSERVES_SET

_SPACE = re.compile(r"\s+")
#: the fingerprint's own version: a change of what goes into one makes old baselines stale
SCHEME = "flagtrace-fp1"


@functools.lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """A source line as fingerprints see it: its code without a trailing comment (so that
    adding a comment, or a ``# flagtrace: ignore``, keeps the fingerprint), stripped, with
    inner whitespace runs made one space.

    Memoised: the entries that reach one read share its line, and tokenizing it again for
    each was 1.4 s of filtering a 144-flag SGLang check (28k findings)."""
    code = text.strip()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT:
                code = code[: tok.start[1]]
                break
    except (tokenize.TokenError, SyntaxError):
        pass  # an unclosed bracket or string: tokens before the end were seen already
    return _SPACE.sub(" ", code.strip())


class SourceLines:
    """The lines of the analysed files, each file read once (the report knows only paths
    and line numbers: summaries keep no source text).

    A file that cannot be read, or a line past its end, reads as ``""``: its findings
    still get fingerprints, just weaker ones, and nothing fails.
    """

    def __init__(self, base: Path | None = None) -> None:
        #: report paths are as discovery gave them: relative to the cwd of the run, or to this
        self.base = base
        self._text: dict[str, str] = {}
        self._lines: dict[str, tuple[str, ...]] = {}

    def text(self, path: str) -> str:
        """The whole file, decoded as Python would (its coding cookie, else UTF-8)."""
        cached = self._text.get(path)
        if cached is None:
            file = Path(path) if self.base is None else self.base / path
            try:
                raw = file.read_bytes()
            except OSError:
                raw = b""
            try:
                encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
                cached = raw.decode(encoding, errors="replace")
            except (SyntaxError, LookupError):
                cached = raw.decode("utf-8", errors="replace")
            self._text[path] = cached
        return cached

    def lines(self, path: str) -> tuple[str, ...]:
        """The file's lines, split once: a report with thousands of findings in one
        file asked for them per finding (1.6 s of a 144-flag SGLang check's filtering)."""
        cached = self._lines.get(path)
        if cached is None:
            cached = self._lines[path] = tuple(self.text(path).splitlines())
        return cached

    def line(self, location: Location) -> str:
        lines = self.lines(location.path)
        return lines[location.line - 1] if 0 < location.line <= len(lines) else ""


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a finding is, without where it is; ``digest`` is its short stable name."""

    code: str
    flag: str
    function: str  # the setter (hazards) or the entry (FT001)
    text: str  # the normalised line: the hazard's, or the read's
    read: str = ""  # FT001: the function that reads the flag
    setter: str = ""  # FT001: the setter entered or called on the way

    @property
    def digest(self) -> str:
        parts = (SCHEME, self.code, self.flag, self.function, self.read, self.setter, self.text)
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding of a report as matching sees it: a hazard or an entry observing the
    flag set, where it points, its message and its fingerprint."""

    flag: FlagReport
    subject: Hazard | EntryVerdict
    location: Location
    message: str
    fingerprint: Fingerprint
    #: where it is in the report: (flag index, "hazard" or "entry", index in that tuple)
    key: tuple[int, str, int]

    @property
    def code(self) -> str:
        return self.fingerprint.code


def hazard_fingerprint(flag: str, hazard: Hazard, lines: SourceLines) -> Fingerprint:
    return Fingerprint(hazard.code, flag, hazard.function, normalise(lines.line(hazard.location)))


def entry_fingerprint(flag: str, verdict: EntryVerdict, lines: SourceLines) -> Fingerprint:
    """An observing entry's fingerprint; its witness ends with the read."""
    read = verdict.witness[-1] if verdict.witness else None
    setter = next((s.callee or "" for s in verdict.witness if s.step.sets_flag), "")
    return Fingerprint(
        OBSERVES_SET,
        flag,
        verdict.entry,
        normalise(lines.line(read.location)) if read is not None else "",
        read=read.function if read is not None and read.step is StepKind.READ else "",
        setter=setter,
    )


def read_location(verdict: EntryVerdict) -> Location | None:
    """Where an observing entry's witness reads the flag (its last step)."""
    return verdict.witness[-1].location if verdict.witness else None


def findings(report: AnalysisReport, lines: SourceLines) -> Iterator[Finding]:
    """Every finding of ``report``, flag by flag: its hazards, then its observing entries."""
    for f, flag in enumerate(report.flags):
        for i, hazard in enumerate(flag.hazards):
            yield Finding(
                flag,
                hazard,
                hazard.location,
                hazard.message,
                hazard_fingerprint(flag.qualname, hazard, lines),
                (f, "hazard", i),
            )
        for i, verdict in enumerate(flag.entries):
            if verdict.observes_set:
                where = read_location(verdict) or flag.location
                yield Finding(
                    flag,
                    verdict,
                    where,
                    verdict.reason,
                    entry_fingerprint(flag.qualname, verdict, lines),
                    (f, "entry", i),
                )
