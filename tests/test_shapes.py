"""Code that only moved reuses the stored resolved program, and reports where it is now.

Resolution reads no position, so ``flagtrace.program_store`` keys a resolved
program by the shapes of the summaries (``index.summary_digests``: every line
and column zeroed). An edit that adds comment or blank lines moves everything
below it and changes no shape: the next run loads the program instead of
resolving again, and its report, built from the new summaries, must be the one
a cold run gives, positions included.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import flagtrace.api
from flagtrace.index import index_file, summary_digests
from flagtrace.model import SourceFile
from tests.registry import REPO
from tests.test_edit_sequences import run

STORY = REPO / "fixtures" / "flags" / "sglang_story"


def _digests(tmp_path: Path, text: str) -> tuple[str, str]:
    path = tmp_path / "mod.py"
    path.write_text(text, encoding="utf-8")
    result = index_file(SourceFile(str(path), "mod", str(tmp_path), False))
    assert result.summary is not None, result.diagnostic
    assert (result.digest, result.shape) == summary_digests(result.summary)
    assert result.digest is not None and result.shape is not None
    return result.digest, result.shape


BASE = """\
import contextlib

_on = False


@contextlib.contextmanager
def enable():
    global _on
    _on = True
    try:
        yield
    finally:
        _on = False


def run(x):
    if x > 1:
        with enable():
            step()


def step():
    return _on
