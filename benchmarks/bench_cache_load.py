"""Load time of a warm summary cache: the restricted unpickler against plain ``pickle.loads``.

Why: issue 13 made cache entries load without running code (``flagtrace.cache.load_entry``:
the C unpickler with ``find_class`` limited to flagtrace's records, then a check of the
enums). A warm run on SGLang reads ~1,400 entries, ~50 MB of pickles, so the
loader must keep the speed of the C unpickler. This script measures, in one
process and one run, each entry loaded by each loader back to back (the order
rotating), so that the machine's noise hits all of them alike:

* *before*: what ``SummaryCache.get`` did until issue 13: read the entry and
  ``pickle.loads`` it (here: the pickle after the header, through a memoryview, no
  copy), then the same envelope checks;
* *after*: ``SummaryCache.get`` as it is;
* *python* (one round, for the design's sake): the same restriction with the
  pure-Python ``pickle._Unpickler``, which is what a restricted unpickler costs
  when it is not a subclass of the C one.

With ``--inits``, *before* is ``SummaryCache.get`` with the records built by a frozen
dataclass's own ``__init__`` (``object.__setattr__`` per field), which ``model.record``
replaced with one that calls each slot's setter (2026-12-05).

Each round loads every entry with the cyclic GC paused, as ``index.index_many``
does, and prints wall and CPU seconds per loader and their ratios. The tree's
files are read and keyed before timing (that part did not change). The first
run of the script fills the cache (a cold index of the whole tree, minutes on
SGLang); ``--cache-dir`` keeps it for the next.

How, from the repository root::

    python benchmarks/bench_cache_load.py                           # SGLang 0.5.9, 3 rounds
    python benchmarks/bench_cache_load.py --tree DIR --cache-dir /tmp/c --rounds 3
    python benchmarks/bench_cache_load.py --inits --cache-dir /tmp/c   # the records' __init__
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import io
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from flagtrace.api import load_project  # noqa: E402
from flagtrace.cache import (  # noqa: E402
    MAGIC,
    SUMMARY_TYPES,
    SummaryCache,
    entry_header,
)
from flagtrace.discover import discover  # noqa: E402
from flagtrace.index import read_keyed  # noqa: E402
from flagtrace.model import IndexResult, ModuleSummary, SourceFile  # noqa: E402

Loader = Callable[[SummaryCache, SourceFile, str], "IndexResult | None"]
HEADER = len(entry_header("summary"))


def _checked(
    cache: SummaryCache, source: SourceFile, key: str, entry: object
) -> IndexResult | None:
    """The envelope checks of ``SummaryCache.get``, for the loaders measured here."""
    if not (isinstance(entry, tuple) and len(entry) == 6):
        return None
    magic, stored_key, stored_schema, summary, diagnostic, digest = entry
    if magic != MAGIC or stored_key != key or stored_schema != cache.schema:
        return None
    if not (isinstance(summary, ModuleSummary) and diagnostic is None and isinstance(digest, str)):
        return None
    return IndexResult(source, summary, None, cached=True, digest=digest)


def before(cache: SummaryCache, source: SourceFile, key: str) -> IndexResult | None:
    """``SummaryCache.get`` until issue 13: a plain ``pickle.loads``."""
    with open(cache.path_for(key), "rb") as fh:
        blob = fh.read()
    try:
        entry = pickle.loads(memoryview(blob)[HEADER:])
    except Exception:
        return None
    return _checked(cache, source, key, entry)


class _PythonRestricted(pickle._Unpickler):  # type: ignore[name-defined,misc]
    """The same allowlist on the pure-Python unpickler (the design not taken)."""

    def find_class(self, module_name: str, global_name: str, /) -> object:
        found = SUMMARY_TYPES.table.get((module_name, global_name))
        if found is None:
            raise pickle.UnpicklingError(f"{module_name}.{global_name}")
        return found


def python(cache: SummaryCache, source: SourceFile, key: str) -> IndexResult | None:
    with open(cache.path_for(key), "rb") as fh:
        blob = fh.read()
    stream = io.BytesIO(blob)
    stream.seek(HEADER)
    try:
        entry = _PythonRestricted(stream).load()
    except Exception:
        return None
    return _checked(cache, source, key, entry)


def after(cache: SummaryCache, source: SourceFile, key: str) -> IndexResult | None:
    return cache.get(source, key)


def _dataclass_init(cls: type) -> Callable[..., None]:
    """The ``__init__`` a frozen dataclass has: ``object.__setattr__`` per field."""
    params, body = ["self"], []
    namespace: dict[str, object] = {"_setattr": object.__setattr__}
    for i, f in enumerate(dataclasses.fields(cls)):  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        body.append(f"    _setattr(self, {f.name!r}, {f.name})")
    exec(f"def __init__({', '.join(params)}):\n" + "\n".join(body or ["    pass"]), namespace)
    return namespace["__init__"]  # type: ignore[return-value]


#: model records whose ``__init__`` is ``model.record``'s (slot setters), and the
#: dataclass's they replaced (2026-12-05)
_RECORD_INITS = {
    cls: (vars(cls)["__init__"], _dataclass_init(cls))
    for cls in SUMMARY_TYPES.table.values()
    if dataclasses.is_dataclass(cls) and "_set0" in vars(cls)["__init__"].__code__.co_names
}


def dataclass_inits(cache: SummaryCache, source: SourceFile, key: str) -> IndexResult | None:
    """``SummaryCache.get`` with the records built by the frozen dataclass's own
    ``__init__`` (until 2026-12-05)."""
    for cls, (_, old) in _RECORD_INITS.items():
        cls.__init__ = old  # type: ignore[misc]
    try:
        return cache.get(source, key)
    finally:
        for cls, (new, _) in _RECORD_INITS.items():
            cls.__init__ = new  # type: ignore[misc]


def interleaved(
    loaders: Sequence[Loader],
    cache: SummaryCache,
    keyed: Sequence[tuple[SourceFile, str]],
    turn: int,
) -> list[tuple[float, float]]:
    """One round: every entry loaded by every loader, back to back, the order
    rotating from entry to entry; per loader, (wall, CPU) seconds summed.

    Why per entry and not one whole pass per loader: on this shared machine a
    whole pass took anywhere from 4 to 12 s within minutes, so pass against
    pass compares the neighbours' load, not the loaders. Back to back, both
    see the same machine; CPU time leaves out the time the process waited for
    a core. The GC is paused and everything loaded is kept, as in a warm run.
    """
    wall = [0] * len(loaders)
    cpu = [0] * len(loaders)
    kept: list[list[IndexResult | None]] = [[] for _ in loaders]
    gc.collect()
    gc.disable()
    try:
        for i, (source, key) in enumerate(keyed):
            shift = (i + turn) % len(loaders)
            for j in [*range(shift, len(loaders)), *range(shift)]:
                w0, c0 = time.perf_counter_ns(), time.process_time_ns()
                kept[j].append(loaders[j](cache, source, key))
                cpu[j] += time.process_time_ns() - c0
                wall[j] += time.perf_counter_ns() - w0
    finally:
        gc.enable()
    for loader, results in zip(loaders, kept, strict=True):
        missing = sum(1 for r in results if r is None)
        if missing:
            raise SystemExit(f"{loader.__name__}: {missing} entries did not load")
    del kept
    return [(w / 1e9, c / 1e9) for w, c in zip(wall, cpu, strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="package to cache (default: SGLang 0.5.9)")
    parser.add_argument("--cache-dir", type=Path, help="keep the cache here (default: temporary)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the filling index")
    parser.add_argument("--no-python", action="store_true", help="skip the pure-Python round")
    parser.add_argument(
        "--inits",
        action="store_true",
        help="compare the records' __init__ instead: the frozen dataclass's (before) "
        "against model.record's slot setters (after)",
    )
    args = parser.parse_args(argv)

    tree = args.tree
    if tree is None:
        from tests.registry import download

        tree = download("sglang==0.5.9") / "sglang"
    scratch = None
    if args.cache_dir is None:
        scratch = tempfile.TemporaryDirectory(prefix="flagtrace-bench-cache-")
        args.cache_dir = Path(scratch.name)
    cache = SummaryCache(args.cache_dir)

    files = discover([str(tree)]).files
    fill_start = time.perf_counter()
    project = load_project([str(tree)], jobs=args.jobs, cache=cache)
    if project.cache_hits < len(files):
        print(f"filled the cache: {len(files)} files in {time.perf_counter() - fill_start:.0f}s")
    keyed = [(s, k) for s, (_, k) in zip(files, read_keyed(files, cache), strict=True) if k]
    size = sum(cache.path_for(k).stat().st_size for _, k in keyed)
    print(f"{tree}: {len(keyed)} entries, {size / 2**20:.1f} MiB in {args.cache_dir}")

    del project  # not part of the heap a warm run starts from
    reference = dataclass_inits if args.inits else before
    rounds = [interleaved((reference, after), cache, keyed, turn) for turn in range(args.rounds)]
    print(f"\n{'round':<6} {'before':>16} {'after':>16} {'after / before':>16}")
    print(f"{'':<6} {'wall':>7} {'CPU':>8} {'wall':>7} {'CPU':>8} {'wall':>7} {'CPU':>8}")
    for n, ((bw, bc), (aw, ac)) in enumerate(rounds, 1):
        print(f"{n:<6} {bw:6.2f}s {bc:7.2f}s {aw:6.2f}s {ac:7.2f}s {aw / bw:7.3f} {ac / bc:8.3f}")
    wall_ratio = statistics.median(a[0] / b[0] for b, a in rounds)
    cpu_ratio = statistics.median(a[1] / b[1] for b, a in rounds)
    print(f"median after / before: wall {wall_ratio:.3f}, CPU {cpu_ratio:.3f}")
    if not (args.no_python or args.inits):
        (bw, bc), (pw, pc) = interleaved((before, python), cache, keyed, 0)
        print(f"pure-Python restricted unpickler / before: wall {pw / bw:.2f}, CPU {pc / bc:.2f}")
    if scratch is not None:
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
