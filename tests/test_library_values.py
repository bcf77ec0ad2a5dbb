"""Attributes of library values: a longer library name while one can name what the
library defines, then one value, ``Cls.attr.*``, whatever attributes follow.

Why: each chain was a value of its own (``torch.nn.Module.weight.data.copy_``),
and values that flow through parameters collected every chain a program spells
(SGLang 0.5.23: 1.67M call-site callees so named). The calls on such a value stay
resolved to library code, not unresolved: a *never* verdict counts unresolved calls.
"""

from __future__ import annotations

from pathlib import Path

from flagtrace.api import graph_of, load_project, resolve_project
from flagtrace.callgraph import CallGraph
from flagtrace.resolve.values import library_attribute

SOURCE = """\
import torch
from PIL import Image


class Layer(torch.nn.Module):
    def forward(self, x):
        self.weight.data.copy_(x)
        return torch.nn.functional.relu(x)


def show(img: Image.Image):
    img.resize((1, 1))
    return img.height.bit_length()


def sink(value):
    return value.run()


def many(m: torch.nn.Module):
    sink(m.alpha.x)
    sink(m.alpha.y.z)
    sink(m.alpha.w)
"""


def _graph(tmp_path: Path) -> CallGraph:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(SOURCE)
    return graph_of(resolve_project(load_project([str(pkg)], jobs=1)))


def test_attributes_past_a_class_attribute_are_one_library_value(tmp_path: Path) -> None:
    graph = _graph(tmp_path)
    assert graph.callees("pkg.mod.Layer.forward") == [
        "torch.nn.Module.weight.*",  # self.weight.data.copy_
        "torch.nn.functional.relu",  # a module's member keeps its name
    ]
    assert graph.callees("pkg.mod.show") == [
        "PIL.Image.Image.height.*",  # img.height.bit_length
        "PIL.Image.Image.resize",  # a method of the class keeps its name
    ]
    # three chains through one parameter: one value, one callee, not three
    assert graph.callees("pkg.mod.sink") == ["torch.nn.Module.alpha.*"]
    # none of these calls is unresolved
    unresolved = {u.caller for u in graph.unresolved}
    assert not unresolved & {"pkg.mod.Layer.forward", "pkg.mod.show", "pkg.mod.sink"}


def test_library_attribute_names() -> None:
    def name(value: str, attr: str) -> list[str]:
        return sorted(v[1] for v in library_attribute(value, attr))

    assert name("torch", "nn") == ["torch.nn"]
    assert name("torch.nn.functional", "relu") == ["torch.nn.functional.relu"]
    assert name("torch.nn.Module", "weight") == ["torch.nn.Module.weight"]
    assert name("torch.nn.Module.weight", "data") == ["torch.nn.Module.weight.*"]
    assert name("torch.nn.Module.weight.*", "copy_") == ["torch.nn.Module.weight.*"]
    # a CapWords module (PIL.Image) and a nested class keep their attributes' names
    assert name("PIL.Image", "Image") == ["PIL.Image.Image"]
    assert name("PIL.Image.Image", "height") == ["PIL.Image.Image.height"]
    assert name("pkg.Outer.Inner", "run") == ["pkg.Outer.Inner.run"]
    # lowercase chains stop at five dots, as before
    assert name("a.b.c.d.e", "f") == ["a.b.c.d.e.f"]
    assert name("a.b.c.d.e.f", "g") == []


LOGGERS = """\
import logging
from logging import getLogger

logger = logging.getLogger(__name__)
other = getLogger("other")


class Report:
    def info(self, text):
        return text

    def exception(self, text):
        return text


class QuietLogger(logging.Logger):
    def warning(self, text, *args):
        return text


def log_a_lot():
    logger.info("a")
    other.exception("b")
    logger.warning("c")
"""


def test_a_logger_from_get_logger_is_library_code(tmp_path: Path) -> None:
    """``logging.getLogger`` returns a ``logging.Logger``: its calls are library
    code, not every analysed method called ``info`` (by name) or unresolved; an
    analysed subclass of ``Logger`` still gets its overrides."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(LOGGERS)
    graph = graph_of(resolve_project(load_project([str(pkg)], jobs=1)))
    assert graph.callees("pkg.mod.log_a_lot") == [
        "logging.Logger.exception",
        "logging.Logger.info",
        "logging.Logger.warning",
        "pkg.mod.QuietLogger.warning",
    ]
    assert not {u.caller for u in graph.unresolved} & {"pkg.mod.log_a_lot"}
