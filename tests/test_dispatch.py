"""Call resolution rules that keep the graph from exploding on real code (the
standard library, transformers): super() in both spellings, dunders never by name,
and every definition of a redefined name kept."""

from __future__ import annotations

import textwrap
from pathlib import Path

from flagtrace.api import build_callgraph, load_project
from flagtrace.report.callgraph_pycg import pycg

SOURCE = """
class Base:
    def __init__(self):
        self.ready = True

    def run(self):
        return 1


class Child(Base):
    def __init__(self):
        super(Child, self).__init__()

    def run(self):
        return super().run()


class Error(Exception):
    def __init__(self, message):
        super().__init__(message)


class Other:
    def __init__(self):
        self.ready = False

    def run(self):
        return 2


class Mixin:
    def run(self):
        return super().run()  # a sibling's run() in the final MRO: by name


def unknown(thing):
    thing.__init__()  # a dunder on an unknown receiver: unresolved, not every __init__
    return thing.run()  # a method on an unknown receiver: every run(), by name
"""


def graph_of(tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(textwrap.dedent(SOURCE))
    project = load_project([tmp_path / "pkg"], jobs=1)
    graph = build_callgraph(project)
    # our functions only (the call of the builtin super itself is an edge too)
    return {k: [c for c in v if c.startswith("pkg.")] for k, v in pycg(graph).items()}


def test_super_in_both_spellings_goes_up_the_mro(tmp_path: Path) -> None:
    g = graph_of(tmp_path)
    assert g["pkg.mod.Child.__init__"] == ["pkg.mod.Base.__init__"]
    assert g["pkg.mod.Child.run"] == ["pkg.mod.Base.run"]


def test_a_dunder_missing_from_our_classes_is_not_dispatched_by_name(tmp_path: Path) -> None:
    g = graph_of(tmp_path)
    assert g["pkg.mod.Error.__init__"] == []
    assert not any(c.endswith("__init__") for c in g["pkg.mod.unknown"])


def test_plain_methods_still_go_by_name_when_the_receiver_is_unknown(tmp_path: Path) -> None:
    g = graph_of(tmp_path)
    runs = {"pkg.mod.Base.run", "pkg.mod.Child.run", "pkg.mod.Other.run", "pkg.mod.Mixin.run"}
    assert runs <= set(g["pkg.mod.unknown"])
    assert {"pkg.mod.Base.run", "pkg.mod.Other.run"} <= set(g["pkg.mod.Mixin.run"])
