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
def test_a_bad_config_is_one_clear_error_naming_the_file(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    text = str(exc.value)
    assert str(path) in text and message in text
    assert "\n" not in text
