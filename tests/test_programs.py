"""Program roots (``flagtrace.programs``, ``flagtrace.scripts``) and ``--set-by``
(``flagtrace.setby``) on the fixture packages that show them, and on small trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.discover import discover
from flagtrace.model import AnalysisReport, EntryVerdict, RootKind, StickyScope, WrittenValue
from flagtrace.scripts import read_scripts, target_qualname
from tests.registry import REPO

FIXTURES = REPO / "fixtures" / "flags"


def _verdicts(report: AnalysisReport) -> dict[str, EntryVerdict]:
    assert report.errors == (), report.errors
    return {v.entry: v for f in report.flags for v in f.entries}


def test_console_scripts_are_read_from_pyproject_and_setup_cfg(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project.scripts]\ntool = "pkg.cli:main [extra]"\n'
        '[tool.poetry.scripts]\npo = "pkg.po:run"\n'
        'tab = { reference = "pkg.tab:go", type = "console" }\n'
        'file = { reference = "pkg/x.py", type = "file" }\n',
        encoding="utf-8",
    )
    (tmp_path / "setup.cfg").write_text(
        "[options.entry_points]\nconsole_scripts =\n    legacy = pkg.old:main\n",
        encoding="utf-8",
    )
    found = read_scripts([str(tmp_path / "pyproject.toml"), str(tmp_path / "setup.cfg")])
    assert [s.qualname for s in found.scripts] == [
        "pkg.cli.main",
        "pkg.po.run",
        "pkg.tab.go",
        "pkg.old.main",
    ]
    assert found.scripts[0].declared.endswith("pyproject.toml [project.scripts] tool")
    assert found.diagnostics == ()
    assert target_qualname("pkg.mod") is None
    assert target_qualname("pkg.mod:Cls.method") == "pkg.mod.Cls.method"


def test_a_broken_packaging_file_is_an_error_not_a_silent_loss_of_roots(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project.scripts\n", encoding="utf-8")
    found = read_scripts([str(tmp_path / "pyproject.toml")])
    assert found.scripts == ()
    assert "cannot read console scripts" in found.diagnostics[0].message


def test_discovery_meets_packaging_files_inside_the_paths_only(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("", encoding="utf-8")
    (tmp_path / ".venv" / "setup.cfg").write_text("", encoding="utf-8")
    assert discover([tmp_path]).packaging == (str(tmp_path / "pyproject.toml"),)
    assert discover([tmp_path / "pkg"]).packaging == ()


def test_a_sticky_write_in_another_scripts_main_does_not_reach_the_server() -> None:
    report = analyze(
        [str(FIXTURES / "roots_script_main")],
        ["_warm"],
        ["pkg.server.serve", "pkg.lib.report"],
        jobs=1,
    )
    v = _verdicts(report)
    assert not v["pkg.server.serve"].observes_set
    assert v["pkg.server.serve"].roots == ("pkg.server",)
    assert "no program root that reaches pkg.server.serve reaches it" in (
        v["pkg.server.serve"].reason
    )
    assert v["pkg.lib.report"].observes_set
    assert v["pkg.lib.report"].sticky_scope is StickyScope.ANYWHERE
    assert [(r.qualname, r.kind) for r in report.roots] == [
        ("pkg.bench", RootKind.MAIN),
        ("pkg.server", RootKind.MAIN),
    ]


def test_configured_roots_and_sticky_anywhere() -> None:
    where = [str(FIXTURES / "roots_script_main")]
    # a process that starts at report: nothing of it runs before report
    rooted = _verdicts(analyze(where, ["_warm"], ["pkg.lib.report"], roots=["pkg.lib.report"]))
    assert not rooted["pkg.lib.report"].observes_set
    # --sticky-anywhere: every sticky write counts for every entry, as before roots
    anywhere = _verdicts(analyze(where, ["_warm"], ["pkg.server.serve"], sticky_anywhere=True))
    assert anywhere["pkg.server.serve"].observes_set
    assert anywhere["pkg.server.serve"].sticky_scope is StickyScope.ANYWHERE
    bad = analyze(where, ["_warm"], ["pkg.server.serve"], roots=["pkg.nowhere.main"])
    assert [d.path for d in bad.errors] == ["<root>"]


def test_a_console_script_root_reaches_the_sticky_setter_and_the_entry() -> None:
    report = analyze([str(FIXTURES / "roots_console_script")], ["_verbose"], ["pkg.core.step"])
    (v,) = _verdicts(report).values()
    assert v.observes_set and v.sticky_scope is StickyScope.ROOT
    assert v.roots == ("pkg.cli.main",)
    assert v.witness[0].before_entry and v.witness[0].function == "pkg.cli.main"
    assert [r.kind for r in report.roots] == [RootKind.SCRIPT]


def test_the_order_of_a_main_block_decides(tmp_path: Path) -> None:
    """``serve()`` runs before the sticky write in the same ``__main__`` block: never."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "app.py").write_text(
        "FLAG = False\n\n\ndef set_flag(v):\n    global FLAG\n    FLAG = v\n\n\n"
        "def serve():\n    return FLAG\n\n\ndef other():\n    return FLAG\n\n\n"
        'if __name__ == "__main__":\n    serve()\n    set_flag(True)\n    other()\n',
        encoding="utf-8",
    )
    v = _verdicts(analyze([str(tmp_path)], ["FLAG"], ["pkg.app.serve", "pkg.app.other"]))
    assert not v["pkg.app.serve"].observes_set
    assert v["pkg.app.other"].observes_set
    assert v["pkg.app.other"].sticky_scope is StickyScope.ROOT
    assert v["pkg.app.other"].set_value is WrittenValue.CONSTANT


