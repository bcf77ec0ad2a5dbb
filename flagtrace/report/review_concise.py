"""``flagtrace review --format concise``: one finding per line,
``path:line:col: CODE [new|fixed] message``, as ruff and flake8 print them.

NEW findings first, at their anchor (the changed line that causes them, or their own
place when no changed line does), then FIXED ones at their place in the base. Input
errors are printed by the CLI on stderr, as for every format that is not for people.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from flagtrace.model import ReviewReport
from flagtrace.report.text import safe

if TYPE_CHECKING:
    from flagtrace.report import RenderOptions


def render(report: ReviewReport, options: RenderOptions) -> Iterator[str]:
    report = safe(report)  # names, paths and messages escaped: no control character is printed
    for f in report.findings:
        loc = f.location
        yield f"{loc.path}:{loc.line}:{loc.column}: {f.code} [{f.change.value}] {f.message}\n"
