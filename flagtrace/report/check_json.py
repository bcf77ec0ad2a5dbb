"""``flagtrace check --format json``: the stable, versioned machine-readable report."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from flagtrace.model import AnalysisReport, EntryVerdict, FlagReport, Location, WitnessStep

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

VERSION = 1


def _where(loc: Location) -> dict[str, Any]:
    return {"file": loc.path, "line": loc.line}


def _step(s: WitnessStep) -> dict[str, Any]:
    return {
        "function": s.function,
        **_where(s.location),
        "column": s.location.column,
        "step": s.step.value,
        "callee": s.callee,
        "resolution": s.resolution.value if s.resolution is not None else None,
        "guard": s.guard,
        "code": s.text,
        "before_entry": s.before_entry,
    }


def _entry(e: EntryVerdict) -> dict[str, Any]:
    return {
        "entry": e.entry,
        "observes_set": e.observes_set,
        "evidence": e.evidence.value,
        "reason": e.reason,
        "witness": [_step(s) for s in e.witness],
        "unresolved_calls": e.unresolved_count,
        "unresolved_sites": [_where(loc) for loc in e.unresolved_sites],
    }


def _flag(f: FlagReport) -> dict[str, Any]:
    return {
        "qualname": f.qualname,
        **_where(f.location),
        "initial": f.initial,
        "setters": [
            {
                "function": s.function,
                "kind": s.kind.value,
                "value": s.value,
                **_where(s.location),
                "hazards": [kind.value for kind in s.hazards],
            }
            for s in f.setters
        ],
        "readers": [
            {"function": r.function, **_where(r.location), "via": r.via} for r in f.readers
        ],
        "entries": [_entry(e) for e in f.entries],
        "hazards": [
            {
                "code": h.code,
                "kind": h.kind.value,
                "function": h.function,
                **_where(h.location),
                "message": h.message,
            }
            for h in f.hazards
        ],
    }


def to_dict(report: AnalysisReport) -> dict[str, Any]:
    """The report as JSON values; enums give their values, so the text is that of version 1."""
    return {
        "version": VERSION,
        "flags": [_flag(f) for f in report.flags],
        "errors": [{"file": d.path, "line": d.line, "message": d.message} for d in report.errors],
        # findings left out: by `# flagtrace: ignore` comments and ignored codes, by a baseline
        "suppressed": report.suppressed,
        "baseline": None
        if report.baseline is None
        else {
            "file": report.baseline.path,
            "matched": report.baseline.matched,
            "stale": report.baseline.stale,
        },
        "stats": {
            "files": report.files,
            "lines": report.lines,
            "seconds": round(report.seconds, 3),
        },
    }


def render(report: AnalysisReport, options: RenderOptions) -> Iterable[str]:
    """One piece: a check report is small (the call graph is the one that streams)."""
    return [json.dumps(to_dict(report), indent=2) + "\n"]
