"""``flagtrace review --format json``: everything the review found, stable and versioned.

Findings carry their witness (FT001) or hazard in the shapes of ``check --format
json``, so a tool that reads one reads the other; readers and setters that
changed are listed per flag."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from flagtrace.model import FlagChanges, Hazard, Location, ReviewFinding, ReviewReport
from flagtrace.report.check_json import entry_dict

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

VERSION = 1


def _where(loc: Location) -> dict[str, Any]:
    return {"file": loc.path, "line": loc.line, "column": loc.column}


def _hazard(h: Hazard) -> dict[str, Any]:
    return {
        "code": h.code,
        "kind": h.kind.value,
        "function": h.function,
        **_where(h.location),
        "message": h.message,
    }


def _finding(f: ReviewFinding) -> dict[str, Any]:
    return {
        "change": f.change.value,
        "code": f.code,
        "flag": f.flag,
        "function": f.function,
        **_where(f.location),
        "anchored": f.anchored,
        "message": f.message,
        "fingerprint": f.fingerprint,
        "related": [
            {"role": r.role, **_where(r.location), "message": r.message} for r in f.related
        ],
        "verdict": entry_dict(f.verdict) if f.verdict is not None else None,
        "hazard": _hazard(f.hazard) if f.hazard is not None else None,
    }


def _changes(c: FlagChanges) -> dict[str, Any]:
    def readers(rows: Iterable[Any]) -> list[dict[str, Any]]:
        return [{"function": r.function, **_where(r.location), "via": r.via} for r in rows]

    def setters(rows: Iterable[Any]) -> list[dict[str, Any]]:
        return [
            {"function": s.function, "kind": s.kind.value, "value": s.value, **_where(s.location)}
            for s in rows
        ]

    return {
        "flag": c.flag,
        "readers_added": readers(c.readers_added),
        "readers_removed": readers(c.readers_removed),
        "setters_added": setters(c.setters_added),
        "setters_removed": setters(c.setters_removed),
    }


def to_dict(report: ReviewReport) -> dict[str, Any]:
    """The report as JSON values (enums as their values)."""
    return {
        "version": VERSION,
        "base": {"rev": report.base, "commit": report.base_commit},
        "head": {"rev": report.head, "commit": report.head_commit},
        "flags": list(report.flags),
        "summary": {"new": len(report.new), "fixed": len(report.fixed)},
        "findings": [_finding(f) for f in report.findings],
        "changes": [_changes(c) for c in report.changes],
        "changed_files": list(report.changed_files),
        "errors": [{"file": d.path, "line": d.line, "message": d.message} for d in report.errors],
        "stats": {"seconds": round(report.seconds, 3)},
    }


def render(report: ReviewReport, options: RenderOptions) -> Iterable[str]:
    return [json.dumps(to_dict(report), indent=2) + "\n"]
