"""Module discovery: which files to analyse, and which module each one stands for.

flagtrace must never import or execute the code it analyses, so this module
names modules from the filesystem alone: no ``importlib.util.find_spec`` (it
imports parent packages), no ``sys.path`` probing. A file's module name follows
from where its enclosing packages start, the same way Python would name it if
the directory above its topmost package were on ``sys.path``.

The rules, in the order a reader meets them:

* A path given directly is named up to its *topmost* enclosing regular package
  (a directory with ``__init__.py``): ``site/sglang/srt`` holds
  ``sglang.srt.*`` and its root is ``site``. Plain directories between
  packages are namespace portions and count too: SGLang 0.5.9 ships
  ``sglang/srt`` without an ``__init__.py`` and it is still ``sglang.srt``.
* A plain directory with no package above it is a *root*: its files are
  top-level modules, and its subdirectories are packages, regular or namespace
  (``root/a/b.py`` is ``a.b`` with or without ``a/__init__.py``).
* ``src/`` without ``__init__.py``, reached through plain directories only, is
  a root of its own (the src layout): ``proj/src/pkg`` is ``pkg`` while
  ``proj/tests/test_x.py`` stays ``tests.test_x``. So is a ``site-packages``
  (or ``dist-packages``) directory that is not inside a virtualenv.
* A file given directly is named the same way; its own stem is used even if it
  is not an identifier (``my-tool.py`` is ``my-tool``), because the user asked
  for it by name.
* Inside a walk, names that cannot be imported (``my-dir``, ``a.b``, keywords)
  are skipped silently, as are tool and build directories and virtualenvs
  (see :func:`skipped_directory`). Explicitly given paths are never skipped
  or excluded: a command line that names a path and then ignores it confuses.

Problems with the input (a missing path, an unreadable directory, two files
claiming one module, a given directory without Python files, a ``.py`` symlink
that loops or dangles) become :class:`~flagtrace.model.Diagnostic` values and
the walk goes on: one bad directory must not hide the rest of a codebase.
Empty files and empty directories inside a walk are not problems.

**Reads stay inside the given paths.** The tree may be a stranger's pull
request, analysed in a CI job that holds secrets, and a witness quotes source
lines into a report that may become a public comment. A symlink met in a walk
(to a file or a directory) whose target, fully resolved, lies outside every
given path (each resolved too) is therefore not read: it is one diagnostic
that names what the link says, and the walk goes on. Links between the given
paths work as before. The given paths themselves are the caller's words, not
the tree's, so they are resolved and followed wherever they lead: a bot that
analyses an untrusted checkout should name the checkout (``.``), not a path
inside it that the checkout could have replaced by a link.
``follow_external_symlinks=True`` (``--follow-external-symlinks``) restores
following every link.
"""

from __future__ import annotations

import errno
import fnmatch
import keyword
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from flagtrace.model import Diagnostic, SourceFile

__all__ = [
    "Discovery",
    "discover",
    "is_module_component",
    "module_name_for",
    "skipped_directory",
]

INIT = "__init__.py"
VENV_MARKER = "pyvenv.cfg"

#: Directories that never hold code to analyse: VCS data, caches, tool envs.
SKIPPED_DIR_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        "node_modules",
        ".venv",
        "venv",
    }
)

#: Build output, skipped unless it is a regular package (``pkg/build/__init__.py``
#: is real code; setuptools' ``build/lib/...`` is a stale copy of it).
ARTIFACT_DIR_NAMES = frozenset({"build", "dist"})

#: Files that may declare console scripts (program roots; ``flagtrace.scripts``).
PACKAGING_FILES = frozenset({"pyproject.toml", "setup.cfg"})

#: Installation directories: a root of top-level modules, or skipped in a venv.
INSTALL_DIR_NAMES = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True, slots=True)
class Discovery:
    """What :func:`discover` found: files sorted by module then path, and the
    problems it met on the way (in the order it met them)."""

    files: tuple[SourceFile, ...]
    diagnostics: tuple[Diagnostic, ...]
    #: ``pyproject.toml`` and ``setup.cfg`` files met in the walk (console scripts:
    #: ``flagtrace.scripts``), by the same rules as Python files
    packaging: tuple[str, ...] = ()


