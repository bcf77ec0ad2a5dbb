"""The reporter registries: formats are found by name, a new module is a new format, and the
CLI offers exactly what the registries hold. Reporters see only the model."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest

import flagtrace.report as report_pkg
from flagtrace.cli import callgraph_cmd, check_cmd
from flagtrace.model import AnalysisReport
from flagtrace.report import CALLGRAPH, CHECK, RenderOptions


def _format_choices(command: click.Command) -> list[str]:
    (option,) = [p for p in command.params if p.name == "fmt"]
    assert isinstance(option.type, click.Choice)
    return list(option.type.choices)


def test_the_formats_of_each_registry() -> None:
    assert CHECK.names() == ["concise", "json", "rdjson", "rich", "sarif"]
    assert CALLGRAPH.names() == ["dot", "json", "pycg"]
    assert CHECK["rich"].human and not CHECK["json"].human and not CHECK["concise"].human
    assert not any(CALLGRAPH[name].human for name in CALLGRAPH.names())


def test_the_cli_offers_the_registry_names() -> None:
    assert _format_choices(check_cmd) == CHECK.names()
    assert _format_choices(callgraph_cmd) == CALLGRAPH.names()


def test_an_unknown_format_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no check format named 'nope'"):
        CHECK["nope"]


def test_a_new_module_in_the_package_is_a_new_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adding a format is adding a module: nothing else names it."""
    (tmp_path / "check_github_markdown.py").write_text(
        textwrap.dedent(
            """
            HUMAN = True

            def render(report, options):
                return [f"{len(report.flags)} flags, {options.width} columns\\n"]
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "_shared.py").write_text("", encoding="utf-8")  # a private helper: no format
    monkeypatch.setattr(report_pkg, "__path__", [*report_pkg.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "flagtrace.report.check_github_markdown", raising=False)
    assert CHECK.names() == ["concise", "github-markdown", "json", "rdjson", "rich", "sarif"]
    assert CALLGRAPH.names() == ["dot", "json", "pycg"]
    reporter = CHECK["github-markdown"]
    assert reporter.human
    assert list(reporter.render(AnalysisReport((), ()), RenderOptions(width=60))) == [
        "0 flags, 60 columns\n"
    ]
    monkeypatch.delitem(sys.modules, "flagtrace.report.check_github_markdown")


def _modules_after(code: str) -> list[str]:
    """The flagtrace modules a fresh interpreter has loaded after running ``code``, and
    ``rich`` if it was loaded."""
    show = (
        "import sys; print(*sorted(m for m in sys.modules"
        " if m == 'rich' or m.partition('.')[0] == 'flagtrace'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{show}"], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_reporters_load_nothing_but_the_model() -> None:
    """Every reporter imported, and no engine module: the import-linter contract, checked
    at run time in a fresh interpreter."""
    code = (
        "from flagtrace.report import CALLGRAPH, CHECK\n"
        "for registry in (CHECK, CALLGRAPH):\n"
        "    [registry[name] for name in registry.names()]"
    )
    assert _modules_after(code) == [
        "flagtrace",
        "flagtrace.fingerprint",  # SARIF's partialFingerprints
        "flagtrace.model",
        "flagtrace.report",
        "flagtrace.report.callgraph_dot",
        "flagtrace.report.callgraph_json",
        "flagtrace.report.callgraph_pycg",
        "flagtrace.report.check_concise",
        "flagtrace.report.check_json",
        "flagtrace.report.check_rdjson",
        "flagtrace.report.check_rich",
        "flagtrace.report.check_sarif",
        "flagtrace.report.findings",  # helpers the formats share: no format of their own
        "flagtrace.report.json_pieces",
        "flagtrace.report.layout",
        "flagtrace.report.rdjson",
        "flagtrace.report.sarif",
        "flagtrace.report.text",
        "flagtrace.rules",
        "rich",
    ]


def test_starting_the_cli_imports_no_reporter() -> None:
    """Every run imports the CLI, the pre-commit hook's included: its --format choices must
    not cost an import of every reporter, rich and the model."""
    assert _modules_after("import flagtrace.cli") == [
        "flagtrace",
        "flagtrace.cli",
        "flagtrace.report",
    ]


_TERMINAL_VARIABLES = ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "COLORTERM", "TERM", "COLUMNS")


def test_the_cli_describes_the_destination(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file gets plain text 120 wide; stdout what rich detects, environment included."""
    from flagtrace.cli import _render_options

    for name in _TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert _render_options(tmp_path / "out.txt") == RenderOptions(120, None, False)
    monkeypatch.setenv("COLUMNS", "77")
    assert _render_options(None) == RenderOptions(77, None, True)  # a pipe: no escape codes
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    assert _render_options(None) == RenderOptions(77, "256", True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert _render_options(None) == RenderOptions(77, "256", False)
    # FORCE_COLOR reaches a file too, as it did when rich wrote the file itself, and so does
    # COLUMNS (a CI log written with -o is as wide as asked)
    assert _render_options(tmp_path / "out.txt") == RenderOptions(77, "256", False)
    assert _render_options(None, witnesses=None).witnesses is None
