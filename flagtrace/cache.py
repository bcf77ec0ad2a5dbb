"""Persistent cache of per-file summaries.

A file's entry is keyed by everything its ``IndexResult`` depends on: the
sha256 of its bytes, its module name, whether it is a package ``__init__``,
its path (summaries carry the path in every ``Location``) and ``schema()``:
the flagtrace version, ``model.SUMMARY_FORMAT``, the libcst and Python
versions, and a digest of the indexer's own source (so an edited checkout
never reads summaries an older indexer wrote, even if nobody bumped
``SUMMARY_FORMAT``).

Layout: ``<directory>/v<SUMMARY_FORMAT>/<first 2 hex>/<key hex>.pkl``, one
entry per file: a header naming the kind of entry and ``ENCODING``, then a
pickle of ``(MAGIC, key, schema, summary, diagnostic, digest, shape)``
(``digest``, ``shape``: ``index.summary_digests`` of the summary as it was
built). Writes go to a temporary file in the same directory and are renamed
into place, so two concurrent runs never see a half-written entry; an entry
whose header, stored key or schema differs, or that does not load, is a miss
and gets overwritten. Only summaries are cached: a file that could not be indexed is
tried again on the next run, because some of those problems depend on the
environment (memory, stack depth, ``$FLAGTRACE_MAX_FILE_MB``), not the bytes.

The cache never stops a run: a directory that cannot be written disables it
for the run with one warning line on stderr, and a failed read is a miss.

**Reading an entry never runs code** (:func:`load_entry`). The cache
directory may come from a stranger: a CI cache restored from an earlier job,
a shared directory. ``pickle.loads`` calls whatever callables a pickle names
(``os.system``, ``builtins.exec``...), so entries are read by the C unpickler
with ``find_class`` overridden to hand out only the types of
:func:`record_types`: the dataclasses and enums of ``flagtrace.model`` (and,
for stored reports, of ``flagtrace.results``), derived from the modules, so a
new model type is allowed without anyone listing it. With protocol 5, tuples,
lists, dicts, sets, frozensets, strings, numbers and ``None`` are opcodes, not
globals, so no builtin is needed at all; any other global is a miss. What the
allowed types can still do while loading was checked one by one: calling a
record class runs its dataclass ``__init__`` (field assignment); calling an
enum class looks a member up (with more arguments, the functional API refuses
to extend an enum with members); ``NEWOBJ`` makes an empty record; ``BUILD``
on a record calls the dataclass ``__setstate__`` (field assignment) and on a
record *class* fails. ``BUILD`` on an enum member or an enum class would
rewrite that process-wide singleton, though, and the unpickler has no hook to
refuse it, so every load is followed by a check of the enums' state (about
20 microseconds) that puts anything changed back and makes the entry a miss.
What this does not give is integrity: whoever can write the cache directory
can still store a wrong summary or report (and a shared directory still lets
them). It can no longer run code in the process that reads it.
"""

from __future__ import annotations

import copyreg
import dataclasses
import enum
import hashlib
import io
import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

from flagtrace import model
from flagtrace.model import IndexResult, ModuleSummary, SourceFile

ENV_VARIABLE = "FLAGTRACE_CACHE_DIR"
MAGIC = "flagtrace-summary"
#: How entries are encoded on disk (header, envelope, restricted pickle). Bump it
#: when any of them changes: entries of another encoding are misses, rewritten.
ENCODING = 2
#: The pickle protocol of every entry: 5 has opcodes for every container the
#: records hold (frozensets included), so loading needs no builtin callable.
PROTOCOL = 5
_SUFFIX = ".pkl"
_TEMP_PREFIX = ".tmp-"
_RESULTS = "results"  # ``flagtrace.results`` keeps whole-run reports here
_PROGRAMS = "programs"  # ``flagtrace.program_store`` keeps resolved programs here


def default_directory() -> Path:
    """``$FLAGTRACE_CACHE_DIR``, else the user cache dir (``~/.cache/flagtrace`` on Linux)."""
    env = os.environ.get(ENV_VARIABLE)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("flagtrace", appauthor=False))


@lru_cache(maxsize=1)
def schema() -> str:
    """Everything besides the file that changes a summary, as one string.

    libcst's version comes from its package metadata: importing libcst itself
    (0.3 s) would be most of a warm run that parses nothing."""
    from importlib.metadata import version

    from flagtrace import __version__
    from flagtrace.model import INDEXER_SOURCES, SUMMARY_FORMAT

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in INDEXER_SOURCES:
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # not there, or a zipped install: the versions have to do
            digest.update(name.encode())
    return (
        f"flagtrace {__version__}; summary {SUMMARY_FORMAT}; libcst {version('libcst')}; "
        f"{sys.implementation.name} {sys.version_info[0]}.{sys.version_info[1]}; "
        f"indexer {digest.hexdigest()[:16]}"
    )


