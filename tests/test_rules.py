"""The rule registry's examples are true: flagtrace reports each rule's code on its bad
example and not on its fixed one, and ``flagtrace explain`` shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.cli import main
from flagtrace.rules import BY_CODE, EXAMPLE_FLAG, OBSERVES_SET, RULES


def codes_found(tmp_path: Path, source: str) -> set[str]:
    """Every finding code flagtrace reports on ``source`` as the module ``example.py``."""
    pkg = tmp_path / "example"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "example.py").write_text(source, encoding="utf-8")
    report = analyze([str(pkg)], [EXAMPLE_FLAG], jobs=1)
    assert not report.errors, report.errors
    (flag,) = report.flags
    found = {h.code for h in flag.hazards}
    if any(e.observes_set for e in flag.entries):
        found.add(OBSERVES_SET)
    return found


def test_every_code_has_one_rule_in_code_order() -> None:
    assert list(BY_CODE) == ["FT001", "FT101", "FT102", "FT103", "FT104"]
    assert {r.code for r in RULES.values()} == set(BY_CODE) - {OBSERVES_SET}


@pytest.mark.parametrize("code", list(BY_CODE))
def test_bad_example_produces_its_code(code: str, tmp_path: Path) -> None:
    assert code in codes_found(tmp_path, BY_CODE[code].bad)


@pytest.mark.parametrize("code", list(BY_CODE))
def test_fixed_example_does_not(code: str, tmp_path: Path) -> None:
    assert code not in codes_found(tmp_path, BY_CODE[code].fixed)


def test_explain_shows_the_rule_and_both_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "ft101"]) == 0
    out = capsys.readouterr().out
    rule = BY_CODE["FT101"]
    assert out.startswith(f"FT101: {rule.summary}\n")
    assert "    yield  # an exception in the `with` body never comes back here" in out
    assert out.index("Example") < out.index("Fixed:") < out.index("        finally:")


def test_explain_without_a_code_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(BY_CODE)


def test_explain_an_unknown_code_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "FT999"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "flagtrace: error: unknown code 'FT999' (known: FT001, FT101, FT102, FT103, FT104)\n"
    )
