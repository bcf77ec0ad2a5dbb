"""Git plumbing for ``flagtrace review``: revisions, a temporary checkout, the diff.

Everything goes through the ``git`` executable (no library): it is what the
user's repository was made with, and it knows the repository's own settings.

What git is given is checked first. A revision from the command line is only
ever used after ``git rev-parse --verify --end-of-options REV^{commit}`` named a
commit with it, and a value starting with ``-`` is refused before that, so a
``--base`` taken from a pull request can never become an option of git. After
verification only the full commit hash is passed on.

Why ``git worktree add --detach`` and not ``git archive | tar -x`` to
materialise a revision: an archive applies the ``export-ignore`` and
``export-subst`` attributes of the tree, so it can leave files out and rewrite
lines (``$Format$``), and the base would not be the commit the diff is about;
it also skips the checkout filters and line-ending conversion the user's work
tree went through, so the base's lines could differ from the head's in bytes
and fingerprints made of line text would not match. A worktree is a plain
checkout of the commit, detached (no branch is created or moved), into a
directory of its own with an index of its own: the user's work tree, index and
branches are not touched. Its only trace in the repository is an entry under
``.git/worktrees``, removed with the directory (``git worktree remove --force``
then ``git worktree prune``) when the review ends, on an error, on Ctrl-C and on
SIGTERM (turned into ``KeyboardInterrupt`` while a checkout exists). Hooks are
switched off for every git command (``core.hooksPath=/dev/null``): a
``post-checkout`` hook is the user's business, not the review's.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

__all__ = [
    "FileDiff",
    "GitError",
    "checkout",
    "diff",
    "repo_root",
    "terminate_as_interrupt",
    "untracked",
    "verify_commit",
]


class GitError(Exception):
    """A git command failed or was refused: one line for the user, exit code 2."""


#: settings that keep git from running the user's hooks, paging, prompting for a password,
#: quoting non-ASCII paths, or rewriting the index of the user's work tree on a ``diff``
_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false")
_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}


def _git(cwd: Path, *args: str) -> str:
    """Run ``git args`` in ``cwd``; its stdout, or a ``GitError`` with git's first line."""
    try:
        proc = subprocess.run(
            ["git", *_CONFIG, *args],
            cwd=cwd,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **_ENV},
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (flagtrace review needs it)") from None
    except NotADirectoryError:
        raise GitError(f"{cwd}: not a directory") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        first = lines[0] if lines else f"git {args[0]} failed"
        raise GitError(first.removeprefix("fatal: ").removeprefix("error: "))
    return proc.stdout.decode("utf-8", "surrogateescape")


def repo_root(where: Path) -> Path:
    """The top of the work tree ``where`` is in (resolved), or a ``GitError``."""
    try:
        out = _git(where, "rev-parse", "--show-toplevel")
    except GitError:
        raise GitError(f"{where}: not inside a git work tree") from None
    if not out.strip():  # inside .git itself, or a bare repository
        raise GitError(f"{where}: not inside a git work tree")
    return Path(out.strip()).resolve()


