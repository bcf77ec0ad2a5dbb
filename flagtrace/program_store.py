"""The resolved program on disk: a new question on an unchanged tree skips resolution.

Why: the call graph does not depend on the flag, the entries or the reads, yet
every new ``--flag``/``--entry``/``--read`` ran resolution of the whole program
again (about 20-30 s on SGLang 0.5.9). The report cache (``flagtrace.results``)
cannot help: its keys include the options. So the ``ResolvedProgram`` that
``resolve`` returns is stored too, keyed by what it depends on and nothing
else: every file's summary shape (``index.summary_digests``: the summary with
its positions zeroed; a file that could not be indexed: its content key), the
indexer's schema, ``FLAGTRACE_MAX_FILE_MB`` and ``results.analysis_digest()``.
A run with new options on a tree whose summaries are unchanged loads it and
runs only the flag analysis; so does a run after an edit that only moved code
(comment or blank lines added above it).

Why shapes: resolution reads no position, and nothing stored here holds one
(``tests/test_shapes.py`` walks a stored program for a ``Location`` or a
``Guard``): every position a report quotes comes from the summaries the
loading run passes in, which ``get`` builds the program tables from. A
pruning does quote positions (the lines of the guards it decided), so the
prunings beside a program are kept per tree (``prunings``).

What is stored is the program as resolution left it, before any flag stage
asked it a question: the resolver's tables, its parameter values, its last
round's container stores and the memo tables it keeps
(``resolve.rounds.KEPT_ANSWERS``; the rest of the memo is dropped in every run
before the flag stages ask, ``Resolver.settle``, so their value questions start
from the same state whether the program was resolved in this process or loaded:
a memo answer cut at a recursive lookup depends on what was memoised before).

Not the summaries: they are in the summary cache already, keyed by the same
files, and were 85% of the objects a stored program pickled (SGLang 0.5.9: 4.0M
of 4.7M; the pickler keeps every object it wrote, and its memo was the largest
allocation of a cold run). The loading run takes them from the summary cache (a
summary no longer there is indexed again: same file, same summary), builds the
program tables from them (``resolve.Program``, a fraction of a second) and puts
back what the resolver held of them (``ValueQuery.program_apart``: the container
displays it met, found again by origin in ``ModuleSummary.containers``, the very
objects). What is keyed and valued by names and values alone (the parameter
values, the kept memo tables and most of the run memo:
``ValueQuery.named_state_apart``) follows as a second pickle
(``cache.dump_entry``), with a pickler memo of its own. It is stored as an
object graph, not field by field: fields the resolver gains or loses are stored
and loaded without a change here; the analysis digest keys on the resolver's
source, so a layout an older resolver wrote is never read.

Safety: entries are read like the other caches' (``cache.load_entry``): the C
unpickler, with globals limited to the records and enums of ``flagtrace.model``
and ``flagtrace.results``, the classes of the ``flagtrace.resolve`` package,
and ``set``, ``list``, ``dict``, ``defaultdict``, ``functools.partial`` (a
memo's ``defaultdict(lambda: defaultdict(set))`` is stored as
``defaultdict(partial(defaultdict, set))``) and ``operator.itemgetter`` (see
``cache.Interning``). Loading one runs no code but those
constructors (so a class added to ``flagtrace.resolve``, loadable from then
on, must not do more than build data in ``__init__``); ``BUILD`` on one of the
plain classes is undone after the load and makes the entry a miss, as for the
enums. A pickle cannot name a method or
a function. Anything damaged, foreign, of another format or of another key is
a miss, reported on stderr in one line, never a traceback.

Layout: ``<cache dir>/programs/v<FORMAT>/<2 hex>/<key>.pkl`` (the newest
``KEEP`` entries are kept: 19 MiB for SGLang 0.5.9) and
``programs/v<FORMAT>/manifests/<identity>.pkl``: per analysed paths (whatever
the options), the files of the last run by content key, so that a new
question knows every unchanged file's summary digest without loading a summary.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import pkgutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import lru_cache, partial
from importlib import import_module
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

from flagtrace import assume, guards_eval, model, prune, results
from flagtrace.cache import (
    _PROGRAMS,
    PROTOCOL,
    LoadableTypes,
    SummaryCache,
    atomic_write,
    dump_entry,
    encode_entry,
    entry_header,
    internable_records,
    load_entry,
)
from flagtrace.cache import (
    _TEMP_PREFIX as TEMP_PREFIX,
)
from flagtrace.memory import gc_paused
from flagtrace.model import Guard, Location, ModuleSummary, SourceFile
from flagtrace.prune import PruningState, Question
from flagtrace.resolve import Program, ResolvedProgram
from flagtrace.results import FileState, analysis_digest

#: The layout and encoding of stored programs (bump when either changes; what the
#: resolver keeps is covered by the analysis digest instead). 3: keyed by shapes,
#: prunings per tree with their tree's files.
FORMAT = 3
MAGIC = "flagtrace-program"
KIND = "program"
MANIFEST_KIND = "program manifest"
DIRECTORY = _PROGRAMS
#: Stored programs kept per cache directory; the oldest go first.
KEEP = 4
PRUNING_KIND = "pruning"
PRUNING_SUFFIX = ".pruning"
#: Prunings kept per stored program (one per set of facts and entries asked).
KEEP_PRUNINGS = 8


@dataclass(frozen=True, slots=True)
class _Detached:
    """A resolved program as stored: without its program (``ValueQuery.program_apart``).

    ``modules`` are the program's modules in order, to check the summaries it is
    put back on; ``displays`` the scope of each container display resolution met,
    by origin."""

    modules: tuple[str, ...]
    displays: dict[str, str]
    resolved: ResolvedProgram


class UnstorableProgram(Exception):
    """The resolver holds something this module does not know how to store."""


# --------------------------------------------------------------------------
# Encoding


def _factory(factory: Callable[[], object] | None) -> Callable[[], object] | None:
    """A picklable stand-in for a ``defaultdict``'s factory: the type it makes, or
    ``partial(defaultdict, <stand-in>)`` for a factory (a lambda) that makes an
    empty ``defaultdict``."""
    if factory is None or factory in (set, list, dict):
        return factory
    sample = factory()
    if type(sample) is defaultdict and not sample:
        return partial(defaultdict, _factory(sample.default_factory))
    if type(sample) in (set, list, dict) and not sample:
        return type(sample)
    raise UnstorableProgram(f"a defaultdict whose factory makes {type(sample).__name__}")


def _reduce_defaultdict(value: defaultdict[Any, Any]) -> tuple[object, ...]:
    return (defaultdict, (_factory(value.default_factory),), None, None, iter(value.items()))


@lru_cache(maxsize=1)
def _internable() -> tuple[type, ...]:
    """The loadable records a stored program holds once each (``cache.Interning``)."""
    return internable_records(program_types())


def encode(resolved: ResolvedProgram, key: str, out: BinaryIO) -> None:
    """Write ``resolved`` without its summaries as an entry of ``key`` to ``out``:
    ``cache.entry_header`` and a protocol-5 pickle whose only non-record globals
    are the allowed builtins. Written straight to the file: a copy in memory
    would add the entry's size to the run's peak."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 100_000))  # nested expressions, long chains of values
    values = resolved.values
    try:
        with (
            gc_paused(),
            values.named_state_apart() as named,
            values.program_apart() as displays,
        ):
            detached = _Detached(
                tuple(resolved.program.modules),
                displays,
                replace(resolved, program=None),  # type: ignore[arg-type]
            )
            dump_entry(
                KIND,
                (MAGIC, key, detached),
                out,
                _internable(),
                reducers={defaultdict: _reduce_defaultdict},
                then=(named,),
            )
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
        raise UnstorableProgram(str(exc)) from exc
    finally:
        sys.setrecursionlimit(limit)


