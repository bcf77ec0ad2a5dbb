"""The hazard oracle on thousands of fresh setters, with counts per shape.

Why: ``tests/test_hazard_oracle.py`` checks a fixed 300 setters (plus a few hypothesis
batches) in CI; this script runs the same generator (``tests/soundness/hazards.py``)
on many more with fresh seeds, outside pytest, and prints per shape (the setter's
kind, how it sets, where and how it resets) how many setters ran, how many of each
code running them found, and how many disagreed with flagtrace. The first few
disagreements are printed in full (the setter's source, both answers).

How, from the repository root::

    python benchmarks/hazard_oracle.py                 # 3000 setters, a fresh seed
    python benchmarks/hazard_oracle.py -n 6000 --seed 7 --jobs 2

Exit status: 1 if there was any disagreement, else 0.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.soundness.hazards import (  # noqa: E402
    Case,
    Difference,
    compare_with_behaviour,
    random_cases,
)


def check(args: tuple[int, int]) -> tuple[list[Case], list[Difference], dict[int, list[str]]]:
    """One chunk of setters from ``seed``: the cases, the disagreements, what running gave."""
    seed, n = args
    cases = random_cases(seed, n)
    with tempfile.TemporaryDirectory(prefix="flagtrace-hazards-") as tmp:
        diffs, behaviour = compare_with_behaviour(Path(tmp), cases)
    return cases, diffs, behaviour


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=3000, help="setters to generate (default 3000)")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--show", type=int, default=3, help="disagreements printed in full")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    chunk = 300
    work = [
        (seed + i, min(chunk, args.n - i * chunk)) for i in range((args.n + chunk - 1) // chunk)
    ]
    start = time.perf_counter()
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    diffs: list[Difference] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for cases, ds, behaviour in pool.map(check, work):
            for i, case in enumerate(cases):
                row = rows[case.shape]
                row["setters"] += 1
                for code in behaviour[i]:
                    row[code] += 1
            for d in ds:
                rows[d.case.shape]["differ"] += 1
            diffs.extend(ds)
    total = sum(r["setters"] for r in rows.values())
    print(
        f"hazard oracle: {total} setters, seeds {seed}..{seed + len(work) - 1}, "
        f"{time.perf_counter() - start:.0f}s"
    )
    print(f"{'shape':45} {'setters':>7} {'FT101':>6} {'FT102':>6} {'FT103':>6} {'differ':>6}")
    for shape in sorted(rows):
        r = rows[shape]
        print(
            f"{shape:45} {r['setters']:7} {r['FT101']:6} {r['FT102']:6} {r['FT103']:6} "
            f"{r['differ']:6}"
        )
    by_code = collections.Counter()
    for r in rows.values():
        by_code.update({k: v for k, v in r.items() if k.startswith("FT")})
    print(
        f"{'total':45} {total:7} {by_code['FT101']:6} {by_code['FT102']:6} "
        f"{by_code['FT103']:6} {len(diffs):6}"
    )
    for d in diffs[: args.show]:
        print()
        print(d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
