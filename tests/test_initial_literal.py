"""A write of the literal a flag starts with is a reset, however it is spelled.

``fixtures/flags/initial_literal_reset`` and the hazard oracle (flags that start at ``0``)
check the rule end to end; here, which literals count as the flag's own, on a flag
whose module writes them from a reset function: a reset is no setter, so no FT103.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.model import HazardKind


def _sticky_setters(tmp_path: Path, initial: str, written: str) -> set[str]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(
        f"MODE = {initial}\n\n\n"
        "def enter():\n    global MODE\n    MODE = 'other'\n\n\n"
        f"def reset():\n    global MODE\n    MODE = {written}\n"
    )
    report = analyze([str(tmp_path)], ["MODE"], jobs=1)
    return {
        h.function.rpartition(".")[2]
        for h in report.flags[0].hazards
        if h.kind is HazardKind.STICKY
    }


@pytest.mark.parametrize(
    ("initial", "written"),
    [
        ("0", "0"),
        ('""', "''"),  # one value, two spellings
        ('"eager"', "'eager'"),
        ('"a" "b"', '"ab"'),  # a concatenation is a literal too
        ("1.5", "1.5"),
    ],
)
def test_writing_the_initial_value_back_is_a_reset(
    tmp_path: Path, initial: str, written: str
) -> None:
    assert _sticky_setters(tmp_path, initial, written) == {"enter"}


@pytest.mark.parametrize(
    ("initial", "written"),
    [
        ("0", "0.0"),  # equal, but another type: the flag holds another value
        ("0", "1"),
        ('""', "b''"),
        ('"x"', 'f"x"'),  # an f-string is no plain literal
    ],
)
def test_another_constant_may_set_the_flag(tmp_path: Path, initial: str, written: str) -> None:
    assert _sticky_setters(tmp_path, initial, written) == {"enter", "reset"}
