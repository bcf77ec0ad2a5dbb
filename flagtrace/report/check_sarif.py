"""``flagtrace check --format sarif``: the findings as a SARIF 2.1.0 log (``report.sarif``).

Upload it to a code-scanning service (``github/codeql-action/upload-sarif``). The source
lines of the findings are read once, for their fingerprints (``partialFingerprints``); run
flagtrace from the repository root, so that the paths are the repository's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from flagtrace.fingerprint import SourceLines
from flagtrace.model import AnalysisReport
from flagtrace.report.findings import check_items
from flagtrace.report.sarif import dumps, log, upload_warnings

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


def render(report: AnalysisReport, options: RenderOptions) -> Iterable[str]:
    return dumps(log(check_items(report, SourceLines()), report.errors))


def warnings(report: AnalysisReport) -> list[str]:
    """A log past GitHub code scanning's limits (one result per finding: every hazard
    and every observing entry)."""
    results = sum(
        len(f.hazards) + sum(1 for e in f.entries if e.observes_set) for f in report.flags
    )
    return upload_warnings(results)
