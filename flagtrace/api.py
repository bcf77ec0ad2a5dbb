"""The public entry points: wire the stages together.

``load_project`` discovers and indexes files (bad files become diagnostics,
never exceptions); ``build_callgraph`` resolves calls and builds the graph.
The CLI is a thin layer over these; tests and benchmarks call them directly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from flagtrace.cache import SummaryCache
from flagtrace.discover import discover
from flagtrace.fingerprint import SourceLines
from flagtrace.index import index_many
from flagtrace.memory import gc_deferred, gc_paused
from flagtrace.model import (
    AnalysisReport,
    Diagnostic,
    FlagReport,
    IndexResult,
    ModuleSummary,
    ScanReport,
    ScopeKind,
    SourceFile,
    UnresolvedCall,
)
from flagtrace.scripts import Script, read_scripts

if TYPE_CHECKING:
    from flagtrace.baseline import Baseline
    from flagtrace.callgraph import CallGraph
    from flagtrace.effects import Flag
    from flagtrace.interpret import FlagIndependent
    from flagtrace.program_store import ProgramStore
    from flagtrace.prune import Notes, Pruning, StoredPrunings
    from flagtrace.resolve import ResolvedProgram

    #: jedi's settling of a verdict's unresolved calls (``verdicts.analyse_flag``)
    Settle = Callable[[CallGraph, list[UnresolvedCall]], CallGraph | None]


@dataclass(frozen=True, slots=True)
class Project:
    """Everything indexed from the given paths."""

    files: tuple[SourceFile, ...]
    summaries: tuple[ModuleSummary, ...]
    diagnostics: tuple[Diagnostic, ...]
    lines: int
    cache_hits: int
    seconds: float
    #: console scripts declared inside the paths: (function, where), ``flagtrace.scripts``
    scripts: tuple[tuple[str, str], ...] = ()


def default_jobs() -> int:
    return max(
        1,
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
    )


def load_project(
    paths: Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    on_result: Callable[[IndexResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    cache: SummaryCache | None = None,
    follow_external_symlinks: bool = False,
) -> Project:
    """Discover and index ``paths``. ``on_start`` gets the number of files to
    index, then ``on_result`` each result (for progress); with a ``cache``,
    unchanged files are read from it instead of being parsed."""
    start = time.perf_counter()
    found = discover(paths, exclude, follow_external_symlinks=follow_external_symlinks)
    if on_start is not None:
        on_start(len(found.files))
    results = index_many(
        found.files,
        jobs=jobs if jobs is not None else default_jobs(),
        on_result=on_result,
        cache=cache,
    )
    scripts = read_scripts(found.packaging)
    return _project(
        found.files, results, (*found.diagnostics, *scripts.diagnostics), start, scripts.scripts
    )


def _load_resolved(
    paths: Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str],
    jobs: int | None,
    on_result: Callable[[IndexResult], None] | None,
    on_start: Callable[[int], None] | None,
    cache: SummaryCache | None,
    follow_external_symlinks: bool,
) -> tuple[Project, ResolvedProgram]:
    """``load_project`` then the resolved program. With a ``cache``, the program
    comes from the program store when it holds one for these summaries (else it
    is resolved and stored), and the paths' manifest is updated, as ``check``
    does: either finds what the other stored."""
    from flagtrace.index import read_keyed
    from flagtrace.program_store import ProgramStore
    from flagtrace.results import FileState

    if cache is None or not cache.enabled:
        project = load_project(
            paths,
            exclude=exclude,
            jobs=jobs,
            on_result=on_result,
            on_start=on_start,
            cache=cache,
            follow_external_symlinks=follow_external_symlinks,
        )
        return project, resolve_project(project)
    start = time.perf_counter()
    found = discover(paths, exclude, follow_external_symlinks=follow_external_symlinks)
    if on_start is not None:
        on_start(len(found.files))
    keyed = read_keyed(found.files, cache)
    results = index_many(
        found.files,
        jobs=jobs if jobs is not None else default_jobs(),
        on_result=on_result,
        cache=cache,
        keyed=keyed,
    )
    scripts = read_scripts(found.packaging)
    project = _project(
        found.files, results, (*found.diagnostics, *scripts.diagnostics), start, scripts.scripts
    )
    states = tuple(
        FileState.of(source, key, result)
        for source, (_, key), result in zip(found.files, keyed, results, strict=True)
    )
    programs = ProgramStore(cache)
    resolved, _ = _stored_or_resolved(programs, programs.key(states), project)
    programs.put_manifest(programs.identity([os.fspath(p) for p in paths], exclude), states)
    return project, resolved


def _project(
    files: Sequence[SourceFile],
    results: Sequence[IndexResult],
    diagnostics: Sequence[Diagnostic],
    start: float,
    scripts: Sequence[Script] = (),
) -> Project:
    summaries = tuple(
        sorted((r.summary for r in results if r.summary is not None), key=lambda s: s.module)
    )
    return Project(
        files=tuple(files),
        summaries=summaries,
        diagnostics=_all_diagnostics(
            diagnostics, [r.diagnostic for r in results if r.diagnostic is not None]
        ),
        lines=sum(s.lines for s in summaries),
        cache_hits=sum(1 for r in results if r.cached),
        seconds=time.perf_counter() - start,
        scripts=tuple((s.qualname, s.declared) for s in scripts),
    )


def _all_diagnostics(
    found: Sequence[Diagnostic], indexed: Sequence[Diagnostic]
) -> tuple[Diagnostic, ...]:
    """Discovery's and indexing's diagnostics, in the order a project lists them."""
    return tuple(sorted([*found, *indexed], key=lambda d: (d.path, d.line or 0, d.message)))


def build_callgraph(project: Project, jedi_budget: float = 0.0) -> CallGraph:
    """Resolve calls and build the graph; with a budget, jedi then settles the
    first unresolved sites it can within that many seconds."""
    # imported here: a run answered from the report cache loads neither networkx nor the resolver

    graph = graph_of(resolve_project(project))
    if jedi_budget > 0 and graph.unresolved:
        graph, _, _ = settle_with_jedi(project, graph, graph.unresolved, jedi_budget)
    return graph


def resolve_project(project: Project) -> ResolvedProgram:
    """Resolve every call site of ``project`` (no jedi)."""
    from flagtrace.resolve import resolve

    with gc_paused():  # see flagtrace.memory: resolution is ~2x faster without the collector
        return resolve(project.summaries)


def graph_of(resolved: ResolvedProgram) -> CallGraph:
    """The call graph of a resolved program."""
    from flagtrace.callgraph import CallGraph

    with gc_paused():
        return CallGraph.build(resolved)


def settle_with_jedi(
    project: Project,
    graph: CallGraph,
    sites: Sequence[UnresolvedCall],
    budget: float,
) -> tuple[CallGraph, int, bool]:
    """Ask jedi about ``sites``: a new graph with the edges it settles (``graph``
    itself when jedi was asked nothing), the number of edges it settled, and
    whether the budget ran out before it was asked about every site."""
    from flagtrace.jedi_fallback import settle

    roots = sorted({f.root for f in project.files})
    program = graph.program
    known = {qn for qn, scope in program.scopes.items() if scope.kind is not ScopeKind.CLASS}
    result = settle(((u.scope, u) for u in sites), roots, known, budget)
    if not result.edges and not result.settled_sites and not result.queries:
        return graph, 0, result.out_of_budget
    settled = [
        (
            next(u.scope for u in sites if u.site == edge.site and u.location == edge.location),
            edge.site,
        )
        for edge in result.edges
    ]
    new = graph.with_settled(
        list(zip(settled, result.edges, strict=True)), result.settled_sites, result.queries
    )
    return new, len(result.edges), result.out_of_budget


def callgraph_pycg(paths: Sequence[str], jobs: int = 1) -> dict[str, list[str]]:
    """The call graph of ``paths`` in PyCG's JSON shape (used by the benchmark)."""
    project = load_project(paths, jobs=jobs)
    from flagtrace.report.callgraph_pycg import pycg

    return pycg(build_callgraph(project))