def _summary_format() -> int:
    from flagtrace.model import SUMMARY_FORMAT

    return SUMMARY_FORMAT


def _warn_stderr(message: str) -> None:
    print(f"flagtrace: warning: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Entries that cannot run code when read


def record_types(*modules: ModuleType) -> dict[tuple[str, str], type]:
    """Every dataclass and enum defined in ``modules``, keyed the way pickle names
    a class: ``(module, qualified name)``.

    Derived, not listed by hand: a type added to the model has to load from the
    cache the day it is added, and a forgotten entry in a hand-kept list would
    make every summary holding it a silent miss (correct, but every run cold).
    Types a module merely imports (``enum.Enum`` itself) are left out.
    """
    table: dict[tuple[str, str], type] = {}
    for module in modules:
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and (dataclasses.is_dataclass(value) or issubclass(value, enum.Enum))
            ):
                table[(value.__module__, value.__qualname__)] = value
    return table


class _EnumState:
    """What a pickle could change in the allowed enums, to notice and undo it.

    Why: ``BUILD`` on an object sets attributes on it, and the unpickler offers
    no hook to refuse it. On records that is harmless (the ones a pickle makes
    are its own; on a record *class* the dataclass ``__setstate__`` fails), but
    an enum member is a process-wide singleton, and an enum class has no
    ``__setstate__``: a pickle could rewrite ``GuardKind.IF.value``, or replace
    ``CallKind.implicit``, for the rest of the run. Comparing the state after
    every load costs about 20 microseconds.
    """

    __slots__ = ("_classes", "_members")

    def __init__(self, types: Iterable[type]) -> None:
        types = list(types)
        enums = [t for t in types if issubclass(t, enum.Enum)]
        # plain classes (not records): ``BUILD`` on such a class sets class
        # attributes, as on an enum class (see ``guarded_classes``)
        classes = enums + [t for t in types if t not in enums and _settable(t)]
        for cls in classes:
            # pickling an instance of a slotted class caches its slot names in the
            # class (``__slotnames__``): cached now, a later dump changes nothing
            copyreg._slotnames(cls)  # type: ignore[attr-defined]
        self._classes = [(c, self._type_slots(c), dict(vars(c))) for c in classes]
        self._members = [(m, type(m), dict(vars(m))) for e in enums for m in e]

    @staticmethod
    def _type_slots(cls: type) -> tuple[object, ...]:
        # what ``setattr`` can change on a class outside its ``__dict__``
        return (cls.__name__, cls.__qualname__, cls.__bases__, type(cls))

    def restore(self) -> bool:
        """Put back whatever changed since the snapshot; True if nothing had."""
        intact = True
        for member, member_type, state in self._members:
            if type(member) is not member_type or vars(member) != state:
                intact = False
                object.__setattr__(member, "__class__", member_type)
                vars(member).clear()
                vars(member).update(state)
        for cls, slots, state in self._classes:
            current = vars(cls)
            if self._type_slots(cls) != slots or current != state:
                intact = False
                name, qualname, bases, metaclass = slots
                if type(cls) is not metaclass:
                    object.__setattr__(cls, "__class__", metaclass)
                type.__setattr__(cls, "__name__", name)
                type.__setattr__(cls, "__qualname__", qualname)
                if cls.__bases__ != bases:
                    type.__setattr__(cls, "__bases__", bases)
                for attribute in [a for a in current if a not in state]:
                    type.__delattr__(cls, attribute)
                for attribute, value in state.items():
                    if current.get(attribute, _ABSENT) is not value:
                        type.__setattr__(cls, attribute, value)
        return intact


_ABSENT = object()


def _settable(cls: type) -> bool:
    """Whether ``BUILD`` on ``cls`` itself could set its attributes: a class of
    ours without ``__setstate__`` (a frozen slotted record has one, and calling
    it on the class fails). Builtin types refuse new attributes anyway."""
    if cls.__module__ in ("builtins", "collections", "functools", "operator"):
        return False
    return getattr(cls, "__setstate__", None) is None


class LoadableTypes:
    """The only globals an entry may name: ``record_types(*modules)`` and ``extra``
    (a stored resolved program also names the resolver's plain classes and
    ``defaultdict``, see ``flagtrace.program_store``), with a snapshot of their
    enums and of the classes a ``BUILD`` could change (see ``_EnumState``)."""

    __slots__ = ("table", "_enums")

    def __init__(
        self, *modules: ModuleType, extra: Mapping[tuple[str, str], type] | None = None
    ) -> None:
        table = record_types(*modules)
        table.update(extra or {})
        self.table: Mapping[tuple[str, str], type] = table
        self._enums = _EnumState(self.table.values())

    def restore(self) -> bool:
        return self._enums.restore()


