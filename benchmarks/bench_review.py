"""Time ``flagtrace review`` of a one-file change on SGLang 0.5.9 against a warm ``check``
of the same tree, and the time git needs to materialise the base, in the same run.

Target (issue 12): a review with a warm cache takes at most 3 x (warm check + git
materialisation). The repository: commit 1 is SGLang 0.5.9 as published, commit 2
adds one function to ``sglang/srt/distributed/parallel_state.py``. Every run is a
fresh interpreter (``python -m flagtrace``), as a user or CI job would run it, all
with one temporary ``--cache-dir``:

* check, warm: ``check`` of the head tree, the second of two runs (the report cache);
* git: ``git worktree add --detach`` of the base into a temporary directory and its
  removal, which every review pays;
* review, warm: ``review --base HEAD~1``, the second of two runs (both sides cached);
* review, base warm: the head edited once more (uncommitted), so the base is cached
  and the head is not: what a CI job with a cache restored from the base branch pays.

Nothing fails on a missed target. From the repository root::

    python benchmarks/bench_review.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.registry import REPO, Registry  # noqa: E402
from tests.reviewrepo import git, replace_tree  # noqa: E402

FILE = "sglang/srt/distributed/parallel_state.py"
QUERY = (
    "--flag",
    "_in_piecewise_cuda_graph",
    "--entry",
    "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify",
)
ADDED = "\n\ndef _bench_review_added(x):\n    return x + 1\n"


def _timed(cwd: Path, *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flagtrace", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"flagtrace {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return seconds


def main() -> int:
    sglang = Registry(REPO / ".cache").download("sglang==0.5.9")
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        repo = Path(tmp) / "repo"
        cache = Path(tmp) / "cache"
        repo.mkdir()
        git(repo, "init", "-q")
        (repo / "sglang").mkdir()
        replace_tree(repo / "sglang", sglang / "sglang")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "sglang 0.5.9")
        with open(repo / FILE, "a", encoding="utf-8") as out:
            out.write(ADDED)
        git(repo, "commit", "-q", "-am", "one function more")
        common = ("--cache-dir", str(cache), "-q", "--format", "json", "-o", os.devnull)

        cold_check = _timed(repo, "check", "sglang", *QUERY, *common)
        warm_check = _timed(repo, "check", "sglang", *QUERY, *common)

        start = time.perf_counter()
        tree = Path(tmp) / "base"
        git(repo, "worktree", "add", "--detach", "--quiet", str(tree), "HEAD~1")
        git(repo, "worktree", "remove", "--force", str(tree))
        materialise = time.perf_counter() - start

        first_review = _timed(repo, "review", "sglang", "--base", "HEAD~1", *QUERY, *common)
        warm_review = _timed(repo, "review", "sglang", "--base", "HEAD~1", *QUERY, *common)
        with open(repo / FILE, "a", encoding="utf-8") as out:
            out.write(ADDED.replace("_added", "_added_again"))
        base_warm = _timed(repo, "review", "sglang", "--base", "HEAD~1", *QUERY, *common)

    budget = warm_check + materialise
    print(f"check, cold:               {cold_check:7.2f} s")
    print(f"check, warm:               {warm_check:7.2f} s")
    print(f"git worktree add + remove: {materialise:7.2f} s")
    print(f"review, first (head warm): {first_review:7.2f} s")
    print(
        f"review, warm:              {warm_review:7.2f} s  = {warm_review / budget:.2f} x "
        f"(warm check + git); target <= 3"
    )
    print(
        f"review, base warm only:    {base_warm:7.2f} s  = {base_warm / budget:.2f} x "
        f"(warm check + git); no target"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
