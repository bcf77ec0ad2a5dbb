"""Fixture repositories for the review tests: a real git repository in a temporary
directory whose first commit is a case's ``base/`` tree and whose second (or work tree)
is its ``head/`` tree (``fixtures/review/<case>/``).

No pytest dependency, so ``benchmarks/`` can build repositories the same way."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from flagtrace.model import ReviewReport

#: ``sglang_repo``'s two commits: a real change as published
SGLANG_VERSIONS = ("0.5.8", "0.5.9")

_IDENTITY = ("-c", "user.name=flagtrace", "-c", "user.email=flagtrace@example.invalid")


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity and no hooks; its stdout."""
    proc = subprocess.run(
        [
            "git",
            *_IDENTITY,
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout


def replace_tree(repo: Path, tree: Path) -> None:
    """Make the work tree of ``repo`` hold exactly the files of ``tree``."""
    for entry in repo.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shutil.copytree(tree, repo, dirs_exist_ok=True)


def make_repo(repo: Path, case: Path, *, commit_head: bool = True) -> Path:
    """A repository at ``repo``: ``case/base`` committed, then ``case/head`` committed
    (or left in the work tree, uncommitted, with ``commit_head=False``)."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    replace_tree(repo, case / "base")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    replace_tree(repo, case / "head")
    if commit_head:
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "head")
    return repo


def compact(report: ReviewReport) -> dict[str, list[str]]:
    """A review as short lines, the shape of ``fixtures/review/<case>/expected.json``."""
    findings = [
        f"{f.change.value} {f.code} {f.function} {f.location.path}:{f.location.line}"
        + (" anchored" if f.anchored else "")
        for f in report.findings
    ]
    changes = []
    for c in report.changes:
        for sign, what, rows in (
            ("+", "reader", c.readers_added),
            ("-", "reader", c.readers_removed),
            ("+", "setter", c.setters_added),
            ("-", "setter", c.setters_removed),
        ):
            changes += [
                f"{c.flag} {sign}{what} {r.function} {r.location.path}:{r.location.line}"
                for r in rows
            ]
    return {"flags": list(report.flags), "findings": findings, "changes": changes}


def sglang_repo(dest: Path, unpacked: Callable[[str], Path]) -> Path:
    """A repository at ``dest`` whose commits hold the ``sglang/`` package of each of
    ``SGLANG_VERSIONS`` in turn; ``unpacked(spec)`` gives a wheel's unpacked directory
    (``tests.registry.Registry.download``). Only files are copied: nothing is imported."""
    dest.mkdir(parents=True)
    git(dest, "init", "-q")
    for version in SGLANG_VERSIONS:
        source = unpacked(f"sglang=={version}") / "sglang"
        shutil.rmtree(dest / "sglang", ignore_errors=True)
        shutil.copytree(source, dest / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
        git(dest, "add", "-A")
        git(dest, "commit", "-q", "-m", f"sglang {version}")
    return dest