class _RecordUnpickler(pickle.Unpickler):
    """The C unpickler (``_pickle.Unpickler``), but globals come only from a table.

    Why a subclass of the C class and not the pure-Python ``pickle._Unpickler``:
    overriding ``find_class`` keeps every other opcode in C, and globals are
    looked up once per class per entry (the pickler memoises them). On SGLang's
    summaries the Python unpickler took about 5 x as long as ``pickle.loads``;
    this one takes the same time (``benchmarks/bench_cache_load.py``).
    """

    __slots__ = ("_table",)

    def __init__(self, file: io.BytesIO, table: Mapping[tuple[str, str], type]) -> None:
        super().__init__(file, fix_imports=False)
        self._table = table

    def find_class(self, module_name: str, global_name: str, /) -> Any:
        found = self._table.get((module_name, global_name))
        if found is None:
            raise pickle.UnpicklingError(f"{module_name}.{global_name} is not a flagtrace record")
        return found

    def persistent_load(self, pid: Any, /) -> Any:
        raise pickle.UnpicklingError("a flagtrace cache entry holds no persistent ids")


def entry_header(kind: str) -> bytes:
    """The first bytes of every entry of ``kind``: its kind and ``ENCODING``."""
    # not a pickle opcode at the start, so an older flagtrace's plain
    # ``pickle.loads`` fails on it at once (a miss there too)
    return f"flagtrace {kind} cache, encoding {ENCODING}\n".encode()


_FIRST = itemgetter(0)


class Interning:
    """Equal records pickled once: the first as itself, every later equal one as a
    reference to it (``itemgetter(0)((first,))``, a C call at load time).

    Why: a summary holds the same small records many times (``NameExpr("self")``,
    ``CallStep(0)``, a ``Location`` shared by a statement's parts), and a stored
    program the same ``Callee`` at many sites. Records are frozen values, so one
    object serves for all: loading constructs fewer records (about a microsecond
    each, a Python ``__init__``), and the loaded graph is smaller in memory and
    cheaper to pickle again. (Two memos key statements by ``id``: ``FlagEffects``
    its writes, ``checks`` their effects. The steps carry their location, so
    equal ones are the same statement anyway.)
    """

    __slots__ = ("_seen", "_references")

    def __init__(self) -> None:
        self._seen: dict[object, object] = {}
        #: first -> the arguments of its reference, made once: the pickler then
        #: writes every later reference's arguments as a memo lookup, and keeps
        #: one tuple alive for them instead of two per reference
        self._references: dict[int, tuple[tuple[object]]] = {}

    def reduce(self, obj: object) -> object:
        first = self._seen.setdefault(obj, obj)
        if first is obj:
            return obj.__reduce_ex__(PROTOCOL)
        arguments = self._references.get(id(first))
        if arguments is None:
            arguments = self._references[id(first)] = ((first,),)
        return (_FIRST, arguments)


def internable_records(types: LoadableTypes) -> tuple[type, ...]:
    """The records of ``types`` whose fields hold no tuple: hashing one (to find
    its equal) stays cheap, where hashing a ``Scope`` would hash everything in it."""
    out = []
    for cls in types.table.values():
        if dataclasses.is_dataclass(cls) and getattr(cls, "__setstate__", None) is not None:
            hints = " ".join(str(f.type) for f in dataclasses.fields(cls))
            if not any(c in hints for c in ("tuple", "list", "dict", "set", "Mapping")):
                out.append(cls)
    return tuple(out)


def dump_entry(
    kind: str,
    payload: object,
    out: BinaryIO,
    internable: tuple[type, ...] = (),
    reducers: Mapping[type, Callable[[Any], object]] | None = None,
    then: Sequence[object] = (),
) -> None:
    """Write ``payload`` to ``out`` as ``load_entry`` reads it: equal records of the
    ``internable`` types once (``Interning``: the loader must allow ``itemgetter``),
    and the types of ``reducers`` reduced by them. Each payload of ``then`` follows
    as a pickle of its own (``load_entry(..., parts=)``).

    Why separate pickles: the pickler keeps every object it wrote (and a slot for
    it) until the end of its pickle, and its table doubles past 2/3 full (to 256
    MiB at 5.6M objects). What does not share objects with the payload is cheaper
    written after it with an empty memo."""
    out.write(entry_header(kind))
    pickler = pickle.Pickler(out, protocol=PROTOCOL)
    if internable or reducers:
        table: dict[type, Any] = dict(copyreg.dispatch_table)
        table.update(reducers or {})
        table.update(dict.fromkeys(internable, Interning().reduce))
        pickler.dispatch_table = table
    pickler.dump(payload)
    for part in then:
        pickler.clear_memo()
        pickler.dump(part)


