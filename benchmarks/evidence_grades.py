"""The cost of grading typed edges as typed or inferred, and what the grades say on SGLang.

Why: issue 15 splits resolution's ``typed`` layer in two: a typed edge rests on a
declaration, an ``inferred`` one on value flow only (``flagtrace.resolve.declared``).
The split is a second, declaration-only evaluation of every typed site's callee, made
once after the last round. This script measures, in one process and one run, the
rounds and that refinement (their ratio is what matters on a shared machine), counts
the edges of each grade, and the evidence of the entries discovery reports for the
seed flag ``_in_piecewise_cuda_graph``::

    python benchmarks/evidence_grades.py [--repeat N] [--json OUT]

SGLang 0.5.9 comes from the registry cache (``tests.registry``); nothing is imported
from it.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from flagtrace.api import analyze_project, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.memory import gc_paused
from flagtrace.resolve import Program, Resolver
from flagtrace.resolve.resolved import resolve_program

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.registry import REPO, Registry  # noqa: E402

FLAG = "_in_piecewise_cuda_graph"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write every entry's evidence and witness")
    args = parser.parse_args()
    root = Registry(REPO / ".cache").download("sglang==0.5.9") / "sglang"
    project = load_project([str(root)])
    graph: CallGraph | None = None
    for _ in range(args.repeat):
        with gc_paused():
            start = time.perf_counter()
            resolver = Resolver(Program(project.summaries))
            resolver.run()
            rounds = time.perf_counter() - start
            start = time.perf_counter()
            resolved = resolve_program(resolver)  # the typed/inferred refinement
            refine = time.perf_counter() - start
            graph = CallGraph.build(resolved)
        print(
            f"rounds {rounds:.2f} s, refinement {refine:.2f} s "
            f"({100 * refine / rounds:.1f}% of the rounds)"
        )
    assert graph is not None
    print("call sites by resolution:", dict(graph.stats().by_resolution))
    report, _ = analyze_project(project, graph, [FLAG])
    entries = report.flags[0].entries
    counts = collections.Counter(e.evidence.value for e in entries)
    print(f"{len(entries)} discovered entries observe {FLAG} set:", dict(counts))
    if args.json:
        rows = [
            {
                "entry": e.entry,
                "evidence": e.evidence.value,
                "witness": [
                    [s.step.value, s.function, s.callee, s.resolution and s.resolution.value]
                    for s in e.witness
                ],
            }
            for e in entries
        ]
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