"""


def test_moved_code_keeps_its_shape_not_its_digest(tmp_path: Path) -> None:
    digest, shape = _digests(tmp_path, BASE)
    moved = BASE.replace("def run(x):", "# a comment\n\n\ndef run(x):")
    indented = BASE.replace("    if x > 1:", "    # why\n    if x > 1:")
    for text in (moved, indented):
        other_digest, other_shape = _digests(tmp_path, text)
        assert other_shape == shape
        assert other_digest != digest
    # trailing lines move nothing: both stay (the report cache keys on the first)
    assert _digests(tmp_path, BASE + "\n\n# end\n") == (digest, shape)


@pytest.mark.parametrize(
    "edit",
    [
        ("step()", "step(); step()"),  # one more call
        ("x > 1", "x > 2"),  # a guard's text
        ("_on = True", "_on = 1"),  # a value
        ("def step():", "def step(y=0):"),  # a parameter
        ("    if x > 1:\n", "    if x > 1:\n        x = step\n"),  # an assignment
    ],
)
def test_what_is_not_a_move_changes_the_shape(tmp_path: Path, edit: tuple[str, str]) -> None:
    _, shape = _digests(tmp_path, BASE)
    assert _digests(tmp_path, BASE.replace(*edit, 1))[1] != shape


def _stored_programs(cache: Path) -> list[Path]:
    return sorted(cache.glob("programs/v*/??/*.pkl"))


def _locations(report: str) -> set[str]:
    """Every ``file:line`` the report quotes (its ``line`` fields, with the
    nearest ``file`` or ``path`` around them)."""
    found: set[str] = set()

    def walk(node: object, where: str = "") -> None:
        if isinstance(node, dict):
            here = node.get("file") or node.get("path")
            where = here if isinstance(here, str) else where
            if isinstance(node.get("line"), int):
                found.add(f"{where}:{node['line']}")
            for value in node.values():
                walk(value, where)
        elif isinstance(node, list):
            for value in node:
                walk(value, where)

    walk(json.loads(report))
    return found


def test_a_move_is_answered_from_the_stored_program_as_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "story"
    shutil.copytree(STORY / "pkg", tree / "pkg")
    args = json.loads((STORY / "case.json").read_text(encoding="utf-8"))["args"]
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    resolutions: list[object] = []
    resolve = flagtrace.api.resolve_project

    def counted(project: object) -> object:
        resolutions.append(project)
        return resolve(project)  # type: ignore[arg-type]

    monkeypatch.setattr(flagtrace.api, "resolve_project", counted)
    code, before = run(tree, args, cache, out)
    assert len(resolutions) == 1 and len(_stored_programs(cache)) == 1

    moved: set[str] = set()
    for path in sorted(tree.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "def " in text:
            path.write_text("# moved by the test\n\n\n" + text, encoding="utf-8")
            moved.add(path.relative_to(tree).as_posix())
    assert moved
    resolutions.clear()
    after = run(tree, args, cache, out)
    assert resolutions == []  # the program came from the store
    assert len(_stored_programs(cache)) == 1
    cold = run(tree, args, None, tmp_path / "cold.json")
    assert after == cold
    # and it speaks of the moved lines, not of the stored program's
    assert after[0] == code

    def down(location: str) -> str:
        path, _, line = location.rpartition(":")
        return f"{path}:{int(line) + 3}" if path in moved else location

    assert _locations(before) and _locations(after[1]) == {down(x) for x in _locations(before)}

    # a real change resolves again
    resolutions.clear()
    target = next(p for p in sorted(tree.rglob("*.py")) if "def " in p.read_text("utf-8"))
    target.write_text(target.read_text("utf-8") + "\n\ndef added():\n    return 1\n", "utf-8")
    assert run(tree, args, cache, out) == run(tree, args, None, tmp_path / "cold.json")
    assert len(resolutions) == 2  # the cached run, and the cold one
    assert len(_stored_programs(cache)) == 2


def test_the_stored_program_holds_no_position(tmp_path: Path) -> None:
    """What makes the reuse right by construction: nothing the store writes says
    where anything is, so every position a report quotes comes from the new
    summaries (``ProgramStore.get`` builds the program tables from them)."""
    from flagtrace.cache import load_entry
    from flagtrace.model import Guard, Location
    from flagtrace.program_store import KIND, program_types

    tree = tmp_path / "story"
    shutil.copytree(STORY / "pkg", tree / "pkg")
    args = json.loads((STORY / "case.json").read_text(encoding="utf-8"))["args"]
    cache = tmp_path / "cache"
    run(tree, args, cache, tmp_path / "out.json")
    (stored,) = _stored_programs(cache)
    parts = load_entry(KIND, stored.read_bytes(), program_types(), parts=2)
    assert isinstance(parts, tuple)
    seen: set[int] = set()
    stack: list[object] = [parts]
    kinds: set[str] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, str | int | float | bytes | type(None)):
            continue
        seen.add(id(node))
        kinds.add(type(node).__name__)
        assert not isinstance(node, Location | Guard), node
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend(node)
        else:
            stack.extend(getattr(node, "__dict__", {}).values())
            for name in getattr(type(node), "__slots__", ()):
                if hasattr(node, name):
                    stack.append(getattr(node, name))
    assert "Callee" in kinds  # the walk reached the program's contents
    assert os.path.getsize(stored) > 0


def _prunings(cache: Path) -> list[Path]:
    return sorted(cache.glob("programs/v*/??/*.pruning"))


@pytest.mark.parametrize("name", ["assume_prunes_guard", "guards_statements"])
def test_a_move_moves_the_stored_pruning_too(name: str, tmp_path: Path) -> None:
    """A pruning quotes the lines of the guards it decided; after a move it is
    taken from the earlier tree with those lines moved (not computed again),
    and the report is still a cold run's, the guard's new line included."""
    case = REPO / "fixtures" / "flags" / name
    tree = tmp_path / name
    shutil.copytree(case / "pkg", tree / "pkg")
    args = json.loads((case / "case.json").read_text(encoding="utf-8"))["args"]
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    before = run(tree, args, cache, out)
    (stored,) = _prunings(cache)
    for path in sorted(tree.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        # a comment line above every top-level statement from the second on
        at = [i for i, line in enumerate(lines) if line[:1].isalpha() and i > 0]
        for i in reversed(at[1:]):
            lines.insert(i, "# moved by the test\n")
        path.write_text("".join(lines), encoding="utf-8")
    after = run(tree, args, cache, out)
    assert _prunings(cache) == [stored]  # moved, not pruned again and stored
    assert after == run(tree, args, None, tmp_path / "cold.json")
    assert after[1] != before[1]


def test_a_pruning_is_not_moved_when_a_line_was_broken(tmp_path: Path) -> None:
    """Two guards on one line that an edit puts on two lines have no one new
    line: the pruning is computed again (and still answers as a cold run)."""
    pkg = tmp_path / "tree" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "flags.py").write_text(BASE, encoding="utf-8")
    one_line = "def serve(cfg, x):\n    enable() if cfg.a else (step() if cfg.b else None)\n"
    (pkg / "app.py").write_text("from pkg.flags import enable, step\n\n\n" + one_line, "utf-8")
    args = ["--flag", "_on", "--entry", "pkg.app.serve", "--assume", "cfg.a=True"]
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    run(tmp_path / "tree", args, cache, out)
    assert len(_prunings(cache)) == 1
    broken = one_line.replace(" else (", " else (\n        ")
    (pkg / "app.py").write_text("from pkg.flags import enable, step\n\n\n" + broken, "utf-8")
    after = run(tmp_path / "tree", args, cache, out)
    assert len(_stored_programs(cache)) == 1  # the same shapes: the program served
    assert len(_prunings(cache)) == 2  # but it was pruned again, and stored for this tree
    assert after == run(tmp_path / "tree", args, None, tmp_path / "cold.json")


def test_a_pruning_whose_files_are_not_ours_is_not_moved(tmp_path: Path) -> None:
    """A stored pruning that loads but lists its tree's files as something else
    (written by another version, or tampered with) is pruned again, quietly."""
    from flagtrace.cache import encode_entry, load_entry
    from flagtrace.program_store import PRUNING_KIND, pruning_types

    case = REPO / "fixtures" / "flags" / "assume_prunes_guard"
    tree = tmp_path / "tree"
    shutil.copytree(case / "pkg", tree / "pkg")
    args = json.loads((case / "case.json").read_text(encoding="utf-8"))["args"]
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    run(tree, args, cache, out)
    (stored,) = _prunings(cache)
    entry = load_entry(PRUNING_KIND, stored.read_bytes(), pruning_types())
    assert isinstance(entry, tuple) and len(entry) == 5
    garbage = tuple((f[0],) for f in entry[4])  # the paths alone
    stored.write_bytes(encode_entry(PRUNING_KIND, (*entry[:4], garbage)))
    for path in tree.rglob("*.py"):
        path.write_text("# moved\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    after = run(tree, args, cache, out)
    assert len(_prunings(cache)) == 2
    assert after == run(tree, args, None, tmp_path / "cold.json")
