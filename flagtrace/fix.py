"""``flagtrace fix``: repair the setters the analysis flags, with libcst codemods.

FT101 (the reset is not in ``finally``) and FT102 (the reset writes a constant
instead of the previous value) have one mechanical fix each, and it is easy to
get subtly wrong by hand: SGLang 0.5.9's ``enable_piecewise_cuda_graph`` had
both, and was fixed one release later. This module asks the analysis which
setters have them (``flagtrace.api.analyze``), hands each file's setters to
``flagtrace.fix_rewrite``, and shows the result as a unified diff or writes it.

Only a few fields of the report are read (the flag's ``qualname``; a hazard's
``code``, ``function`` and ``location``; a setter's ``function``, ``kind`` and
``location``), so the engine's types can change around them.

Writing is careful because the files are the user's: each file is written
atomically (a temporary file in the same directory, then ``os.replace``) with
its mode and its bytes' encoding kept (libcst re-encodes what it parsed), and a
file is refused when it changed since it was analysed: either during the
analysis (its ``stat`` differs from the one taken before) or between the plan
and the write (its bytes differ from the ones the plan was made from).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import stat
import sys
import tempfile
import time
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from flagtrace import parseguard
from flagtrace.api import analyze
from flagtrace.cache import SummaryCache
from flagtrace.config import ConfigError, find_pyproject, load_config
from flagtrace.fix_class import ClassUses
from flagtrace.fix_cst import FT101, FT102
from flagtrace.fix_rewrite import Repair, Rewritten, rewrite
from flagtrace.model import AnalysisReport

#: The hazards ``flagtrace fix`` repairs, in the order it lists them.
FIXABLE = (FT101, FT102)


class FixError(Exception):
    """A usage or input problem: one line on stderr, exit code 2."""


@dataclass(frozen=True, slots=True)
class NotFixed:
    """A setter with a fixable hazard that was left as it was, and why."""

    path: str
    line: int
    function: str
    codes: tuple[str, ...]
    reason: str

    def __str__(self) -> str:
        codes = ", ".join(self.codes)
        return f"{self.path}:{self.line}: {self.function}: not fixed ({codes}): {self.reason}"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's repair: its bytes before (as read after the analysis) and after."""

    path: str  # as the analysis reports it (relative paths stay relative)
    before: bytes
    after: bytes
    functions: tuple[str, ...]  # the setters repaired in it

    def diff(self) -> str:
        """A unified diff; a relative path is labelled ``a/PATH`` and ``b/PATH``, as
        ``git apply`` and ``patch -p1`` read it, an absolute one as itself."""
        encoding = _encoding(self.before)
        old = self.before.decode(encoding).splitlines(keepends=True)
        new = self.after.decode(encoding).splitlines(keepends=True)
        relative = not os.path.isabs(self.path)
        a, b = (f"a/{self.path}", f"b/{self.path}") if relative else (self.path, self.path)
        lines = difflib.unified_diff(old, new, a, b)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True, slots=True)
class FixPlan:
    """What ``fix`` would change; nothing is written until :func:`write_changes`."""

    changes: tuple[FileChange, ...]
    not_fixed: tuple[NotFixed, ...]
    errors: tuple[str, ...]  # analysis and input errors, one line each
    fixed: int  # setters repaired across all changes

    @property
    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)


def parse_select(values: Sequence[str]) -> tuple[str, ...]:
    """``--select FT101,FT102`` (repeatable, any case) -> the codes, in FIXABLE order."""
    if not values:
        return FIXABLE
    chosen = {v.strip().upper() for value in values for v in value.split(",") if v.strip()}
    unknown = sorted(chosen - set(FIXABLE))
    if unknown or not chosen:
        raise FixError(
            f"--select: flagtrace fix repairs {' and '.join(FIXABLE)} "
            f"(got {', '.join(unknown) or 'nothing'})"
        )
    return tuple(c for c in FIXABLE if c in chosen)


# ------------------------------------------------------------------------------ planning


