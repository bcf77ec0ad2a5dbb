"""Console scripts declared in the analysed tree: program roots from packaging metadata.

A console script (``[project.scripts]`` in pyproject.toml, Poetry's
``[tool.poetry.scripts]``, ``console_scripts`` under ``[options.entry_points]`` in
setup.cfg) is a function a process starts at, so it is a *program root*
(``flagtrace.programs``). The files are the ``pyproject.toml``/``setup.cfg`` that
discovery met inside the analysed paths; they are parsed as data (``tomllib``,
``configparser``), nothing is imported or run.

Why a file that cannot be parsed is a diagnostic rather than skipped quietly: a root
left out can make a sticky write look unreachable from an entry that really runs
after it (see ``flagtrace.programs``), so the report must say that it is missing.
"""

from __future__ import annotations

import configparser
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from flagtrace.model import Diagnostic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


@dataclass(frozen=True, slots=True)
class Script:
    """``name = "pkg.mod:func"``: the function it starts (``pkg.mod.func``) and where it
    is declared (``path [section] name``)."""

    qualname: str
    declared: str


@dataclass(frozen=True, slots=True)
class Scripts:
    scripts: tuple[Script, ...]
    diagnostics: tuple[Diagnostic, ...]


def read_scripts(files: Iterable[str]) -> Scripts:
    """The console scripts every file declares, in file order; bad files as diagnostics."""
    found: list[Script] = []
    problems: list[Diagnostic] = []
    for path in files:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Diagnostic(path, None, f"cannot read console scripts: {exc}"))
            continue
        try:
            declared = (
                _from_pyproject(text) if path.endswith("pyproject.toml") else _from_setup_cfg(text)
            )
        except (tomllib.TOMLDecodeError, configparser.Error, ValueError) as exc:
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(Diagnostic(path, None, f"cannot read console scripts: {message}"))
            continue
        for section, name, target in declared:
            qualname = target_qualname(target)
            if qualname is not None:
                found.append(Script(qualname, f"{path} [{section}] {name}"))
    return Scripts(tuple(found), tuple(problems))


def target_qualname(target: str) -> str | None:
    """``pkg.mod:func`` (or ``pkg.mod:Cls.method``, extras ``[x]`` ignored) as a
    qualified name; None for a target that names no function (``pkg.mod`` alone)."""
    target = target.split("[", 1)[0].strip()
    module, sep, attr = target.partition(":")
    module, attr = module.strip(), attr.strip()
    if not sep or not module or not attr:
        return None
    return f"{module}.{attr}"


def _from_pyproject(text: str) -> list[tuple[str, str, str]]:
    data = tomllib.loads(text)
    out: list[tuple[str, str, str]] = []
    tables = (
        ("project.scripts", data.get("project", {}).get("scripts")),
        ("project.gui-scripts", data.get("project", {}).get("gui-scripts")),
        ("tool.poetry.scripts", data.get("tool", {}).get("poetry", {}).get("scripts")),
    )
    for section, table in tables:
        if not isinstance(table, dict):
            continue
        for name, value in table.items():
            if isinstance(value, dict):  # poetry: {reference = "pkg.mod:f", type = "console"}
                value = (
                    value.get("reference") if value.get("type", "console") == "console" else None
                )
            if isinstance(value, str):
                out.append((section, str(name), value))
    return out


def _from_setup_cfg(text: str) -> list[tuple[str, str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    out: list[tuple[str, str, str]] = []
    if not parser.has_option("options.entry_points", "console_scripts"):
        return out
    for line in parser.get("options.entry_points", "console_scripts").splitlines():
        name, sep, target = line.partition("=")
        if sep and name.strip():
            out.append(("options.entry_points console_scripts", name.strip(), target))
    return out