def _resolve_classes() -> dict[tuple[str, str], type]:
    """Every class defined in the ``flagtrace.resolve`` package (its plain classes
    too: the resolver, the program tables, the value query), derived from the
    package, so a class another change adds there loads the day it is added."""
    import flagtrace.resolve as package

    table: dict[tuple[str, str], type] = {}
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                table[(value.__module__, value.__qualname__)] = value
    return table


@lru_cache(maxsize=1)
def program_types() -> LoadableTypes:
    """What a stored program may name: see the module docstring."""
    extra: dict[tuple[str, str], type] = {
        ("builtins", "set"): set,
        ("builtins", "list"): list,
        ("builtins", "dict"): dict,
        ("collections", "defaultdict"): defaultdict,
        ("functools", "partial"): partial,
        ("operator", "itemgetter"): itemgetter,  # see cache.Interning
        (_Detached.__module__, _Detached.__qualname__): _Detached,
    }
    extra.update(_resolve_classes())
    return LoadableTypes(model, results, extra=extra)


@lru_cache(maxsize=1)
def pruning_types() -> LoadableTypes:
    """What a stored pruning may name: the records and enums of the model, of
    pruning (``GuardCut``, ``PruningState``), of the guards' decisions and of the
    facts; nothing else (its sets, dicts and tuples are pickle opcodes)."""
    return LoadableTypes(model, prune, guards_eval, assume)


