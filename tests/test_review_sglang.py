"""``flagtrace review`` on a real change: SGLang 0.5.8 -> 0.5.9 as published.

0.5.9 added ``elif is_in_piecewise_cuda_graph():`` to ``GroupCoordinator.all_reduce``
(``sglang/srt/distributed/parallel_state.py``, line 616); 0.5.8's file has no
mention of the accessor (checked in the wheels before this test was written, and
again below).

What is true, and tested: the review reports the new reader, and, with the reads
narrowed to that function (``--read ...GroupCoordinator.all_reduce``),
``EAGLEWorker.verify`` newly observes the flag set there (it could not in 0.5.8),
anchored on line 616. Without ``--read`` no FT001 of ``verify`` is new: ``verify``
already observed the flag set in 0.5.8, through
``FlashInferMLAAttnBackend.init_forward_metadata``, and the engine keeps one witness
per entry, the same read on both sides (checked by hand with ``check`` on both
sides), so the fingerprints match and the review rightly reports no new leak.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.cache import SummaryCache
from flagtrace.model import Change, StepKind
from flagtrace.review import ReviewOptions, review
from tests.conftest import PytestRegistry
from tests.reviewrepo import git, sglang_repo

ENTRY = "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"
FILE = "sglang/srt/distributed/parallel_state.py"
READER = "sglang.srt.distributed.parallel_state.GroupCoordinator.all_reduce"


@pytest.mark.slow
def test_sglang_058_to_059_new_read_in_all_reduce(registry: PytestRegistry, tmp_path: Path) -> None:
    repo = sglang_repo(tmp_path / "repo", registry.download)
    assert "is_in_piecewise_cuda_graph" not in git(repo, "show", f"HEAD~1:{FILE}")
    line = (
        git(repo, "show", f"HEAD:{FILE}")
        .splitlines()
        .index("        elif is_in_piecewise_cuda_graph():")
        + 1
    )
    report = review(
        ["sglang"],
        "HEAD~1",
        cwd=repo,
        options=ReviewOptions(
            flags=("_in_piecewise_cuda_graph",), entries=(ENTRY,), reads=(READER,)
        ),
        cache=SummaryCache(None),  # the session's cache (FLAGTRACE_CACHE_DIR)
    )
    assert not report.errors
    assert report.flags == (
        "sglang.srt.compilation.piecewise_context_manager._in_piecewise_cuda_graph",
    )
    (change,) = report.changes
    assert any(
        (r.function, r.location.path, r.location.line) == (READER, FILE, line)
        for r in change.readers_added
    )
    new = [f for f in report.new if f.function == ENTRY]
    assert len(new) == 1, report.findings
    (finding,) = new
    assert finding.anchored
    assert (finding.location.path, finding.location.line) == (FILE, line)
    assert finding.verdict is not None
    read = finding.verdict.witness[-1]
    assert (read.step, read.function) == (StepKind.READ, READER)
    assert not [f for f in report.findings if f.change is Change.FIXED and f.function == ENTRY]
