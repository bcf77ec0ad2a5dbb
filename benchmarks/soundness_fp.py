"""Soundness violations and the false-positive rate of flagtrace on random programs.

Why: ``tests/test_soundness.py`` checks a few dozen hypothesis-generated programs in
CI; this script runs the same generator (``tests/soundness/programs.py``, driven by
``random.Random(seed)`` instead of hypothesis) on many more, outside pytest, and
prints

* soundness violations (should be 0): a run read the flag set where flagtrace says
  *never observes set* (in a fresh interpreter, or after another entry ran first),
  a witness that is not a real chain of calls ending at a real read, an analysis
  error;
* the false-positive rate: entries flagtrace says *observes set* that no run saw
  set, with a guessed cause per entry (a sticky setter elsewhere, a branch not
  taken, a path cut short by a return/raise, or flow imprecision);
* optionally (``--shrink K``) a minimal program for each of the first K violations,
  found by greedily deleting functions, statements and setters while the same kind
  of violation remains.

How, from the repository root::

    python benchmarks/soundness_fp.py                    # 300 programs, seeds 0..299
    python benchmarks/soundness_fp.py -n 1000 --seed 5000 --jobs 2
    python benchmarks/soundness_fp.py --exclude raise,try,write --shrink 3
    python benchmarks/soundness_fp.py --json out.json    # every outcome, for diffing

``--exclude`` leaves constructs out of the generated programs (see ``EXCLUDABLE`` in
``tests/soundness/programs.py``), to find out which class of construct a violation
needs. Exit status: 1 if there was any violation, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.soundness.oracle import Outcome, check_project, format_summary, summarize  # noqa: E402
from tests.soundness.programs import EXCLUDABLE, Program, random_program, shrink  # noqa: E402


def run_one(args: tuple[int, frozenset[str], bool]) -> tuple[int, Program, Outcome, float]:
    seed, exclude, pairs = args
    program = random_program(seed, exclude)
    start = time.perf_counter()
    outcome = _check(program, pairs)
    return seed, program, outcome, time.perf_counter() - start


def _check(program: Program, pairs: bool = True) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="flagtrace-soundness-") as tmp:
        root = program.write(Path(tmp))
        return check_project(root, program.entries, pairs=pairs)


def _outcome_json(seed: int, program: Program, outcome: Outcome) -> dict[str, Any]:
    return {
        "seed": seed,
        "features": sorted(program.features()),
        "lines": program.lines,
        "violations": [
            {"kind": v.kind, "entry": v.entry, "detail": v.detail} for v in outcome.violations
        ],
        "entries": [
            {
                "entry": e.entry,
                "flagtrace_observes_set": e.observes_set,
                "evidence": e.evidence,
                "run_saw_set": e.saw_set,
                "run_saw_set_after_other_entry": e.saw_set_after,
                "run_saw_set_only_in_setter": e.saw_set_internal,
                "fp_cause": e.fp_cause,
            }
            for e in outcome.entries
        ],
        "source": program.source() if outcome.violations else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--programs", type=int, default=300)
    ap.add_argument(
        "--seed", type=int, default=0, help="first seed (programs use seed, seed+1, ...)"
    )
    ap.add_argument(
        "--exclude",
        default="",
        help=f"comma-separated constructs to leave out: {', '.join(EXCLUDABLE)}",
    )
    ap.add_argument(
        "--no-pairs", action="store_true", help="only fresh runs (no entry-after-entry runs)"
    )
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)))
    ap.add_argument(
        "--shrink",
        type=int,
        default=0,
        metavar="K",
        help="print a minimal program for the first K violations",
    )
    ap.add_argument(
        "--verbose", "-v", action="store_true", help="print every violation with its program"
    )
    ap.add_argument("--json", type=Path, help="write every outcome here")
    ap.add_argument(
        "--sticky-anywhere",
        action="store_true",
        help="analyse as if no program root were known (the verdicts before roots scoped "
        "sticky writes): the 'before' figure on the same programs",
    )
    args = ap.parse_args(argv)
    if args.sticky_anywhere:
        os.environ["FLAGTRACE_SOUNDNESS_STICKY_ANYWHERE"] = "1"  # read by the worker processes
    exclude = frozenset(x for x in args.exclude.split(",") if x)
    unknown = exclude - set(EXCLUDABLE)
    if unknown:
        ap.error(
            f"unknown constructs: {', '.join(sorted(unknown))} (known: {', '.join(EXCLUDABLE)})"
        )

    jobs = [(args.seed + i, exclude, not args.no_pairs) for i in range(args.programs)]
    start = time.perf_counter()
    results: list[tuple[int, Program, Outcome, float]] = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_one, jobs, chunksize=4))
    else:
        results = [run_one(j) for j in jobs]
    wall = time.perf_counter() - start

    outcomes = [o for _, _, o, _ in results]
    summary = summarize(outcomes)
    lines = [p.lines for _, p, _, _ in results]
    print(
        f"{len(results)} programs (seeds {args.seed}..{args.seed + args.programs - 1}"
        f"{', without ' + ', '.join(sorted(exclude)) if exclude else ''}), "
        f"{sum(lines) / max(1, len(lines)):.0f} lines on average, {wall:.0f}s"
    )
    print(format_summary(summary))

    # which constructs the violating programs have in common
    bad = [(s, p, o) for s, p, o, _ in results if o.violations]
    if bad:
        print(
            "\nviolations by kind, with the seeds and the constructs present in every such program:"
        )
        kinds = sorted({v.kind for _, _, o in bad for v in o.violations})
        for kind in kinds:
            progs = [(s, p) for s, p, o in bad if any(v.kind == kind for v in o.violations)]
            common = set.intersection(*(p.features() for _, p in progs))
            seeds = ", ".join(str(s) for s, _ in progs[:12]) + (" ..." if len(progs) > 12 else "")
            print(
                f"  {kind}: {len(progs)} programs (seeds {seeds}); "
                f"always present: {', '.join(sorted(common)) or '-'}"
            )
    if args.verbose:
        for seed, program, outcome in bad:
            print(f"\n===== seed {seed}")
            for v in outcome.violations:
                print(v)
            print(program.source())
    if args.shrink:
        print(f"\nminimal programs for the first {args.shrink} violating programs:")
        for seed, program, outcome in bad[: args.shrink]:
            kinds = {v.kind for v in outcome.violations}
            kind = sorted(kinds)[0]

            def fails(p: Program, kind: str = kind) -> bool:
                try:
                    return any(v.kind == kind for v in _check(p, not args.no_pairs).violations)
                except Exception:  # noqa: BLE001 - a candidate the tracer cannot run
                    return False

            small = shrink(program, fails)
            print(f"\n===== seed {seed}: {kind}")
            for v in _check(small, not args.no_pairs).violations:
                print(v)
            print(small.source())
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "summary": summary,
                    "programs": [_outcome_json(s, p, o) for s, p, o, _ in results],
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