def encode_entry(kind: str, payload: object, internable: tuple[type, ...] = ()) -> bytes:
    """``payload`` as stored on disk: the header of ``kind`` and ``ENCODING``, then a
    pickle (see ``dump_entry``)."""
    out = io.BytesIO()
    dump_entry(kind, payload, out, internable)
    return out.getvalue()


def load_entry(kind: str, blob: bytes, types: LoadableTypes, parts: int = 1) -> object | None:
    """The payload ``encode_entry(kind, payload)`` stored, or None (a miss) for
    anything else: another kind or encoding, a truncated or trailing stream, a
    global outside ``types``, or a load that touched an enum. Runs no code but
    the allowed types' own constructors. With ``parts`` > 1: a tuple of that many
    payloads (``dump_entry(..., then=)``), each loaded with a memo of its own."""
    header = entry_header(kind)
    if not blob.startswith(header):
        return None
    stream = io.BytesIO(blob)
    stream.seek(len(header))
    try:
        loaded = [_RecordUnpickler(stream, types.table).load() for _ in range(parts)]
        payload: object = loaded[0] if parts == 1 else tuple(loaded)
        complete = not stream.read(1)
    except Exception:  # truncated, garbage, a global that is not allowed...
        payload, complete = None, False
    if not types.restore() or not complete:
        return None
    return payload


#: What a summary entry may hold: the model's records and enums, and ``itemgetter``
#: (an interned record's reference to its first copy, see ``Interning``).
SUMMARY_TYPES = LoadableTypes(model, extra={("operator", "itemgetter"): itemgetter})
#: The records a summary entry holds once each.
SUMMARY_RECORDS = internable_records(SUMMARY_TYPES)


