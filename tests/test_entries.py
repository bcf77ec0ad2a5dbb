"""Which discovered entry points are tests, and the configuration that brings them back."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.config import ConfigError, load_config
from flagtrace.verdicts import is_test_module

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "flags"


@pytest.mark.parametrize(
    ("module", "test"),
    [
        ("pkg.tests.helpers", True),
        ("pkg.test.helpers", True),
        ("pkg.tests", True),
        ("pkg.test_runner", True),
        ("pkg.runner_test", True),
        ("pkg.conftest", True),
        ("pkg.testing", False),
        ("pkg.contest", False),
        ("pkg.attestation", False),
        ("pkg.latest_tests_data", False),
    ],
)
def test_a_module_is_a_test_by_its_name_or_package(module: str, test: bool) -> None:
    assert is_test_module(module) is test


def test_include_tests_in_config_gives_the_cli_flags_report() -> None:
    """The setting and the flag ask the same question, so their goldens are the same text."""
    by_config = (CASES / "entries_include_tests_config" / "expected.json").read_text()
    by_flag = (CASES / "entries_include_tests" / "expected.json").read_text()
    assert by_config == by_flag


def test_include_tests_must_be_a_boolean(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.flagtrace]\ninclude-tests = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"include-tests must be true or false$"):
        load_config(pyproject)
    pyproject.write_text("[tool.flagtrace]\ninclude-tests = true\n", encoding="utf-8")
    assert load_config(pyproject).include_tests is True
