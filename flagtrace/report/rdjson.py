"""reviewdog's diagnostic format (rdjson), shared by ``check`` and ``review --format rdjson``.

reviewdog (``reviewdog -f=rdjson``) posts diagnostics as pull-request review comments, checks
annotations or a local report. The shape is its ``DiagnosticResult`` (``proto/rdf`` of
reviewdog): a ``source``, and ``diagnostics`` each with a ``message``, a ``location`` (path and
a range whose start has a line and a column), a ``severity``, a ``code`` and
``related_locations``.

rdjson has no code flows, so the witness goes into ``related_locations``: first the places the
finding names (the entry, the set site, the read), then every hop of the witness in order,
numbered ("step 3/12: ..."), so a reader can follow the path from the comment.

Columns: rdjson counts a column in UTF-8 bytes, flagtrace in characters; the line is read
(``SourceLines``) to convert, and a line that cannot be read keeps the character column.

A review gives only its NEW findings: rdjson has no "fixed" state, and a fixed finding's
place is in the base, where a comment on the head's line of that number would mislead (the
fixed ones are in the SARIF log, as ``absent``, and in the markdown comment).

Written only through ``json.dumps``: the analysed code's text cannot break out of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from flagtrace.fingerprint import SourceLines
from flagtrace.model import Location
from flagtrace.report import json_pieces
from flagtrace.report.findings import Item, level, step_message
from flagtrace.report.sarif import INFORMATION_URI

SOURCE = {"name": "flagtrace", "url": INFORMATION_URI}
_SEVERITY = {"error": "ERROR", "warning": "WARNING"}


def _column(loc: Location, lines: SourceLines) -> int:
    """``loc``'s column in UTF-8 bytes, 1-based (rdjson's unit)."""
    line = lines.line(loc)
    if not line or loc.column - 1 > len(line):
        return max(loc.column, 1)
    return len(line[: loc.column - 1].encode("utf-8", "surrogatepass")) + 1


def location(loc: Location, lines: SourceLines) -> dict[str, Any]:
    return {
        "path": loc.path,
        "range": {"start": {"line": loc.line, "column": _column(loc, lines)}},
    }


def diagnostic(item: Item, lines: SourceLines) -> dict[str, Any]:
    related = [
        {"message": r.message, "location": location(r.location, lines)} for r in item.related
    ]
    n = len(item.witness)
    related.extend(
        {
            "message": f"step {i}/{n} ({step.step.value}): {step_message(step, item.flag)}",
            "location": location(step.location, lines),
        }
        for i, step in enumerate(item.witness, 1)
    )
    out: dict[str, Any] = {
        "message": item.message,
        "location": location(item.location, lines),
        "severity": _SEVERITY[level(item.code)],
        "source": SOURCE,
        "code": {"value": item.code, "url": INFORMATION_URI},
    }
    if related:
        out["related_locations"] = related
    return out


def document(items: Iterable[Item], lines: SourceLines) -> Iterator[str]:
    """The ``DiagnosticResult`` as JSON text, a diagnostic at a time
    (``report.json_pieces``: all 144 flags of SGLang 0.5.9 are 430 MB of it)."""
    diagnostics = (diagnostic(i, lines) for i in items)
    return json_pieces.dumps({"source": SOURCE, "diagnostics": diagnostics})
