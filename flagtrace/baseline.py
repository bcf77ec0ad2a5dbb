"""Baselines: accept today's findings, be told only about new ones.

``flagtrace check ... --write-baseline FILE`` records the findings of a run;
``--baseline FILE`` (or ``[tool.flagtrace] baseline``) then drops the findings
the file holds, and the report says how many it matched and how many of its
entries matched nothing (stale: fixed, or edited beyond recognition).

Findings are matched by fingerprint (``flagtrace.fingerprint``), never by line,
as a multiset: a baseline that holds one copy of a finding accepts one, so a
second identical hazard added later is reported. The file is JSON a person can
read in a code review::

    {"version": 1, "tool": "flagtrace", "findings": [
      {"fingerprint": "3f0c...", "code": "FT101", "flag": "pkg.flags._no_grad",
       "function": "pkg.flags.no_grad", "path": "pkg/flags.py", "text": "yield",
       "message": "an exception after the flag is set ..."}]}

Only ``fingerprint`` decides a match; the rest is context for the reader, and
line numbers are left out so that the file does not change with every edit.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from flagtrace.fingerprint import Finding, SourceLines, findings
from flagtrace.model import AnalysisReport, BaselineOutcome
from flagtrace.suppress import without

VERSION = 1
_REQUIRED = ("fingerprint", "code", "flag", "function", "path", "message")


class BaselineError(Exception):
    """A baseline file that cannot be read or is not one: one line, exit code 2."""


@dataclass(frozen=True, slots=True)
class BaselineEntry:
    fingerprint: str
    code: str
    flag: str
    function: str
    path: str
    message: str
    text: str = ""
    read: str = ""
    setter: str = ""

    @classmethod
    def of(cls, finding: Finding) -> BaselineEntry:
        fp = finding.fingerprint
        return cls(
            fp.digest,
            fp.code,
            fp.flag,
            fp.function,
            finding.location.path,
            finding.message,
            fp.text,
            fp.read,
            fp.setter,
        )

    def to_json(self) -> dict[str, str]:
        out = {
            "fingerprint": self.fingerprint,
            "code": self.code,
            "flag": self.flag,
            "function": self.function,
            "path": self.path,
            "text": self.text,
            "message": self.message,
        }
        if self.read or self.setter:
            out.update(read=self.read, setter=self.setter)
        return out


@dataclass(frozen=True, slots=True)
class Baseline:
    entries: tuple[BaselineEntry, ...]
    path: str = ""  # where it was read from, for the report

    def dumps(self) -> str:
        body = {
            "version": VERSION,
            "tool": "flagtrace",
            "findings": [e.to_json() for e in self.entries],
        }
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def make_baseline(report: AnalysisReport, lines: SourceLines) -> Baseline:
    """The findings of ``report`` as a baseline, sorted so that it diffs well."""
    entries = sorted(
        (BaselineEntry.of(f) for f in findings(report, lines)),
        key=lambda e: (e.path, e.flag, e.code, e.function, e.fingerprint),
    )
    return Baseline(tuple(entries))


def load_baseline(path: Path) -> Baseline:
    """Read a baseline file; anything else than one is a ``BaselineError``."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: baseline is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise BaselineError(f"{path}: not a flagtrace baseline of version {VERSION}")
    items = data.get("findings")
    if not isinstance(items, list):
        raise BaselineError(f"{path}: baseline has no list of findings")
    entries = []
    for i, item in enumerate(items):
        if not (
            isinstance(item, dict)
            and all(isinstance(item.get(k), str) for k in _REQUIRED)
            and all(isinstance(v, str) for v in item.values())
        ):
            raise BaselineError(
                f"{path}: finding {i} must be an object of strings with {', '.join(_REQUIRED)}"
            )
        known = {k: item[k] for k in (*_REQUIRED, "text", "read", "setter") if k in item}
        entries.append(BaselineEntry(**known))
    return Baseline(tuple(entries), str(path))


def apply_baseline(
    report: AnalysisReport, baseline: Baseline, lines: SourceLines
) -> AnalysisReport:
    """``report`` without the findings ``baseline`` holds, with the count of those and of
    the baseline's entries that matched nothing (``report.baseline``). Pure but for
    reading source lines through ``lines``: the review bot reuses it."""
    available = Counter(e.fingerprint for e in baseline.entries)
    dropped: set[tuple[int, str, int]] = set()
    for finding in findings(report, lines):
        digest = finding.fingerprint.digest
        if available[digest] > 0:
            available[digest] -= 1
            dropped.add(finding.key)
    outcome = BaselineOutcome(baseline.path, len(dropped), sum(available.values()))
    return replace(without(report, dropped), baseline=outcome)