@dataclass(frozen=True, slots=True)
class ProgramOptions:
    """How sticky writes are scoped and which writes count (``flagtrace.programs``,
    ``flagtrace.setby``): configured roots, ``--set-by`` setters, ``--sticky-anywhere``."""

    roots: tuple[str, ...] = ()
    set_by: tuple[str, ...] = ()
    sticky_anywhere: bool = False


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
    include_tests: bool = False,
    on_result: Callable[[IndexResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_reused: Callable[[int, int], None] | None = None,
    cache: SummaryCache | None = None,
    follow_external_symlinks: bool = False,
    manifest_root: str | None = None,
    assume: Sequence[str] = (),
    roots: Sequence[str] = (),
    set_by: Sequence[str] = (),
    sticky_anywhere: bool = False,
) -> AnalysisReport:
    """Analyse ``flags`` in the code under ``paths`` (under the ``assume`` facts).

    ``roots`` adds program roots to the ``__main__`` modules and console scripts found
    (``flagtrace.programs``); ``sticky_anywhere`` ignores them all (a sticky write
    anywhere may run before any entry); ``set_by`` restricts the verdicts to the values
    those setters write (``flagtrace.setby``).

    Flags or entries that name nothing become errors in the report (the other
    flags are still analysed); bad files become errors too. With an enabled
    ``cache``, a stored report is reused when nothing it depends on changed
    (``flagtrace.results``); ``on_reused`` then gets the number of files and
    lines that were not indexed again.

    ``manifest_root`` names the tree for the cache's manifest of this run's files
    (default: the current directory, as the paths are absolutised). The review bot
    analyses a revision checked out in a new temporary directory each time; keyed by
    that directory, its manifest would never be found again, and one more would be
    left behind by every review.
    """
    start = time.perf_counter()
    program = ProgramOptions(tuple(roots), tuple(set_by), sticky_anywhere)
    if cache is not None and cache.enabled:
        return _analyze_reusing(
            paths,
            flags,
            entries,
            exclude=exclude,
            jobs=jobs,
            reads=reads,
            jedi_budget=jedi_budget,
            configured_entries=configured_entries,
            include_tests=include_tests,
            on_result=on_result,
            on_start=on_start,
            on_reused=on_reused,
            cache=cache,
            start=start,
            follow_external_symlinks=follow_external_symlinks,
            manifest_root=manifest_root,
            assume=assume,
            program=program,
        )
    project = load_project(
        paths,
        exclude=exclude,
        jobs=jobs,
        on_result=on_result,
        on_start=on_start,
        cache=cache,
        follow_external_symlinks=follow_external_symlinks,
    )
    report, _ = _whole_program(
        project,
        flags,
        entries,
        reads,
        jedi_budget,
        configured_entries,
        include_tests,
        assume,
        program,
        jobs=jobs if jobs is not None else default_jobs(),
    )
    return replace(report, seconds=time.perf_counter() - start)


def _whole_program(
    project: Project,
    flags: Sequence[str],
    entries: Sequence[str],
    reads: Sequence[str],
    jedi_budget: float,
    configured_entries: Sequence[str],
    include_tests: bool = False,
    assume: Sequence[str] = (),
    program: ProgramOptions | None = None,
    jobs: int = 1,
) -> tuple[AnalysisReport, CallGraph]:
    """Resolve, build the graph and analyse the flags of an indexed project."""
    graph = build_callgraph(project)
    program = program or ProgramOptions()
    report, graph = analyze_project(
        project,
        graph,
        flags,
        entries,
        reads=reads,
        jedi_budget=jedi_budget,
        configured_entries=configured_entries,
        include_tests=include_tests,
        assume=assume,
        roots=program.roots,
        set_by=program.set_by,
        sticky_anywhere=program.sticky_anywhere,
        jobs=jobs,
    )
    return report, graph


def _analyze_reusing(
    paths: Sequence[str | os.PathLike[str]],
    flags: Sequence[str],
    entries: Sequence[str],
    *,
    exclude: Sequence[str],
    jobs: int | None,
    reads: Sequence[str],
    jedi_budget: float,
    configured_entries: Sequence[str],
    include_tests: bool,
    on_result: Callable[[IndexResult], None] | None,
    on_start: Callable[[int], None] | None,
    on_reused: Callable[[int, int], None] | None,
    cache: SummaryCache,
    start: float,
    follow_external_symlinks: bool = False,
    manifest_root: str | None = None,
    assume: Sequence[str] = (),
    program: ProgramOptions | None = None,
) -> AnalysisReport:
    """``analyze`` through the stored reports of ``flagtrace.results``: the exact
    key first (files read and hashed, nothing parsed), then the summary key
    (only files unknown to the last run indexed), else the whole pipeline, whose
    report is stored under both keys."""
    from flagtrace.index import read_keyed
    from flagtrace.results import FileState, ResultCache, options_text

    stored_results = ResultCache(cache)
    jobs = jobs if jobs is not None else default_jobs()
    found = discover(paths, exclude, follow_external_symlinks=follow_external_symlinks)
    files = found.files
    if on_start is not None:
        on_start(len(files))
    keyed = read_keyed(files, cache)
    program = program or ProgramOptions()
    scripts = read_scripts(found.packaging)  # part of the key: a new script is a new root
    options = options_text(
        flags=list(flags),
        entries=list(entries),
        reads=list(reads),
        configured_entries=list(configured_entries),
        jedi_budget=jedi_budget,
        include_tests=include_tests,
        assume=list(assume),
        roots=list(program.roots),
        set_by=list(program.set_by),
        sticky_anywhere=program.sticky_anywhere,
        scripts=[[s.qualname, s.declared] for s in scripts.scripts],
        script_errors=[d.message for d in scripts.diagnostics],
    )

    def reuse(
        stored_files: Sequence[FileState], report: AnalysisReport, indexed: int
    ) -> AnalysisReport:
        lines = sum(f.lines for f in stored_files if f.digest is not None)
        if on_reused is not None:
            fresh_lines = sum(
                f.lines for i, f in enumerate(stored_files) if i in fresh and f.digest is not None
            )
            on_reused(len(stored_files) - indexed, lines - fresh_lines)
        return replace(report, lines=lines, seconds=time.perf_counter() - start)

    exact = stored_results.exact_key(
        options,
        zip(files, (key for _, key in keyed), strict=True),
        (*found.diagnostics, *scripts.diagnostics),
    )
    fresh: dict[int, IndexResult] = {}
    hit = stored_results.get(exact)
    if hit is not None and len(hit.files) == len(files):
        return reuse(hit.files, hit.report, 0)

    from flagtrace.program_store import ProgramStore

    named = [os.fspath(p) for p in paths]
    if manifest_root is not None:  # the paths as if under that root, wherever they are now
        named = [os.path.join(manifest_root, os.path.relpath(os.path.abspath(p))) for p in named]
    identity = stored_results.identity(options + "\0" + "\0".join(exclude), named)
    last_run = stored_results.manifest(identity)
    # the last run on these paths with any options: a new question knows every
    # unchanged file's summary digest, the key of the stored resolved program
    programs = ProgramStore(cache)
    program_identity = programs.identity(named, exclude)
    last_program = programs.manifest(program_identity)
    states: list[FileState | None] = []
    for source, (_, key) in zip(files, keyed, strict=True):
        known = (last_run.get(key) or last_program.get(key)) if key is not None else None
        if (
            known is not None
            and (known.path, known.module, known.is_package)
            == (source.path, source.module, source.is_package)
            and known.digest is not None
        ):
            states.append(known)
        else:
            states.append(None)
    unknown = [i for i, state in enumerate(states) if state is None]

    def index(indices: Sequence[int], report: bool = True) -> None:
        done = index_many(
            [files[i] for i in indices],
            jobs=jobs,
            on_result=on_result if report else None,
            cache=cache,
            keyed=[keyed[i] for i in indices],
        )
        for i, r in zip(indices, done, strict=True):
            fresh[i] = r
            states[i] = FileState.of(files[i], keyed[i][1], r)

    index(unknown)
    file_states = tuple(s for s in states if s is not None)
    by_summaries = stored_results.summary_key(
        options, file_states, (*found.diagnostics, *scripts.diagnostics)
    )
    hit = stored_results.get(by_summaries)
    if hit is not None and len(hit.files) == len(files):
        report = reuse(file_states, hit.report, len(unknown))
        stored_results.put([exact], report, file_states)
        stored_results.put_manifest(identity, file_states)
        return report

    program_key = programs.key(file_states)
    # the summaries of the files known from the last run come from the summary
    # cache (a stored program does not hold them); for a new question they are
    # loaded, not indexed, and not reported as indexed
    stored_before = programs.has(program_key)
    index([i for i in range(len(files)) if i not in fresh], report=not stored_before)
    file_states = tuple(s for s in states if s is not None)
    results = [fresh[i] for i in range(len(files))]
    project = _project(
        files, results, (*found.diagnostics, *scripts.diagnostics), start, scripts.scripts
    )
    resolved, reused = _stored_or_resolved(programs, program_key, project)
    if reused and on_reused is not None:  # a new question on these summaries: no resolution
        fresh_lines = sum(s.lines for i in unknown if (s := fresh[i].summary) is not None)
        on_reused(len(files) - len(unknown), project.lines - fresh_lines)
    programs.put_manifest(program_identity, file_states)
    report, _ = analyze_project(
        project,
        graph_of(resolved),
        flags,
        entries,
        reads=reads,
        jedi_budget=jedi_budget,
        configured_entries=configured_entries,
        include_tests=include_tests,
        assume=assume,
        roots=program.roots,
        set_by=program.set_by,
        sticky_anywhere=program.sticky_anywhere,
        prunings=programs.prunings(program_key, file_states, project.summaries),
        jobs=jobs,
    )
    report = replace(report, seconds=time.perf_counter() - start)
    # jedi answers within a time budget: a run it ran out of is not reproducible
    if not report.jedi_out_of_budget:
        stored_results.put([exact, by_summaries], report, file_states)
        stored_results.put_manifest(identity, file_states)
    return report


def _stored_or_resolved(
    programs: ProgramStore, key: str, project: Project
) -> tuple[ResolvedProgram, bool]:
    """The program stored under ``key`` (True), else ``project`` resolved and stored."""
    stored = programs.get(key, project.summaries)
    if stored is not None:
        return stored, True
    resolved = resolve_project(project)
    programs.put(key, resolved)
    return resolved, False


#: fewer flags than this are judged in this process: forking costs more than it
#: saves on small programs, and a check of one or two flags has nothing to share
FORK_FROM = 4


class _AsksJedi(Exception):
    """A flag judged in a forked worker would ask jedi: it is judged in the parent."""


@dataclass(frozen=True, slots=True)
class _Judged:
    """A flag judged in a forked worker: its report (or error), what it noted in the
    pruning, and whether jedi's budget was gone when its verdict would have asked."""

    outcome: FlagReport | Diagnostic
    notes: Notes
    out_of_budget: bool


def _forked_answers(
    judge: Callable[[Flag, CallGraph, Settle], FlagReport | Diagnostic],
    pending: Sequence[tuple[int, Flag]],
    on: CallGraph,
    pruning: Pruning,
    independent: FlagIndependent,
    deadline: float,
    jedi_budget: float,
    jobs: int,
) -> list[_Judged | None] | None:
    """The first ``pending`` flags judged on ``on`` in ``jobs`` forked workers, up to
    the first that would ask jedi while its budget (until ``deadline``) lasts (None:
    no more are handed out after it, their answers might rest on a graph jedi is
    about to change); or None (too few flags, one job, no fork): judge them here."""
    from flagtrace.forked import answer_all, forks

    if jobs <= 1 or len(pending) < FORK_FROM or not forks():
        return None
    before = pruning.notes()
    # built here once, not once in each worker
    independent.never_returns(on, pruning if pruning.active else None)
    gone = [False]

    def refuse(current: CallGraph, sites: list[UnresolvedCall]) -> CallGraph | None:
        """``settle`` where it would not ask jedi; else the flag goes back."""
        if not sites or jedi_budget <= 0:
            return None
        if deadline - time.perf_counter() <= 0:  # the clock is the parent's too
            gone[0] = True
            return None
        raise _AsksJedi

    def answer(i: int) -> _Judged | None:
        pruning.note_from(before)  # every question notes from the same start
        gone[0] = False
        try:
            outcome = judge(pending[i][1], on, refuse)
        except _AsksJedi:
            return None
        return _Judged(outcome, pruning.notes(), gone[0])

    return answer_all(answer, len(pending), jobs, stop=lambda judged: judged is None)


@gc_deferred()
def analyze_project(
    project: Project,
    graph: CallGraph,
    flags: Sequence[str],
    entries: Sequence[str] = (),
    *,
    reads: Sequence[str] = (),
    jedi_budget: float = 0.0,
    configured_entries: Sequence[str] = (),
    include_tests: bool = False,
    assume: Sequence[str] = (),
    roots: Sequence[str] = (),
    set_by: Sequence[str] = (),
    sticky_anywhere: bool = False,
    prunings: StoredPrunings | None = None,
    jobs: int = 1,
) -> tuple[AnalysisReport, CallGraph]:
    """The flag stages on an already indexed and resolved project; the report,
    and the graph (pruned, see ``flagtrace.prune``) with whatever jedi settled on
    the way. With ``jobs`` > 1 and several flags, the flags are judged in forked
    workers (``flagtrace.forked``), with the report one process would give.

    ``jedi_budget`` seconds are shared by all verdicts that would otherwise
    rest on unresolved calls (jedi is asked only about those calls). ``assume``
    are ``--assume`` facts (``flagtrace.assume``; a malformed one raises
    ``FactError``). ``prunings``: the prunings earlier runs stored for this
    resolved program (``flagtrace.program_store``), reused and added to."""
    from flagtrace.effects import FlagLookupError, find_flags
    from flagtrace.interpret import FlagIndependent
    from flagtrace.pergraph import once
    from flagtrace.programs import RootIndex, find_roots
    from flagtrace.prune import pruning_for
    from flagtrace.setby import SetByError
    from flagtrace.verdicts import (
        EntryError,
        analyse_flag,
        check_entry,
        discover_entries,
        expand_entry,
    )

    start = time.perf_counter()
    errors = list(project.diagnostics)
    chosen: list[str] = []
    left_out = 0
    program = graph.program
    for entry in entries:
        try:
            chosen.extend(expand_entry(program, entry))
        except EntryError as exc:
            errors.append(Diagnostic("<entry>", None, str(exc)))
    read_functions: list[str] = []
    for read in reads:
        try:
            read_functions.append(check_entry(program, read))
        except EntryError as exc:
            errors.append(Diagnostic("<read>", None, str(exc).replace("entry point", "reader")))
    discovered = not entries
    configured: list[str] = []
    if discovered:
        for entry in configured_entries:  # [tool.flagtrace] entries join the discovered ones
            try:
                configured.extend(expand_entry(program, entry))
            except EntryError as exc:
                errors.append(Diagnostic("<config>", None, str(exc)))
    # hops that cannot run: false guards under the facts, methods of classes never instantiated
    pruning = pruning_for(graph, assume, [*chosen, *configured], prunings)
    if discovered:
        found = once(
            graph,
            ("entries", tuple(configured), include_tests),
            lambda: discover_entries(graph, configured, include_tests),
        )
        chosen = [e for e in found.entries if e in configured or not pruning.dead_entry(e)]
        left_out = found.left_out
    graph = pruning.graph
    configured_roots = []
    for root in roots:
        try:
            configured_roots.append(check_entry(program, root))
        except EntryError as exc:
            errors.append(Diagnostic("<root>", None, str(exc).replace("entry point", "root")))
    found_roots = find_roots(program, project.scripts, configured_roots)
    pruned = graph
    root_index = once(pruned, ("roots", found_roots), lambda: RootIndex(pruned, found_roots))
    deadline = time.perf_counter() + jedi_budget
    latest = [graph]  # jedi's answers carry over to the flags after
    #: jedi's budget ran out before it was asked about every site a verdict
    #: rested on: those verdicts depend on how fast this machine was
    out_of_budget = False

    def settle(current: CallGraph, sites: list[UnresolvedCall]) -> CallGraph | None:
        nonlocal out_of_budget
        if not sites or jedi_budget <= 0:
            return None
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            out_of_budget = True
            return None
        settled, edges, ran_out = settle_with_jedi(project, current, sites, remaining)
        out_of_budget = out_of_budget or ran_out
        latest[0] = settled
        return settled if edges else None

    independent = FlagIndependent()  # what the flags' interpreters share
    #: per flag asked, in order: its report or its error (None: not judged yet)
    outcomes: list[FlagReport | Diagnostic | None] = []
    pending: list[tuple[int, Flag]] = []
    for spec in flags:
        try:
            pending.append((len(outcomes), find_flags(program, spec)))
            outcomes.append(None)
        except FlagLookupError as exc:
            outcomes.append(Diagnostic("<flag>", None, str(exc)))

    def judge(flag: Flag, on: CallGraph, settling: Settle) -> FlagReport | Diagnostic:
        try:
            return analyse_flag(
                on,
                flag,
                chosen,
                discovered,
                read_functions,
                settling,
                pruning,
                roots=root_index.rebuilt(on),
                sticky_anywhere=sticky_anywhere,
                set_by=set_by,
                independent=independent,
            )
        except SetByError as exc:
            return Diagnostic("<set-by>", None, str(exc))

    # Each round judges the flags left, in order, on the graph as it is now: in
    # forked workers when there are enough of them (``flagtrace.forked``). A worker
    # does not ask jedi: it hands such a flag back, and no flag after it is handed
    # out. That flag is judged here, with jedi; the answers after it (under way
    # then) stand if jedi left the graph as it was, else the flags after it are
    # judged again on the new graph: as one process judging them in order would.
    while pending:
        on = latest[0]
        answers = _forked_answers(
            judge, pending, on, pruning, independent, deadline, jedi_budget, jobs
        )
        taken = 0
        for (position, flag), answer in zip(
            pending, answers if answers is not None else [None] * len(pending), strict=False
        ):
            taken += 1
            if answer is not None:
                outcomes[position] = answer.outcome
                pruning.add_notes(answer.notes)
                out_of_budget = out_of_budget or answer.out_of_budget
                continue
            outcomes[position] = judge(flag, on, settle)
            if latest[0] is not on:  # jedi changed the graph: what follows is judged on it
                break
        pending = pending[taken:]
    reports = [o for o in outcomes if isinstance(o, FlagReport)]
    errors.extend(o for o in outcomes if isinstance(o, Diagnostic))
    report = AnalysisReport(
        flags=tuple(reports),
        errors=tuple(errors),
        files=len(project.summaries),
        lines=project.lines,
        seconds=project.seconds + time.perf_counter() - start,
        entries_left_out=left_out,
        assumptions=pruning.uses(),
        roots=found_roots,
        jedi_out_of_budget=out_of_budget,
    )
    return report, latest[0]


def filter_report(
    report: AnalysisReport,
    *,
    ignore: Collection[str] = (),
    baseline: Baseline | None = None,
    lines: SourceLines | None = None,
) -> AnalysisReport:
    """The findings a person is to be told about: ``report`` without those its source
    suppresses (``# flagtrace: ignore[...]``) or whose codes are in ``ignore``, then
    without those ``baseline`` holds, with the counts of both in the report.

    Applied after the analysis and after the report cache, never stored: a cached report
    stays valid for any comment, ignored code or baseline, and those are read as they
    are now. ``lines`` reads the source (the files as the report's paths name them).
    """
    from flagtrace.baseline import apply_baseline
    from flagtrace.suppress import apply_suppressions

    lines = lines if lines is not None else SourceLines()
    report = apply_suppressions(report, lines, ignore)
    if baseline is not None:
        report = apply_baseline(report, baseline, lines)
    return report


def flag_names(
    paths: Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    cache: SummaryCache | None = None,
    follow_external_symlinks: bool = False,
) -> tuple[str, ...]:
    """The flags ``scan`` lists under ``paths``, sorted, none of them judged
    (``inventory.flag_names``)."""
    from flagtrace.inventory import flag_names as names_of

    _, resolved = _load_resolved(
        paths,
        exclude=exclude,
        jobs=jobs,
        on_result=None,
        on_start=None,
        cache=cache,
        follow_external_symlinks=follow_external_symlinks,
    )
    return tuple(names_of(graph_of(resolved)))


def scan(
    paths: Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    on_result: Callable[[IndexResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    cache: SummaryCache | None = None,
    follow_external_symlinks: bool = False,
) -> ScanReport:
    """Every flag in the code under ``paths`` (``flagtrace.inventory``), riskiest first.

    ``jobs`` worker processes index the files, then judge the flags (forked, where
    the platform forks: ``flagtrace.forked``). No jedi: the inventory is the list of
    flags a person reads first, and ``check`` on a chosen flag is where jedi may
    settle the calls a verdict rests on. With a ``cache``, the resolved program
    is taken from the program store, and stored there (``flagtrace.program_store``):
    a scan after a ``check`` of the same tree, or a second scan, does not resolve
    it again."""
    from flagtrace.inventory import inventory

    project, resolved = _load_resolved(
        paths,
        exclude=exclude,
        jobs=jobs,
        on_result=on_result,
        on_start=on_start,
        cache=cache,
        follow_external_symlinks=follow_external_symlinks,
    )
    start = time.perf_counter()
    flags = inventory(graph_of(resolved), jobs=jobs if jobs is not None else default_jobs())
    return ScanReport(
        flags=tuple(flags),
        errors=project.diagnostics,
        files=len(project.summaries),
        lines=project.lines,
        seconds=project.seconds + time.perf_counter() - start,
    )
