"""Real-world sweep: flagtrace on whole packages, every flag-like global, no crash allowed.

Why: issue 5 asks flagtrace to be trustworthy on *any* codebase.  Small fixtures
cannot show that; large real packages can.  This script runs flagtrace on SGLang
0.5.9 and 0.5.23, transformers, vLLM and the running Python's standard library,
and records, per package, what it cost and what it found, and above all every
internal error, unhandled exception, timeout or crash (those are flagtrace bugs).
The sweep itself never stops on one: anything unexpected is recorded and it goes
on with the next flag or package.

How, from the repository root::

    python benchmarks/sweep.py                                   # all five packages
    python benchmarks/sweep.py --packages stdlib sglang==0.5.9 --max-flags 20
    python benchmarks/sweep.py --packages transformers --json out.json --verbose

Packages: ``stdlib`` is ``sysconfig.get_paths()["stdlib"]`` of this interpreter,
without ``site-packages``/``dist-packages`` (installed third-party code) but *with*
its test directories, on purpose: ``test/`` and ``lib2to3/tests/data`` hold files
with bad encodings, Python 2 syntax and deliberate syntax errors, which flagtrace
must report as one-line errors and survive (``--stdlib-no-tests`` leaves them
out).  Anything else is a registry spec (``sglang==0.5.9``, ``transformers``),
downloaded once with pip into ``.cache/`` (``tests.registry``) and analysed from
its unpacked wheel: the top-level package directories (``*.dist-info`` and
``*.data`` left out).  vLLM's wheel has compiled parts; flagtrace only reads
``.py`` files, so the unpacked wheel is analysed as is.

Per package, each step in its own child process, with ``--timeout`` (default 30
minutes) per child:

0. reference B, as in ``bench_sglang.py``: ``ast.parse`` of every file flagtrace
   reads in the package, in one process;
1. the call graph: ``flagtrace callgraph PATHS --format json -o FILE --cache-dir EMPTY``
   (the CLI as a user runs it, cold: the cache directory starts empty; it fills it
   so that step 2 does not parse every file a second time);
2. the flags, through ``flagtrace.api`` in one child: ``load_project`` (index),
   (from step 1's summaries), ``build_callgraph`` (resolve), then the flag candidates,
   every module-level name assigned in a module's body that a function of the same
   module declares ``global`` (so it is written from inside a function), sorted by
   qualified name;
   the first ``--max-flags`` (default 200) are analysed, each with
   ``analyze_project(project, graph, [flag], [])``: entry-point
   discovery, so the entries counted are the discovered ones that observe the
   flag set.  Every flag is asked of the resolved graph, as the CLI asks it (not
   of the pruned graph the flag before returned: its discovery finds more
   entries); the first flag's time includes what later flags reuse from it (the
   pruning and the discovered entries, ``flagtrace.pergraph``).  An exception on
   one flag is recorded with its traceback and the child goes on.  Files that
   flagtrace reports as an internal error are re-indexed alone with
   ``FLAGTRACE_DEBUG=1`` to capture the traceback.

The child reports progress as JSON lines, so a timeout or a crash still leaves
everything done before it, and the flag it was working on.  ``--json`` is
rewritten after every package, and each package's problems go to stderr as soon
as it is done, so a sweep that is itself cut short loses only the package at hand.

Reported per package: files, lines, parse errors (``project.diagnostics``), flags
found/analysed, time to index, resolve and analyse the flags, peak RSS (the
largest single process, ``ru_maxrss`` from ``os.wait4``, and the sampled sum over
the process tree), findings (entries observing a flag set, hazards by kind), and
problems.  Machines are noisy (2 cores) and their speed drifts between days: a
time is compared between sweeps as a multiple of that sweep's reference B (the
slowest flag is printed both ways), not in seconds.  Exit status: 1 if any
flagtrace problem was recorded (an internal error, an exception, a timeout, a
crash), else 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO, REPO / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_sglang import (  # noqa: E402
    PARSE_DRIVER,
    ChildRun,
    child_env,
    error_lines,
    flagtrace_cmd,
    fmt_bytes,
    print_table,
    run_child,
    summary_line,
)

from tests.registry import download  # noqa: E402

DEFAULT_PACKAGES = ("sglang==0.5.9", "sglang==0.5.23", "transformers", "vllm", "stdlib")
STDLIB = "stdlib"
INSTALL_EXCLUDES = ("site-packages", "dist-packages")
STDLIB_TEST_EXCLUDES = ("test", "tests", "idle_test")
HAZARD_KINDS = ("exception-leak", "non-reentrant", "sticky", "thread-unsafe")
HAZARD_HEADERS = ("FT101", "FT102", "FT103", "FT104")
INTERNAL_ERROR = "internal error"

# Runs in the child: python -c HELPER CONFIG.json EVENTS.jsonl.  Every step appends
# one JSON line to EVENTS (flushed), so the parent sees how far a child got even
# if it is killed.  Uses only flagtrace.api (and, for the entry-point count,
# flagtrace.verdicts.discover_entries when it exists).
HELPER = r"""
import json, os, sys, time, traceback
from collections import Counter

