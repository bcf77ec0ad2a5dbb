"""Score flagtrace's call graph against PyCG's micro-benchmark, next to PyCG itself.

Why: PyCG (Salis et al., ICSE 2021) ships 118 small programs, each with the call
graph a sound-and-precise analyser should produce (``callgraph.json``).  They are
the nearest thing to a shared yardstick for Python call graphs.  This script runs
flagtrace *and* PyCG on the same cases in the same run, so precision, recall and
wall time are compared under the same (noisy, 2-core) conditions; only ratios
measured in one run are meaningful, never absolute times.

How: from the repository root,

    python benchmarks/pycg_micro.py                 # everything
    python benchmarks/pycg_micro.py --category mro --verbose
    python benchmarks/pycg_micro.py --no-pycg --check   # CI gate: P >= 0.97, R >= 0.95
    python benchmarks/pycg_micro.py --json results.json

On first use it downloads the PyCG 0.0.8 sdist with pip into ``.cache/downloads``
(git-ignored), unpacks it, and installs it into its own venv ``.cache/pycg-venv``.

Scoring: a graph is the set of (caller, callee) edges in the ``{"caller":
["callee", ...]}`` JSON; nodes without edges are ignored.  Precision and recall are
micro-averaged (counts summed over cases); a case is *exact* when the edge sets are
equal.  Cases that fail (crash, nonzero exit, timeout) count as empty graphs and
are listed.  PyCG runs the way its own test harness does: entry point ``main.py``,
``--package`` the case directory.

Timing: flagtrace is called in-process through ``flagtrace.api.callgraph_pycg``
when that exists, and PyCG then runs in-process too (one driver process in its
venv), so "analysing" is the sum of per-case analysis calls.  Otherwise (or with
``--mode cli``) both tools run as one CLI subprocess per case and the times
include interpreter start-up for both.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache"
PYCG_VERSION = "0.0.8"
PYCG_SDIST_NAME = f"pycg-{PYCG_VERSION}"
PYCG_VENV_NAME = "pycg-venv"
CASE_TIMEOUT_S = 300.0
MIN_PRECISION = 0.97
MIN_RECALL = 0.95

Edge = tuple[str, str]
Graph = Mapping[str, Iterable[str]]

# Runs inside PyCG's venv: analyses every case in one process, the way PyCG's own
# micro-benchmark harness (micro-benchmark/base.py) does: entry point main.py only,
# package = the case directory.  PyCG calls importlib.util.find_spec but never
# imports importlib.util; its CLI gets it loaded by accident (pycg.formats imports
# pkg_resources).  Without it every import in a case silently fails to resolve and
# PyCG drops from 105 to 90 exact cases, so the driver imports it explicitly.
PYCG_DRIVER = r"""
import importlib.util
import json, os, sys, time
from pycg import utils
from pycg.pycg import CallGraphGenerator

with open(sys.argv[1]) as f:
    cases = json.load(f)
results = {}
for case in cases:
    cg = None
    start = time.perf_counter()
    try:
        cg = CallGraphGenerator(
            [os.path.join(case, "main.py")], case, -1, utils.constants.CALL_GRAPH_OP
        )
        cg.analyze()
        graph = {node: sorted(callees) for node, callees in cg.output().items()}
        error = None
    except Exception as exc:
        if cg is not None:
            cg.tearDown()
        graph, error = {}, "%s: %s" % (type(exc).__name__, exc)
    results[case] = {"graph": graph, "error": error, "seconds": time.perf_counter() - start}
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
"""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Case:
    category: str
    name: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name}"


@dataclass(slots=True)
class CaseResult:
    edges: frozenset[Edge]
    seconds: float
    error: str | None = None


@dataclass(slots=True)
class Score:
    cases: int = 0
    exact: int = 0
    true_positives: int = 0
    found: int = 0
    expected: int = 0

    def add(self, found: frozenset[Edge], expected: frozenset[Edge]) -> None:
        self.cases += 1
        self.exact += found == expected
        self.true_positives += len(found & expected)
        self.found += len(found)
        self.expected += len(expected)

    @property
    def precision(self) -> float | None:
        return self.true_positives / self.found if self.found else None

    @property
    def recall(self) -> float | None:
        return self.true_positives / self.expected if self.expected else None

    def as_dict(self) -> dict[str, object]:
        return {
            "cases": self.cases,
            "exact": self.exact,
            "true_positives": self.true_positives,
            "found": self.found,
            "expected": self.expected,
            "precision": self.precision,
            "recall": self.recall,
        }


@dataclass(slots=True)
class ToolRun:
    name: str
    mode: str
    results: dict[str, CaseResult] = field(default_factory=dict)
    wall_seconds: float = 0.0
    note: str | None = None

    @property
    def analysis_seconds(self) -> float:
        return sum(r.seconds for r in self.results.values())

    @property
    def errors(self) -> dict[str, str]:
        return {cid: r.error for cid, r in self.results.items() if r.error}


# ------------------------------------------------------------------ benchmark data


def run(cmd: Sequence[str | Path]) -> subprocess.CompletedProcess[str]:
    """Run a setup command, failing loudly with its output."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return proc


