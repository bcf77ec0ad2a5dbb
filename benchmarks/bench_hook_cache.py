"""The pre-commit hook on an unchanged tree: answered from the report cache, how fast?

Why: issue 11 asks that the hook (``flagtrace check --quiet --format concise``, see
``.pre-commit-hooks.yaml``) answer in under a second on an unchanged tree, so that it can run
on every commit of a codebase the size of SGLang. On an unchanged tree ``flagtrace.results``
answers without resolving anything: discover the files, hash them, load the stored report.
What is left is start-up, imports and that hashing.

One run, interleaved rounds (the machines are noisy, so only ratios within a run mean
anything), each a fresh process as pre-commit starts it:

* ``python -c pass``: the interpreter's own start-up, the floor;
* ``python -c "import flagtrace.api"``: what the hook imports before it can look at the cache;
* the hook's command on TREE, warm (the first, untimed run fills the caches).

It prints the median of each, the hook's ratio to the other two, and whether the hook's
median is under a second. How, from the repository root::

    python benchmarks/bench_hook_cache.py                 # SGLang 0.5.9, 5 rounds
    python benchmarks/bench_hook_cache.py --tree DIR --flag NAME --cache-dir /tmp/c --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SGLANG = REPO / ".cache" / "unpacked" / "sglang-0.5.9-py3-none-any" / "sglang"


def timed(command: Sequence[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds of one run of ``command`` and its exit code (its output is dropped)."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr.decode()}")
    return seconds, done.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=SGLANG)
    parser.add_argument("--flag", default="_in_piecewise_cuda_graph")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: a temporary one")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not args.tree.is_dir():
        raise SystemExit(f"no tree at {args.tree} (unpack SGLang 0.5.9 there, or pass --tree)")
    with tempfile.TemporaryDirectory(prefix="flagtrace-hook-bench-") as scratch:
        cache = args.cache_dir or Path(scratch)
        env = dict(os.environ, PYTHONPATH=str(REPO), FLAGTRACE_CACHE_DIR=str(cache))
        python = sys.executable
        hook = [python, "-m", "flagtrace", "check", str(args.tree), "--flag", args.flag]
        hook += ["--quiet", "--format", "concise"]
        commands = {
            "python -c pass": [python, "-c", "pass"],
            "import flagtrace.api": [python, "-c", "import flagtrace.api"],
            "hook, warm": hook,
        }
        fill, code = timed(hook, env)
        print(f"first run (fills the caches): {fill:.2f}s, exit {code}")
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                times[name].append(timed(command, env)[0])
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:<22} median {value:6.3f}s  (min {min(times[name]):.3f}s)")
    warm = medians["hook, warm"]
    print(f"hook / python start-up: {warm / medians['python -c pass']:.1f}x")
    print(f"hook / import flagtrace.api: {warm / medians['import flagtrace.api']:.1f}x")
    print(f"hook under a second: {'yes' if warm < 1.0 else 'no'} ({warm:.2f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
