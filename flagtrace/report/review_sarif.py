"""``flagtrace review --format sarif``: what a change introduces and fixes, as SARIF 2.1.0.

NEW findings have ``baselineState: "new"`` and are anchored on the changed line that causes
them; FIXED ones ``"absent"``, at their place in the base. The revisions compared are the
run's properties (``base``, ``baseCommit``, ``head``, ``headCommit``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from flagtrace.model import ReviewReport
from flagtrace.report.findings import review_items
from flagtrace.report.sarif import dumps, log, upload_warnings

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


def render(report: ReviewReport, options: RenderOptions) -> Iterable[str]:
    properties = {
        "base": report.base,
        "baseCommit": report.base_commit,
        "head": report.head,
        "headCommit": report.head_commit,
        "flags": list(report.flags),
        "changedFiles": list(report.changed_files),
    }
    return dumps(log(review_items(report), report.errors, properties))


def warnings(report: ReviewReport) -> list[str]:
    return upload_warnings(len(report.findings))