def discover(
    paths: Sequence[str | os.PathLike[str]],
    exclude: Sequence[str] = (),
    *,
    follow_external_symlinks: bool = False,
) -> Discovery:
    """Find the Python files under ``paths`` and name their modules.

    ``exclude`` holds fnmatch patterns matched against each file's or
    directory's path relative to the given path it was found under, its path
    as displayed, and its bare name (``tests/*``, ``*_pb2.py``, ``build``).
    When two files claim one module, the first in argument order wins, as the
    first ``sys.path`` entry would. A symlink in a walk whose target lies
    outside every given path is a diagnostic, not read, unless
    ``follow_external_symlinks``.
    """
    roots = None if follow_external_symlinks else _real_roots(paths)
    collector = _Collector(exclude, roots)
    for given in paths:
        _discover_path(Path(os.fspath(given)), collector)
    return collector.result()


def module_name_for(path: Path) -> tuple[str, Path]:
    """Name the module ``path`` stands for, and the root that name is relative to.

    ``path`` is a ``.py`` file or a directory. The name spans every directory
    up to the topmost regular package above it, plain directories in between
    included: inside a package they are namespace portions (SGLang 0.5.9 ships
    ``sglang/srt`` without an ``__init__.py``, and it is still ``sglang.srt``).
    A plain directory with no package above names nothing: it is its own root,
    so the result is ``("", path)``. The root is derived from ``path`` as given
    (``..`` added and normalised), not resolved, so it stays readable in output.
    """
    absolute = Path(os.path.abspath(path))
    leaf: list[str]
    if absolute.is_dir():
        leaf, directory, offset = [], absolute, 0
    elif absolute.name == INIT:
        leaf, directory, offset = [], absolute.parent, 1
    else:
        leaf, directory, offset = [absolute.stem], absolute.parent, 1
    chain = _package_chain(directory, given=(directory / INIT).is_file())
    if not chain and not leaf:
        return "", path
    parts = [ancestor.name for ancestor in reversed(chain)] + leaf
    root = os.path.normpath(os.path.join(path, *[os.pardir] * (offset + len(chain))))
    return ".".join(parts), Path(root)


def is_module_component(name: str) -> bool:
    """Whether ``name`` can be one part of a dotted module name (``import a.name``)."""
    return name.isidentifier() and not keyword.iskeyword(name)


def skipped_directory(path: Path) -> bool:
    """Whether a walk should stay out of ``path``: tool and VCS directories,
    build output, egg-info, virtualenvs, and install directories inside one.

    Names that are not module components are skipped by the walk anyway; they
    are listed here too so the rule reads whole.
    """
    name = path.name
    if name in SKIPPED_DIR_NAMES or name.endswith(".egg-info"):
        return True
    if name in ARTIFACT_DIR_NAMES and not (path / INIT).is_file():
        return True
    if (path / VENV_MARKER).is_file():
        return True
    return name in INSTALL_DIR_NAMES and _inside_virtualenv(path)


# --------------------------------------------------------------------------
# The walk


