"""Command line: parse options, call ``flagtrace.api``, hand results to a reporter.

``flagtrace PATH... --flag NAME`` is ``flagtrace check PATH... --flag NAME``;
``flagtrace callgraph PATH...`` writes the call graph. Exit codes are
``ExitCode``: 0 clean, 1 findings, 2 usage, configuration or input error.
User errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import enum
import io
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, get_args

import click

from flagtrace import __version__
from flagtrace.report import (
    CALLGRAPH,
    CHECK,
    REVIEW,
    SCAN,
    CallGraphReport,
    RenderOptions,
    Terminal,
)

if TYPE_CHECKING:
    from flagtrace.model import AnalysisReport, Diagnostic, ScanReport


class ExitCode(enum.IntEnum):
    CLEAN = 0  # nothing found
    FINDINGS = 1  # an entry observes a flag set, or a setter has a hazard
    ERROR = 2  # usage, configuration or input error (the report is still written)
    INTERNAL = 3  # a bug in flagtrace: please report it


class _StdoutClosed(Exception):
    """The reader of stdout went away (``flagtrace ... | head``)."""


class FlagtraceError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class _DefaultToCheck(click.Group):
    """``flagtrace PATH --flag X`` means ``flagtrace check PATH --flag X``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="flagtrace")
def cli() -> None:
    """Find where module-level flags set by context managers leak into code paths."""


def _cache_dir_option(f: Any) -> Any:
    return click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Summary cache directory (default: $FLAGTRACE_CACHE_DIR, else the user cache dir).",
    )(f)


def _config(paths: Sequence[Path]) -> Any:
    """``[tool.flagtrace]`` from the nearest pyproject.toml; errors are one line."""
    from flagtrace.config import ConfigError, find_pyproject, load_config

    try:
        return load_config(find_pyproject(list(paths)))
    except ConfigError as exc:
        raise FlagtraceError(str(exc)) from None


def _facts(texts: Sequence[str]) -> tuple[str, ...]:
    """The ``--assume`` facts, checked: a malformed one is a one-line error (exit 2)."""
    from flagtrace.assume import FactError, parse_facts

    try:
        return tuple(f.text for f in parse_facts(texts))
    except FactError as exc:
        raise FlagtraceError(str(exc)) from None


def _cache(cache_dir: Path | None, no_cache: bool) -> Any:
    from flagtrace.cache import SummaryCache

    return SummaryCache(cache_dir, enabled=not no_cache)


def _run_status(quiet: bool) -> Any:
    """Progress on stderr for this command; erased however the command ends."""
    from flagtrace.progress import RunStatus

    status = RunStatus(quiet)
    click.get_current_context().call_on_close(status.close)
    return status


def _common_options(f: Any) -> Any:
    f = click.option(
        "--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB (repeatable)."
    )(f)
    f = click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes that index files, then judge the flags of a scan or of "
        "a check of 4 flags or more (forked; Linux only) (default: all CPUs).",
    )(f)
    f = click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write the report to FILE.",
    )(f)
    f = click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")(f)
    f = _cache_dir_option(f)
    f = click.option("--no-cache", is_flag=True, help="Neither read nor write the summary cache.")(
        f
    )
    f = click.option(
        "--jedi-budget",
        type=click.FloatRange(min=0),
        default=None,
        metavar="SECONDS",
        help="Time jedi may spend settling calls flagtrace cannot resolve (0: never; default 5).",
    )(f)
    f = click.option(
        "--follow-external-symlinks",
        is_flag=True,
        help="Read symlinks whose targets lie outside PATHS (by default: an error, not read).",
    )(f)
    return f


