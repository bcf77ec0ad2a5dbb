"""[tool.flagtrace] in pyproject.toml: found by walking up, checked strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.config import Config, ConfigError, find_pyproject, load_config


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(body)
    return path


def test_the_nearest_pyproject_above_the_first_path_is_used(tmp_path: Path) -> None:
    _write(tmp_path, "[tool.flagtrace]\nflags = ['_x']\n")
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    (deep / "m.py").write_text("")
    assert find_pyproject([deep / "m.py"]) == tmp_path / "pyproject.toml"
    assert find_pyproject([deep]) == tmp_path / "pyproject.toml"


def test_a_full_table_is_read_with_its_types(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
[tool.flagtrace]
flags = ["_in_graph", "pkg.state._mode"]
entries = ["pkg.worker.Worker.verify"]
reads = ["pkg.comm.all_reduce"]
exclude = ["tests/*"]
jobs = 2
jedi-budget = 3
""",
    )
    config = load_config(path)
    assert config.flags == ("_in_graph", "pkg.state._mode")
    assert config.entries == ("pkg.worker.Worker.verify",)
    assert config.reads == ("pkg.comm.all_reduce",)
    assert config.exclude == ("tests/*",)
    assert config.jobs == 2
    assert config.jedi_budget == 3.0
    assert config.source == str(path)


def test_no_table_means_defaults(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "[project]\nname = 'x'\n")) == Config()
    assert load_config(None) == Config()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[tool.flagtrace]\nflag = ['x']\n", "unknown key 'flag'"),
        ("[tool.flagtrace]\nflags = 'x'\n", "flags must be a list of strs"),
        ("[tool.flagtrace]\nflags = [1]\n", "flags must be a list of strs"),
        ("[tool.flagtrace]\njobs = 'two'\n", "jobs must be an integer"),
        ("[tool.flagtrace]\njobs = 0\n", "jobs must be at least 1"),
        ("[tool.flagtrace]\njobs = true\n", "jobs must be an integer"),
        ("[tool.flagtrace]\njedi-budget = -1\n", "jedi-budget must not be negative"),
        ("[tool.flagtrace\n", "invalid TOML"),
    ],
)
def test_a_bad_config_is_one_clear_error_naming_the_file(
    tmp_path: Path, body: str, message: str
) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    text = str(exc.value)
    assert str(path) in text and message in text
    assert "\n" not in text


def test_the_cli_takes_flags_and_entries_from_pyproject(tmp_path: Path) -> None:
    """A project configured in pyproject.toml needs no options at all."""
    import json

    from flagtrace.cli import main

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(
        "import contextlib\n_on = False\n\n@contextlib.contextmanager\ndef enabled():\n"
        "    global _on\n    _on = True\n    try:\n        yield\n"
        "    finally:\n        _on = False\n"
    )
    (pkg / "work.py").write_text(
        "from pkg import state\n\ndef read():\n    return state._on\n\n"
        "def hidden():\n    with state.enabled():\n        read()\n\ndef caller():\n    hidden()\n"
    )
    _write(
        tmp_path,
        "[tool.flagtrace]\nflags = ['_on']\nentries = ['pkg.work.hidden']\njedi-budget = 0\n",
    )
    out = tmp_path / "report.json"
    code = main([str(tmp_path), "--format", "json", "-o", str(out), "--no-cache", "-q"])
    report = json.loads(out.read_text())
    assert [f["qualname"] for f in report["flags"]] == ["pkg.state._on"]
    # discovered: caller (no callers); configured: hidden (it has a caller, so only config names it)
    assert sorted(e["entry"] for e in report["flags"][0]["entries"]) == [
        "pkg.work.caller",
        "pkg.work.hidden",
    ]
    assert code == 2 - 1  # findings


def test_a_bad_pyproject_is_a_one_line_error_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flagtrace.cli import main

    (tmp_path / "m.py").write_text("X = 1\n")
    _write(tmp_path, "[tool.flagtrace]\nflagz = ['X']\n")
    assert main([str(tmp_path), "--flag", "X", "--no-cache", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key 'flagz'" in err[0] and "Traceback" not in err[0]


def test_ignore_and_baseline_are_read_and_the_baseline_is_relative_to_the_file(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, '[tool.flagtrace]\nignore = ["FT104"]\nbaseline = "ci/bl.json"\n')
    config = load_config(path)
    assert config.ignore == ("FT104",)
    assert config.baseline == str(tmp_path / "ci" / "bl.json")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('ignore = "FT104"', "ignore must be a list of strs"),
        ("baseline = 3", "baseline must be a string"),
    ],
)
def test_ignore_and_baseline_of_the_wrong_type_are_one_line_errors(
    tmp_path: Path, body: str, message: str
) -> None:
    path = _write(tmp_path, f"[tool.flagtrace]\n{body}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)