def plan_fixes(
    paths: Sequence[str | os.PathLike[str]],
    flags: Sequence[str],
    *,
    select: Sequence[str] = FIXABLE,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    cache: SummaryCache | None = None,
) -> FixPlan:
    """Analyse ``flags`` under ``paths`` and compute the repair of every setter
    with a hazard in ``select``; change nothing on disk."""
    before = _Snapshot.take(paths)
    report = analyze(paths, flags, exclude=exclude, jobs=jobs, cache=cache)
    errors = tuple(str(d) for d in report.errors)
    by_path, not_fixed = _repairs(report, frozenset(select))
    uses = ClassUses(before.sources)
    changes: list[FileChange] = []
    fixed = 0
    for path in sorted(by_path):
        repairs = by_path[path]
        try:
            source = before.read_unchanged(path)
        except FixError as exc:
            not_fixed.extend(_refused(path, r, str(exc)) for r in repairs)
            continue
        try:
            careful = parseguard.check(source).careful
        except parseguard.SourceProblem as exc:
            not_fixed.extend(_refused(path, r, exc.message) for r in repairs)
            continue

        def run(source: bytes = source, repairs: list[Repair] = repairs) -> Rewritten:
            return rewrite(source, repairs, uses.may_reenter)

        # deep files are parsed on a big stack, as the analysis parsed them
        result = parseguard.run_with_big_stack(run, fallback=None) if careful else run()
        done = [o.repair for o in result.outcomes if o.refused is None]
        not_fixed.extend(
            _refused(path, o.repair, o.refused) for o in result.outcomes if o.refused is not None
        )
        if not done or result.code == source:
            continue
        broken = _does_not_compile(source, result.code, path)
        if broken:  # never hand out code that does not compile; this is a bug in fix
            not_fixed.extend(_refused(path, r, broken) for r in done)
            continue
        fixed += len(done)
        changes.append(FileChange(path, source, result.code, tuple(r.function for r in done)))
    not_fixed.sort(key=lambda n: (n.path, n.line, n.function))
    return FixPlan(tuple(changes), tuple(not_fixed), errors, fixed)


def _repairs(
    report: AnalysisReport, select: frozenset[str]
) -> tuple[dict[str, list[Repair]], list[NotFixed]]:
    """The setters to repair, per file, from the report's hazards and setters."""
    by_path: dict[str, list[Repair]] = {}
    not_fixed: list[NotFixed] = []
    for flag in report.flags:
        name = flag.qualname.rpartition(".")[2]
        setters = {s.function: s for s in flag.setters}
        hazards: dict[str, list[tuple[str, str, int]]] = {}
        for h in flag.hazards:
            if h.code in select:
                hazards.setdefault(h.function, []).append(
                    (h.code, h.location.path, h.location.line)
                )
        for function, found in hazards.items():
            codes = frozenset(code for code, _, _ in found)
            line = min(line for _, _, line in found)
            setter = setters.get(function)
            if setter is None:
                reason = "the analysis lists no setter for it"
                not_fixed.append(NotFixed(found[0][1], line, function, _sorted(codes), reason))
                continue
            repair = Repair(function, _text(setter.kind), name, setter.location.line, codes, line)
            by_path.setdefault(setter.location.path, []).append(repair)
    return by_path, not_fixed


def _text(kind: object) -> str:
    """A setter kind as text, whether the engine gives a string or an enum."""
    return str(getattr(kind, "value", kind))


def _sorted(codes: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(codes))


def _refused(path: str, repair: Repair, reason: str) -> NotFixed:
    return NotFixed(path, repair.line, repair.function, _sorted(repair.codes), reason)


