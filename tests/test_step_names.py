"""A flag's reads and writes are looked for only in the modules that name it
(``ModuleSummary.step_names``): what that finds is what a walk of every scope finds.

``flagtrace scan`` analyses many flags over one ``SharedIndex``, built by walking
every scope once; ``check`` analyses one or a few, and walks only the scopes of
the modules whose read and write steps name the flag. Both must find the same
writes, reads, accessors and setters for every module global of every fixture.
"""

from __future__ import annotations

from pathlib import Path

from flagtrace.api import build_callgraph, load_project
from flagtrace.effects import FlagEffects, FlagLookupError, find_flags, shared_index
from flagtrace.model import ReadStep, ScopeKind, WriteStep, walk
from tests.regen_goldens import case_roots

SOURCE = """\
MODE = "off"
LEVEL = 0

def enable():
    global MODE
    MODE = "on"

def is_on():
    return MODE == "on"

def unrelated(x):
    local = x
    return local
"""

#: ``LEVEL`` read only in a class body, ``MODE`` only through another module
OTHER = """\
from mod import LEVEL, is_on

class Config:
    level = LEVEL

def check():
    return is_on()
"""


def test_step_names_are_the_globals_read_or_written_outside_class_bodies(
    tmp_path: Path,
) -> None:
    (tmp_path / "mod.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "other.py").write_text(OTHER, encoding="utf-8")
    mod, other = load_project([str(tmp_path)], jobs=1).summaries
    # steps are recorded for module variables only: not ``x`` or ``local``
    assert mod.step_names == ("MODE",)
    assert other.step_names == ()
    for summary in (mod, other):
        walked = {
            step.name
            for scope in summary.scopes
            if scope.kind is not ScopeKind.CLASS
            for step in walk(scope.flow)
            if isinstance(step, (ReadStep, WriteStep))
        }
        assert summary.step_names == tuple(sorted(walked))


def test_a_flag_found_through_step_names_has_what_the_shared_index_finds() -> None:
    compared = 0
    for root in case_roots():
        project = load_project([str(root)], jobs=1)
        graph = build_callgraph(project)
        program = graph.program
        shared = shared_index(program)
        candidates = sorted(
            {
                f"{module}.{a.target.name}"
                for module, summary in program.modules.items()
                for a in summary.module_scope.assignments
                if a.target.name is not None
            }
        )
        for spec in candidates:
            try:
                flag = find_flags(program, spec)
            except FlagLookupError:  # a function or class bound at module level
                continue
            alone = FlagEffects(graph, flag)
            indexed = FlagEffects(graph, flag, shared=shared)
            where = (root.name, spec)
            assert alone.writes == indexed.writes, where
            assert {q: [s.location for s in r] for q, r in alone.direct_reads.items()} == {
                q: [s.location for s in r] for q, r in indexed.direct_reads.items()
            }, where
            assert alone.accessors == indexed.accessors, where
            assert alone.setters == indexed.setters, where
            compared += 1
    assert compared >= 100