@cli.command("callgraph")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(CALLGRAPH.names()), default="json", show_default=True
)
@_common_options
def callgraph_cmd(
    paths: tuple[Path, ...],
    fmt: str,
    exclude: tuple[str, ...],
    jobs: int | None,
    output: Path | None,
    quiet: bool,
    jedi_budget: float | None,
    cache_dir: Path | None,
    no_cache: bool,
    follow_external_symlinks: bool,
) -> None:
    """Write the call graph of PATHS (PyCG JSON, flagtrace JSON or Graphviz dot)."""
    from flagtrace.api import build_callgraph, load_project

    config = _config(paths)
    status = _run_status(quiet)
    project = load_project(
        [str(p) for p in paths],
        exclude=(*config.exclude, *exclude),
        jobs=jobs if jobs is not None else config.jobs,
        cache=_cache(cache_dir, no_cache),
        on_start=status.on_start,
        on_result=status.on_result,
        follow_external_symlinks=follow_external_symlinks,
    )
    _print_diagnostics(project.diagnostics)
    if not project.summaries:
        raise FlagtraceError("no Python files to analyse in " + ", ".join(str(p) for p in paths))
    graph = build_callgraph(
        project, jedi_budget=jedi_budget if jedi_budget is not None else config.jedi_budget
    )
    status.close()
    report = CallGraphReport(graph, tuple(project.diagnostics))
    _write(CALLGRAPH[fmt].render(report, _render_options(output)), output)
    if not quiet:
        stats = graph.stats()
        extra = (
            f"{stats.nodes} functions, {stats.edges} edges, {stats.unresolved} unresolved calls "
            f"(jedi: {stats.jedi_queries} queries, {stats.jedi_edges} edges), "
            f"{project.seconds:.1f}s indexing"
        )
        click.echo(status.summary(len(project.diagnostics), extra), err=True)
    # the graph is written either way; bad input files still make the exit code say so
    raise SystemExit(ExitCode.ERROR if project.diagnostics else ExitCode.CLEAN)


def _witness_count(ctx: click.Context, param: click.Parameter, value: str) -> int | None:
    """``--witnesses``: a count, or ``all`` (None)."""
    if value == "all":
        return None
    if value.isdigit():
        return int(value)
    raise click.BadParameter(f"{value!r} is neither a count nor 'all'", ctx, param)


def _program_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--root``, ``--set-by``, ``--sticky-anywhere``: which sticky writes can run before an
    entry (``flagtrace.programs``) and which writes count (``flagtrace.setby``)."""
    for option in reversed(
        (
            click.option(
                "--root",
                "roots",
                multiple=True,
                metavar="QUALNAME",
                help="A function or module a process starts at (repeatable; adds to the "
                "__main__ blocks and console scripts found, and to [tool.flagtrace] roots).",
            ),
            click.option(
                "--set-by",
                "set_by",
                multiple=True,
                metavar="QUALNAME",
                help="Only the values these setters write count as the flag set; other "
                "writes replace them (repeatable).",
            ),
            click.option(
                "--sticky-anywhere",
                is_flag=True,
                help="Ignore program roots: a sticky write anywhere may run before any entry "
                "(code that other programs call).",
            ),
        )
    ):
        command = option(command)
    return command


@cli.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--flag",
    "flags",
    multiple=True,
    metavar="NAME",
    help="Flag to analyse: bare or qualified name (repeatable; default: [tool.flagtrace] flags).",
)
@click.option(
    "--entry",
    "entries",
    multiple=True,
    metavar="QUALNAME",
    help="Entry point to judge, or an fnmatch pattern of qualnames (repeatable); "
    "default: discover them.",
)
@click.option(
    "--include-tests",
    is_flag=True,
    help="Discover entry points in tests too (test modules, test_* functions, Test* classes).",
)
@click.option(
    "--read",
    "reads",
    multiple=True,
    metavar="QUALNAME",
    help="Only count reads in this function (repeatable).",
)
@_program_options
@click.option(
    "--assume",
    "assume",
    multiple=True,
    metavar="FACT",
    help="Judge under PATH=VALUE (e.g. server_args.enable_piecewise_cuda_graph=False): "
    "hops behind guards it makes false cannot run (repeatable; adds to [tool.flagtrace] assume).",
)
@click.option(
    "--format", "fmt", type=click.Choice(CHECK.names()), default="rich", show_default=True
)
@click.option(
    "--witnesses",
    callback=_witness_count,
    default="3",
    show_default=True,
    metavar="N|all",
    help="Full witnesses per flag in the rich report: the strongest (then shortest) one per read "
    "and setter (every entry's with --entry).",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="CODES",
    help="Drop findings with these codes everywhere, comma-separated (repeatable; "
    "adds to [tool.flagtrace] ignore).",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Report and fail only on findings not in this baseline (default: "
    "[tool.flagtrace] baseline).",
)
@click.option(
    "--write-baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Record today's findings in FILE (exit 0 unless the input has errors).",
)
@_common_options
def check_cmd(
    paths: tuple[Path, ...],
    flags: tuple[str, ...],
    entries: tuple[str, ...],
    reads: tuple[str, ...],
    include_tests: bool,
    assume: tuple[str, ...],
    roots: tuple[str, ...],
    set_by: tuple[str, ...],
    sticky_anywhere: bool,
    fmt: str,
    witnesses: int | None,
    ignore: tuple[str, ...],
    baseline: Path | None,
    write_baseline: Path | None,
    exclude: tuple[str, ...],
    jobs: int | None,
    output: Path | None,
    quiet: bool,
    jedi_budget: float | None,
    cache_dir: Path | None,
    no_cache: bool,
    follow_external_symlinks: bool,
) -> None:
    """Can an entry point run while FLAG is set? Proof, and the setters' hazards."""
    from flagtrace.api import analyze, filter_report

    config = _config(paths)
    flags = flags or config.flags
    if not flags:
        raise FlagtraceError(
            "no flag to analyse: pass --flag NAME (or set flags in [tool.flagtrace])"
        )
    ignored = _ignored_codes(config.ignore, ignore, config.source)
    facts = _facts((*config.assume, *assume))
    accepted = None
    if write_baseline is None:  # writing one records every finding, whatever the old one held
        accepted = _load_baseline(baseline if baseline is not None else config.baseline)
    status = _run_status(quiet)
    report = analyze(
        [str(p) for p in paths],
        flags,
        entries,
        exclude=(*config.exclude, *exclude),
        jobs=jobs if jobs is not None else config.jobs,
        reads=(*config.reads, *reads),
        jedi_budget=jedi_budget if jedi_budget is not None else config.jedi_budget,
        configured_entries=config.entries,
        include_tests=include_tests or config.include_tests,
        cache=_cache(cache_dir, no_cache),
        on_start=status.on_start,
        on_result=status.on_result,
        on_reused=status.on_reused,
        follow_external_symlinks=follow_external_symlinks,
        assume=facts,
        roots=(*config.roots, *roots),
        set_by=set_by,
        sticky_anywhere=sticky_anywhere or config.sticky_anywhere,
    )
    status.close()
    report = filter_report(report, ignore=ignored, baseline=accepted)
    reporter = CHECK[fmt]
    # entries named on the command line each get their witness, as they always did
    shown = None if entries else witnesses
    _write(reporter.render(report, _render_options(output, shown)), output)
    _print_warnings(reporter.warnings(report))
    if not reporter.human or output is not None:
        _print_diagnostics(report.errors)
    if write_baseline is not None:
        written = _write_baseline(report, write_baseline)
        if not quiet:
            click.echo(f"flagtrace: wrote {written} findings to {write_baseline}", err=True)
    if not quiet:
        click.echo(status.summary(len(report.errors)), err=True)
    code = exit_code_for(report)
    if write_baseline is not None and code is ExitCode.FINDINGS:
        code = ExitCode.CLEAN  # the findings were just accepted
    raise SystemExit(code)


