"""The rich (80 and 120 columns, no colour) and concise layouts of a few flag fixtures are
exactly their goldens, ``fixtures/flags/<case>/layout/*.txt`` (written by
``tests/regen_layouts.py``; after a deliberate change, rerun it and review ``git diff``)."""

from __future__ import annotations

import pytest

from tests.regen_layouts import LAYOUT_CASES, differences


@pytest.mark.parametrize("name", LAYOUT_CASES)
def test_layout_matches_its_golden(name: str) -> None:
    found = differences((name,))
    assert not found, "\n".join(found)