config = json.load(open(sys.argv[1], encoding="utf-8"))
events = open(sys.argv[2], "a", encoding="utf-8")

def emit(**event):
    events.write(json.dumps(event) + "\n")
    events.flush()

def crash(stage, exc):
    emit(event="crash", stage=stage, error="%s: %s" % (type(exc).__name__, exc),
         traceback=traceback.format_exc())

try:
    from flagtrace.api import analyze_project, build_callgraph, load_project
    from flagtrace.model import ScopeKind
except BaseException as exc:
    crash("import", exc)
    sys.exit(0)

paths, exclude, jobs = config["paths"], config["exclude"], config["jobs"]
start = time.perf_counter()
try:
    from flagtrace.cache import SummaryCache
    project = load_project(paths, exclude=exclude, jobs=jobs, cache=SummaryCache(config["cache"]))
except BaseException as exc:
    crash("index", exc)
    sys.exit(0)
diagnostics = [str(d) for d in project.diagnostics]
emit(event="indexed", seconds=time.perf_counter() - start, files=len(project.files),
     modules=len(project.summaries), lines=project.lines, diagnostics=len(diagnostics),
     diagnostic_samples=diagnostics[:20],
     internal_errors=[d for d in diagnostics if "internal error" in d])

# Files flagtrace could not index because of a bug of its own: index each alone
# again with FLAGTRACE_DEBUG=1, which makes the indexer raise, for the traceback.
internal = [d for d in project.diagnostics if "internal error" in d.message]
if internal:
    os.environ["FLAGTRACE_DEBUG"] = "1"
    for d in internal[: config["max_tracebacks"]]:
        try:
            load_project([d.path], jobs=1)
            emit(event="file_bug", path=d.path, message=d.message, traceback=None)
        except BaseException as exc:
            emit(event="file_bug", path=d.path, message=d.message, traceback=traceback.format_exc())
    del os.environ["FLAGTRACE_DEBUG"]

start = time.perf_counter()
try:
    graph = build_callgraph(project)
except BaseException as exc:
    crash("resolve", exc)
    sys.exit(0)
stats = {}
try:
    s = graph.stats()
    stats = {"nodes": s.nodes, "edges": s.edges, "unresolved": s.unresolved}
except BaseException as exc:
    stats = {"error": "%s: %s" % (type(exc).__name__, exc)}
emit(event="resolved", seconds=time.perf_counter() - start, **stats)

entry_points = None
try:
    from flagtrace.verdicts import discover_entries
    entry_points = len(discover_entries(graph))
except BaseException:
    pass

candidates = set()
for summary in project.summaries:
    assigned = {a.target.name for a in summary.module_scope.assignments
                if a.target.name is not None and a.target.base is None}
    declared = set()
    for scope in summary.scopes:
        if scope.kind is ScopeKind.FUNCTION:
            declared.update(scope.globals_declared)
    candidates.update("%s.%s" % (summary.module, name) for name in assigned & declared)
chosen = sorted(candidates)[: config["max_flags"]]
emit(event="candidates", total=len(candidates), chosen=len(chosen), entry_points=entry_points)