def _ignored_codes(
    configured: Sequence[str], given: Sequence[str], source: str | None
) -> frozenset[str]:
    """The codes dropped everywhere: ``[tool.flagtrace] ignore`` and ``--ignore``."""
    from flagtrace.suppress import SuppressionError, check_codes

    try:
        check_codes(configured)
    except SuppressionError as exc:
        raise FlagtraceError(f"{source}: [tool.flagtrace] ignore: {exc}") from None
    try:
        return check_codes([*configured, *given])
    except SuppressionError as exc:
        raise FlagtraceError(f"--ignore: {exc}") from None


def _load_baseline(path: str | Path | None) -> Any:
    """The baseline to filter by (None: none); a missing or malformed file is one line."""
    from flagtrace.baseline import BaselineError, load_baseline

    if path is None:
        return None
    try:
        return load_baseline(Path(path))
    except BaselineError as exc:
        raise FlagtraceError(str(exc)) from None


def _write_baseline(report: AnalysisReport, path: Path) -> int:
    """Record the findings of ``report`` in ``path``; the number of findings written."""
    from flagtrace.baseline import make_baseline
    from flagtrace.fingerprint import SourceLines

    baseline = make_baseline(report, SourceLines())
    try:
        path.write_text(baseline.dumps(), encoding="utf-8")
    except OSError as exc:
        raise FlagtraceError(f"{path}: cannot write baseline: {exc.strerror or exc}") from None
    return len(baseline.entries)


