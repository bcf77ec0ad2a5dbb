"""Whole-run results on disk: an unchanged tree is answered without resolving anything.

Why: the per-file summary cache makes indexing incremental, but resolution, the
call graph and the flag analysis are whole-program stages that take tens of
seconds on SGLang. A pre-commit hook usually runs them on a tree whose
analysed content did not change since the last run, so the report is stored,
keyed by everything it depends on, and reused.

Two keys lead to a stored report:

* the *exact* key: every discovered file's path, module name and content key
  (``SummaryCache.key``: its bytes, the indexer's schema), the discovery
  diagnostics, the options, and ``analysis_digest()`` (flagtrace's own analysis
  code and the versions it runs on). Computing it reads and hashes the files,
  nothing more: a warm run neither parses nor unpickles a summary.
* the *summary* key: the same with each file's content key replaced by the
  digest of its summary (``index.summary_digest``; a file that cannot be indexed
  keeps its content key). An edit that changes no summary (comments, trailing
  lines, the text of literals nothing reads) keeps the summary key, so after
  re-indexing only the changed files the stored report is reused with the line
  counts brought up to date. To know the other files' digests without loading
  their summaries, each identity (options and paths) keeps a manifest of the
  files of its last run.

A report is stored only when it is reproducible. Jedi works within a time
budget: a run whose budget ran out before jedi was asked about every call a
verdict rested on is not stored (a faster machine, or a second try, gets
further); one in which jedi answered everything it was asked is, since its
answers then depend on the analysed files and jedi's version, which the key
holds (and on files under the analysed roots that flagtrace leaves out, such as
excluded ones and ``.pyi`` stubs, which it does not: edit one and the stored
report can lag until an analysed file changes).
Layout under the summary cache's directory: ``results/v<FORMAT>/<2 hex>/<key>.pkl``
for reports and ``results/v<FORMAT>/manifests/<identity>.pkl``; atomic writes,
and anything unreadable or foreign is a miss.

Entries are written and read like the summary cache's (``cache.encode_entry``,
``cache.load_entry``): reading one never runs code, because the unpickler
hands out only the records and enums of ``flagtrace.model`` and the records
of this module (``FileState``); any other global makes the entry a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from flagtrace import model
from flagtrace.cache import (
    _RESULTS,
    LoadableTypes,
    SummaryCache,
    atomic_write,
    encode_entry,
    load_entry,
)
from flagtrace.model import AnalysisReport, Diagnostic, IndexResult, SourceFile

#: The layout and encoding of stored reports (2: ``cache.encode_entry``, read
#: without running code; 1 was plain pickles, left behind in ``results/v1``;
#: 3: ``AnalysisReport.entries_left_out``; 4: ``assumptions`` and ``EntryVerdict.pruned``;
#: 5: ``FileState.shape``).
FORMAT = 5
MAGIC = "flagtrace-result"
KIND = "report"
#: Stored reports kept per cache directory; the oldest go first.
KEEP = 64


@lru_cache(maxsize=4)
def analysis_digest(package: Path | None = None) -> str:
    """flagtrace's analysis code (every module but the reporters, subpackages such as
    ``resolve/`` included) and the versions it runs on: a report is stale when any of
    them changes.

    The library versions come from their package metadata: importing libcst and networkx
    to ask them would cost a warm run (which parses nothing) most of its time."""
    from importlib.metadata import version

    from flagtrace import __version__

    here = package if package is not None else Path(__file__).resolve().parent
    digest = hashlib.sha256(
        # jedi and parso: a stored report may hold what jedi settled
        f"{__version__};{version('libcst')};{version('networkx')};{version('jedi')};"
        f"{version('parso')};{sys.version}".encode()
    )
    for path in sorted(here.rglob("*.py")):
        relative = path.relative_to(here)
        if relative.parts[0] == "report":
            continue  # how a report is shown, not what it says
        digest.update(relative.as_posix().encode())
        try:
            digest.update(path.read_bytes())
        except OSError:  # a zipped install: the versions have to do
            pass
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class FileState:
    """One discovered file as a stored report depends on it."""

    path: str
    module: str
    is_package: bool
    content_key: str | None  # None: unreadable or too large (never matches a stored one)
    digest: str | None  # summary digest; None: the file could not be indexed
    lines: int
    #: the summary's shape (``index.summary_digests``: positions left out); the
    #: key of a stored resolved program, which reads no position
    shape: str | None = None

    @classmethod
    def of(cls, source: SourceFile, content_key: str | None, result: IndexResult) -> FileState:
        """The state of ``source`` as indexing left it (``content_key``: ``read_keyed``'s)."""
        summary = result.summary
        return cls(
            source.path,
            source.module,
            source.is_package,
            content_key,
            result.digest if summary is not None else None,
            summary.lines if summary is not None else 0,
            result.shape if summary is not None else None,
        )

    @property
    def summary_part(self) -> str:
        if self.digest is not None:
            return f"summary {self.digest}"
        return f"content {self.content_key}"

    @property
    def shape_part(self) -> str:
        """``summary_part`` without positions: what resolution reads of the file."""
        if self.shape is not None:
            return f"shape {self.shape}"
        return f"content {self.content_key}"


@dataclass(frozen=True, slots=True)
class Stored:
    report: AnalysisReport
    files: tuple[FileState, ...]


def options_text(**options: object) -> str:
    """The run's options as one canonical string (part of every key)."""
    return json.dumps(options, sort_keys=True, default=list)


class ResultCache:
    """Stored reports next to a ``SummaryCache`` (enabled with it)."""

    def __init__(self, summaries: SummaryCache) -> None:
        self.summaries = summaries
        self.enabled = summaries.enabled
        self.root = summaries.directory / _RESULTS / f"v{FORMAT}"

    # ----------------------------------------------------------------- keys

    def exact_key(
        self,
        options: str,
        files: Iterable[tuple[SourceFile, str | None]],
        diagnostics: Sequence[Diagnostic],
    ) -> str:
        parts = [f"{s.path}\0{s.module}\0{s.is_package}\0content {key}" for s, key in files]
        return self._key("exact", options, parts, diagnostics)

    def summary_key(
        self, options: str, files: Iterable[FileState], diagnostics: Sequence[Diagnostic]
    ) -> str:
        parts = [f"{f.path}\0{f.module}\0{f.is_package}\0{f.summary_part}" for f in files]
        return self._key("summary", options, parts, diagnostics)

    def _key(
        self, kind: str, options: str, parts: list[str], diagnostics: Sequence[Diagnostic]
    ) -> str:
        h = hashlib.sha256()
        for text in (
            kind,
            analysis_digest(),
            self.summaries.schema,
            os.environ.get("FLAGTRACE_MAX_FILE_MB", ""),
            options,
            *parts,
            *(str(d) for d in diagnostics),
        ):
            h.update(text.encode("utf-8", "surrogateescape"))
            h.update(b"\0")
        return h.hexdigest()

    def identity(self, options: str, paths: Sequence[str]) -> str:
        h = hashlib.sha256(options.encode())
        for path in paths:
            h.update(b"\0" + os.path.abspath(path).encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    # -------------------------------------------------------------- entries

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pkl"

    def _manifest_path(self, identity: str) -> Path:
        return self.root / "manifests" / f"{identity}.pkl"

    def get(self, key: str) -> Stored | None:
        entry = self._load(self._path(key))
        if not (isinstance(entry, tuple) and len(entry) == 4 and entry[:2] == (MAGIC, key)):
            return None
        report, files = entry[2], entry[3]
        if not (
            isinstance(report, AnalysisReport)
            and isinstance(files, tuple)
            and all(isinstance(f, FileState) for f in files)
        ):
            return None
        return Stored(report, files)

    def put(
        self, keys: Iterable[str], report: AnalysisReport, files: tuple[FileState, ...]
    ) -> None:
        if not self.enabled:
            return
        for key in set(keys):
            atomic_write(self._path(key), encode_entry(KIND, (MAGIC, key, report, files)))
        self._prune()

    def manifest(self, identity: str) -> dict[str, FileState]:
        """The files of this identity's last run, by content key."""
        entry = self._load(self._manifest_path(identity))
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
            atomic_write(
                self._manifest_path(identity), encode_entry(KIND, (MAGIC, identity, files))
            )

    def _load(self, path: Path) -> object:
        if not self.enabled:
            return None
        try:
            with open(path, "rb") as fh:
                blob = fh.read()
        except OSError:
            return None
        return load_entry(KIND, blob, report_types())

    def _prune(self) -> None:
        """Keep the newest ``KEEP`` reports (manifests are one per identity)."""
        try:
            entries = [p for p in self.root.glob("??/*.pkl")]
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


@lru_cache(maxsize=1)
def report_types() -> LoadableTypes:
    """What a stored report or manifest may hold: the model's records and enums,
    and this module's (``FileState``); made on first use, once they exist."""
    return LoadableTypes(model, sys.modules[__name__])
