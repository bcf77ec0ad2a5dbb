"""``flagtrace review``: what a change (base revision to head) does to the flags.

The stages, each handing the next a frozen value:

1. ``gitrepo``: the repository root, the revisions verified as commits, the diff
   (head line numbers added or changed per file), a temporary checkout of the
   base (and of ``--head`` when given; by default the head is the work tree as it
   is, dirty and untracked files included).
2. ``_analyse``: the same ``api.analyze`` on both sides, run from each side's root
   with repository-relative paths, so that every ``Location`` is
   repository-relative on both sides and the summary cache, whose key holds the
   path, serves the base's unchanged files from the head's entries (and the other
   way round): once warm, the base costs only the files that differ.
3. ``compare``: findings matched by fingerprint as multisets (``NEW`` head-only,
   ``FIXED`` base-only), readers and setters by (function, normalised line text),
   each new finding anchored on the changed line that causes it.

Why chdir into each side rather than rewriting paths afterwards: the paths go
into cache keys, witness steps, guards, diagnostics; rewriting each after the
fact would miss the next field someone adds, and would leave the cache keyed by
the random temporary directory (a miss every run). The working directory is
restored when a side is done, and worker processes are forked inside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from flagtrace.fingerprint import SourceLines
from flagtrace.gitrepo import GitError, checkout, diff, repo_root, untracked
from flagtrace.gitrepo import verify_commit as _verify
from flagtrace.model import AnalysisReport, Diagnostic, IndexResult, ReviewReport
from flagtrace.review_compare import Changed, Side, Spans, compare, inside

if TYPE_CHECKING:
    from flagtrace.cache import SummaryCache

#: how an error of the base side starts in ``ReviewReport.errors`` (it does not fail the run)
BASE_ERROR = "in the base: "


class ReviewError(Exception):
    """A usage or input problem (not a git repository, a bad revision, a path outside the
    repository): one line, exit code 2."""


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """What both sides are analysed with; the same meaning as for ``check``."""

    flags: tuple[str, ...] = ()  # none: every flag either side has
    entries: tuple[str, ...] = ()
    configured_entries: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    include_tests: bool = False
    exclude: tuple[str, ...] = ()
    jobs: int | None = None
    jedi_budget: float = 0.0
    ignore: frozenset[str] = frozenset()
    follow_external_symlinks: bool = False
    assume: tuple[str, ...] = ()  # ``--assume`` facts (from [tool.flagtrace] assume)


@dataclass(frozen=True, slots=True)
class Progress:
    """The CLI's progress callbacks, called for each side in turn."""

    on_start: Callable[[int], None] | None = None
    on_result: Callable[[IndexResult], None] | None = None
    on_reused: Callable[[int, int], None] | None = None


# ----------------------------------------------------------------------------- orchestration


def review(
    paths: Sequence[str | os.PathLike[str]],
    base: str,
    head: str | None = None,
    options: ReviewOptions | None = None,
    *,
    cache: SummaryCache | None = None,
    progress: Progress | None = None,
    cwd: Path | None = None,
) -> ReviewReport:
    """Review the change from ``base`` to ``head`` (None: the work tree) under ``paths``
    (relative to ``cwd``, default the working directory). ``ReviewError`` for usage and
    input problems; the analysis's own problems become ``errors`` of the report."""
    start = time.perf_counter()
    options = options or ReviewOptions()
    progress = progress or Progress()
    here = (cwd or Path.cwd()).resolve()
    try:
        root = repo_root(here)
        base_commit = _verify(root, base, "--base")
        head_commit = _verify(root, head, "--head") if head is not None else None
    except GitError as exc:
        raise ReviewError(str(exc)) from None
    relative = _relative_paths(paths, here, root)
    try:
        changed = Changed(
            diff(root, base_commit, head_commit),
            frozenset(untracked(root)) if head_commit is None else frozenset(),
        )
        with _tree(root, head_commit) as head_root, checkout(root, base_commit) as base_root:
            flags = options.flags or _every_flag(relative, (head_root, base_root), options, cache)
            # a checked-out side's manifest is kept under a name of the repository's, not
            # of the temporary directory (which is new every time)
            head_name = None if head_commit is None else f"{root}@head"
            head_side = _analyse(head_root, relative, flags, options, cache, progress, head_name)
            base_side = _analyse(
                base_root, relative, flags, options, cache, progress, f"{root}@base"
            )
            found, changes = compare(base_side, head_side, changed, Spans(head_root, cache))
    except GitError as exc:
        raise ReviewError(str(exc)) from None
    compared = sorted(
        {f.qualname for f in head_side.report.flags} | {f.qualname for f in base_side.report.flags}
    )
    return ReviewReport(
        base=base,
        base_commit=base_commit,
        head=head,
        head_commit=head_commit,
        flags=tuple(compared),
        findings=found,
        changes=changes,
        changed_files=changed.paths,
        errors=_errors(base_side, head_side, flags),
        seconds=time.perf_counter() - start,
    )