@cli.command("fix")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--flag",
    "flags",
    multiple=True,
    metavar="NAME",
    help="Flag whose setters to repair (repeatable; default: [tool.flagtrace] flags).",
)
@click.option(
    "--select",
    multiple=True,
    metavar="CODES",
    help="Hazards to repair, comma-separated: FT101, FT102 (default: both).",
)
@click.option(
    "--diff/--write",
    "diff",
    default=True,
    help="Print a unified diff and change nothing (default), or edit the files in place.",
)
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB (repeatable)."
)
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the summary cache.")
@click.option("--quiet", "-q", is_flag=True, help="No summary on stderr.")
def fix_cmd(
    paths: tuple[Path, ...],
    flags: tuple[str, ...],
    select: tuple[str, ...],
    diff: bool,
    exclude: tuple[str, ...],
    jobs: int | None,
    no_cache: bool,
    quiet: bool,
) -> None:
    """Repair the setters of FLAG: reset in `finally` (FT101), restore the previous value (FT102).

    Exit 1 when there is something to fix (with --write: something it could not fix)."""
    from flagtrace.fix import run_fix

    raise SystemExit(
        run_fix(
            paths,
            flags,
            select,
            write=not diff,
            exclude=exclude,
            jobs=jobs,
            use_cache=not no_cache,
            quiet=quiet,
        )
    )


@cli.group("cache")
def cache_group() -> None:
    """Inspect or empty the cache of per-file summaries."""


@cache_group.command("info")
@_cache_dir_option
def cache_info_cmd(cache_dir: Path | None) -> None:
    """Show the cache directory, its entries, size and summary formats."""
    from flagtrace.cache import SummaryCache

    click.echo(SummaryCache(cache_dir).info().render(), nl=False)


@cache_group.command("clear")
@_cache_dir_option
def cache_clear_cmd(cache_dir: Path | None) -> None:
    """Delete every cached summary (other files in the directory are left alone)."""
    from flagtrace.cache import SummaryCache

    cache = SummaryCache(cache_dir)
    try:
        removed = cache.clear()
    except OSError as exc:
        raise FlagtraceError(f"cannot clear the cache: {exc.strerror or exc}") from None
    click.echo(f"flagtrace: removed {removed} cache entries from {cache.directory}")


@cli.command("scan")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(SCAN.names()), default="rich", show_default=True)
@_common_options
def scan_cmd(
    paths: tuple[Path, ...],
    fmt: str,
    exclude: tuple[str, ...],
    jobs: int | None,
    output: Path | None,
    quiet: bool,
    jedi_budget: float | None,
    cache_dir: Path | None,
    no_cache: bool,
    follow_external_symlinks: bool,
) -> None:
    """List every flag in PATHS (module globals written from a function), riskiest first.

    Exit 1 when any flag has a hazard. --jedi-budget is accepted and unused: the
    inventory resolves calls without jedi, to answer in seconds."""
    from flagtrace.api import scan

    config = _config(paths)
    status = _run_status(quiet)
    report = scan(
        [str(p) for p in paths],
        exclude=(*config.exclude, *exclude),
        jobs=jobs if jobs is not None else config.jobs,
        cache=_cache(cache_dir, no_cache),
        on_start=status.on_start,
        on_result=status.on_result,
        follow_external_symlinks=follow_external_symlinks,
    )
    status.close()
    if not report.files and not report.errors:
        raise FlagtraceError("no Python files to analyse in " + ", ".join(str(p) for p in paths))
    reporter = SCAN[fmt]
    _write(reporter.render(report, _render_options(output)), output)
    if not reporter.human or output is not None:
        _print_diagnostics(report.errors)
    if not quiet:
        click.echo(status.summary(len(report.errors)), err=True)
    raise SystemExit(scan_exit_code(report))


def scan_exit_code(report: ScanReport) -> ExitCode:
    """2 if anything could not be analysed, else 1 if any flag has a hazard, else 0."""
    if report.errors:
        return ExitCode.ERROR
    return ExitCode.FINDINGS if any(f.hazards for f in report.flags) else ExitCode.CLEAN


