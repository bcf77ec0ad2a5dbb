"""``[tool.flagtrace]`` in pyproject.toml, merged under the command line.

Found by walking up from the first analysed path to the nearest
``pyproject.toml`` (as ruff, black and import-linter do). Every key is checked
against one table of defaults and types; a wrong key or type is a one-line
error naming the file (exit code 2), never a traceback.

    [tool.flagtrace]
    flags = ["_in_piecewise_cuda_graph"]
    entries = ["sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"]
    exclude = ["tests/*", "*_pb2.py"]
    jobs = 2
    jedi-budget = 5.0
    ignore = ["FT104"]              # codes dropped everywhere
    baseline = "flagtrace-baseline.json"  # relative to this pyproject.toml
    include-tests = false  # judge discovered test functions and modules too
    assume = ["server_args.enable_piecewise_cuda_graph=False"]  # facts, as --assume
    roots = ["pkg.worker.main"]  # program roots besides __main__ blocks and console scripts
    sticky-anywhere = false  # true: any sticky write may run before any entry (a library)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class ConfigError(Exception):
    """A problem in the configuration file: printed as one line, exit code 2."""


@dataclass(frozen=True, slots=True)
class Config:
    flags: tuple[str, ...] = ()
    entries: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    jobs: int | None = None
    jedi_budget: float = 5.0
    ignore: tuple[str, ...] = ()
    baseline: str | None = None  # resolved against the pyproject.toml's directory
    include_tests: bool = False
    assume: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    sticky_anywhere: bool = False
    source: str | None = None  # the file it came from
    extra: dict[str, Any] = field(default_factory=dict)


# key -> (attribute, expected type, element type for lists)
_SCHEMA: dict[str, tuple[str, type[Any], type[Any] | None]] = {
    "flags": ("flags", list, str),
    "entries": ("entries", list, str),
    "reads": ("reads", list, str),
    "exclude": ("exclude", list, str),
    "jobs": ("jobs", int, None),
    "jedi-budget": ("jedi_budget", float, None),
    "ignore": ("ignore", list, str),
    "baseline": ("baseline", str, None),
    "include-tests": ("include_tests", bool, None),
    "assume": ("assume", list, str),
    "roots": ("roots", list, str),
    "sticky-anywhere": ("sticky_anywhere", bool, None),
}


def find_pyproject(paths: Sequence[str | Path]) -> Path | None:
    """The nearest pyproject.toml at or above the first path (or the cwd)."""
    start = Path(paths[0]) if paths else Path.cwd()
    start = start.resolve()
    if start.is_file() or not start.exists():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path | None) -> Config:
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("flagtrace")
    if table is None:
        return Config()
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.flagtrace] must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _SCHEMA:
            known = ", ".join(sorted(_SCHEMA))
            raise ConfigError(f"{path}: [tool.flagtrace] unknown key {key!r} (known: {known})")
        attr, expected, element = _SCHEMA[key]
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            raise ConfigError(
                f"{path}: [tool.flagtrace] {key} must be {_describe(expected, element)}"
            )
        if element is not None:
            if not all(isinstance(v, element) for v in value):
                raise ConfigError(
                    f"{path}: [tool.flagtrace] {key} must be {_describe(expected, element)}"
                )
            value = tuple(value)
        if key == "jobs" and value < 1:
            raise ConfigError(f"{path}: [tool.flagtrace] jobs must be at least 1")
        if key == "jedi-budget" and value < 0:
            raise ConfigError(f"{path}: [tool.flagtrace] jedi-budget must not be negative")
        if key == "baseline":
            value = str(path.parent / value)
        if key == "assume":
            from flagtrace.assume import FactError, parse_fact

            for text in value:
                try:
                    parse_fact(text)
                except FactError as exc:
                    raise ConfigError(f"{path}: [tool.flagtrace] {exc}") from None
        values[attr] = value
    return Config(source=str(path), **values)


def _describe(expected: type, element: type | None) -> str:
    if element is not None:
        return f"a list of {element.__name__}s"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        expected, expected.__name__
    )