base_errors = len(project.diagnostics)
flags_start = time.perf_counter()
for qualname in chosen:
    emit(event="flag_start", flag=qualname)
    start = time.perf_counter()
    try:
        report, _ = analyze_project(project, graph, [qualname], [])
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        emit(event="flag", flag=qualname, seconds=time.perf_counter() - start,
             exception="%s: %s" % (type(exc).__name__, exc), traceback=traceback.format_exc())
        continue
    seconds = time.perf_counter() - start
    hazards = Counter(h.kind for f in report.flags for h in f.hazards)
    entries = [e for f in report.flags for e in f.entries]
    emit(event="flag", flag=qualname, seconds=seconds, exception=None,
         analysed=len(report.flags),
         errors=[str(d) for d in report.errors[base_errors:]],
         setters=sum(len(f.setters) for f in report.flags),
         readers=sum(len(f.readers) for f in report.flags),
         entries=len(entries),
         observes_set=sum(1 for e in entries if e.observes_set),
         by_name=sum(1 for e in entries if e.observes_set and e.evidence == "by-name"),
         observing_samples=[e.entry for e in entries if e.observes_set][:3],
         hazards=dict(hazards))
emit(event="done", seconds=time.perf_counter() - flags_start)
"""


# ------------------------------------------------------------------------ data


@dataclass(slots=True)
class Problem:
    """Something flagtrace should not have done: these are bugs to report."""

    package: str
    stage: str  # callgraph | index | resolve | flag | file | ...
    what: str  # one line
    flag: str | None = None
    traceback: str | None = None


@dataclass(slots=True)
class StepRun:
    """One child process: cost and how it ended."""

    seconds: float | None = None
    maxrss: int | None = None
    tree_rss: int | None = None
    returncode: int | None = None
    timed_out: bool = False
    summary: str | None = None
    stderr_tail: str = ""

    @classmethod
    def of(cls, run: ChildRun) -> StepRun:
        # the end of stderr without flagtrace's one-line input errors (listed elsewhere)
        lines = [
            ln for ln in run.stderr.strip().splitlines() if not ln.startswith("flagtrace: error:")
        ]
        tail = "\n".join(lines[-15:])
        return cls(
            run.seconds,
            run.maxrss,
            run.tree_rss,
            run.returncode,
            run.timed_out,
            summary_line(run.stderr),
            tail,
        )


@dataclass(slots=True)
class PackageResult:
    spec: str
    version: str | None = None
    paths: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    skipped: str | None = None  # could not even start (download failed)
    callgraph: StepRun | None = None
    callgraph_stats: dict[str, Any] = field(default_factory=dict)
    callgraph_errors: int = 0
    flags_step: StepRun | None = None
    files: int | None = None
    modules: int | None = None
    lines: int | None = None
    parse_errors: int | None = None
    parse_error_samples: list[str] = field(default_factory=list)
    index_seconds: float | None = None
    resolve_seconds: float | None = None
    graph: dict[str, Any] = field(default_factory=dict)
    entry_points: int | None = None
    flags_total: int | None = None
    flags_chosen: int | None = None
    flags_done: int = 0
    flags_seconds: float | None = None  # sum over the analysed flags
    slowest_flag: tuple[str, float] | None = None
    #: reference B, measured in the same sweep: ``ast.parse`` of every file flagtrace
    #: reads, one process (``run_reference``); the times above are read against it
    reference_seconds: float | None = None
    flags_with_observers: int = 0
    observing_entries: int = 0
    observing_by_name: int = 0
    hazards: dict[str, int] = field(default_factory=dict)
    lookup_errors: list[str] = field(default_factory=list)  # flags analyze_project refused
    finished: bool = False
    problems: list[Problem] = field(default_factory=list)
    flag_results: list[dict[str, Any]] = field(default_factory=list)


# ------------------------------------------------------------------- packages


def locate(spec: str, no_tests: bool) -> tuple[str | None, list[Path], list[str]]:
    """(version, paths to analyse, exclude globs) for a package spec."""
    if spec == STDLIB:
        exclude = list(INSTALL_EXCLUDES) + (list(STDLIB_TEST_EXCLUDES) if no_tests else [])
        return sys.version.split()[0], [Path(sysconfig.get_paths()["stdlib"])], exclude
    root = download(spec)
    version = None
    paths: list[Path] = []
    for child in sorted(root.iterdir()):
        if child.name.endswith(".dist-info"):
            version = child.name[: -len(".dist-info")].rpartition("-")[2]
        elif child.is_dir() and not child.name.endswith(".data"):
            if any(child.rglob("*.py")):
                paths.append(child)
        elif child.is_file() and child.suffix == ".py":
            paths.append(child)
    if version is None and "==" in spec:
        version = spec.partition("==")[2]
    return version, paths, []


# ----------------------------------------------------------------------- steps


def run_callgraph(result: PackageResult, tmp: Path, args: argparse.Namespace) -> None:
    out = tmp / "callgraph.json"
    cmd = flagtrace_cmd(
        "callgraph", *result.paths, "--format", "json", "-o", out, "--cache-dir", tmp / "cache"
    )
    for glob in result.exclude:
        cmd += ["--exclude", glob]
    if args.jobs is not None:
        cmd += ["--jobs", str(args.jobs)]
    run = run_child(cmd, cwd=tmp, env=child_env(), timeout=args.timeout)
    step = result.callgraph = StepRun.of(run)
    result.callgraph_errors = len(error_lines(run.stderr))
    for line in error_lines(run.stderr):
        if INTERNAL_ERROR in line:
            result.problems.append(Problem(result.spec, "callgraph", line))
    if run.timed_out:
        result.problems.append(
            Problem(result.spec, "callgraph", f"timeout after {args.timeout:.0f} s")
        )
        return
    # 0 clean, 2 some input errors (the graph is still written); 3 internal error
    if step.returncode not in (0, 2) or not out.is_file():
        what = f"exit {step.returncode}: {internal_error(step.stderr_tail) or '(no output)'}"
        # only the failure itself: the input errors are counted, and the flags
        # step, which runs the same stages in-process, records the traceback
        result.problems.append(Problem(result.spec, "callgraph", what))
        return
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
        result.callgraph_stats = dict(data.get("stats", {}))
    except (OSError, ValueError) as exc:
        result.problems.append(Problem(result.spec, "callgraph", f"unreadable JSON output: {exc}"))


def run_reference(result: PackageResult, tmp: Path, args: argparse.Namespace) -> None:
    """Reference B (as ``bench_sglang.py``'s): ``ast.parse`` of every file flagtrace
    reads in the package, in one child process. This machine's speed drifts by tens
    of percent between days (one commit's resolution of transformers: 83 s in the
    sweep of 2026-12-05, 114-124 s alone on 2026-12-07), so a time is compared
    across sweeps as a multiple of B."""
    from flagtrace.discover import discover

    files = discover(result.paths, result.exclude).files
    listing = tmp / "reference-files.txt"
    listing.write_text("\n".join(str(f.path) for f in files) + "\n", encoding="utf-8")
    out = tmp / "reference.json"
    argv = [sys.executable, "-c", PARSE_DRIVER, "ast", listing, out, "1"]
    run = run_child(argv, cwd=tmp, timeout=args.timeout)
    if run.returncode != 0 or not out.is_file():
        what = f"reference parse: exit {run.returncode}: {internal_error(run.stderr) or ''}"
        result.problems.append(Problem(result.spec, "sweep:reference", what.rstrip(": ")))
        return
    result.reference_seconds = float(json.loads(out.read_text(encoding="utf-8"))["seconds"])


def times_b(seconds: float | None, reference: float | None) -> str:
    """``seconds`` as a multiple of reference B ("-" without both)."""
    if seconds is None or not reference:
        return "-"
    return f"{seconds / reference:.1f} x B"


def internal_error(stderr: str) -> str | None:
    """``IndexError: ...`` from flagtrace's ``internal error`` line, else the last line."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.startswith("flagtrace: internal error:"):
            text = line[len("flagtrace: internal error:") :].strip()
            return text.split(" (set FLAGTRACE_DEBUG=1")[0]
    return lines[-1] if lines else None


def read_events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    if not path.is_file():
        return events
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            events.append(json.loads(line))  # a line cut short by a kill is skipped
    return events


def run_flags(result: PackageResult, tmp: Path, args: argparse.Namespace) -> None:
    config = tmp / "helper.json"
    events_path = tmp / "events.jsonl"
    config.write_text(
        json.dumps(
            {
                "paths": result.paths,
                "exclude": result.exclude,
                "jobs": args.jobs,
                "max_flags": args.max_flags,
                "max_tracebacks": 10,
                "cache": str(tmp / "cache"),
            }
        ),
        encoding="utf-8",
    )
    run = run_child(
        [sys.executable, "-c", HELPER, config, events_path],
        cwd=tmp,
        env=child_env(),
        timeout=args.timeout,
    )
    result.flags_step = StepRun.of(run)
    events = read_events(events_path)
    collect(result, events)
    current = None
    for event in events:
        if event["event"] == "flag_start":
            current = event["flag"]
        elif event["event"] == "flag":
            current = None
    if run.timed_out:
        where = f" while analysing {current}" if current else ""
        what = f"timeout after {args.timeout:.0f} s{where}"
        result.problems.append(Problem(result.spec, "flags", what, flag=current))
    elif run.returncode != 0:
        where = f" while analysing {current}" if current else ""
        what = f"child exit {run.returncode}{where}"
        result.problems.append(
            Problem(
                result.spec, "flags", what, flag=current, traceback=result.flags_step.stderr_tail
            )
        )
    elif not result.finished and not any(
        p.stage in ("import", "index", "resolve") for p in result.problems
    ):
        result.problems.append(Problem(result.spec, "flags", "child ended before finishing"))


def collect(result: PackageResult, events: Sequence[dict[str, Any]]) -> None:
    """Fold the helper's events into ``result``."""
    hazards: Counter[str] = Counter()
    seconds = 0.0
    for e in events:
        kind = e.get("event")
        if kind == "indexed":
            result.index_seconds = e["seconds"]
            result.files, result.modules, result.lines = e["files"], e["modules"], e["lines"]
            result.parse_errors = e["diagnostics"]
            result.parse_error_samples = e["diagnostic_samples"]
        elif kind == "file_bug":
            result.problems.append(
                Problem(
                    result.spec, "index", f"{e['path']}: {e['message']}", traceback=e["traceback"]
                )
            )
        elif kind == "resolved":
            result.resolve_seconds = e.pop("seconds")
            result.graph = {k: v for k, v in e.items() if k != "event"}
        elif kind == "candidates":
            result.flags_total, result.flags_chosen = e["total"], e["chosen"]
            result.entry_points = e.get("entry_points")
        elif kind == "flag":
            result.flags_done += 1
            seconds += e["seconds"]
            if result.slowest_flag is None or e["seconds"] > result.slowest_flag[1]:
                result.slowest_flag = (e["flag"], e["seconds"])
            result.flag_results.append({k: v for k, v in e.items() if k != "event"})
            if e.get("exception"):
                result.problems.append(
                    Problem(
                        result.spec,
                        "flag",
                        e["exception"],
                        flag=e["flag"],
                        traceback=e["traceback"],
                    )
                )
                continue
            result.lookup_errors += [f"{e['flag']}: {msg}" for msg in e.get("errors", ())]
            if e.get("observes_set"):
                result.flags_with_observers += 1
            result.observing_entries += e.get("observes_set", 0)
            result.observing_by_name += e.get("by_name", 0)
            hazards.update(e.get("hazards", {}))
        elif kind == "crash":
            result.problems.append(
                Problem(result.spec, e["stage"], e["error"], traceback=e["traceback"])
            )
        elif kind == "done":
            result.finished = True
    result.flags_seconds = seconds if result.flags_done else None
    result.hazards = dict(sorted(hazards.items()))
    # per-file internal errors also show up as diagnostics; keep them visible
    # even when no traceback event came (a kill during the re-index)
    if not any(p.stage == "index" for p in result.problems):
        for e in events:
            if e.get("event") == "indexed":
                for d in e.get("internal_errors", ()):
                    result.problems.append(Problem(result.spec, "index", d))


def sweep_package(spec: str, args: argparse.Namespace) -> PackageResult:
    result = PackageResult(spec)
    print(f"== {spec}", file=sys.stderr, flush=True)
    try:
        version, paths, exclude = locate(spec, args.stdlib_no_tests)
    except Exception as exc:  # no network, no such release: not flagtrace's fault
        result.skipped = f"{type(exc).__name__}: {exc}"
        print(f"   skipped: {result.skipped}", file=sys.stderr)
        return result
    result.version, result.paths, result.exclude = version, [str(p) for p in paths], exclude
    if not paths:
        result.skipped = "no Python package directories in the download"
        return result
    with tempfile.TemporaryDirectory(prefix="flagtrace-sweep-") as tmp_name:
        tmp = Path(tmp_name)
        steps = (("reference", run_reference), ("callgraph", run_callgraph), ("flags", run_flags))
        for name, step in steps:
            print(f"   {name} ...", file=sys.stderr, flush=True)
            try:
                step(result, tmp, args)
            except Exception as exc:  # a bug in this script must not end the sweep either
                import traceback

                result.problems.append(
                    Problem(
                        spec,
                        f"sweep:{name}",
                        f"{type(exc).__name__}: {exc}",
                        traceback=traceback.format_exc(),
                    )
                )
    print(f"   {len(result.problems)} problem(s)", file=sys.stderr, flush=True)
    for problem in result.problems:
        where = f" ({problem.flag})" if problem.flag else ""
        print(f"   - {problem.stage}{where}: {problem.what}", file=sys.stderr, flush=True)
    return result


# ------------------------------------------------------------------- reporting


def fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def fmt_n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def cost_rows(results: Sequence[PackageResult]) -> list[list[str]]:
    rows = []
    for r in results:
        name = r.spec if r.version is None or r.version in r.spec else f"{r.spec} {r.version}"
        if r.skipped:
            rows.append([name, "skipped", *["-"] * 11])
            continue
        cg, fl = r.callgraph, r.flags_step
        rows.append(
            [
                name,
                fmt_n(r.files),
                fmt_n(r.lines),
                fmt_n(r.parse_errors),
                fmt_s(r.reference_seconds),
                fmt_s(cg.seconds if cg else None),
                fmt_bytes(cg.maxrss if cg else None),
                fmt_s(r.index_seconds),
                fmt_s(r.resolve_seconds),
                f"{fmt_n(r.flags_done)}/{fmt_n(r.flags_total)}",
                fmt_s(r.flags_seconds),
                fmt_bytes(fl.maxrss if fl else None),
                fmt_bytes(fl.tree_rss if fl else None),
            ]
        )
    return rows


def finding_rows(results: Sequence[PackageResult]) -> list[list[str]]:
    rows = []
    for r in results:
        if r.skipped:
            continue
        edges = r.graph.get("edges", r.callgraph_stats.get("edges"))
        rows.append(
            [
                r.spec,
                fmt_n(edges),
                fmt_n(r.entry_points),
                f"{r.flags_with_observers}/{r.flags_done}",
                f"{r.observing_entries} ({r.observing_by_name})",
                *[str(r.hazards.get(kind, 0)) for kind in HAZARD_KINDS],
                str(len(r.lookup_errors)),
                str(len(r.problems)),
            ]
        )
    return rows


def print_problems(results: Sequence[PackageResult], verbose: bool) -> None:
    problems = [p for r in results for p in r.problems]
    if not problems:
        print("\nno flagtrace problems: no internal error, exception, timeout or crash")
        return
    print(f"\n{len(problems)} flagtrace problem(s) (bugs to report):")
    # group identical failures (one bug often hits many flags)
    groups: dict[tuple[str, str], list[Problem]] = {}
    for p in problems:
        # the same innermost frames and exception line: the same bug
        tail = "\n".join((p.traceback or "").strip().splitlines()[-3:]) if p.traceback else p.what
        groups.setdefault((p.stage, tail), []).append(p)
    for (stage, _), group in groups.items():
        first = group[0]
        flags = [p.flag for p in group if p.flag]
        packages = sorted({p.package for p in group})
        times = f" (x{len(group)})" if len(group) > 1 else ""
        print(f"- [{', '.join(packages)}] {stage}: {first.what}{times}")
        if flags:
            shown = (
                flags if verbose or len(flags) <= 3 else [*flags[:3], f"... {len(flags) - 3} more"]
            )
            print(f"    flag(s): {', '.join(shown)}")
        if first.traceback:
            lines = first.traceback.rstrip().splitlines()
            if not verbose and len(lines) > 12:
                lines = ["...", *lines[-12:]]
            for line in lines:
                print(f"    | {line}")


def print_notes(results: Sequence[PackageResult], verbose: bool) -> None:
    for r in results:
        if r.skipped:
            print(f"{r.spec}: skipped: {r.skipped}")
            continue
        bits = [f"paths {', '.join(r.paths)}"]
        if r.exclude:
            bits.append(f"excluded {', '.join(r.exclude)}")
        if r.slowest_flag:
            flag, seconds = r.slowest_flag
            bits.append(
                f"slowest flag {flag} ({seconds:.1f} s, {times_b(seconds, r.reference_seconds)})"
            )
        print(f"{r.spec}: " + "; ".join(bits))
        for step in (r.callgraph, r.flags_step):
            if step and step.summary:
                print(f"    {step.summary}")
        if r.parse_error_samples:
            n = len(r.parse_error_samples) if verbose else min(3, len(r.parse_error_samples))
            for d in r.parse_error_samples[:n]:
                print(f"    parse error: {d}")
            if (r.parse_errors or 0) > n:
                print(f"    ... {(r.parse_errors or 0) - n} more parse errors")
        if r.lookup_errors:
            n = len(r.lookup_errors) if verbose else min(3, len(r.lookup_errors))
            print(f"    {len(r.lookup_errors)} candidate(s) analyze_project refused, e.g.:")
            for msg in r.lookup_errors[:n]:
                print(f"      {msg}")


def report(results: Sequence[PackageResult], args: argparse.Namespace) -> None:
    print_table(
        f"Sweep: cost (at most {args.max_flags} flags per package)",
        [
            "package",
            "files",
            "lines",
            "errors",
            "B s",
            "cg s",
            "cg mem",
            "index s",
            "resolve s",
            "flags",
            "flags s",
            "mem",
            "tree mem",
        ],
        cost_rows(results),
    )
    print_table(
        "Sweep: findings",
        [
            "package",
            "edges",
            "entries",
            "flags set",
            "observing",
            *HAZARD_HEADERS,
            "refused",
            "bugs",
        ],
        finding_rows(results),
    )
    print("errors: files flagtrace reported as bad input; B s: reference B, `ast.parse` of")
    print("every file in one process, this sweep; cg s / cg mem: `flagtrace callgraph`")
    print(
        "(the CLI, cold); index (from its cache)/resolve/flags s: the API child; mem: its largest"
    )
    print("process (os.wait4), tree mem: sampled sum over its process tree; flags: analysed/found;")
    print("entries: discovered entry points; flags set: flags some entry observes set;")
    print("observing: entries observing a flag set (by-name evidence in parentheses);")
    print("FT101-FT104: exception-leak, non-reentrant, sticky, thread-unsafe hazards;")
    print("refused: candidates the API reported as errors; bugs: flagtrace problems, below")
    print()
    print_notes(results, args.verbose)
    print_problems(results, args.verbose)


def write_json(path: Path, data: dict[str, Any]) -> None:
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(scratch, path)


def to_json(results: Sequence[PackageResult], args: argparse.Namespace) -> dict[str, Any]:
    return {
        "benchmark": "sweep",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "platform": sys.platform,
        },
        "max_flags": args.max_flags,
        "timeout": args.timeout,
        "packages": [asdict(r) for r in results],
    }


# ------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--packages",
        nargs="+",
        default=list(DEFAULT_PACKAGES),
        metavar="SPEC",
        help=f"'{STDLIB}' or registry specs (default: {' '.join(DEFAULT_PACKAGES)})",
    )
    parser.add_argument(
        "--max-flags",
        type=int,
        default=200,
        metavar="N",
        help="flags analysed per package (first N by name)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30 * 60,
        metavar="SECONDS",
        help="per child process (default 1800)",
    )
    parser.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="flagtrace worker processes"
    )
    parser.add_argument(
        "--stdlib-no-tests", action="store_true", help="leave the stdlib's test directories out"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON")
    parser.add_argument("--verbose", action="store_true", help="full tracebacks and lists")
    args = parser.parse_args(argv)
    if args.max_flags < 0:
        parser.error("--max-flags must be >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results: list[PackageResult] = []
    for spec in args.packages:
        results.append(sweep_package(spec, args))
        if args.json:  # after every package: a sweep cut short keeps what it finished
            write_json(args.json, to_json(results, args))
    report(results, args)
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