def pycg_sdist(cache: Path) -> Path:
    """The PyCG sdist tarball, downloaded with pip when absent."""
    downloads = cache / "downloads"
    tarball = downloads / f"{PYCG_SDIST_NAME}.tar.gz"
    if not tarball.is_file():
        downloads.mkdir(parents=True, exist_ok=True)
        print(f"downloading PyCG {PYCG_VERSION} sdist into {downloads} ...", file=sys.stderr)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        run([*pip, f"pycg=={PYCG_VERSION}", "-d", downloads])
    if not tarball.is_file():
        raise SystemExit(f"pip download did not produce {tarball}")
    return tarball


def snippets_dir(cache: Path) -> Path:
    """``micro-benchmark/snippets`` of the unpacked sdist, unpacking it when absent."""
    root = cache / "downloads" / PYCG_SDIST_NAME
    snippets = root / "micro-benchmark" / "snippets"
    if not snippets.is_dir():
        tarball = pycg_sdist(cache)
        with tarfile.open(tarball) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(root.parent, filter="data")
            else:  # Python < 3.11.4
                tar.extractall(root.parent)  # noqa: S202 - a pinned sdist
    if not snippets.is_dir():
        raise SystemExit(f"{snippets} missing after unpacking the PyCG sdist")
    return snippets


def discover_cases(snippets: Path, category: str | None) -> list[Case]:
    categories = sorted(p for p in snippets.iterdir() if p.is_dir())
    if category is not None:
        categories = [p for p in categories if p.name == category]
        if not categories:
            names = ", ".join(p.name for p in sorted(snippets.iterdir()) if p.is_dir())
            raise SystemExit(f"unknown category {category!r}; choose from: {names}")
    return [
        Case(cat.name, case.name, case)
        for cat in categories
        for case in sorted(cat.iterdir())
        if (case / "callgraph.json").is_file() and (case / "main.py").is_file()
    ]


def edges_of(graph: Graph, strip_prefix: str | None = None) -> frozenset[Edge]:
    """The (caller, callee) pairs of a PyCG-format graph, optionally de-prefixed."""

    def norm(name: str) -> str:
        if strip_prefix and name.startswith(strip_prefix + "."):
            return name[len(strip_prefix) + 1 :]
        return name

    return frozenset(
        (norm(caller), norm(callee)) for caller, callees in graph.items() for callee in callees
    )


def package_prefix(case: Case) -> str | None:
    """What flagtrace prefixes this case's module names with, if anything.

    A case directory with ``__init__.py`` is a package, so flagtrace names its
    modules ``<case>.main`` where PyCG (``--package <case>``) says ``main``.  Only
    strip then: imports/chained_import has no ``__init__.py`` but a *module* named
    ``chained_import``, whose functions must keep their prefix.
    """
    return case.name if (case.path / "__init__.py").is_file() else None


def expected_edges(case: Case) -> frozenset[Edge]:
    with open(case.path / "callgraph.json", encoding="utf-8") as f:
        return edges_of(json.load(f))


# ----------------------------------------------------------------------- flagtrace


