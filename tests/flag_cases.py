"""The flag fixtures (``fixtures/flags/<case>``) and the flags each asks about,
for the tests that check an engine property on every fixture."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagtrace.effects import FlagLookupError, find_flags
from flagtrace.resolve import Program
from tests.registry import REPO

CASES = sorted((REPO / "fixtures" / "flags").glob("*/case.json"))


def flags_of(case: Path) -> list[str]:
    """The ``--flag`` arguments of ``case``."""
    args = json.loads(case.read_text(encoding="utf-8"))["args"]
    return [args[i + 1] for i, a in enumerate(args) if a == "--flag"]


def case_flags(case: Path) -> list[str]:
    """The ``--flag`` arguments of ``case``; skips the test when it has none."""
    flags = flags_of(case)
    if not flags:
        pytest.skip("no --flag in this case")
    return flags


def found_flags(program: Program, specs: list[str]) -> Iterator[str]:
    """The specs that name one flag of ``program`` (the error fixtures name missing
    and ambiguous flags on purpose)."""
    for spec in specs:
        try:
            find_flags(program, spec)
        except FlagLookupError:
            continue
        yield spec