@cli.command("review")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--base",
    required=True,
    metavar="REV",
    help="The revision the change starts from (a commit, branch, tag, HEAD~1...).",
)
@click.option(
    "--head",
    default=None,
    metavar="REV",
    help="The revision the change ends at (default: the work tree as it is, dirty files included).",
)
@click.option(
    "--flag",
    "flags",
    multiple=True,
    metavar="NAME",
    help="Flag to compare (repeatable; default: [tool.flagtrace] flags, else every flag "
    "either side has).",
)
@click.option(
    "--entry",
    "entries",
    multiple=True,
    metavar="QUALNAME",
    help="Entry point to judge, or an fnmatch pattern (repeatable); default: discover them.",
)
@click.option(
    "--read",
    "reads",
    multiple=True,
    metavar="QUALNAME",
    help="Only count reads in this function (repeatable).",
)
@click.option(
    "--include-tests",
    is_flag=True,
    help="Discover entry points in tests too (test modules, test_* functions, Test* classes).",
)
@click.option(
    "--assume",
    "assume",
    multiple=True,
    metavar="FACT",
    help="Judge both sides under PATH=VALUE (repeatable; adds to [tool.flagtrace] assume).",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="CODES",
    help="Drop findings with these codes, comma-separated (repeatable; adds to "
    "[tool.flagtrace] ignore).",
)
@click.option(
    "--format", "fmt", type=click.Choice(REVIEW.names()), default="rich", show_default=True
)
@click.option(
    "--link-base",
    default=None,
    metavar="URL",
    help="Link lines in the github format under URL (the head's blob URL, e.g. "
    "https://github.com/O/R/blob/SHA); default in GitHub Actions: from GITHUB_SERVER_URL, "
    "GITHUB_REPOSITORY and the head commit.",
)
@_common_options
def review_cmd(
    paths: tuple[Path, ...],
    base: str,
    head: str | None,
    flags: tuple[str, ...],
    entries: tuple[str, ...],
    reads: tuple[str, ...],
    include_tests: bool,
    assume: tuple[str, ...],
    ignore: tuple[str, ...],
    fmt: str,
    link_base: str | None,
    exclude: tuple[str, ...],
    jobs: int | None,
    output: Path | None,
    quiet: bool,
    jedi_budget: float | None,
    cache_dir: Path | None,
    no_cache: bool,
    follow_external_symlinks: bool,
) -> None:
    """What a change does to the flags: findings the head has and the base had not (new),
    and the other way round (fixed), each on the changed line that causes it.

    Exit 0 when the change brings no new finding, 1 when it does, 2 on a usage or
    input error (not a git repository, a revision that names no commit)."""
    from flagtrace.review import Progress, ReviewError, ReviewOptions, exit_status, review

    config = _config(paths)
    options = ReviewOptions(
        flags=tuple(flags or config.flags),
        entries=entries,
        configured_entries=tuple(config.entries),
        reads=(*config.reads, *reads),
        include_tests=include_tests or config.include_tests,
        exclude=(*config.exclude, *exclude),
        jobs=jobs if jobs is not None else config.jobs,
        jedi_budget=jedi_budget if jedi_budget is not None else config.jedi_budget,
        ignore=_ignored_codes(config.ignore, ignore, config.source),
        follow_external_symlinks=follow_external_symlinks,
        assume=_facts((*config.assume, *assume)),
    )
    status = _run_status(quiet)
    try:
        report = review(
            [str(p) for p in paths],
            base,
            head,
            options,
            cache=_cache(cache_dir, no_cache),
            progress=Progress(status.on_start, status.on_result, status.on_reused),
        )
    except ReviewError as exc:
        raise FlagtraceError(str(exc)) from None
    status.close()
    reporter = REVIEW[fmt]
    if link_base is None:
        from flagtrace.report.review_github import default_link_base

        link_base = default_link_base(os.environ, report.head_commit)
    render_options = replace(_render_options(output), link_base=link_base)
    _write(reporter.render(report, render_options), output)
    _print_warnings(reporter.warnings(report))
    if not reporter.human or output is not None:
        _print_diagnostics(report.errors)
    if not quiet:
        click.echo(
            status.summary(len(report.errors), f"{len(report.new)} new, {len(report.fixed)} fixed"),
            err=True,
        )
    raise SystemExit(exit_status(report))


@cli.command("explain")
@click.argument("code", required=False)
def explain_cmd(code: str | None) -> None:
    """Explain finding CODE (e.g. FT101) with a bad and a fixed example; no CODE: list them all."""
    from flagtrace.rules import BY_CODE, EXAMPLE_FLAG

    if code is None:
        for listed in BY_CODE.values():
            click.echo(f"{listed.code}  {listed.summary}")
        return
    rule = BY_CODE.get(code.strip().upper())
    if rule is None:
        raise FlagtraceError(f"unknown code {code!r} (known: {', '.join(BY_CODE)})")
    import textwrap

    def block(source: str) -> str:
        return textwrap.indent(source.rstrip("\n"), "    ")

    click.echo(
        f"{rule.code}: {rule.summary}\n\n"
        f"{textwrap.fill(rule.explanation, 88)}\n\n"
        f"Example (`flagtrace example.py --flag {EXAMPLE_FLAG}` reports {rule.code}):\n\n"
        f"{block(rule.bad)}\n\n"
        f"Fixed:\n\n{block(rule.fixed)}"
    )