def flagtrace_api() -> tuple[Callable[[list[str]], Graph] | None, str | None]:
    """flagtrace.api.callgraph_pycg if importable, else (None, why not)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        api = importlib.import_module("flagtrace.api")
    except Exception as exc:  # the package may be half-written
        return None, f"import flagtrace.api failed: {type(exc).__name__}: {exc}"
    fn = getattr(api, "callgraph_pycg", None)
    if not callable(fn):
        return None, "flagtrace.api has no callgraph_pycg()"
    return fn, None


def flagtrace_case_api(fn: Callable[[list[str]], Graph], case: Case) -> CaseResult:
    start = time.perf_counter()
    try:
        graph = fn([str(case.path)])
        edges = edges_of(graph, strip_prefix=package_prefix(case))
        return CaseResult(edges, time.perf_counter() - start)
    except Exception as exc:  # a crash on one case is a result, not the end
        return CaseResult(frozenset(), time.perf_counter() - start, f"{type(exc).__name__}: {exc}")


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def run_case_process(
    cmd: Sequence[str], out: Path, cwd: Path, strip_prefix: str | None = None
) -> CaseResult:
    """One tool on one case in a subprocess that writes a PyCG-format JSON to ``out``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=CASE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        error = f"timeout after {CASE_TIMEOUT_S:.0f} s"
        return CaseResult(frozenset(), time.perf_counter() - start, error)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        error = f"exit {proc.returncode}: {last_line(proc.stderr or proc.stdout)}"
        return CaseResult(frozenset(), seconds, error)
    try:
        with open(out, encoding="utf-8") as f:
            return CaseResult(edges_of(json.load(f), strip_prefix), seconds)
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return CaseResult(frozenset(), seconds, f"bad output: {type(exc).__name__}: {exc}")


def flagtrace_case_cli(case: Case, tmp: Path) -> CaseResult:
    """``python -m flagtrace callgraph CASE --format pycg -o OUT``, from the repository."""
    out = tmp / f"flagtrace-{case.category}-{case.name}.json"
    cmd = [sys.executable, "-m", "flagtrace", "callgraph", str(case.path)]
    cmd += ["--format", "pycg", "-o", str(out)]
    return run_case_process(cmd, out, cwd=REPO, strip_prefix=package_prefix(case))


def run_flagtrace(cases: Sequence[Case], mode: str, tmp: Path) -> ToolRun:
    fn, why = flagtrace_api() if mode in ("auto", "api") else (None, "--mode cli")
    if mode == "api" and fn is None:
        raise SystemExit(f"--mode api: {why}")
    tool = ToolRun("flagtrace", "api" if fn else "cli", note=None if fn else why)
    start = time.perf_counter()
    for case in cases:
        tool.results[case.id] = (
            flagtrace_case_api(fn, case) if fn else flagtrace_case_cli(case, tmp)
        )
    tool.wall_seconds = time.perf_counter() - start
    return tool


# ---------------------------------------------------------------------------- PyCG


def venv_python(venv: Path) -> Path:
    return venv / "Scripts" / "python.exe" if os.name == "nt" else venv / "bin" / "python"


def venv_imports(python: Path, module: str) -> bool:
    proc = subprocess.run([python, "-I", "-c", f"import {module}"], capture_output=True)
    return proc.returncode == 0


def pycg_venv(cache: Path) -> Path:
    """A venv with PyCG installed from the sdist; returns its python."""
    venv = cache / PYCG_VENV_NAME
    python = venv_python(venv)
    if not (python.exists() and venv_imports(python, "pycg.pycg")):
        tarball = pycg_sdist(cache)
        print(f"creating {venv} with PyCG {PYCG_VERSION} ...", file=sys.stderr)
        run([sys.executable, "-m", "venv", "--clear", venv])
        run([python, "-m", "pip", "install", "--quiet", "--no-deps", tarball])
    if not venv_imports(python, "pkg_resources"):
        # PyCG's CLI imports pkg_resources (pycg/formats/fasten.py) without declaring
        # setuptools; venvs on Python >= 3.12 come without it.
        run([python, "-m", "pip", "install", "--quiet", "setuptools<81"])
    return python


def pycg_case_cli(python: Path, case: Case, tmp: Path) -> CaseResult:
    """``pycg --package CASE CASE/main.py -o OUT``, from the case directory.

    The sdist builds with hatchling and declares no console script, so PyCG's
    ``main()`` is called the way a console script would (``-I``: no cwd, no
    PYTHONPATH on sys.path).
    """
    out = tmp / f"pycg-{case.category}-{case.name}.json"
    cli = "import sys; from pycg.__main__ import main; sys.exit(main())"
    cmd = [str(python), "-I", "-c", cli, "--package", str(case.path), str(case.path / "main.py")]
    cmd += ["-o", str(out)]
    return run_case_process(cmd, out, cwd=case.path)