@dataclass(frozen=True, slots=True)
class _Dir:
    """A directory the walk stands in, and how the modules below it are named."""

    path: Path  # as given or joined, for display
    rel: str  # posix path relative to the given path ("" at the given path)
    prefix: str  # dotted module name of this directory ("" at a root)
    root: Path  # the directory module names are relative to
    in_package: bool  # this directory or one above it (in the walk) is a regular package

    def module(self, name: str) -> str:
        """The dotted name of ``name`` directly inside this directory."""
        return f"{self.prefix}.{name}" if self.prefix else name

    def rel_of(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name


class _Collector:
    """The walk's only mutable state: what was found, seen and said.

    Visited directories and files are keyed by real path, so a symlinked
    directory is followed once and a symlink loop ends; the same file reached
    twice (two given paths, a link) is reported once. ``roots`` are the real
    paths links may lead into (None: anywhere).
    """

    def __init__(self, exclude: Iterable[str], roots: tuple[str, ...] | None = None) -> None:
        self.patterns = tuple(_normalise_pattern(pattern) for pattern in exclude)
        self.roots = roots
        self.visited_dirs: set[str] = set()
        self.seen_files: set[str] = set()
        self.by_module: dict[str, SourceFile] = {}
        self.diagnostics: list[Diagnostic] = []
        self.found = 0  # Python files met, before de-duplication
        self.packaging: list[str] = []

    def excluded(self, *candidates: str) -> bool:
        return any(
            fnmatch.fnmatchcase(candidate, pattern)
            for pattern in self.patterns
            for candidate in candidates
        )

    def first_visit(self, directory: Path) -> bool:
        real = os.path.realpath(directory)
        if real in self.visited_dirs:
            return False
        self.visited_dirs.add(real)
        return True

    def add(self, source: SourceFile) -> None:
        self.found += 1
        real = os.path.realpath(source.path)
        if real in self.seen_files:
            return
        self.seen_files.add(real)
        first = self.by_module.get(source.module)
        if first is not None:
            message = f"module {source.module} also defined at {source.path}; ignored"
            self.problem(Path(first.path), message)
            return
        self.by_module[source.module] = source

    def problem(self, path: Path, message: str) -> None:
        self.diagnostics.append(Diagnostic(str(path), None, message))

    def escapes(self, link: Path) -> bool:
        """Whether the symlink ``link`` leads outside the given paths; if so, say so.

        The diagnostic names the target as the link spells it, not as it
        resolves: it then tells nothing about the machine that the tree did not
        already say, so it can be quoted anywhere.
        """
        if self.roots is None:
            return False
        real = os.path.realpath(link)
        if any(_within(real, root) for root in self.roots):
            return False
        target = _printable(_link_target(str(link)))
        self.problem(
            link, f"symbolic link to a target outside the analysed paths ({target}); {_NOT_READ}"
        )
        return True

    def result(self) -> Discovery:
        files = sorted(self.by_module.values(), key=lambda f: (f.module, f.path))
        return Discovery(tuple(files), tuple(self.diagnostics), tuple(self.packaging))


def _discover_path(path: Path, collector: _Collector) -> None:
    """Handle one path as the user gave it: a directory to walk or a file to take."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        collector.problem(path, _describe(error))
        return
    if stat.S_ISDIR(mode):
        if os.path.realpath(path) in collector.visited_dirs:
            return  # given twice, or inside a directory given before: already walked
        module, root = module_name_for(path)
        found = collector.found
        _walk(_Dir(path, "", module, root, in_package=bool(module)), collector)
        if collector.found == found:
            if path.suffix == ".py":
                message = "a directory, not a Python file, and it holds no Python files"
                collector.problem(path, message)
            else:
                collector.problem(path, "a directory with no Python files to analyse")
    elif stat.S_ISREG(mode):
        _take_given_file(path, collector)
    else:
        collector.problem(path, "not a regular file or directory")


def _take_given_file(path: Path, collector: _Collector) -> None:
    """A file named on the command line is analysed under its stem, whatever it is."""
    if path.suffix == ".pyi":
        return  # stubs state no behaviour; ignored quietly, as in walks
    if path.suffix != ".py":
        collector.problem(path, "not a Python source file (.py); ignored")
        return
    module, root = module_name_for(path)
    collector.add(SourceFile(str(path), module, str(root), is_package=path.name == INIT))


def _walk(directory: _Dir, collector: _Collector) -> None:
    """Walk one directory: subdirectories first, so a package ``foo/`` claims
    module ``foo`` before a sibling ``foo.py`` does (Python's own precedence);
    real entries before symlinks, so a link into the tree does not steal the
    name of what it points to."""
    if not collector.first_visit(directory.path):
        return
    try:
        with os.scandir(directory.path) as iterator:
            entries = sorted(iterator, key=lambda entry: (_is_symlink(entry), entry.name))
    except OSError as error:
        collector.problem(directory.path, _describe(error))
        return
    subdirectories = [(entry.name, _is_symlink(entry)) for entry in entries if _is_dir(entry)]
    files = [
        (entry.name, _is_symlink(entry))
        for entry in entries
        if entry.name.endswith(".py") and _is_file(entry)
    ]
    for entry in entries:
        if _is_symlink(entry) and not _is_dir(entry) and not _is_file(entry):
            _bad_link(directory, entry, collector)
    for name, link in subdirectories:
        _enter(directory, name, link, collector)
    for name, link in files:
        _take(directory, name, link, collector)
    for entry in entries:
        if entry.name in PACKAGING_FILES and _is_file(entry):
            path = directory.path / entry.name
            excluded = collector.excluded(directory.rel_of(entry.name), path.as_posix())
            if not excluded and not (_is_symlink(entry) and collector.escapes(path)):
                collector.packaging.append(str(path))


def _enter(parent: _Dir, name: str, link: bool, collector: _Collector) -> None:
    """Walk into a subdirectory, unless it is skipped, excluded or unimportable,
    or a ``link`` that leads outside the given paths."""
    path = parent.path / name
    rel = parent.rel_of(name)
    if collector.excluded(rel, path.as_posix(), name) or skipped_directory(path):
        return
    if name in INSTALL_DIR_NAMES or (name == "src" and not parent.in_package):
        if not (path / INIT).is_file():
            if not (link and collector.escapes(path)):
                _walk(_Dir(path, rel, "", path, in_package=False), collector)
            return
    if not is_module_component(name) or (link and collector.escapes(path)):
        return
    is_package = (path / INIT).is_file()
    child = _Dir(path, rel, parent.module(name), parent.root, parent.in_package or is_package)
    _walk(child, collector)


def _take(parent: _Dir, name: str, link: bool, collector: _Collector) -> None:
    """Record one ``.py`` file found by the walk, unless excluded or unimportable,
    or a ``link`` that leads outside the given paths."""
    path = parent.path / name
    if collector.excluded(parent.rel_of(name), path.as_posix(), name):
        return
    if name == INIT:
        module, is_package = parent.prefix, True
    else:
        stem = name[: -len(".py")]
        module = parent.module(stem) if is_module_component(stem) else ""
        is_package = False
    if module and not (link and collector.escapes(path)):
        collector.add(SourceFile(str(path), module, str(parent.root), is_package))


def _bad_link(parent: _Dir, entry: os.DirEntry[str], collector: _Collector) -> None:
    """Report a ``.py`` symlink that loops or dangles where a module would be
    taken. Other names stay quiet: a directory link that loops is just not
    walked, and an editor's ``.#x.py`` lock link names no module."""
    name = entry.name
    if not name.endswith(".py") or not (name == INIT or is_module_component(name[: -len(".py")])):
        return
    path = parent.path / name
    if collector.excluded(parent.rel_of(name), path.as_posix(), name):
        return
    try:
        os.stat(entry.path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            collector.problem(path, "symbolic link loop; ignored")
        elif collector.escapes(path):
            pass  # said so; whether the target exists outside is none of the report's business
        elif isinstance(error, FileNotFoundError):
            target = _printable(_link_target(entry.path))
            collector.problem(path, f"broken symbolic link (to {target}); ignored")
        else:
            collector.problem(path, f"{_describe(error)}; ignored")


_NOT_READ = "not read (--follow-external-symlinks reads it)"


def _real_roots(paths: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    """The given paths, fully resolved: where a link met in a walk may lead."""
    return tuple(os.path.realpath(os.fspath(path)) for path in paths)


def _within(real: str, root: str) -> bool:
    """Whether the resolved path ``real`` is ``root`` or below it."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _printable(text: str) -> str:
    """``text`` with control and undecodable characters escaped, so that a link
    target cannot break the one-line diagnostic (or forge a second one)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


# --------------------------------------------------------------------------
# Small helpers


def _package_chain(directory: Path, *, given: bool) -> list[Path]:
    """The directories, from ``directory`` upward, that a module name spans:
    up to the topmost one with an ``__init__.py``, through importable names only.

    ``given`` lets ``directory`` itself carry any name, because the user named
    it (a package directory given directly, or the package of a given
    ``__init__.py``); every directory above must be importable.
    """
    chain: list[Path] = []
    span = 0
    for depth, ancestor in enumerate([directory, *directory.parents]):
        if ancestor == ancestor.parent:
            break  # the filesystem root names nothing
        if not ((depth == 0 and given) or is_module_component(ancestor.name)):
            break
        chain.append(ancestor)
        if (ancestor / INIT).is_file():
            span = depth + 1
    return chain[:span]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Like ``entry.is_dir()``, but a link that cannot be followed (a loop) is
    nothing, as a dangling link already is, rather than an error."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _inside_virtualenv(path: Path) -> bool:
    """Whether some directory above ``path`` is a virtualenv (holds ``pyvenv.cfg``)."""
    absolute = Path(os.path.abspath(path))
    return any((ancestor / VENV_MARKER).is_file() for ancestor in absolute.parents)


def _normalise_pattern(pattern: str) -> str:
    """Let ``./tests/*`` and ``build/`` mean what their writers meant."""
    pattern = pattern.replace(os.sep, "/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern.rstrip("/") or pattern


def _describe(error: OSError) -> str:
    """A short, lower-case reason for a diagnostic, without the errno noise."""
    if isinstance(error, FileNotFoundError):
        return "no such file or directory"
    if isinstance(error, PermissionError):
        return "permission denied"
    if error.errno == errno.ELOOP:
        return "symbolic link loop"
    return (error.strerror or str(error)).lower()