def exit_code_for(report: AnalysisReport) -> ExitCode:
    """2 if anything could not be analysed, else 1 if anything was found, else 0."""
    if report.errors:
        return ExitCode.ERROR
    found = any(e.observes_set for f in report.flags for e in f.entries) or any(
        f.hazards for f in report.flags
    )
    return ExitCode.FINDINGS if found else ExitCode.CLEAN


def _print_diagnostics(diagnostics: Sequence[Diagnostic]) -> None:
    for d in diagnostics:
        click.echo(f"flagtrace: error: {d}", err=True)


def _print_warnings(warnings: Iterable[str]) -> None:
    """What a reporter tells about what it wrote; printed with ``--quiet`` too, as the
    errors are: a log that an upload will cut or refuse is not progress."""
    for line in warnings:
        click.echo(f"flagtrace: warning: {line}", err=True)


def _render_options(output: Path | None, witnesses: int | None = 3) -> RenderOptions:
    """What the report's destination can show, as rich sees it: a file gets plain text
    120 columns wide (``COLUMNS`` if set); stdout the terminal's width and colours (none
    when it is a pipe), with rich's environment overrides (``COLUMNS``, ``NO_COLOR``,
    ``FORCE_COLOR``...)."""
    from rich.console import Console

    if output is None:
        console = Console()
    else:
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else 120
        console = Console(file=io.StringIO(), width=width, no_color=True)
    terminals: dict[str | None, Terminal] = {name: name for name in get_args(Terminal)}
    return RenderOptions(
        width=console.width,
        terminal=terminals.get(console.color_system),
        color=not console.no_color,
        witnesses=witnesses,
    )


def _write(chunks: Iterable[str], output: Path | None) -> None:
    """Write a report as it is rendered, piece by piece (large call graphs are streamed)."""
    if output is None:
        try:
            sys.stdout.writelines(chunks)
            sys.stdout.flush()
        except BrokenPipeError:
            # click turns an EPIPE it sees into exit code 1, which here means
            # "findings"; ``main`` gives a closed stdout its own handling
            raise _StdoutClosed from None
        return
    try:
        with output.open("w", encoding="utf-8") as out:
            out.writelines(chunks)
    except OSError as exc:
        raise FlagtraceError(f"{output}: cannot write report: {exc.strerror or exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting (tests call this)."""
    try:
        cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="flagtrace",
            standalone_mode=False,
        )
    except FlagtraceError as exc:
        click.echo(f"flagtrace: error: {exc}", err=True)
        return ExitCode.ERROR
    except click.exceptions.Abort:
        click.echo("flagtrace: aborted", err=True)
        return ExitCode.ERROR
    except click.ClickException as exc:
        exc.show()
        return ExitCode.ERROR
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else ExitCode.ERROR
    except KeyboardInterrupt:
        return 130
    except (
        BrokenPipeError,
        _StdoutClosed,
    ):  # the reader of stdout went away (``flagtrace ... | head``)
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so the exit flush does not fail again
        except OSError:
            pass
        return ExitCode.ERROR
    except Exception as exc:  # a bug in flagtrace, not in the user's input
        if os.environ.get("FLAGTRACE_DEBUG"):
            raise
        click.echo(
            f"flagtrace: internal error: {type(exc).__name__}: {exc} "
            "(set FLAGTRACE_DEBUG=1 for a traceback, and please report it)",
            err=True,
        )
        return ExitCode.INTERNAL
    return ExitCode.CLEAN


def run() -> NoReturn:
    """The ``flagtrace`` command (console script and ``python -m flagtrace``):
    ``main``, then its output flushed and the process left at once.

    Why not ``sys.exit``: interpreter shutdown frees, one by one, what the
    modules still refer to (a loaded program's tables, the memo caches), and
    that cost about 0.3 s after a new question on SGLang 0.5.9 (a tenth of the
    run) to give the memory back to a process that is ending anyway (mypy
    leaves the same way). Nothing is left to finish: every file flagtrace
    writes is closed, and every worker and temporary directory released,
    before ``main`` returns; no ``atexit`` hook of ours or of a library we use
    has work left then. Tests call ``main``, which returns.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away, or the stream was closed
            if stream is sys.stdout and code == ExitCode.CLEAN:
                code = ExitCode.ERROR  # as ``main`` says when the reader goes away earlier
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
