"""The public entry points: wire the stages together.

``load_project`` discovers and indexes files (bad files become diagnostics,
never exceptions); ``build_callgraph`` resolves calls and builds the graph.
The CLI is a thin layer over these; tests and benchmarks call them directly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from flagtrace.cache import SummaryCache
from flagtrace.callgraph import CallGraph
from flagtrace.discover import discover
from flagtrace.index import index_many
from flagtrace.model import (
    AnalysisReport,
    Diagnostic,
    FlagReport,
    IndexResult,
    ModuleSummary,
    Resolution,
    ScopeKind,
    SourceFile,
    UnresolvedCall,
)
from flagtrace.resolve import Callee, Resolver, resolve


@dataclass(frozen=True, slots=True)
class Project:
    """Everything indexed from the given paths."""

    files: tuple[SourceFile, ...]
    summaries: tuple[ModuleSummary, ...]
    diagnostics: tuple[Diagnostic, ...]
    lines: int
    cache_hits: int
    seconds: float


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def load_project(
    paths: Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    on_result: Callable[[IndexResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    cache: SummaryCache | None = None,
) -> Project:
    """Discover and index ``paths``. ``on_start`` gets the number of files to
    index, then ``on_result`` each result (for progress); with a ``cache``,
    unchanged files are read from it instead of being parsed."""
    start = time.perf_counter()
    found = discover(paths, exclude)
    if on_start is not None:
        on_start(len(found.files))
    results = index_many(
        found.files,
        jobs=jobs if jobs is not None else default_jobs(),
        on_result=on_result,
        cache=cache,
    )
    summaries = tuple(sorted((r.summary for r in results if r.summary is not None), key=lambda s: s.module))
    diagnostics = list(found.diagnostics)
    diagnostics.extend(r.diagnostic for r in results if r.diagnostic is not None)
    return Project(
        files=found.files,
        summaries=summaries,
        diagnostics=tuple(sorted(diagnostics, key=lambda d: (d.path, d.line or 0, d.message))),
        lines=sum(s.lines for s in summaries),
        cache_hits=sum(1 for r in results if r.cached),
        seconds=time.perf_counter() - start,
    )


def build_callgraph(project: Project, jedi_budget: float = 0.0) -> tuple[Resolver, CallGraph]:
    """Resolve calls and build the graph; with a budget, jedi then settles the
    first unresolved sites it can within that many seconds."""
    resolver = resolve(project.summaries)
    graph = CallGraph.build(resolver)
    if jedi_budget > 0 and graph.unresolved:
        settle_with_jedi(project, resolver, graph, graph.unresolved, jedi_budget)
    return resolver, graph


def settle_with_jedi(
    project: Project,
    resolver: Resolver,
    graph: CallGraph,
    sites: Sequence[UnresolvedCall],
    budget: float,
) -> int:
    """Ask jedi about ``sites``; add what it settles to the resolver and the
    graph. Returns the number of edges added."""
    from flagtrace.jedi_fallback import settle

    roots = sorted({f.root for f in project.files})
    known = {qn for qn, scope in resolver.p.scopes.items() if scope.kind is not ScopeKind.CLASS}
    result = settle(((u.scope, u) for u in sites), roots, known, budget)
    for edge in result.edges:
        scope_qn = next(u.scope for u in sites if u.site == edge.site and u.location == edge.location)
        key = (scope_qn, edge.site)
        current = resolver.site_callees.get(key, ())
        if all(c.qualname != edge.callee for c in current):
            resolver.site_callees[key] = (*current, Callee(edge.callee, Resolution.JEDI, True))
    graph.add_settled(result.edges, result.settled_sites, result.queries)
    return len(result.edges)


def callgraph_pycg(paths: Sequence[str], jobs: int = 1) -> dict[str, list[str]]:
    """The call graph of ``paths`` in PyCG's JSON shape (used by the benchmark)."""
    project = load_project(paths, jobs=jobs)
    _, graph = build_callgraph(project)
    return graph.to_pycg()


class AnalysisError(Exception):
    """A usage problem found while analysing (unknown flag or entry): exit code 2."""


def analyze(
    paths: Sequence[str | os.PathLike[str]],
    flags: Sequence[str],
    entries: Sequence[str] = (),
    *,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    reads: Sequence[str] = (),
    jedi_budget: float = 0.0,
    configured_entries: Sequence[str] = (),
    on_result: Callable[[IndexResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    cache: SummaryCache | None = None,
) -> AnalysisReport:
    """Analyse ``flags`` in the code under ``paths``.

    Flags or entries that name nothing become errors in the report (the other
    flags are still analysed); bad files become errors too.
    """
    start = time.perf_counter()
    project = load_project(
        paths, exclude=exclude, jobs=jobs, on_result=on_result, on_start=on_start, cache=cache
    )
    resolver, graph = build_callgraph(project)
    report = analyze_project(
        project,
        resolver,
        graph,
        flags,
        entries,
        reads=reads,
        jedi_budget=jedi_budget,
        configured_entries=configured_entries,
    )
    return replace(report, seconds=time.perf_counter() - start)


def analyze_project(
    project: Project,
    resolver: Resolver,
    graph: CallGraph,
    flags: Sequence[str],
    entries: Sequence[str] = (),
    *,
    reads: Sequence[str] = (),
    jedi_budget: float = 0.0,
    configured_entries: Sequence[str] = (),
) -> AnalysisReport:
    """The flag stages on an already indexed and resolved project.

    ``jedi_budget`` seconds are shared by all verdicts that would otherwise
    rest on unresolved calls (jedi is asked only about those calls)."""
    from flagtrace.effects import FlagLookupError, find_flags
    from flagtrace.verdicts import EntryError, analyse_flag, check_entry, discover_entries

    start = time.perf_counter()
    errors = list(project.diagnostics)
    reports: list[FlagReport] = []
    chosen: list[str] = []
    for entry in entries:
        try:
            chosen.append(check_entry(resolver, entry))
        except EntryError as exc:
            errors.append(Diagnostic("<entry>", None, str(exc)))
    read_functions: list[str] = []
    for read in reads:
        try:
            read_functions.append(check_entry(resolver, read))
        except EntryError as exc:
            errors.append(Diagnostic("<read>", None, str(exc).replace("entry point", "reader")))
    discovered = not entries
    if discovered:
        configured = []
        for entry in configured_entries:  # [tool.flagtrace] entries join the discovered ones
            try:
                configured.append(check_entry(resolver, entry))
            except EntryError as exc:
                errors.append(Diagnostic("<config>", None, str(exc)))
        chosen = discover_entries(resolver, graph, configured)
    deadline = time.perf_counter() + jedi_budget

    def settle(sites: list[UnresolvedCall]) -> int:
        remaining = deadline - time.perf_counter()
        if remaining <= 0 or not sites:
            return 0
        return settle_with_jedi(project, resolver, graph, sites, remaining)

    for spec in flags:
        try:
            flag = find_flags(resolver, spec)
        except FlagLookupError as exc:
            errors.append(Diagnostic("<flag>", None, str(exc)))
            continue
        reports.append(analyse_flag(resolver, graph, flag, chosen, discovered, read_functions, settle))
    return AnalysisReport(
        flags=tuple(reports),
        errors=tuple(errors),
        files=len(project.summaries),
        lines=project.lines,
        seconds=project.seconds + time.perf_counter() - start,
    )
