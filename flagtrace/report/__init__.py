"""Reporters: one module per output format, looked up by name in a registry.

Four things get reported: the check report (``AnalysisReport``, ``flagtrace
check``), the call graph (``CallGraphReport``, ``flagtrace callgraph``), the
flag inventory (``ScanReport``, ``flagtrace scan``) and what a change does to
the flags (``ReviewReport``, ``flagtrace review``), each with its registry,
``CHECK``, ``CALLGRAPH``, ``SCAN`` and ``REVIEW``. A format is a module of this
package named after its registry and format, ``check_<name>.py``,
``callgraph_<name>.py``, ``scan_<name>.py`` or ``review_<name>.py`` (``_`` in
the name stands for ``-``), defining::

    def render(report: AnalysisReport, options: RenderOptions) -> Iterable[str]: ...
    HUMAN = True  # optional, see Reporter.human
    def warnings(report: AnalysisReport) -> Iterable[str]: ...  # optional, see Reporter.warnings

``render`` gives the text in pieces, which the CLI writes as they come, so a
call graph with a million edges never exists as one string. Adding a format is
adding such a module: the registries list the package's modules, and the CLI's
``--format`` choices are their names.

Why modules named by convention rather than modules that register themselves
on import: the choices are needed when the CLI starts, and listing a directory
is cheap while importing every reporter (rich, the model) is not; a module is
imported only when its format is used.

Reporters render what the engine found; they do not analyse. They import only
``flagtrace.model`` (and, for the call graph, read ``CallGraph`` through its
query verbs), never the engine.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from flagtrace.callgraph import CallGraph
    from flagtrace.model import AnalysisReport, Diagnostic, ReviewReport, ScanReport

Subject = TypeVar("Subject")
#: The escape codes a terminal understands, named as rich names its colour systems.
Terminal = Literal["standard", "256", "truecolor", "windows"]


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """What the destination can show. Formats that neither wrap nor style text ignore it.

    The CLI fills it in from the destination: a file gets plain text 120
    columns wide (``COLUMNS`` if set), a terminal its own width and colours.
    Whether the destination is a terminal is ``terminal is not None``; the rich
    report does not need more: it never cuts a cell, on a terminal or in a CI
    log, because the qualified name it would cut is what the reader came for.
    """

    width: int = 120
    #: the escape codes the destination understands; None: plain text
    terminal: Terminal | None = None
    #: colours allowed; False (``NO_COLOR``) leaves bold and dim only
    color: bool = True
    #: how many full witnesses a flag's report shows (the ones that best explain it);
    #: None: every entry's, as when the entries were named on the command line
    witnesses: int | None = 3
    #: where links to source lines point: the URL of the head's tree, ending in
    #: ``/blob/REV`` (``review_github.default_link_base``); None: locations are not linked
    link_base: str | None = None


@dataclass(frozen=True, slots=True)
class CallGraphReport:
    """What ``flagtrace callgraph`` reports: the graph, and the files that could not be
    analysed (the graph is written without them)."""

    graph: CallGraph
    errors: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True, slots=True)
class Reporter(Generic[Subject]):
    """One output format of one registry."""

    name: str
    render: Callable[[Subject, RenderOptions], Iterable[str]]
    #: written for people to read where it is printed: it shows the input errors
    #: itself, so on stdout the CLI does not repeat them on stderr
    human: bool = False
    #: what the CLI tells on stderr about what was written (a SARIF log too large
    #: for the service it goes to), one line each
    warnings: Callable[[Subject], Iterable[str]] = lambda _: ()


class Registry(Generic[Subject]):
    """The formats of one subject: the modules ``<prefix>_<name>`` of this package."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def names(self) -> list[str]:
        """Every format name, sorted (the ``--format`` choices); imports nothing."""
        start = f"{self.prefix}_"
        return sorted(
            module.name[len(start) :].replace("_", "-")
            for module in pkgutil.iter_modules(__path__)
            if module.name.startswith(start)
        )

    def __getitem__(self, name: str) -> Reporter[Subject]:
        """The ``name`` format, its module imported; KeyError for an unknown name."""
        if name not in self.names():
            raise KeyError(f"no {self.prefix} format named {name!r}")
        module = importlib.import_module(f"{__name__}.{self.prefix}_{name.replace('-', '_')}")
        return Reporter(
            name,
            module.render,
            bool(getattr(module, "HUMAN", False)),
            getattr(module, "warnings", lambda _: ()),
        )


CHECK: Registry[AnalysisReport] = Registry("check")
CALLGRAPH: Registry[CallGraphReport] = Registry("callgraph")
SCAN: Registry[ScanReport] = Registry("scan")
REVIEW: Registry[ReviewReport] = Registry("review")
