"""The program tables (``flagtrace.resolve.program.Program``) built on demand answer
exactly what the tables built at once answer, and a new question on a stored
program does not build the tables only resolution reads.

Resolution has every table built before its rounds (``Program.index_all``); the
questions asked of a stored program fill the tables by scope as they read them and
build the others whole on first use. Both must be the same tables: the same
entries, in the same order, and the same objects where resolution's memo keys an
expression by identity (an assignment's stored value in ``stored`` and in
``assigns``).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from flagtrace import program_store
from flagtrace.api import load_project
from flagtrace.model import ModuleSummary
from flagtrace.resolve import ResolvedProgram
from flagtrace.resolve.program import _LAZY_TABLES, Program
from tests.regen_goldens import case_roots
from tests.test_program_store import FIRST, SECOND, STORY, check

#: tables by scope: ``_PerScope`` until ``index_all``
BY_SCOPE = ("locals", "param_names", "stored")

#: a function, a class and a method each defined twice (the index names the second
#: ``setup#2``), annotations, a loop's elements, a global, fields and container stores
REDEFINED = """\
import os
from typing import List

def setup(a, b=1):
    xs: List[int] = [a]
    for x in os.environ:
        xs.append(x)
    return xs

def setup(c):
    ys = {}
    ys["k"] = c
    ys.update(c=c)
    return ys

class Runner:
    def run(self):
        self.state = setup(1)

class Runner:
    mode: str = "fast"

    def run(self, *, fast):
        global LAST
        LAST = fast
        for a, b in self.pairs():
            self.seen = a
"""


def _summaries(root: Path) -> tuple[ModuleSummary, ...]:
    return load_project([str(root)], jobs=1).summaries


def _roots(tmp_path: Path) -> list[Path]:
    (tmp_path / "redefined").mkdir()
    (tmp_path / "redefined" / "mod.py").write_text(REDEFINED, encoding="utf-8")
    return [tmp_path / "redefined", *case_roots()]


def _on_demand(summaries: tuple[ModuleSummary, ...], seed: int) -> Program:
    """A program whose tables were read in a random order, as questions would."""
    program = Program(summaries)
    rng = random.Random(seed)
    reads: list[tuple[str, str]] = [(t, qn) for t in BY_SCOPE for qn in program.scopes]
    reads += [(t, "") for t in _LAZY_TABLES]
    reads.append(("locals", "no.such.scope"))
    rng.shuffle(reads)
    for table, qn in reads:
        if table not in BY_SCOPE:
            getattr(program, table)
        elif rng.random() < 0.5:
            getattr(program, table).get(qn)
        elif qn in program.scopes:
            getattr(program, table)[qn]
    return program


def test_tables_built_on_demand_equal_the_tables_built_at_once(tmp_path: Path) -> None:
    compared = 0
    for root in _roots(tmp_path):
        summaries = _summaries(root)
        at_once = Program(summaries)
        at_once.index_all()
        for seed in range(2):
            lazy = _on_demand(summaries, seed)
            for table in (*BY_SCOPE, *_LAZY_TABLES):
                ours, theirs = getattr(lazy, table), getattr(at_once, table)
                if table in BY_SCOPE:
                    assert dict(ours) == theirs, (root.name, table)
                    assert set(ours) == set(lazy.scopes), (root.name, table)  # every scope read
                else:
                    assert type(ours) is type(theirs), (root.name, table)
                    assert list(ours) == list(theirs), (root.name, table)  # order too
                    assert ours == theirs, (root.name, table)
            compared += 1
    assert compared >= 2 * 20


def test_an_assignment_is_one_object_in_stored_and_in_assigns(tmp_path: Path) -> None:
    for root in _roots(tmp_path):
        for program in (Program(_summaries(root)), _on_demand(_summaries(root), 7)):
            if root.name != "redefined":
                program.index_all()  # the order resolution builds them in
            held = {id(v) for qn in program.scopes for v in program.stored[qn]}
            for (qn, _), values in program.assigns.items():
                assert all(id(v) in held for v in values), (root.name, qn)
            for _, _, value, _ in program.field_assigns.get("seen", ()):
                assert id(value) in held


def test_the_tables_read_on_demand_hold_what_the_code_binds(tmp_path: Path) -> None:
    program = _on_demand(_summaries(_roots(tmp_path)[0]), 3)
    assert program.param_names["mod.setup"] == frozenset({"a", "b"})
    assert program.param_names["mod.setup#2"] == frozenset({"c"})
    assert program.param_names["mod.Runner#2.run"] == frozenset({"self", "fast"})
    assert "mode" in program.locals["mod.Runner#2"]
    assert "mode" not in program.locals["mod.Runner"]
    assert [n for (qn, n) in program.assigns if qn == "mod.setup"] == ["xs", "x"]
    assert [type(v).__name__ for v in program.stored["mod.setup"]] == [
        "ContainerExpr",
        "ElementsExpr",  # ``for x in os.environ``: the elements of the value
    ]
    assert program.annotations == {
        ("mod.setup", "xs"): ["List[int]"],
        ("mod.Runner#2", "mode"): ["str"],
    }
    assert program.methods_by_name == {"run": ["mod.Runner.run", "mod.Runner#2.run"]}
    assert list(program.global_assigns) == [("mod", "LAST")]
    assert list(program.field_assigns) == ["state", "seen"]
    assert [(qn, key) for qn, _, key, _ in program.container_stores] == [
        ("mod.setup", None),  # xs.append(x)
        ("mod.setup#2", "s:k"),  # ys["k"] = c
        ("mod.setup#2", "**"),  # ys.update(c=c)
    ]
    with pytest.raises(KeyError):
        program.locals["mod.nothing"]
    assert program.param_names.get("mod.nothing", frozenset()) == frozenset()
    with pytest.raises(AttributeError, match="no attribute 'no_table'"):
        program.no_table  # type: ignore[attr-defined]  # noqa: B018


def test_a_new_question_builds_none_of_the_tables_only_resolution_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "src"
    shutil.copytree(STORY / "pkg", tree / "pkg")
    cache = tmp_path / "cache"
    check(tree, FIRST, cache, tmp_path / "first.json")
    loaded: list[ResolvedProgram] = []
    real_get = program_store.ProgramStore.get

    def get(self: program_store.ProgramStore, *args: object) -> ResolvedProgram | None:
        found = real_get(self, *args)  # type: ignore[arg-type]
        if found is not None:
            loaded.append(found)
        return found

    monkeypatch.setattr(program_store.ProgramStore, "get", get)
    _, report = check(tree, SECOND, cache, tmp_path / "second.json")
    assert "forward_decode" in report
    (resolved,) = loaded
    built = vars(resolved.program)
    assert not {"container_stores", "attr_users", "name_users"} & set(built)
    # and the tables by scope hold only the scopes the question read
    assert 0 < len(resolved.program.locals) < len(resolved.program.scopes)
