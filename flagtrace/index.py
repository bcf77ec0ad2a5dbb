"""Index: files -> ``IndexResult``s, one process or a pool, through the cache.

The driver around ``flagtrace.summarize``: it reads each file (within the size
limit), runs the summary walk under ``flagtrace.parseguard``'s protections,
turns every failure into a one-line ``Diagnostic``, fans files out to worker
processes, and reads and writes the per-file summary cache
(``flagtrace.cache``). It never touches a CST node itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from flagtrace.memory import collect_chunk, gc_paused, indexing_worker
from flagtrace.model import (
    INDEXER_SOURCES,
    SUMMARY_FORMAT,
    Diagnostic,
    Guard,
    IndexResult,
    Location,
    ModuleSummary,
    Scope,
    SourceFile,
)

if TYPE_CHECKING:
    from flagtrace.cache import SummaryCache


def summarize_source(source: SourceFile, data: bytes) -> ModuleSummary:
    """``summarize.summarize_source``, imported on first use: the CST walk (and
    libcst) load only in a run that parses a file."""
    from flagtrace.summarize import summarize_source as summarize

    return summarize(source, data)


__all__ = [
    "INDEXER_SOURCES",
    "SUMMARY_FORMAT",
    "index_file",
    "index_many",
    "read_keyed",
    "summarize_source",
    "summary_digest",
]

#: The fields that say where something is: zeroed in a summary's shape
#: (``summary_digests``). ``lines`` is the module's line count.
_POSITION_FIELDS = frozenset({"line", "column", "end_line", "lines"})

#: What a reducer of ``pickle``'s dispatch table returns: a callable and its arguments
_Reduced = tuple[Callable[..., object], tuple[object, ...]]

#: Called with each result as it comes (for progress), cached or not.
OnResult = Callable[[IndexResult], None]


def summary_digest(summary: ModuleSummary) -> str:
    """A digest of everything in ``summary`` but its line count (``summary_digests``)."""
    return summary_digests(summary)[0]


def summary_digests(summary: ModuleSummary) -> tuple[str, str]:
    """Two digests of ``summary``: of everything in it but its line count, and of
    its *shape*: everything but where things are (lines and columns).

    Why the first: the whole-run result cache (``flagtrace.results``) reuses a
    report when every file's summary is unchanged, which survives edits that
    change no summary (comments, trailing lines, text of unused literals). The
    line count is left out (with the module scope's end line, which is the same
    number): it only feeds the totals, which are recomputed.

    Why the shape: resolution never reads a position (``flagtrace.resolve``
    reads no ``Location``, end line or guard line), so a resolved program
    stored for one tree serves every tree of the same shapes
    (``flagtrace.program_store``): a comment or a blank line added above a
    function, which moves every line below it, no longer re-resolves the whole
    program. Reports quote positions, so they stay keyed by the first digest.

    One pickle makes both: records that hold a position are written with it
    zeroed (the shape), and the positions are hashed apart, in the order the
    pickler met them, which the shape fixes. Summaries hold tuples, never sets,
    so the pickle of a freshly built one is deterministic; were it not, two
    equal summaries would only miss, never collide. (Only a fresh one: a
    summary loaded from the cache shares its equal records,
    ``cache.Interning``, and pickles to other bytes.)
    """
    import copyreg
    import dataclasses
    import hashlib
    import io
    import pickle
    from functools import partial

    positions: list[int] = []
    module_scope = summary.scopes[0]

    def zeroed(cls: type, names: tuple[str, ...], record: object, kept: bool) -> _Reduced:
        values = []
        for name in names:
            value = getattr(record, name)
            if name in _POSITION_FIELDS:
                if kept:
                    positions.append(value)
                value = 0
            values.append(value)
        return (cls, tuple(values))

    reducers: dict[type, Callable[[object, bool], _Reduced]] = {
        cls: partial(zeroed, cls, tuple(f.name for f in dataclasses.fields(cls)))
        for cls in (Guard, Scope, ModuleSummary)
    }

    def reduce(record: object) -> _Reduced:
        # the module's end line is its line count, as ``lines`` is: left out of both
        kept = record is not module_scope and type(record) is not ModuleSummary
        return reducers[type(record)](record, kept)

    def location(loc: Location) -> _Reduced:  # the most common: kept short
        positions.extend((loc.line, loc.column))
        return (Location, (loc.path, 0, 0))

    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.dispatch_table = {
        **copyreg.dispatch_table,
        **dict.fromkeys(reducers, reduce),
        Location: location,
    }
    pickler.dump(summary)
    shape = hashlib.sha256(out.getvalue())
    whole = shape.copy()
    whole.update(b"\0positions\0")
    whole.update(repr(positions).encode("ascii"))
    return whole.hexdigest(), shape.hexdigest()


def index_file(source: SourceFile, data: bytes | None = None) -> IndexResult:
    """Index one file; any problem becomes a one-line ``Diagnostic``: the path,
    the line where known, and what is wrong (unreadable, too large, not text,
    nested too deep to parse safely, a syntax error, or a bug in flagtrace on
    this file). Nothing escapes but ``KeyboardInterrupt`` and ``SystemExit``."""
    import os

    from flagtrace import parseguard

    def problem(line: int | None, message: str) -> IndexResult:
        return IndexResult(source, None, Diagnostic(source.path, line, message))

    limit = parseguard.max_file_bytes()
    try:
        if data is None:
            with open(source.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size > limit:
                    return problem(None, parseguard.too_large(size, limit))
                data = fh.read(limit + 1)
    except IsADirectoryError:
        return problem(None, "is a directory, not a Python file")
    except OSError as exc:
        return problem(None, f"cannot read file: {(exc.strerror or str(exc)).lower()}")
    if len(data) > limit:
        return problem(None, parseguard.too_large(len(data), limit))
    from libcst import ParserSyntaxError  # here: a warm run that parses nothing never loads libcst

    try:
        summary = _summarize_guarded(source, data)
        digest, shape = summary_digests(summary)
        return IndexResult(source, summary, digest=digest, shape=shape)
    except parseguard.SourceProblem as exc:
        return problem(exc.line, exc.message)
    except ParserSyntaxError as exc:
        try:
            text: str | None = parseguard.decode(data)[0]
        except parseguard.SourceProblem:
            text = None
        line, message = parseguard.syntax_error(
            text, exc.raw_line, exc.raw_column, str(exc.message or "")
        )
        return problem(line, message)
    except RecursionError:
        return problem(None, "nesting too deep to analyse (the recursion limit was reached)")
    except MemoryError:
        return problem(None, "out of memory while analysing this file")
    except (UnicodeDecodeError, LookupError) as exc:
        return problem(None, f"cannot decode file: {parseguard.one_line(exc)}")
    except (ValueError, SyntaxError) as exc:
        return problem(getattr(exc, "lineno", None), f"cannot parse: {parseguard.one_line(exc)}")
    except Exception as exc:  # a bug in flagtrace on this file: report it, go on with the rest
        if os.environ.get("FLAGTRACE_DEBUG"):
            raise
        return problem(
            None,
            f"internal error in flagtrace on this file: {type(exc).__name__}: "
            f"{parseguard.one_line(exc)} "
            "(set FLAGTRACE_DEBUG=1 for a traceback, and please report it)",
        )


def _summarize_guarded(source: SourceFile, data: bytes) -> ModuleSummary:
    """``summarize_source`` after ``parseguard.check``: refuses what cannot be
    parsed safely, and parses deep files on a thread with a big stack (where a
    higher recursion limit is safe too)."""
    from flagtrace import parseguard

    scan = parseguard.check(data)
    limit = sys.getrecursionlimit()

    def run(wanted: int) -> ModuleSummary:
        if limit < wanted:
            sys.setrecursionlimit(wanted)
        try:
            return summarize_source(source, data)
        finally:
            sys.setrecursionlimit(limit)

    if not scan.careful:
        return run(10_000)
    shallow_enough = scan.nesting.brackets <= 100 and scan.nesting.expression <= 500
    summary = parseguard.run_with_big_stack(
        lambda: run(50_000), fallback=(lambda: run(10_000)) if shallow_enough else None
    )
    parseguard.check_summary(summary)  # later stages pickle and walk it under the default limit
    return summary


def _index_chunk(
    chunk: list[tuple[SourceFile, bytes | None, str | None]], cache: SummaryCache | None = None
) -> list[IndexResult]:
    """Index a chunk (in a worker); with a cache, store each result that has a key."""
    results = []
    for source, data, key in chunk:
        result = index_file(source, data)
        if cache is not None and key is not None:
            cache.put(key, result)
        results.append(result)
    return results


#: The entry kind of a chunk's results on their way back from a worker.
_RESULTS_KIND = "index results"


def _index_chunk_encoded(
    chunk: list[tuple[SourceFile, bytes | None, str | None]], cache: SummaryCache | None = None
) -> bytes:
    """``_index_chunk`` in a worker, its results pickled with equal records once.

    Why: the pool's own pickling sends every copy of ``NameExpr("self")``; sent
    interned, the parent's graph holds fewer objects through resolution and into
    the stored program, whose pickler memo was most of a cold run's peak memory
    (SGLang 0.5.9: the stored program's pickler met 1.4M copies of records it
    had written, 0.2M since, those of equal records in different chunks)."""
    from flagtrace.cache import SUMMARY_RECORDS, encode_entry

    encoded = encode_entry(_RESULTS_KIND, _index_chunk(chunk, cache), SUMMARY_RECORDS)
    collect_chunk()
    return encoded


def _decoded(blob: bytes) -> list[IndexResult]:
    """What ``_index_chunk_encoded`` sent (read like a cache entry, see ``cache.load_entry``)."""
    from flagtrace.cache import SUMMARY_TYPES, load_entry

    results = load_entry(_RESULTS_KIND, blob, SUMMARY_TYPES)
    if not isinstance(results, list):
        raise RuntimeError("a worker's results did not load")
    return results


def read_keyed(
    sources: Sequence[SourceFile], cache: SummaryCache
) -> list[tuple[bytes | None, str | None]]:
    """Each file's bytes and its ``SummaryCache`` key; ``(None, None)`` for a file
    that cannot be read or is over the size limit (``index_file`` reports it)."""
    import os

    from flagtrace import parseguard

    limit = parseguard.max_file_bytes()
    out: list[tuple[bytes | None, str | None]] = []
    for s in sources:
        try:
            with open(s.path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size > limit:
                    raise OSError("too large")
                content = fh.read()
        except OSError:
            out.append((None, None))
            continue
        out.append((content, cache.key(s, content)))
    return out


def index_many(
    sources: Sequence[SourceFile],
    jobs: int = 1,
    on_result: OnResult | None = None,
    cache: SummaryCache | None = None,
    keyed: Sequence[tuple[bytes | None, str | None]] | None = None,
) -> list[IndexResult]:
    """Index files, in a process pool when ``jobs > 1``; result order follows input.

    With a ``flagtrace.cache.SummaryCache``, this process reads and hashes
    every file (or takes ``keyed``, ``read_keyed``'s answer for ``sources``) and
    looks it up; only misses are indexed (their bytes go to the workers, which
    store the new entries) and hits come back with ``cached=True``.
    """
    out: list[IndexResult | None] = [None] * len(sources)
    todo: list[tuple[int, bytes | None, str | None]] = []
    if cache is not None and cache.enabled:
        with gc_paused():
            for i, (content, key) in enumerate(
                keyed if keyed is not None else read_keyed(sources, cache)
            ):
                if key is None:
                    todo.append((i, None, None))  # index_file reports it
                    continue
                hit = cache.get(sources[i], key)
                if hit is None:
                    todo.append((i, content, key))
                    continue
                out[i] = hit
                if on_result is not None:
                    on_result(hit)
        if todo and not cache.ensure_writable():
            todo = [(i, data, None) for i, data, _ in todo]
    else:
        todo = [(i, None, None) for i in range(len(sources))]
        cache = None
    if jobs <= 1 or len(todo) < 8:
        for i, data, key in todo:
            r = _index_chunk([(sources[i], data, key)], cache)[0]
            out[i] = r
            if on_result is not None:
                on_result(r)
        return [r for r in out if r is not None]
    import concurrent.futures
    import concurrent.futures.process
    import multiprocessing
    import os

    # Larger files first so the pool stays busy until the end; chunks keep IPC low.
    todo.sort(key=lambda t: -(len(t[1]) if t[1] is not None else _size(sources[t[0]].path)))
    chunk_size = max(1, min(16, len(todo) // (jobs * 8) or 1))
    chunks = [todo[i : i + chunk_size] for i in range(0, len(todo), chunk_size)]
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with (
        gc_paused(),
        concurrent.futures.ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=indexing_worker
        ) as pool,
    ):
        futures = {
            pool.submit(
                _index_chunk_encoded, [(sources[i], data, key) for i, data, key in c], cache
            ): c
            for c in chunks
        }
        del todo, chunks
        orphans: list[tuple[int, bytes | None, str | None]] = []
        for fut in concurrent.futures.as_completed(futures):
            chunk = futures.pop(fut)
            try:
                results = _decoded(fut.result())
            except Exception:  # a worker died (native crash, out of memory) or failed: retry alone
                orphans.extend(chunk)
                continue
            for (i, _, _), r in zip(chunk, results, strict=True):
                out[i] = r
                if on_result is not None:
                    on_result(r)
    # Each orphan again, one at a time in a one-worker pool, so a file that
    # kills its worker costs only its own diagnostic and the run goes on.
    solo: concurrent.futures.ProcessPoolExecutor | None = None
    try:
        for i, data, key in orphans:
            if solo is None:
                solo = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx)
            try:
                encoded = solo.submit(_index_chunk_encoded, [(sources[i], data, key)], cache)
                r = _decoded(encoded.result())[0]
            except concurrent.futures.process.BrokenProcessPool:
                solo.shutdown(wait=True)
                solo = None
                r = IndexResult(
                    sources[i],
                    None,
                    Diagnostic(
                        sources[i].path,
                        None,
                        "the parser crashed on this file (its worker process died); skipped",
                    ),
                )
            except Exception as exc:
                if os.environ.get("FLAGTRACE_DEBUG"):
                    raise
                r = IndexResult(
                    sources[i],
                    None,
                    Diagnostic(
                        sources[i].path,
                        None,
                        f"internal error in flagtrace on this file: {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())} "
                        "(set FLAGTRACE_DEBUG=1 for a traceback, and please report it)",
                    ),
                )
            out[i] = r
            if on_result is not None:
                on_result(r)
    finally:
        if solo is not None:
            solo.shutdown(wait=True)
    return [r for r in out if r is not None]


def _size(path: str) -> int:
    try:
        import os

        return os.path.getsize(path)
    except OSError:
        return 0
