"""The witness search on SGLang 0.5.9, before and after a change, as one ratio.

Why: issue 20 records more guards (on reads, short-circuits, early exits...) on
every call site and read, and the witness search must stay within 10% of its
time before that. The machine is shared and noisy, so both checkouts run in the
same invocation, alternately, and the script prints the ratio of their best
times, never a verdict on absolute seconds.

What is timed, in a child process per checkout (``PYTHONPATH`` = the checkout,
so each imports its own flagtrace): with a *warm* summary cache (its own
directory per checkout, filled by an untimed first run), ``load_project`` +
``build_callgraph`` once, then the flag stages (``analyze_project``: effects,
interpretation, witness search, verdicts) for

* ``check``: ``--flag _in_piecewise_cuda_graph --entry ...EAGLEWorker.verify``;
* ``discovery``: the same flag with no ``--entry`` (every discovered entry).

The stages are timed in process rather than as ``flagtrace check`` because a
warm CLI run reuses the stored whole-run report and never searches at all.

How, from the repository root::

    python benchmarks/witness_guards.py --before ../main --after . --repeat 3 \
        --tree ../main/.cache/unpacked/sglang-0.5.9-py3-none-any/sglang

(``--tree`` defaults to this checkout's ``.cache/unpacked/...``, where
``tests/registry.py`` unpacks the wheel.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FLAG = "_in_piecewise_cuda_graph"
VERIFY = "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"
DEFAULT_TREE = Path(__file__).resolve().parents[1] / ".cache/unpacked/sglang-0.5.9-py3-none-any"

_DRIVER = """
import json, sys, time
from flagtrace.api import analyze_project, build_callgraph, load_project
from flagtrace.cache import SummaryCache

tree, cache_dir, flag, verify, repeat = sys.argv[1:6]
project = load_project([tree], cache=SummaryCache(cache_dir))
graph = build_callgraph(project)
out = {"check": [], "discovery": []}
for _ in range(int(repeat)):
    t = time.perf_counter()
    report, _ = analyze_project(project, graph, [flag], [verify])
    out["check"].append(time.perf_counter() - t)
    t = time.perf_counter()
    found, _ = analyze_project(project, graph, [flag])
    out["discovery"].append(time.perf_counter() - t)
out["entries"] = len(found.flags[0].entries)
out["observes"] = report.flags[0].entries[0].observes_set
print(json.dumps(out))
"""


def _run(checkout: Path, tree: Path, cache: Path, repeat: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    args = [sys.executable, "-c", _DRIVER, str(tree), str(cache), FLAG, VERIFY, str(repeat)]
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{checkout}: the timed child failed:\n{done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout before the change")
    parser.add_argument("--after", type=Path, default=Path("."), help="checkout after it")
    parser.add_argument(
        "--tree", type=Path, default=DEFAULT_TREE / "sglang", help="SGLang 0.5.9's sglang/"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per child")
    parser.add_argument("--rounds", type=int, default=2, help="children per checkout, alternating")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flagtrace-bench-guards-") as tmp:
        caches = {"before": Path(tmp) / "before", "after": Path(tmp) / "after"}
        checkouts = {"before": opts.before.resolve(), "after": opts.after.resolve()}
        for name in ("before", "after"):  # fill each cache (untimed)
            _run(checkouts[name], opts.tree, caches[name], 1)
        best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
        facts: dict[str, dict[str, object]] = {}
        for _ in range(opts.rounds):
            for name in ("before", "after"):
                got = _run(checkouts[name], opts.tree, caches[name], opts.repeat)
                for what in ("check", "discovery"):
                    times = got[what]
                    assert isinstance(times, list)
                    best[name][what] = min([*times, best[name].get(what, float("inf"))])
                facts[name] = {"entries": got["entries"], "observes": got["observes"]}
    print(f"{'':<10} {'before s':>9} {'after s':>9} {'ratio':>6}")
    for what in ("check", "discovery"):
        b, a = best["before"][what], best["after"][what]
        print(f"{what:<10} {b:>9.2f} {a:>9.2f} {a / b:>6.3f}")
    print(f"before: {facts['before']}  after: {facts['after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