def _does_not_compile(before: bytes, after: bytes, path: str) -> str | None:
    try:
        compile(before, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None  # newer syntax than this Python knows: nothing to compare with
    try:
        compile(after, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"internal error: the repaired file would not compile ({exc}); please report it"
    return None


def _encoding(source: bytes) -> str:
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError:
        return "utf-8"


# ------------------------------------------------------------------------------ the files


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """``stat`` of every Python file under the paths, taken before the analysis,
    so a file changed while it was analysed is refused rather than repaired from
    a report about other code."""

    stats: dict[str, tuple[int, int, int]]  # real path -> (mtime_ns, size, inode)
    started_ns: int

    @classmethod
    def take(cls, paths: Sequence[str | os.PathLike[str]]) -> _Snapshot:
        started = time.time_ns()
        stats: dict[str, tuple[int, int, int]] = {}
        for file in _python_files(paths):
            try:
                st = os.stat(file)
            except OSError:
                continue
            stats[os.path.realpath(file)] = (st.st_mtime_ns, st.st_size, st.st_ino)
        return cls(stats, started)

    def sources(self) -> Iterator[bytes]:
        """The files' current bytes (what the class-instance scan reads)."""
        for file in sorted(self.stats):
            try:
                yield Path(file).read_bytes()
            except OSError:
                continue

    def read_unchanged(self, path: str) -> bytes:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
            data = Path(real).read_bytes()
        except OSError as exc:
            raise FixError(f"cannot read it: {exc.strerror or exc}") from None
        known = self.stats.get(real)
        changed = (
            known != (st.st_mtime_ns, st.st_size, st.st_ino)
            if known is not None
            else st.st_mtime_ns >= self.started_ns
        )
        if changed:
            raise FixError("the file changed while it was analysed; run flagtrace fix again")
        return data


def _python_files(paths: Sequence[str | os.PathLike[str]]) -> Iterator[str]:
    for path in paths:
        top = os.fspath(path)
        if os.path.isfile(top):
            yield top
            continue
        for directory, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in (".git", ".hg", "__pycache__"))
            yield from (os.path.join(directory, f) for f in sorted(files) if f.endswith(".py"))


def write_changes(plan: FixPlan) -> list[str]:
    """Write every change; the one-line errors of those that could not be written."""
    return [e for e in (_write(c) for c in plan.changes) if e is not None]


def _write(change: FileChange) -> str | None:
    real = os.path.realpath(change.path)  # through a symlink, not over it
    try:
        if Path(real).read_bytes() != change.before:
            return f"{change.path}: changed since it was analysed; not written"
        mode = stat.S_IMODE(os.stat(real).st_mode)
        fd, tmp = tempfile.mkstemp(
            prefix=".flagtrace-", suffix=".tmp", dir=os.path.dirname(real) or "."
        )
    except OSError as exc:
        return f"{change.path}: cannot write: {exc.strerror or exc}"
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(change.after)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return f"{change.path}: cannot write: {exc.strerror or exc}"
    return None


# ------------------------------------------------------------------------------ the command


def run_fix(
    paths: Sequence[str | os.PathLike[str]],
    flags: Sequence[str] = (),
    select: Sequence[str] = (),
    *,
    write: bool = False,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    use_cache: bool = True,
    quiet: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """``flagtrace fix``: print the diff (or write the files); the exit code.

    0: nothing to fix. 1: something to fix: a diff was printed, or a setter could
    not be fixed (with ``--write``, only the latter). 2: a usage or input error
    (an unknown flag, a file that does not parse or could not be written)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        codes = parse_select(select)
        config = _config(paths)
        flags = tuple(flags) or config.flags
        if not flags:
            raise FixError("no flag to fix: pass --flag NAME (or set flags in [tool.flagtrace])")
    except FixError as exc:
        print(f"flagtrace: error: {exc}", file=err)
        return 2
    plan = plan_fixes(
        [os.fspath(p) for p in paths],
        flags,
        select=codes,
        exclude=(*config.exclude, *exclude),
        jobs=jobs if jobs is not None else config.jobs,
        cache=SummaryCache(None, enabled=use_cache),
    )
    errors = list(plan.errors)
    if write:
        errors.extend(write_changes(plan))
    else:
        out.write(plan.diff)
        out.flush()
    for e in errors:
        print(f"flagtrace: error: {e}", file=err)
    for n in plan.not_fixed:
        print(f"flagtrace: {n}", file=err)
    if not quiet and (plan.changes or plan.not_fixed or not errors):
        print(f"flagtrace: {_summary(plan, write)}", file=err)
    if errors:
        return 2
    return 1 if plan.not_fixed or (plan.changes and not write) else 0


def _config(paths: Sequence[str | os.PathLike[str]]) -> _Config:
    try:
        config = load_config(find_pyproject([Path(p) for p in paths]))
    except ConfigError as exc:
        raise FixError(str(exc)) from None
    return _Config(config.flags, config.exclude, config.jobs)


@dataclass(frozen=True, slots=True)
class _Config:
    flags: tuple[str, ...]
    exclude: tuple[str, ...]
    jobs: int | None


def _summary(plan: FixPlan, written: bool) -> str:
    files = len(plan.changes)
    parts = []
    if plan.fixed:
        verb = "fixed" if written else "would fix"
        parts.append(
            f"{verb} {_count(plan.fixed, 'setter')} in {_count(files, 'file')}"
            + ("" if written else " (--write to apply)")
        )
    if plan.not_fixed:
        parts.append(f"{len(plan.not_fixed)} not fixed")
    return "; ".join(parts) or "nothing to fix"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
