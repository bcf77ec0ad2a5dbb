"""`flagtrace scan` with its flags judged in one process and in forked workers.

Why: ``scan`` judges every flag that something sets (144 on SGLang 0.5.9, 233 on
vLLM 0.34.0) on one call graph, each on its own; ``--jobs N`` judges them in N
forked workers (``flagtrace.forked``). This script measures what that buys and
costs on a real package, against the reference measured in the same run: the
same scan with ``--jobs 1``.

* *cold*: an empty ``--cache-dir``, ``--jobs N`` (indexing, resolution, judging);
  not timed against anything, it stores the resolved program the others load;
* then, alternated ``--repeat`` times, *warm* scans of the same cache with
  ``--jobs 1`` and ``--jobs N``: the stored program is loaded and every flag is
  judged again (a scan's report is not stored).

Every report must be identical to the first warm ``--jobs 1`` one but for the
run time (checked; a difference is printed and makes the exit status 1). Memory
is the sampled peak of the *proportional* set size (PSS) summed over the process
tree: forked workers share the parent's pages until they write to them, so a sum
of RSS would count the shared program once per worker.

How, from the repository root::

    python benchmarks/bench_scan.py                           # SGLang 0.5.9
    python benchmarks/bench_scan.py --package vllm==0.34.0 --package-dir vllm
    python benchmarks/bench_scan.py --jobs 2 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO, REPO / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_sglang import (  # noqa: E402
    child_env,
    compile_flagtrace,
    flagtrace_cmd,
    fmt_bytes,
    print_table,
    run_child,
)

from flagtrace.api import default_jobs  # noqa: E402
from tests.registry import download  # noqa: E402


def _pss(pid: int) -> int:
    """Bytes of ``pid``'s proportional set size (0 when gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children", encoding="ascii") as f:
                todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return out


class PssSampler(threading.Thread):
    """The peak of the summed PSS of every process whose parent chain reaches ours.

    Sampled from this process's own children (``run_child`` starts one at a time),
    every ``interval`` seconds."""

    def __init__(self, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.peak = 0
        self._halt = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self._halt.is_set():
            total = sum(_pss(p) for p in _tree(me) if p != me)
            self.peak = max(self.peak, total)
            self._halt.wait(self.interval)

    def stop(self) -> int:
        self._halt.set()
        self.join()
        return self.peak


@dataclass
class Scan:
    label: str
    seconds: float
    pss: int
    report: dict[str, object]


def scan(label: str, tree: Path, cache: Path, jobs: int, out: Path) -> Scan:
    sampler = PssSampler()
    sampler.start()
    run = run_child(
        flagtrace_cmd(
            "scan", tree, "--format", "json", "-q", "--cache-dir", cache, "-j", str(jobs), "-o", out
        ),
        env=child_env(),
    )
    peak = sampler.stop()
    if not run.ok or not out.exists():
        sys.exit(f"{label}: flagtrace scan failed (exit {run.returncode})\n{run.stderr[-2000:]}")
    report = json.loads(out.read_text(encoding="utf-8"))
    print(f"   {label}: {run.seconds:.1f} s, PSS peak {fmt_bytes(peak)}", file=sys.stderr)
    return Scan(label, run.seconds, peak, report)


def without_time(report: dict[str, object]) -> dict[str, object]:
    stats = dict(report.get("stats", {}))  # type: ignore[call-overload]
    stats.pop("seconds", None)
    return {**report, "stats": stats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="sglang==0.5.9", help="registry spec")
    parser.add_argument("--package-dir", default="sglang", help="the package's directory")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="workers (default: CPUs)")
    parser.add_argument("--repeat", type=int, default=1, help="warm pairs (the min is shown)")
    args = parser.parse_args()
    if args.jobs < 2:
        sys.exit("--jobs must be at least 2 to compare with --jobs 1")
    tree = download(args.package) / args.package_dir
    compile_flagtrace()
    with tempfile.TemporaryDirectory(prefix="flagtrace-bench-scan-") as tmp:
        cache, out = Path(tmp) / "cache", Path(tmp) / "report.json"
        cold = scan(f"cold, --jobs {args.jobs}", tree, cache, args.jobs, out)
        one: list[Scan] = []
        many: list[Scan] = []
        for _ in range(args.repeat):
            one.append(scan("warm, --jobs 1", tree, cache, 1, out))
            many.append(scan(f"warm, --jobs {args.jobs}", tree, cache, args.jobs, out))
    reference = without_time(one[0].report)
    differ = [s.label for s in (cold, *one, *many) if without_time(s.report) != reference]
    best_one = min(one, key=lambda s: s.seconds)
    best_many = min(many, key=lambda s: s.seconds)
    flags = reference.get("flags", [])
    print(f"\n{args.package}: {len(flags)} flags listed")  # type: ignore[arg-type]
    print_table(
        "flagtrace scan",
        ["run", "time", "/ warm --jobs 1", "PSS peak (tree)"],
        [
            [cold.label, f"{cold.seconds:.1f} s", "", fmt_bytes(cold.pss)],
            [best_one.label, f"{best_one.seconds:.1f} s", "1.00", fmt_bytes(best_one.pss)],
            [
                best_many.label,
                f"{best_many.seconds:.1f} s",
                f"{best_many.seconds / best_one.seconds:.2f}",
                fmt_bytes(best_many.pss),
            ],
        ],
    )
    if differ:
        print("reports differ from the first warm --jobs 1 one: " + ", ".join(differ))
        return 1
    print("every report identical but for the run time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