# --------------------------------------------------------------------------
# The store


class ProgramStore:
    """Stored resolved programs next to a ``SummaryCache`` (enabled with it)."""

    def __init__(self, summaries: SummaryCache, warn: Callable[[str], None] | None = None) -> None:
        self.summaries = summaries
        self.enabled = summaries.enabled
        self.root = summaries.directory / DIRECTORY / f"v{FORMAT}"
        self._warn = warn if warn is not None else _warn_stderr

    def key(self, files: Iterable[FileState]) -> str:
        """Everything a resolved program depends on (see the module docstring):
        the summaries' shapes, not where their parts are."""
        h = hashlib.sha256()
        parts = [f"{f.path}\0{f.module}\0{f.is_package}\0{f.shape_part}" for f in files]
        for text in (
            KIND,
            analysis_digest(),
            self.summaries.schema,
            os.environ.get("FLAGTRACE_MAX_FILE_MB", ""),
            *parts,
        ):
            h.update(text.encode("utf-8", "surrogateescape"))
            h.update(b"\0")
        return h.hexdigest()

    def identity(self, paths: Sequence[str], exclude: Sequence[str]) -> str:
        h = hashlib.sha256(b"program manifest")
        for text in (*(os.path.abspath(p) for p in paths), "\0exclude", *exclude):
            h.update(b"\0" + text.encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pkl"

    def _manifest_path(self, identity: str) -> Path:
        return self.root / "manifests" / f"{identity}.pkl"

    def _read(self, path: Path, what: str, instead: str) -> bytes | None:
        """The bytes of a stored ``what``; None if absent, or unreadable (said in one line)."""
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(f"stored {what} {path} not read ({exc.strerror}); {instead}")
            return None

    # ------------------------------------------------------------ programs

    def has(self, key: str) -> bool:
        """Whether a program is stored under ``key`` (``get`` may still miss)."""
        return self.enabled and self._path(key).is_file()

    def get(self, key: str, summaries: Sequence[ModuleSummary]) -> ResolvedProgram | None:
        """The program stored under ``key``, put back on ``summaries`` (those it was
        resolved from: ``key`` names their digests), or None: absent, or a miss
        reported on stderr in one line (damaged, foreign, another key)."""
        if not self.enabled:
            return None
        path = self._path(key)
        blob = self._read(path, "program", "resolving again")
        if blob is None:
            return None
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 100_000))
        try:
            with gc_paused():
                parts = load_entry(KIND, blob, program_types(), parts=2)
                entry, named = parts if isinstance(parts, tuple) else (None, None)
                resolved = self._put_back(key, entry, named, summaries)
        finally:
            sys.setrecursionlimit(limit)
        if resolved is None:
            self._warn(
                f"stored program {path} is damaged or not flagtrace's; ignored, resolving again"
            )
        return resolved

    @staticmethod
    def _put_back(
        key: str, entry: object, named: object, summaries: Sequence[ModuleSummary]
    ) -> ResolvedProgram | None:
        """The loaded ``entry`` with its program built again from ``summaries``."""
        if not (
            isinstance(entry, tuple)
            and len(entry) == 3
            and entry[:2] == (MAGIC, key)
            and isinstance(entry[2], _Detached)
            and isinstance(entry[2].resolved, ResolvedProgram)
            and getattr(entry[2].resolved, "program", ()) is None  # as ``encode`` left it
        ):
            return None
        detached: _Detached = entry[2]
        program = Program(summaries)
        if tuple(program.modules) != detached.modules:
            return None
        values = detached.resolved.values
        if not (
            values.restore_program(program, detached.displays) and values.restore_named_state(named)
        ):
            return None
        return replace(detached.resolved, program=program)

    def put(self, key: str, resolved: ResolvedProgram) -> bool:
        """Store ``resolved`` under ``key`` (atomically); False if it could not be
        stored, with one line on stderr if the resolver holds something unknown."""
        if not self.enabled:
            return False
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".pkl", dir=target.parent)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as fh:
                encode(resolved, key, fh)
            os.replace(temp, target)
        except (OSError, UnstorableProgram) as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, UnstorableProgram):
                self._warn(f"resolved program not stored ({exc})")
            return False
        self._prune()
        return True

    # ------------------------------------------------------------ prunings

    def prunings(
        self, key: str, files: Sequence[FileState], summaries: Sequence[ModuleSummary] = ()
    ) -> ProgramPrunings:
        """The prunings stored for the program of ``key`` on ``files`` as they are
        now (``prune.StoredPrunings``), whose summaries are ``summaries``.

        Why per tree: a pruning quotes positions (the lines of the guards it
        decided), where the program it was computed on is kept per shape. After
        an edit that only moved code, a pruning of the earlier tree is moved
        with it (``_moved``) rather than computed again."""
        h = hashlib.sha256(key.encode())
        for f in files:
            h.update(f"\0{f.path}\0{f.summary_part}".encode("utf-8", "surrogateescape"))
        return ProgramPrunings(self, key, h.hexdigest(), files, summaries)

    def _pruning_path(self, key: str, tree: str, question: Question) -> Path:
        asked = hashlib.sha256(repr(question).encode("utf-8", "surrogateescape")).hexdigest()
        return self.root / key[:2] / f"{key}.{asked[:24]}{tree[:24]}{PRUNING_SUFFIX}"

    def get_pruning(
        self, key: str, tree: str, question: Question, moved_from: MovedFrom | None = None
    ) -> PruningState | None:
        """The pruning stored for ``question`` on the program of ``key`` and the
        tree ``tree`` (``prunings``); else, with ``moved_from``, one stored for
        another tree of the same shapes, moved to this one (``_moved``); else None
        (absent; damaged, foreign or of another question: a miss, said on stderr)."""
        if not self.enabled:
            return None
        path = self._pruning_path(key, tree, question)
        found = self._load_pruning(path, question, tree)
        if found is not None or moved_from is None:
            return None if found is None else found[0]
        others = path.parent.glob(f"{path.name[: len(key) + 25]}*{PRUNING_SUFFIX}")
        try:
            newest = sorted(others, key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:  # one removed meanwhile by a concurrent run
            return None
        for other in [p for p in newest if p != path][:MOVE_CANDIDATES]:
            loaded = self._load_pruning(other, question, None)
            if loaded is not None:
                state = _moved(loaded[0], loaded[1], moved_from, self.summaries)
                if state is not None:
                    return state
        return None

    def _load_pruning(
        self, path: Path, question: Question, tree: str | None
    ) -> tuple[PruningState, tuple[StoredFile, ...]] | None:
        """The pruning at ``path`` and the files of its tree, if it answers
        ``question`` (on ``tree``, unless None)."""
        blob = self._read(path, "pruning", "pruning again")
        if blob is None:
            return None
        with gc_paused():
            entry = load_entry(PRUNING_KIND, blob, pruning_types())
        if not (
            isinstance(entry, tuple)
            and len(entry) == 5
            and entry[0] == MAGIC
            and isinstance(entry[1], str)
            and entry[2] == question
            and isinstance(entry[3], PruningState)
            and isinstance(entry[4], tuple)
        ):
            self._warn(f"stored pruning {path} is damaged or not flagtrace's; pruning again")
            return None
        if tree is not None and entry[1] != tree:
            return None
        return entry[3], entry[4]

    def put_pruning(
        self,
        key: str,
        tree: str,
        question: Question,
        state: PruningState,
        files: Sequence[FileState] = (),
    ) -> bool:
        """Store ``state`` for ``question`` on ``tree`` (of ``files``) beside the
        program of ``key`` (atomically; only while that program is stored, and the
        newest ``KEEP_PRUNINGS`` of it)."""
        if not self.enabled or not self._path(key).exists():
            return False
        target = self._pruning_path(key, tree, question)
        stored = tuple((f.path, f.module, f.is_package, f.content_key, f.digest) for f in files)
        try:
            blob = encode_entry(PRUNING_KIND, (MAGIC, tree, question, state, stored))
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            self._warn(f"pruning not stored ({exc})")
            return False
        if not atomic_write(target, blob):
            return False
        try:
            siblings = sorted(
                target.parent.glob(f"{key}.*{PRUNING_SUFFIX}"), key=lambda p: p.stat().st_mtime
            )
        except OSError:  # one removed meanwhile by a concurrent run
            return True
        for old in siblings[: max(0, len(siblings) - KEEP_PRUNINGS)]:
            with contextlib.suppress(OSError):
                old.unlink()
        return True

    # ----------------------------------------------------------- manifests

    def manifest(self, identity: str) -> dict[str, FileState]:
        """The files of the last run on these paths, by content key."""
        if not self.enabled:
            return {}
        try:
            with open(self._manifest_path(identity), "rb") as fh:
                blob = fh.read()
        except OSError:
            return {}
        entry = load_entry(MANIFEST_KIND, blob, results.report_types())
        if not (
            isinstance(entry, tuple)
            and len(entry) == 3
            and entry[:2] == (MAGIC, identity)
            and isinstance(entry[2], tuple)
        ):
            return {}
        return {f.content_key: f for f in entry[2] if isinstance(f, FileState) and f.content_key}

    def put_manifest(self, identity: str, files: tuple[FileState, ...]) -> None:
        if self.enabled:
            blob = entry_header(MANIFEST_KIND) + pickle.dumps(
                (MAGIC, identity, files), protocol=PROTOCOL
            )
            atomic_write(self._manifest_path(identity), blob)

    def _prune(self) -> None:
        """Keep the newest ``KEEP`` programs (manifests are one per set of paths)."""
        try:
            entries = list(self.root.glob("??/*.pkl"))
            if len(entries) <= KEEP:
                return
            entries.sort(key=lambda p: p.stat().st_mtime)
        except OSError:
            return
        for path in entries[: len(entries) - KEEP]:
            try:
                path.unlink()
            except OSError:
                pass
            for pruning in path.parent.glob(f"{path.stem}.*{PRUNING_SUFFIX}"):
                with contextlib.suppress(OSError):
                    pruning.unlink()


class ProgramPrunings:
    """``prune.StoredPrunings`` for one stored program and one tree of it."""

    def __init__(
        self,
        store: ProgramStore,
        key: str,
        tree: str,
        files: Sequence[FileState],
        summaries: Sequence[ModuleSummary],
    ) -> None:
        self.store = store
        self.key = key
        self.tree = tree
        self.files = files
        self.summaries = summaries

    def get(self, question: Question) -> PruningState | None:
        moved_from = MovedFrom(self.files, self.summaries) if self.summaries else None
        return self.store.get_pruning(self.key, self.tree, question, moved_from)

    def put(self, question: Question, state: PruningState) -> None:
        self.store.put_pruning(self.key, self.tree, question, state, self.files)


#: a file of the tree a pruning was computed on: path, module, is package,
#: content key (where its summary is in the summary cache) and summary digest
StoredFile = tuple[str, str, bool, str | None, str | None]

#: stored prunings of other trees tried, newest first, before pruning again
MOVE_CANDIDATES = 2
#: at most this many files moved: each costs a walk of its old and new summaries
MOVE_FILES = 32


@dataclass(frozen=True, slots=True)
class MovedFrom:
    """The tree a pruning is asked for: its files and their summaries."""

    files: Sequence[FileState]
    summaries: Sequence[ModuleSummary]


def _moved(
    state: PruningState,
    stored: tuple[StoredFile, ...],
    now: MovedFrom,
    cache: SummaryCache,
) -> PruningState | None:
    """``state``, computed on the tree of ``stored``, moved to the tree ``now``
    of the same shapes; None if it cannot be (other files, too many moved,
    an old summary no longer cached, or lines that did not move as one).

    What moves: a pruning holds positions only as guards' lines (the guards of
    its cuts, and where facts decided one: ``Location(path, guard.line)``). In
    each file whose summary changed, the old summary (from the summary cache,
    by its content key) and the new one hold the same guards in the same order
    (same shape), so each old guard and each old guard line has one new one; a
    line whose guards went to different lines (a statement broken over lines)
    leaves the pruning to be computed again."""
    files = {f.path: f for f in now.files}
    if len(stored) != len(files) or not all(_is_stored_file(f) for f in stored):
        return None
    changed: dict[str, tuple[str, str, bool, str]] = {}
    for path, module, is_package, content_key, digest in stored:
        f = files.get(path)
        if f is None or (f.module, f.is_package) != (module, is_package) or f.shape is None:
            return None
        if f.digest != digest:
            if content_key is None or digest is None:
                return None
            changed[path] = (path, module, is_package, content_key)
    if len(changed) > MOVE_FILES:
        return None
    summaries = {s.path: s for s in now.summaries}
    guards: dict[Guard, Guard] = {}
    lines: dict[str, dict[int, int]] = {}
    for path, module, is_package, content_key in changed.values():
        old = cache.get(SourceFile(path, module, "", is_package), content_key)
        new = summaries.get(path)
        if old is None or old.summary is None or new is None:
            return None
        before, after = _guards_in_order(old.summary), _guards_in_order(new)
        if len(before) != len(after):
            return None
        moved = lines[path] = {}
        for g, h in zip(before, after, strict=True):
            if guards.setdefault(g, h) != h or moved.setdefault(g.line, h.line) != h.line:
                return None

    def line(where: Location) -> Location:
        moved = lines.get(where.path)
        if moved is None:
            return where
        return Location(where.path, moved[where.line], where.column)

    try:
        return replace(
            state,
            guard_cuts={
                site: replace(cut, guard=guards[cut.guard]) if cut.path in lines else cut
                for site, cut in state.guard_cuts.items()
            },
            uses={text: frozenset(map(line, where)) for text, where in state.uses.items()},
            derived_decided=frozenset(map(line, state.derived_decided)),
        )
    except KeyError:  # a position no guard of the file is at: not ours to move
        return None


def _is_stored_file(item: object) -> bool:
    """Whether ``item`` is a ``StoredFile`` (an entry that loads may still hold
    anything its allowed types can build)."""
    return (
        type(item) is tuple
        and len(item) == 5
        and isinstance(item[0], str)
        and isinstance(item[1], str)
        and isinstance(item[2], bool)
        and all(v is None or isinstance(v, str) for v in item[3:])
    )


def _guards_in_order(summary: ModuleSummary) -> list[Guard]:
    """Every guard of ``summary``, in the order of its fields (a record met twice
    counts twice: summaries loaded from the cache share equal records, fresh
    ones do not, and both must list alike)."""
    out: list[Guard] = []
    stack: list[object] = [summary]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is Guard:
            out.append(node)  # type: ignore[arg-type]
        elif kind is tuple:
            stack.extend(reversed(node))  # type: ignore[call-overload]
        elif kind in _RECORD_FIELDS:
            stack.extend(reversed(_RECORD_FIELDS[kind](node)))
    return out


#: per record type of the model, its fields' values in order
_RECORD_FIELDS: dict[type, Callable[[Any], tuple[object, ...]]] = {
    cls: (lambda names: lambda r: tuple(getattr(r, n) for n in names))(
        tuple(f.name for f in fields(cls))
    )
    for cls in vars(model).values()
    if isinstance(cls, type) and is_dataclass(cls) and cls.__module__ == model.__name__
}


def _warn_stderr(message: str) -> None:
    print(f"flagtrace: warning: {message}", file=sys.stderr, flush=True)
