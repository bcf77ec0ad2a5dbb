"""``flagtrace check --format rdjson``: the findings for reviewdog (``report.rdjson``).

``flagtrace check . --format rdjson | reviewdog -f=rdjson -reporter=github-pr-review``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from flagtrace.fingerprint import SourceLines
from flagtrace.model import AnalysisReport
from flagtrace.report.findings import check_items
from flagtrace.report.rdjson import document

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


def render(report: AnalysisReport, options: RenderOptions) -> Iterable[str]:
    lines = SourceLines()  # one read per file, for fingerprints and byte columns alike
    return document(check_items(report, lines), lines)