def verify_commit(root: Path, rev: str, option: str = "--base") -> str:
    """The full hash of the commit ``rev`` names, verified before any other use of it.

    A value that starts with ``-`` (an option in disguise) or names no commit is a
    ``GitError`` that says which option it came from."""
    if not rev or rev.startswith("-"):
        raise GitError(f"{option} {rev!r}: not a revision (a revision cannot start with '-')")
    try:
        out = _git(
            root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"
        )
    except GitError:
        out = ""
    commit = out.strip()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        raise GitError(f"{option} {rev!r}: no such commit in {root}")
    return commit


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises ``KeyboardInterrupt`` as Ctrl-C does, so ``finally``
    blocks (the removal of a temporary checkout) run when a CI job is cancelled.
    Outside the main thread signals cannot be handled and nothing changes."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def checkout(root: Path, commit: str) -> Iterator[Path]:
    """A detached worktree of ``commit`` (a verified hash) in a fresh temporary directory,
    removed with its ``.git/worktrees`` entry when the block ends, however it ends."""
    holder = Path(tempfile.mkdtemp(prefix="flagtrace-review-"))
    tree = holder / "tree"
    try:
        with terminate_as_interrupt():
            try:
                _git(root, "worktree", "add", "--detach", "--quiet", str(tree), commit)
                yield tree
            finally:
                _remove(root, tree, holder)
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _remove(root: Path, tree: Path, holder: Path) -> None:
    """Remove the worktree and its entry; a second Ctrl-C while doing so is held back."""
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        previous = None
    try:
        for args in (("worktree", "remove", "--force", str(tree)), ("worktree", "prune")):
            try:
                _git(root, *args)
            except GitError:
                pass  # the directory is removed below; prune forgets an entry without it
        shutil.rmtree(holder, ignore_errors=True)
        try:
            _git(root, "worktree", "prune")
        except GitError:
            pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file the change touches. ``path`` is its head path (None: deleted),
    ``old_path`` its base path (None: added); ``added`` the head lines added or
    changed, ``near_removed`` the head lines around places where lines were only removed
    (a change with no line of its own on the head side, like a deleted ``finally``)."""

    path: str | None
    old_path: str | None
    added: frozenset[int]
    near_removed: frozenset[int] = frozenset()


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def _unquote(text: str) -> str:
    """A path as git prints it in a diff header: C-quoted when it holds odd characters."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    raw = text[1:-1].encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    simple = {ord("n"): 10, ord("t"): 9, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8}
    simple |= {ord("f"): 12, ord("r"): 13, ord("v"): 11}
    while i < len(raw):
        c = raw[i]
        if c == 92 and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if 48 <= nxt <= 55 and i + 3 < len(raw):
                out.append(int(raw[i + 1 : i + 4], 8))
                i += 4
                continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_prefix(path: str, prefix: str) -> str | None:
    if path == "/dev/null":
        return None
    path = _unquote(path)
    return path[len(prefix) :] if path.startswith(prefix) else path


def parse_diff(text: str) -> tuple[FileDiff, ...]:
    """``git diff --unified=0 --no-color -M`` output as files and head line numbers."""
    files: list[FileDiff] = []
    old: str | None = None
    new: str | None = None
    added: set[int] = set()
    near: set[int] = set()
    started = False

    def flush() -> None:
        if started and (old is not None or new is not None):
            files.append(FileDiff(new, old, frozenset(added), frozenset(near)))

    for line in text.split("\n"):
        if line.startswith("diff --git "):
            flush()
            started, old, new = True, None, None
            added, near = set(), set()
            header = line[len("diff --git ") :]
            if not header.startswith('"') and header.count(" b/") == 1:  # a b path unquoted
                a, b = header.split(" b/")
                old, new = a.removeprefix("a/"), b
        elif line.startswith("rename from ") or line.startswith("copy from "):
            old = _unquote(line.split(" from ", 1)[1])
        elif line.startswith("rename to ") or line.startswith("copy to "):
            new = _unquote(line.split(" to ", 1)[1])
        elif line.startswith("new file mode"):
            old = None
        elif line.startswith("deleted file mode"):
            new = None
        elif line.startswith("--- "):
            old = _strip_prefix(line[4:], "a/")
        elif line.startswith("+++ "):
            new = _strip_prefix(line[4:], "b/")
        else:
            match = _HUNK.match(line)
            if match is not None:
                start = int(match.group(1))
                count = int(match.group(2)) if match.group(2) is not None else 1
                if count:
                    added.update(range(start, start + count))
                else:  # lines removed after head line ``start``: the lines on either side
                    near.update(n for n in (start, start + 1) if n > 0)
    flush()
    return tuple(files)


def diff(root: Path, base: str, head: str | None) -> tuple[FileDiff, ...]:
    """What changed from ``base`` to ``head`` (a commit hash; None: the work tree, dirty
    files included; untracked files are not in it, see :func:`untracked`). Prefixes,
    renames and colours are set on the command line, whatever the user's config says."""
    args = ["diff", "--unified=0", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
    args += ["--src-prefix=a/", "--dst-prefix=b/", base]
    if head is not None:
        args.append(head)
    return parse_diff(_git(root, *args, "--"))


def untracked(root: Path) -> tuple[str, ...]:
    """Files of the work tree git does not track and does not ignore (repository-relative):
    a new file not yet added is part of the work tree the review analyses."""
    out = _git(root, "ls-files", "-z", "--others", "--exclude-standard", "--full-name")
    return tuple(sorted(p for p in out.split("\0") if p))