@pytest.mark.parametrize(
    ("set_by", "verify", "draft"),
    [((), True, True), (("draft_mode",), False, True), (("pkg.state.configure",), True, True)],
)
def test_set_by_separates_the_configuration_from_the_context_manager(
    set_by: tuple[str, ...], verify: bool, draft: bool
) -> None:
    v = _verdicts(
        analyze(
            [str(FIXTURES / "set_by_config")],
            ["_draft"],
            ["pkg.worker.verify", "pkg.worker.draft"],
            set_by=set_by,
        )
    )
    assert v["pkg.worker.verify"].observes_set is verify
    assert v["pkg.worker.draft"].observes_set is draft
    if not set_by:
        assert v["pkg.worker.verify"].set_by == "pkg.state.configure"
        assert v["pkg.worker.verify"].set_value is WrittenValue.UNKNOWN
        assert v["pkg.worker.draft"].set_by == "pkg.state.draft_mode"
        assert v["pkg.worker.draft"].set_value is WrittenValue.CONSTANT


def test_set_by_naming_no_writer_is_an_error() -> None:
    report = analyze(
        [str(FIXTURES / "set_by_config")], ["_draft"], ["pkg.worker.verify"], set_by=["forward"]
    )
    assert [d.path for d in report.errors] == ["<set-by>"]
    assert "names no function that writes _draft" in report.errors[0].message


def test_a_sticky_write_in_a_main_block_only_runs_in_that_program(tmp_path: Path) -> None:
    """An entry no root reaches runs in some unknown program; a ``__main__`` block of the
    analysed code is not part of it, a function called from anywhere would be."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "state.py").write_text(
        "FLAG = False\n\n\ndef set_flag(v):\n    global FLAG\n    FLAG = v\n\n\n"
        "def read():\n    return FLAG\n",
        encoding="utf-8",
    )
    (tmp_path / "pkg" / "tool.py").write_text(
        'from pkg.state import set_flag\n\nif __name__ == "__main__":\n    set_flag(True)\n',
        encoding="utf-8",
    )
    (v,) = _verdicts(analyze([str(tmp_path)], ["FLAG"], ["pkg.state.read"])).values()
    assert not v.observes_set and v.roots == ()
    assert "runs only in that program's __main__ block" in v.reason
    anywhere = _verdicts(
        analyze([str(tmp_path)], ["FLAG"], ["pkg.state.read"], sticky_anywhere=True)
    )
    assert anywhere["pkg.state.read"].observes_set
