"""Download registry packages once, for tests and benchmarks that analyse real code.

Real codebases (SGLang, PyCG's micro-benchmark) are what flagtrace is measured
on, but they are too large to commit. They are fetched with pip's ordinary
client, kept under ``<repo>/.cache`` (git-ignored) and unpacked once, so a
second run needs no network. This module has no pytest dependency: benchmarks
import it as ``tests.registry`` (with the repository root on ``sys.path``), and
``tests/conftest.py`` wraps it in a fixture.

Nothing here imports the downloaded code; it is only unpacked as files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REPO", "Registry", "RegistryError", "download"]

REPO = Path(__file__).resolve().parent.parent
ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".tgz", ".zip")
MANIFEST = "manifest.json"


class RegistryError(RuntimeError):
    """A package could not be downloaded or unpacked (usually: no network)."""


@dataclass(frozen=True, slots=True)
class Registry:
    """A download cache rooted at ``cache`` (``downloads/`` and ``unpacked/`` below it)."""

    cache: Path = REPO / ".cache"

    @property
    def downloads(self) -> Path:
        return self.cache / "downloads"

    @property
    def unpacked(self) -> Path:
        return self.cache / "unpacked"

    def download(self, spec: str, *, no_binary: bool = False) -> Path:
        """Fetch ``spec`` (``"sglang==0.5.9"``) unless cached; return its unpacked directory.

        ``no_binary`` asks for the sdist (``pip download --no-binary :all:``),
        for packages whose tests and benchmarks ship only there. A wheel
        unpacks as is; an sdist's single top-level directory is stripped, so
        both return the directory that holds the project's files.
        """
        self.downloads.mkdir(parents=True, exist_ok=True)
        archive = self._cached_archive(spec, no_binary) or self._fetch(spec, no_binary)
        return self._unpack(archive)

    # -- the download cache ---------------------------------------------------

    def _cached_archive(self, spec: str, no_binary: bool) -> Path | None:
        """The archive already downloaded for ``spec``: by the manifest, or for a
        pinned spec (``name==version``) by its file name, so archives put in
        the cache by hand count too."""
        recorded = self._read_manifest().get(_manifest_key(spec, no_binary))
        if recorded and (self.downloads / recorded).is_file():
            return self.downloads / recorded
        pinned = _pinned(spec)
        if pinned is None:
            return None
        candidates = [
            path
            for path in sorted(self.downloads.iterdir())
            if path.is_file() and _archive_matches(path.name, *pinned, no_binary=no_binary)
        ]
        candidates.sort(key=lambda path: not path.name.endswith(".whl"))  # wheels first
        return candidates[0] if candidates else None

    def _fetch(self, spec: str, no_binary: bool) -> Path:
        """Run ``pip download`` into a fresh directory, so the new file is known,
        then move it into the cache and record it in the manifest."""
        with tempfile.TemporaryDirectory(dir=self.downloads, prefix=".fetch-") as scratch:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", scratch]
            if no_binary:
                command += ["--no-binary", ":all:"]
            completed = subprocess.run(
                [*command, spec], capture_output=True, text=True, check=False
            )
            fetched = [path for path in Path(scratch).iterdir() if path.is_file()]
            if completed.returncode != 0 or len(fetched) != 1:
                raise RegistryError(_pip_failure(spec, completed))
            target = self.downloads / fetched[0].name
            os.replace(fetched[0], target)
        self._record(spec, no_binary, target.name)
        return target

    def _read_manifest(self) -> dict[str, str]:
        try:
            data = json.loads((self.downloads / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {str(key): str(value) for key, value in data.items()} if isinstance(data, dict) else {}
        )

    def _record(self, spec: str, no_binary: bool, filename: str) -> None:
        manifest = self._read_manifest()
        manifest[_manifest_key(spec, no_binary)] = filename
        _write_atomically(self.downloads / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))

    # -- unpacking --------------------------------------------------------------

    def _unpack(self, archive: Path) -> Path:
        """Unpack ``archive`` into ``unpacked/<stem>/`` once. Extraction goes to a
        scratch directory renamed into place, so an interrupted run leaves no
        half-unpacked tree that a later run would trust."""
        target = self.unpacked / _archive_stem(archive.name)
        if target.is_dir():
            return target
        self.unpacked.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=self.unpacked, prefix=".unpack-"))
        try:
            _extract(archive, scratch)
            source = scratch if archive.name.endswith(".whl") else _single_top(scratch)
            try:
                os.replace(source, target)
            except OSError:
                if not target.is_dir():  # not merely a concurrent run that won the race
                    raise
        except (OSError, tarfile.TarError, zipfile.BadZipFile) as error:
            raise RegistryError(f"cannot unpack {archive}: {error}") from error
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return target


def download(spec: str, *, no_binary: bool = False) -> Path:
    """:meth:`Registry.download` on the repository's default cache."""
    return Registry().download(spec, no_binary=no_binary)


# --------------------------------------------------------------------------
# Helpers


def _manifest_key(spec: str, no_binary: bool) -> str:
    return f"{spec} [no-binary]" if no_binary else spec


def _normalise(name: str) -> str:
    """Project names compare case- and separator-insensitively (PEP 503, with
    ``_`` as wheel file names spell it)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _pinned(spec: str) -> tuple[str, str] | None:
    """``("sglang", "0.5.9")`` for ``"sglang==0.5.9"``; None for anything looser."""
    match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.!+_-]+)\s*", spec)
    return (_normalise(match.group(1)), match.group(2)) if match else None


def _archive_matches(filename: str, name: str, version: str, *, no_binary: bool) -> bool:
    if filename.endswith(".whl"):
        if no_binary:
            return False
        parts = filename.split("-")
        return len(parts) >= 2 and _normalise(parts[0]) == name and parts[1] == version
    if not filename.endswith(ARCHIVE_SUFFIXES):
        return False
    stem = _archive_stem(filename)
    project, _, found_version = stem.rpartition("-")
    return _normalise(project) == name and found_version == version


def _archive_stem(filename: str) -> str:
    for suffix in ARCHIVE_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def _extract(archive: Path, destination: Path) -> None:
    """Extract as plain files: zip members are sanitised by zipfile; tar members
    go through the ``data`` filter where Python has it (no links out, no
    devices, no absolute paths)."""
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(destination)
        return
    with tarfile.open(archive) as bundle:
        if hasattr(tarfile, "data_filter"):
            bundle.extractall(destination, filter="data")
        else:  # Python without PEP 706; sdists from PyPI are trusted input here
            bundle.extractall(destination)


def _single_top(directory: Path) -> Path:
    """An sdist holds one ``name-version/`` directory; return it, or ``directory``."""
    children = list(directory.iterdir())
    return children[0] if len(children) == 1 and children[0].is_dir() else directory


def _write_atomically(path: Path, text: str) -> None:
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(text + "\n", encoding="utf-8")
    os.replace(scratch, path)


def _pip_failure(spec: str, completed: subprocess.CompletedProcess[str]) -> str:
    """A message that says what failed and shows the end of pip's own words."""
    output = (completed.stderr or completed.stdout or "").strip().splitlines()
    tail = "\n".join(output[-8:]) or f"pip exited with {completed.returncode}"
    return f"could not download {spec!r} with pip (no network, or no such release?):\n{tail}"