def pycg_cases_inprocess(python: Path, cases: Sequence[Case], tmp: Path) -> dict[str, CaseResult]:
    """All cases in one PyCG process (like PyCG's own test suite); per-case times."""
    todo, out = tmp / "pycg-cases.json", tmp / "pycg-results.json"
    todo.write_text(json.dumps([str(c.path) for c in cases]), encoding="utf-8")
    # -I: keep the cwd and PYTHONPATH (e.g. this repo) off PyCG's import path.
    proc = subprocess.run(
        [python, "-I", "-c", PYCG_DRIVER, todo, out], capture_output=True, text=True, cwd=tmp
    )
    if proc.returncode != 0 or not out.is_file():
        error = f"PyCG driver exit {proc.returncode}: {last_line(proc.stderr)}"
        return {c.id: CaseResult(frozenset(), 0.0, error) for c in cases}
    raw = json.loads(out.read_text(encoding="utf-8"))
    results = {}
    for case in cases:
        r = raw[str(case.path)]
        results[case.id] = CaseResult(edges_of(r["graph"]), r["seconds"], r["error"])
    return results


def run_pycg(cases: Sequence[Case], mode: str, cache: Path, tmp: Path) -> ToolRun:
    python = pycg_venv(cache)
    tool = ToolRun("PyCG", mode)
    start = time.perf_counter()
    if mode == "api":
        tool.results = pycg_cases_inprocess(python, cases, tmp)
    else:
        tool.results = {c.id: pycg_case_cli(python, c, tmp) for c in cases}
    tool.wall_seconds = time.perf_counter() - start
    return tool


# ------------------------------------------------------------------------- scoring


def score(
    tool: ToolRun, cases: Sequence[Case], expected: Mapping[str, frozenset[Edge]]
) -> dict[str, Score]:
    """Per-category scores plus ``"overall"``."""
    scores: dict[str, Score] = {}
    for case in cases:
        found = tool.results[case.id].edges
        for key in (case.category, "overall"):
            scores.setdefault(key, Score()).add(found, expected[case.id])
    return scores


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table_rows(
    categories: Sequence[str], ft: Mapping[str, Score], pg: Mapping[str, Score] | None
) -> list[list[str]]:
    rows = []
    for cat in [*categories, "overall"]:
        f = ft[cat]
        row = [
            cat,
            str(f.cases),
            fmt_ratio(f.precision),
            fmt_ratio(f.recall),
            f"{f.exact}/{f.cases}",
        ]
        if pg is not None:
            p = pg[cat]
            row += [fmt_ratio(p.precision), fmt_ratio(p.recall), f"{p.exact}/{p.cases}"]
        rows.append(row)
    return rows


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )

        print(line(header))
        print("  ".join("-" * w for w in widths))
        for row in rows[:-1]:
            print(line(row))
        print("  ".join("-" * w for w in widths))
        print(line(rows[-1]))
        return
    table = Table(title="PyCG micro-benchmark (edge sets, micro-averaged)")
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
    for i, row in enumerate(rows):
        table.add_row(
            *row, end_section=i == len(rows) - 2, style="bold" if i == len(rows) - 1 else None
        )
    # Not a terminal (CI logs, pipes): rich would assume 80 columns and squeeze.
    Console(width=None if sys.stdout.isatty() else 120).print(table)


def print_timing(ft: ToolRun, pg: ToolRun | None) -> None:
    print()
    for tool in (ft, pg):
        if tool is not None:
            print(
                f"{tool.name:<9} ({tool.mode}): {tool.analysis_seconds:6.2f} s analysing, "
                f"{tool.wall_seconds:6.2f} s wall"
            )
    ratio = time_ratio(ft, pg)
    if ratio is not None:
        print(f"flagtrace / PyCG time: {ratio:.2f}x (same run; only the ratio means anything)")
    elif pg is not None:
        print("flagtrace / PyCG time: - (a tool failed on every case)")


def time_ratio(ft: ToolRun, pg: ToolRun | None) -> float | None:
    """flagtrace's analysis time over PyCG's, unless either failed everywhere."""
    if pg is None or pg.analysis_seconds <= 0:
        return None
    if len(ft.errors) == len(ft.results) or len(pg.errors) == len(pg.results):
        return None
    return ft.analysis_seconds / pg.analysis_seconds


