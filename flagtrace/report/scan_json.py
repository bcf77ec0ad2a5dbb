"""``flagtrace scan --format json``: the flag inventory, versioned like the check report."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from flagtrace.model import FlagInventory, Location, ScanReport
from flagtrace.report.check_json import hazard_dict, setter_dict

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

VERSION = 1


def _where(loc: Location) -> dict[str, Any]:
    return {"file": loc.path, "line": loc.line}


def _flag(f: FlagInventory) -> dict[str, Any]:
    return {
        "qualname": f.qualname,
        **_where(f.location),
        "initial": f.initial,
        "setters": [setter_dict(s) for s in f.setters],
        "writers": list(f.writers),
        "accessors": list(f.accessors),
        "reads": f.reads,
        "reader_modules": f.reader_modules,
        "hazards": [hazard_dict(h) for h in f.hazards],
    }


def to_dict(report: ScanReport) -> dict[str, Any]:
    """The inventory as JSON values, riskiest flag first."""
    return {
        "version": VERSION,
        "flags": [_flag(f) for f in report.flags],
        "errors": [{"file": d.path, "line": d.line, "message": d.message} for d in report.errors],
        "stats": {
            "files": report.files,
            "lines": report.lines,
            "seconds": round(report.seconds, 3),
        },
    }


def render(report: ScanReport, options: RenderOptions) -> Iterable[str]:
    return [json.dumps(to_dict(report), indent=2) + "\n"]