@dataclass(frozen=True, slots=True)
class CacheInfo:
    directory: Path
    entries: int
    size: int  # bytes on disk
    formats: tuple[str, ...]  # ``v1``, ``v2``... directories present
    current_format: str
    reports: int = 0  # whole-run reports stored by ``flagtrace.results`` (each under two keys)
    programs: int = 0  # resolved programs stored by ``flagtrace.program_store``

    def render(self) -> str:
        formats = ", ".join(
            f"{f} (current)" if f == self.current_format else f for f in self.formats
        )
        return (
            f"directory: {self.directory}\n"
            f"entries:   {self.entries}\n"
            f"reports:   {self.reports}\n"
            f"programs:  {self.programs}\n"
            f"size:      {_human(self.size)}\n"
            f"formats:   {formats or 'none'}\n"
        )


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class SummaryCache:
    """Per-file summaries on disk, keyed by content. Picklable (workers store entries)."""

    __slots__ = ("directory", "enabled", "schema", "_root", "_checked", "_warn")

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        enabled: bool = True,
        *,
        warn: Callable[[str], None] | None = _warn_stderr,
    ) -> None:
        self.directory = (
            Path(directory).expanduser() if directory is not None else default_directory()
        )
        self.enabled = enabled
        self.schema = schema() if enabled else ""
        self._root = self.directory / f"v{_summary_format()}"
        self._checked = False
        self._warn = warn

    def __repr__(self) -> str:
        return f"SummaryCache({str(self.directory)!r}, enabled={self.enabled})"

    def __reduce__(self) -> tuple[Any, ...]:
        # workers get a cache that stores silently (the main process already checked it)
        return (_worker_cache, (str(self.directory), self.enabled, self.schema))

    # ------------------------------------------------------------------
    # Entries

    def key(self, source: SourceFile, data: bytes) -> str:
        h = hashlib.sha256()
        header = "\0".join(
            (self.schema, source.path, source.module, "pkg" if source.is_package else "mod")
        )
        h.update(header.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def path_for(self, key: str) -> Path:
        return self._root / key[:2] / f"{key}{_SUFFIX}"

    def get(self, source: SourceFile, key: str) -> IndexResult | None:
        """The cached result for ``source`` with ``key``, or None (missing, corrupt, foreign)."""
        if not self.enabled:
            return None
        try:
            with open(self.path_for(key), "rb") as fh:
                blob = fh.read()
        except OSError:
            return None
        entry = load_entry("summary", blob, SUMMARY_TYPES)
        if not (isinstance(entry, tuple) and len(entry) == 7):
            return None
        magic, stored_key, stored_schema, summary, diagnostic, digest, shape = entry
        if magic != MAGIC or stored_key != key or stored_schema != self.schema:
            return None
        if not (
            isinstance(summary, ModuleSummary)
            and diagnostic is None
            and summary.path == source.path
            and summary.module == source.module
            and isinstance(digest, str)
            and isinstance(shape, str)
        ):
            return None
        return IndexResult(source, summary, None, cached=True, digest=digest, shape=shape)

    def put(self, key: str, result: IndexResult) -> bool:
        """Store ``result``'s summary atomically; False if there is none or it
        could not be written (never raises)."""
        if (
            not self.enabled
            or result.summary is None
            or result.digest is None
            or result.shape is None
        ):
            return False
        entry = (MAGIC, key, self.schema, result.summary, None, result.digest, result.shape)
        return atomic_write(self.path_for(key), encode_entry("summary", entry, SUMMARY_RECORDS))

    def ensure_writable(self) -> bool:
        """Check once that entries can be written; otherwise disable the cache with a warning."""
        if not self.enabled or self._checked:
            return self.enabled
        self._checked = True
        try:
            self._root.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=self._root)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            self.enabled = False
            if self._warn is not None:
                reason = exc.strerror or type(exc).__name__
                self._warn(
                    f"cache directory {self.directory} is not writable ({reason}); "
                    "running without the cache"
                )
        return self.enabled

    # ------------------------------------------------------------------
    # Maintenance (``flagtrace cache info|clear``)

    def _format_dirs(self) -> list[Path]:
        try:
            children = list(self.directory.iterdir())
        except OSError:
            return []
        return sorted(
            (p for p in children if p.name[:1] == "v" and p.name[1:].isdigit() and p.is_dir()),
            key=lambda p: int(p.name[1:]),
        )

    def info(self) -> CacheInfo:
        entries = size = 0
        formats = self._format_dirs()
        for fmt in formats:
            for dirpath, _dirs, names in os.walk(fmt):
                for name in names:
                    try:
                        st = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    size += st.st_size
                    if name.endswith(_SUFFIX) and not name.startswith(_TEMP_PREFIX):
                        entries += 1
        stored = {_RESULTS: 0, _PROGRAMS: 0}
        for kind in stored:
            for dirpath, _dirs, names in os.walk(self.directory / kind):
                for name in names:
                    try:
                        size += os.stat(os.path.join(dirpath, name)).st_size
                    except OSError:
                        continue
                    if name.endswith(_SUFFIX) and not name.startswith(_TEMP_PREFIX):
                        stored[kind] += os.path.basename(dirpath) != "manifests"
        return CacheInfo(
            self.directory,
            entries,
            size,
            tuple(p.name for p in formats),
            self._root.name,
            stored[_RESULTS],
            stored[_PROGRAMS],
        )

    def clear(self) -> int:
        """Delete every entry of every format, the stored reports and the stored
        programs; returns how many. Other files are left alone."""
        removed = 0
        for stored in (self.directory / _RESULTS, self.directory / _PROGRAMS):
            if not stored.is_dir():
                continue
            for dirpath, _dirs, names in os.walk(stored):
                if os.path.basename(dirpath) != "manifests":
                    removed += sum(
                        1 for n in names if n.endswith(_SUFFIX) and not n.startswith(_TEMP_PREFIX)
                    )
            shutil.rmtree(stored, ignore_errors=True)
            if stored.exists():
                raise OSError(f"cannot remove {stored}")
        for fmt in self._format_dirs():
            for _dirpath, _dirs, names in os.walk(fmt):
                removed += sum(
                    1 for n in names if n.endswith(_SUFFIX) and not n.startswith(_TEMP_PREFIX)
                )
            shutil.rmtree(fmt, ignore_errors=True)
            if fmt.exists():
                raise OSError(f"cannot remove {fmt}")
        return removed


def atomic_write(target: Path, blob: bytes) -> bool:
    """Write ``blob`` to ``target`` through a temporary file in the same directory
    and a rename, so a concurrent reader sees the old file or the new one, never
    half of one. False if it could not be written (never raises)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=_SUFFIX, dir=target.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(temp, target)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return False
    return True


def _worker_cache(directory: str, enabled: bool, schema_: str) -> SummaryCache:
    cache = SummaryCache.__new__(SummaryCache)
    cache.directory = Path(directory)
    cache.enabled = enabled
    cache.schema = schema_
    cache._root = cache.directory / f"v{_summary_format()}"
    cache._checked = True
    cache._warn = None
    return cache