def print_errors(tool: ToolRun, verbose: bool) -> None:
    """Failed cases, grouped by message (a missing CLI fails all 118 the same way)."""
    if tool.note:
        print(f"{tool.name}: {tool.note}; used the CLI")
    errors = tool.errors
    if not errors:
        return
    print(f"{tool.name}: {len(errors)} case(s) failed and count as empty graphs:")
    by_message: dict[str, list[str]] = {}
    for cid, err in sorted(errors.items()):
        by_message.setdefault(err, []).append(cid)
    for err, cids in by_message.items():
        shown = cids if verbose or len(cids) <= 3 else [*cids[:3], f"... {len(cids) - 3} more"]
        print(f"  {err}\n    in {', '.join(shown)}")


def print_case_diffs(
    tool: ToolRun, cases: Sequence[Case], expected: Mapping[str, frozenset[Edge]]
) -> None:
    print(f"\n{tool.name}: per-case differences")
    for case in cases:
        found, want = tool.results[case.id].edges, expected[case.id]
        if found == want:
            continue
        print(f"  {case.id}")
        for caller, callee in sorted(want - found):
            print(f"    - {caller} -> {callee}")
        for caller, callee in sorted(found - want):
            print(f"    + {caller} -> {callee}")


def tool_json(
    tool: ToolRun, scores: Mapping[str, Score], expected: Mapping[str, frozenset[Edge]]
) -> dict[str, object]:
    return {
        "mode": tool.mode,
        "note": tool.note,
        "analysis_seconds": tool.analysis_seconds,
        "wall_seconds": tool.wall_seconds,
        "scores": {k: s.as_dict() for k, s in scores.items()},
        "cases": {
            cid: {
                "exact": r.edges == expected[cid],
                "seconds": r.seconds,
                "error": r.error,
                "missing": sorted(expected[cid] - r.edges),
                "extra": sorted(r.edges - expected[cid]),
            }
            for cid, r in tool.results.items()
        },
    }


def check(scores: Mapping[str, Score]) -> bool:
    overall = scores["overall"]
    ok = (overall.precision or 0.0) >= MIN_PRECISION and (overall.recall or 0.0) >= MIN_RECALL
    verdict = "PASS" if ok else "FAIL"
    print(
        f"\ncheck {verdict}: flagtrace precision {fmt_ratio(overall.precision)} "
        f"(>= {MIN_PRECISION}), recall {fmt_ratio(overall.recall)} (>= {MIN_RECALL})"
    )
    return ok


# ---------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--category", help="run one category (e.g. mro)")
    parser.add_argument(
        "--verbose", action="store_true", help="print flagtrace's missing/extra edges per case"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON")
    parser.add_argument("--no-pycg", action="store_true", help="do not run PyCG")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit 1 unless flagtrace's precision >= {MIN_PRECISION} and recall >= {MIN_RECALL}",
    )
    parser.add_argument(
        "--mode",
        choices=("auto", "api", "cli"),
        default="auto",
        help="api: both tools in-process; cli: a subprocess per case; "
        "auto (default): api if flagtrace.api.callgraph_pycg exists",
    )
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help="download/venv directory (default: .cache)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cases = discover_cases(snippets_dir(args.cache), args.category)
    categories = sorted({c.category for c in cases})
    expected = {c.id: expected_edges(c) for c in cases}

    with tempfile.TemporaryDirectory(prefix="pycg-micro-") as tmp_name:
        tmp = Path(tmp_name)
        ft = run_flagtrace(cases, args.mode, tmp)
        pg = None if args.no_pycg else run_pycg(cases, ft.mode, args.cache, tmp)

    ft_scores = score(ft, cases, expected)
    pg_scores = score(pg, cases, expected) if pg else None
    header = ["category", "cases", "ft P", "ft R", "ft exact"]
    if pg_scores is not None:
        header += ["PyCG P", "PyCG R", "PyCG exact"]
    print_table(header, table_rows(categories, ft_scores, pg_scores))
    print_timing(ft, pg)
    for tool in (ft, pg):
        if tool is not None:
            print_errors(tool, args.verbose)
    if args.verbose:
        print_case_diffs(ft, cases, expected)

    if args.json:
        report: dict[str, object] = {
            "benchmark": f"pycg-{PYCG_VERSION} micro-benchmark",
            "category": args.category,
            "flagtrace": tool_json(ft, ft_scores, expected),
        }
        if pg and pg_scores:
            report["pycg"] = tool_json(pg, pg_scores, expected)
            report["time_ratio_flagtrace_over_pycg"] = time_ratio(ft, pg)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    if args.check and not check(ft_scores):
        return 1
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
