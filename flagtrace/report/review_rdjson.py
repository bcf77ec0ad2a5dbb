"""``flagtrace review --format rdjson``: the findings a change introduces, for reviewdog.

Only NEW findings (``report.rdjson`` says why); each is anchored on the changed line that
causes it, which is where reviewdog can comment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from flagtrace.fingerprint import SourceLines
from flagtrace.model import Change, ReviewReport
from flagtrace.report.findings import review_items
from flagtrace.report.rdjson import document

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


def render(report: ReviewReport, options: RenderOptions) -> Iterable[str]:
    items = (i for i in review_items(report) if i.change is Change.NEW)
    return document(items, SourceLines())
