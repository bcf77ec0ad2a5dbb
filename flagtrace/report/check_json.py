"""``flagtrace check --format json``: the stable, versioned machine-readable report."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from flagtrace.model import (
    AnalysisReport,
    EntryVerdict,
    FlagReport,
    Guard,
    GuardBool,
    GuardCall,
    GuardCompare,
    GuardConst,
    GuardExpr,
    GuardNot,
    GuardPath,
    Hazard,
    Location,
    PrunedHop,
    SetterFinding,
    WitnessStep,
)
from flagtrace.report import json_pieces

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions

VERSION = 1


def _where(loc: Location) -> dict[str, Any]:
    return {"file": loc.path, "line": loc.line}


def _expr(e: GuardExpr | None) -> dict[str, Any] | None:
    """A guard's parsed condition as nested objects, one key naming the node kind."""
    if e is None:
        return None
    if isinstance(e, GuardPath):
        return {"path": e.path}
    if isinstance(e, GuardConst):
        return {"const": e.value}
    if isinstance(e, GuardCall):
        return {"call": e.path, "args": e.args}
    if isinstance(e, GuardCompare):
        return {"compare": e.op, "left": _expr(e.left), "right": _expr(e.right)}
    if isinstance(e, GuardBool):
        return {"bool": e.op, "operands": [_expr(o) for o in e.operands]}
    if isinstance(e, GuardNot):
        return {"not": _expr(e.operand)}
    return {"unknown": e.text}


def _guard(g: Guard) -> dict[str, Any]:
    """One condition of a hop: ``negated`` says it must be false for the hop to run."""
    return {
        "kind": g.kind.value,
        "text": g.text,
        "negated": g.negated,
        "line": g.line,
        "expr": _expr(g.expr),
    }


def _step(s: WitnessStep) -> dict[str, Any]:
    return {
        "function": s.function,
        **_where(s.location),
        "column": s.location.column,
        "step": s.step.value,
        "callee": s.callee,
        "resolution": s.resolution.value if s.resolution is not None else None,
        "approximation": s.approximation.value if s.approximation is not None else None,
        "guard": s.guard,
        "guards": [_guard(g) for g in s.guards],
        "code": s.text,
        "before_entry": s.before_entry,
        "setting": s.setting,
    }


def entry_dict(e: EntryVerdict) -> dict[str, Any]:
    return {
        "entry": e.entry,
        "observes_set": e.observes_set,
        "evidence": e.evidence.value,
        "reason": e.reason,
        "witness": [_step(s) for s in e.witness],
        "unresolved_calls": e.unresolved_count,
        "unresolved_sites": [_where(loc) for loc in e.unresolved_sites],
        # the program roots that reach the entry; why the witness starts before it
        # ("root", "import", "anywhere": no root reaches the entry; null: it does not)
        "roots": list(e.roots),
        "sticky_scope": e.sticky_scope.value if e.sticky_scope is not None else None,
        # the setter whose write the entry observes; "constant" or "unknown" (run time)
        "set_by": e.set_by,
        "set_value": e.set_value.value if e.set_value is not None else None,
        "pruned": _pruned(e.pruned),
    }


def _pruned(h: PrunedHop | None) -> dict[str, Any] | None:
    """The hop a *never* verdict's would-be witness cannot take, and why."""
    if h is None:
        return None
    return {
        "kind": h.kind.value,
        "function": h.function,
        "callee": h.callee,
        **_where(h.location),
        "reason": h.reason,
        "guard": h.guard,
        "guard_file": h.guard_location.path if h.guard_location is not None else None,
        "guard_line": h.guard_location.line if h.guard_location is not None else None,
        "facts": list(h.facts),
        "class": h.cls,
    }


def setter_dict(s: SetterFinding) -> dict[str, Any]:
    """A setter as JSON; ``scan --format json`` lists setters the same way."""
    return {
        "function": s.function,
        "kind": s.kind.value,
        "value": s.value,
        **_where(s.location),
        "hazards": [kind.value for kind in s.hazards],
        "nesting_guarded": s.nesting_guarded,
    }


def hazard_dict(h: Hazard) -> dict[str, Any]:
    """A hazard as JSON; ``scan --format json`` lists hazards the same way."""
    return {
        "code": h.code,
        "kind": h.kind.value,
        "function": h.function,
        **_where(h.location),
        "message": h.message,
    }


def _flag(f: FlagReport) -> dict[str, Any]:
    return {
        "qualname": f.qualname,
        **_where(f.location),
        "initial": f.initial,
        "setters": [setter_dict(s) for s in f.setters],
        "readers": [
            {"function": r.function, **_where(r.location), "via": r.via} for r in f.readers
        ],
        "entries": [entry_dict(e) for e in f.entries],
        "hazards": [hazard_dict(h) for h in f.hazards],
    }


def to_dict(report: AnalysisReport) -> dict[str, Any]:
    """The report as JSON values; enums give their values, so the text is that of version 1."""
    return json_pieces.document(_parts(report))


def render(report: AnalysisReport, options: RenderOptions) -> Iterator[str]:
    """A flag at a time: with every entry's witness, a check of all 144 flags of
    SGLang 0.5.9 is 870 MB of JSON (``flagtrace.report.json_pieces``)."""
    return json_pieces.render(_parts(report))


def _parts(report: AnalysisReport) -> Iterator[tuple[str, Any]]:
    """Top-level keys in order; the flags as an iterator."""
    yield "version", VERSION
    yield "flags", (_flag(f) for f in report.flags)
    yield "errors", [{"file": d.path, "line": d.line, "message": d.message} for d in report.errors]
    # the --assume facts, each with the guards it decided (none: it matched nothing)
    yield (
        "assumptions",
        [
            {"fact": a.fact, "used": bool(a.guards), "guards": [_where(g) for g in a.guards]}
            for a in report.assumptions
        ],
    )
    # findings left out: by `# flagtrace: ignore` comments and ignored codes, by a baseline
    yield "suppressed", report.suppressed
    yield (
        "baseline",
        None
        if report.baseline is None
        else {
            "file": report.baseline.path,
            "matched": report.baseline.matched,
            "stale": report.baseline.stale,
        },
    )
    yield (
        "stats",
        {
            "files": report.files,
            "lines": report.lines,
            "seconds": round(report.seconds, 3),
            "entries_left_out": report.entries_left_out,
            "jedi_out_of_budget": report.jedi_out_of_budget,
        },
    )
    # where processes start: __main__ modules, console scripts, configured roots
    yield (
        "roots",
        [
            {"qualname": r.qualname, "kind": r.kind.value, "declared": r.declared}
            for r in report.roots
        ],
    )