def _relative_paths(
    paths: Sequence[str | os.PathLike[str]], here: Path, root: Path
) -> tuple[str, ...]:
    """``paths`` relative to the repository root (``.`` for the root itself)."""
    out = []
    for p in paths:
        full = (here / os.fspath(p)).resolve()
        try:
            rel = full.relative_to(root)
        except ValueError:
            raise ReviewError(f"{p}: not inside the repository {root}") from None
        if not full.exists():
            raise ReviewError(f"{p}: no such file or directory")
        out.append(rel.as_posix() if rel.parts else ".")
    return tuple(out)


@contextmanager
def _tree(root: Path, commit: str | None) -> Iterator[Path]:
    """The head's tree: the work tree itself, or a temporary checkout of ``commit``."""
    if commit is None:
        yield root
        return
    with checkout(root, commit) as tree:
        yield tree


def _every_flag(
    paths: Sequence[str],
    roots: Sequence[Path],
    options: ReviewOptions,
    cache: SummaryCache | None,
) -> tuple[str, ...]:
    """No flag configured: every flag either side has (those ``flagtrace scan``
    lists; their names only, the scan's hazard checks are not run)."""
    from flagtrace.api import flag_names

    names: set[str] = set()
    for root in roots:
        with inside(root):
            names.update(
                flag_names(
                    paths,
                    exclude=options.exclude,
                    jobs=options.jobs,
                    cache=cache,
                    follow_external_symlinks=options.follow_external_symlinks,
                )
            )
    return tuple(sorted(names))


def _analyse(
    root: Path,
    paths: Sequence[str],
    flags: Sequence[str],
    options: ReviewOptions,
    cache: SummaryCache | None,
    progress: Progress,
    manifest_root: str | None = None,
) -> Side:
    """``check`` of one side, its suppressions applied (a finding silenced by a
    ``# flagtrace: ignore`` comment is silenced on that side, so adding one reads as a
    fix of it), its source lines read from its own tree."""
    from flagtrace.api import analyze, filter_report

    lines = SourceLines(root)
    if not flags:
        return Side(root, AnalysisReport((), ()), lines)
    with inside(root):
        report = analyze(
            paths,
            flags,
            options.entries,
            exclude=options.exclude,
            jobs=options.jobs,
            reads=options.reads,
            jedi_budget=options.jedi_budget,
            configured_entries=options.configured_entries,
            include_tests=options.include_tests,
            on_start=progress.on_start,
            on_result=progress.on_result,
            on_reused=progress.on_reused,
            cache=cache,
            follow_external_symlinks=options.follow_external_symlinks,
            manifest_root=manifest_root,
            assume=options.assume,
        )
    return Side(root, filter_report(report, ignore=options.ignore, lines=lines), lines)


def _missing_flag(d: Diagnostic, flags: Sequence[str]) -> str | None:
    """The flag a "no such variable" diagnostic is about, if it is one."""
    if d.path != "<flag>":
        return None
    return next(
        (f for f in flags if d.message.startswith(f"no module-level variable named {f!r}")), None
    )


def _errors(base: Side, head: Side, flags: Sequence[str]) -> tuple[Diagnostic, ...]:
    """The head's errors, then the base's that the head has not (marked ``BASE_ERROR``).

    A flag that only one side has is what a change that adds or removes a flag looks
    like, not an error; a flag neither side has is one (the head's)."""
    missing_in_base = {_missing_flag(d, flags) for d in base.report.errors} - {None}
    out = [
        d
        for d in head.report.errors
        if (name := _missing_flag(d, flags)) is None or name in missing_in_base
    ]
    seen = {(d.path, d.line, d.message) for d in head.report.errors}
    out.extend(
        replace(d, message=BASE_ERROR + d.message)
        for d in base.report.errors
        if (d.path, d.line, d.message) not in seen and _missing_flag(d, flags) is None
    )
    return tuple(out)


def exit_status(report: ReviewReport) -> int:
    """2 when the head could not be analysed, else 1 when the change brings new findings,
    else 0. Errors of the base alone do not fail a review: the change may fix them."""
    if any(not d.message.startswith(BASE_ERROR) for d in report.errors):
        return 2
    return 1 if report.new else 0
