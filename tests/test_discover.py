"""Discovery names modules from the filesystem alone; each test states one rule.

The committed trees under ``fixtures/discovery/<case>/tree`` carry an
``expected.json`` beside them (paths given, exclude patterns, the exact
``file -> module`` mapping, diagnostics). Symlinks, unreadable directories and
names that git ignores (``__pycache__``, ``*.egg-info``, ``.git``) are built in
``tmp_path`` at test time instead, so nothing odd is committed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flagtrace.discover import Discovery, discover, module_name_for
from flagtrace.model import SourceFile
from tests.registry import REPO

CASES = REPO / "fixtures" / "discovery"
CASE_NAMES = sorted(path.name for path in CASES.iterdir() if (path / "expected.json").is_file())
NEVER_RUN = 'raise SystemExit("discovery must never execute this file")\n'


def load_case(name: str) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads((CASES / name / "expected.json").read_text())
    return expected


def run_case(name: str, monkeypatch: pytest.MonkeyPatch) -> Discovery:
    """Discover a committed case from inside its tree, so paths read as in expected.json."""
    expected = load_case(name)
    monkeypatch.chdir(CASES / name / "tree")
    return discover(expected["paths"], expected["exclude"])


def modules(found: Discovery) -> dict[str, str]:
    return {source.path: source.module for source in found.files}


def by_module(found: Discovery) -> dict[str, SourceFile]:
    return {source.module: source for source in found.files}


def messages(found: Discovery) -> list[str]:
    return [str(diagnostic) for diagnostic in found.diagnostics]


def write(root: Path, *relative: str, text: str = NEVER_RUN) -> None:
    for name in relative:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


# --------------------------------------------------------------------------
# The committed cases, whole


@pytest.mark.parametrize("case", CASE_NAMES)
def test_every_fixture_case_matches_its_expected_json(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_case(case)
    found = run_case(case, monkeypatch)
    assert modules(found) == expected["modules"]
    assert messages(found) == expected["diagnostics"]


def test_the_fixture_cases_exist() -> None:
    assert len(CASE_NAMES) >= 10


# --------------------------------------------------------------------------
# Naming


def test_an_init_file_is_the_package_module_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    found = by_module(run_case("regular_package", monkeypatch))
    assert found["pkg"].path == "pkg/__init__.py"
    assert found["pkg"].is_package
    assert found["pkg.sub"].is_package
    assert not found["pkg.core"].is_package
    assert {source.root for source in found.values()} == {"."}


def test_a_plain_directory_is_a_root_whose_files_are_top_level_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("namespace_package", monkeypatch))
    assert found["main"].path == "main.py"
    assert found["main"].root == "."


def test_subdirectories_without_init_are_namespace_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("namespace_package", monkeypatch))
    assert found["ns.tool"].path == "ns/tool.py"
    assert found["ns.deeper.more.leaf"].path == "ns/deeper/more/leaf.py"
    assert "ns" not in found  # a namespace package has no file of its own


def test_a_src_directory_outside_packages_is_a_root_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("src_layout", monkeypatch))
    assert (found["pkg.api"].path, found["pkg.api"].root) == ("src/pkg/api.py", "src")
    assert (found["tests.test_api"].root, found["setup"].root) == (".", ".")
    assert found["alpha"].root == "packages/alpha/src"


def test_a_src_directory_inside_a_regular_package_is_an_ordinary_subpackage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("src_layout", monkeypatch))
    assert found["lib.src.code"].path == "lib/src/code.py"


def test_a_package_given_directly_is_named_from_its_topmost_enclosing_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("nested_subdir", monkeypatch))
    assert found["sglang.srt.server"].path == "site/sglang/srt/server.py"
    assert {source.root for source in found.values()} == {"site"}
    assert "sglang.lang.api" not in found  # outside the given directory


def test_a_plain_directory_inside_a_regular_package_is_a_namespace_portion_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("namespace_subdir_in_package", monkeypatch))
    assert found["sglang.srt.server"].root == "site"
    assert found["sglang.srt.utils.common"].root == "site"  # given as a file
    assert (found["run"].path, found["run"].root) == ("site/tools/run.py", "site/tools")


def test_a_given_file_is_named_from_its_enclosing_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("loose_files", monkeypatch))
    assert (found["pkg.sub.m"].path, found["pkg.sub.m"].root) == ("pkg/sub/m.py", ".")
    assert (found["main"].path, found["main"].root) == ("main.py", ".")
    assert found["pkg"].is_package


def test_a_given_file_with_an_unimportable_name_is_still_analysed_under_its_stem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("loose_files", monkeypatch))
    assert found["my-tool"].path == "my-tool.py"


def test_a_given_stub_file_is_ignored_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    found = run_case("loose_files", monkeypatch)
    assert not any(source.path.endswith(".pyi") for source in found.files)
    assert found.diagnostics == ()


def test_a_given_file_that_is_not_python_is_a_diagnostic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(CASES / "loose_files" / "tree")
    found = discover(["notes.txt", "main.py"])
    assert messages(found) == ["notes.txt: not a Python source file (.py); ignored"]
    assert modules(found) == {"main.py": "main"}


def test_a_site_packages_directory_outside_a_virtualenv_is_a_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("site_packages_root", monkeypatch))
    assert found["dep.core"].root == "lib/python3.11/site-packages"
    assert found["stdlib_mod"].root == "lib/python3.11"


def test_a_given_package_with_an_unimportable_name_is_named_by_its_directory(
    in_tmp: Path,
) -> None:
    write(in_tmp, "ComfyUI-Nodes/__init__.py", "ComfyUI-Nodes/nodes.py")
    found = discover(["ComfyUI-Nodes"])
    assert modules(found) == {
        "ComfyUI-Nodes/__init__.py": "ComfyUI-Nodes",
        "ComfyUI-Nodes/nodes.py": "ComfyUI-Nodes.nodes",
    }
    assert {source.root for source in found.files} == {"."}


def test_module_name_for_a_plain_directory_is_empty_and_the_directory_is_its_root(
    in_tmp: Path,
) -> None:
    (in_tmp / "plain").mkdir()
    assert module_name_for(Path("plain")) == ("", Path("plain"))


def test_module_name_for_the_current_directory_walks_up_by_real_location(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(CASES / "nested_subdir" / "tree" / "site" / "sglang" / "srt")
    assert module_name_for(Path(".")) == ("sglang.srt", Path("../.."))
    assert module_name_for(Path("server.py")) == ("sglang.srt.server", Path("../.."))
    assert module_name_for(Path("__init__.py")) == ("sglang.srt", Path("../.."))


def test_module_name_for_a_given_init_file_in_an_unimportable_directory_uses_its_name(
    in_tmp: Path,
) -> None:
    write(in_tmp, "ComfyUI-Nodes/__init__.py")
    assert module_name_for(Path("ComfyUI-Nodes/__init__.py")) == ("ComfyUI-Nodes", Path("."))


def test_paths_keep_the_spelling_they_were_given_in(in_tmp: Path) -> None:
    write(in_tmp, "proj/pkg/__init__.py", "proj/pkg/mod.py")
    found = discover(["./proj"])
    assert modules(found) == {"proj/pkg/__init__.py": "pkg", "proj/pkg/mod.py": "pkg.mod"}
    assert {source.root for source in found.files} == {"proj"}


# --------------------------------------------------------------------------
# Skipping


def test_tool_build_and_virtualenv_directories_are_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = run_case("skipped_dirs", monkeypatch)
    assert sorted(modules(found).values()) == ["app", "pkg", "pkg.build", "pkg.build.rules"]


def test_a_regular_package_named_build_is_code_not_build_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = by_module(run_case("skipped_dirs", monkeypatch))
    assert found["pkg.build.rules"].path == "pkg/build/rules.py"
    assert "pkg.dist.tool" not in found  # no __init__.py: build output


def test_unimportable_directory_and_file_names_are_skipped_in_walks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = set(modules(run_case("skipped_dirs", monkeypatch)))
    assert not paths & {"my-dir/inner.py", "class/tool.py", "my-script.py", "pkg/data.v2/tool.py"}


@pytest.mark.parametrize(
    "directory", [".git", "__pycache__", ".mypy_cache", ".pytest_cache", "demo.egg-info"]
)
def test_directories_that_git_ignores_are_skipped_too(in_tmp: Path, directory: str) -> None:
    write(in_tmp, "app.py", f"{directory}/hidden.py")
    assert modules(discover(["."])) == {"app.py": "app"}


def test_a_site_packages_directory_inside_a_virtualenv_is_skipped(in_tmp: Path) -> None:
    write(in_tmp, "env/pyvenv.cfg", text="home = /usr/bin\n")
    write(in_tmp, "env/lib/python3.11/site-packages/dep.py", "env/lib/python3.11/tool.py")
    found = discover(["env/lib/python3.11"])
    assert modules(found) == {"env/lib/python3.11/tool.py": "tool"}


def test_explicitly_given_paths_are_never_skipped_or_excluded(in_tmp: Path) -> None:
    write(in_tmp, "build/gen.py", ".venv/tool.py")
    found = discover(["build", ".venv/tool.py"], exclude=["build", "tool.py"])
    assert modules(found) == {"build/gen.py": "gen", ".venv/tool.py": "tool"}


# --------------------------------------------------------------------------
# Exclude patterns


def test_exclude_globs_match_relative_paths_and_bare_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = modules(run_case("exclude_globs", monkeypatch))
    assert "tests/deep/test_b.py" not in found  # tests/* crosses directories
    assert "proto/msg_pb2.py" not in found  # *_pb2.py by name
    assert "gen/build_stuff.py" not in found  # gen by directory name
    assert "docs/conf.py" not in found  # ./docs/ means docs
    assert "gen2/__init__.py" in found


def test_exclude_globs_are_relative_to_each_given_path(in_tmp: Path) -> None:
    write(in_tmp, "one/tests/test_a.py", "two/tests/test_a.py", "two/keep.py")
    found = discover(["one", "two"], exclude=["tests/*"])
    assert modules(found) == {"two/keep.py": "keep"}


def test_exclude_globs_also_match_the_displayed_path(in_tmp: Path) -> None:
    write(in_tmp, "proj/tests/test_a.py", "proj/app.py")
    found = discover(["proj"], exclude=["proj/tests/*"])
    assert modules(found) == {"proj/app.py": "app"}


# --------------------------------------------------------------------------
# Duplicates and order


def test_the_first_given_path_wins_when_two_files_claim_one_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = run_case("duplicate_modules", monkeypatch)
    assert by_module(found)["shared"].path == "first/shared.py"
    assert messages(found) == [
        "first/shared.py: module shared also defined at second/shared.py; ignored"
    ]


def test_a_package_takes_precedence_over_a_module_of_the_same_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = run_case("package_beats_module", monkeypatch)
    assert by_module(found)["foo"].path == "foo/__init__.py"
    assert len(found.diagnostics) == 1


def test_the_same_file_reached_twice_is_reported_once_without_a_diagnostic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(CASES / "regular_package" / "tree")
    found = discover(["pkg/core.py", ".", "pkg"])
    assert [source.module for source in found.files].count("pkg.core") == 1
    assert found.diagnostics == ()


def test_files_are_sorted_by_module_then_path(monkeypatch: pytest.MonkeyPatch) -> None:
    found = run_case("src_layout", monkeypatch)
    keys = [(source.module, source.path) for source in found.files]
    assert keys == sorted(keys)
    assert len({source.module for source in found.files}) == len(keys)


# --------------------------------------------------------------------------
# Problems with the input


def test_a_nonexistent_path_is_a_diagnostic_and_the_rest_still_runs(in_tmp: Path) -> None:
    write(in_tmp, "app.py")
    found = discover(["missing", "app.py"])
    assert messages(found) == ["missing: no such file or directory"]
    assert modules(found) == {"app.py": "app"}


def test_an_unreadable_directory_is_a_diagnostic_and_the_rest_still_runs(in_tmp: Path) -> None:
    write(in_tmp, "locked/secret.py", "app.py")
    locked = in_tmp / "locked"
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("this user reads directories whatever their mode (root)")
        found = discover(["."])
    finally:
        locked.chmod(0o755)
    assert messages(found) == ["locked: permission denied"]
    assert modules(found) == {"app.py": "app"}


def test_a_directory_that_cannot_be_listed_is_a_diagnostic(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rule as above, made to fail on purpose so it runs as root too."""
    write(in_tmp, "locked/secret.py", "app.py")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = discover(["."])
    assert messages(found) == ["locked: permission denied"]
    assert modules(found) == {"app.py": "app"}


def test_a_symlink_loop_is_walked_once(in_tmp: Path) -> None:
    write(in_tmp, "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/mod.py")
    (in_tmp / "pkg" / "sub" / "back").symlink_to(in_tmp / "pkg", target_is_directory=True)
    (in_tmp / "pkg" / "self").symlink_to("self")  # a link to itself: ELOOP
    found = discover(["."])
    assert modules(found) == {
        "pkg/__init__.py": "pkg",
        "pkg/sub/__init__.py": "pkg.sub",
        "pkg/sub/mod.py": "pkg.sub.mod",
    }
    assert found.diagnostics == ()


def test_a_symlinked_directory_is_followed_once_and_the_real_one_keeps_its_name(
    in_tmp: Path,
) -> None:
    write(in_tmp, "real/mod.py", "outside/vendored.py")
    (in_tmp / "alias").symlink_to(in_tmp / "real", target_is_directory=True)
    (in_tmp / "tree").mkdir()
    (in_tmp / "tree" / "vendor").symlink_to(in_tmp / "outside", target_is_directory=True)
    assert modules(discover(["."])) == {
        "real/mod.py": "real.mod",
        "outside/vendored.py": "outside.vendored",
    }
    # a link out of the given path is not followed (tests/test_symlinks.py), unless asked to
    found = discover(["tree"], follow_external_symlinks=True)
    assert modules(found) == {"tree/vendor/vendored.py": "vendor.vendored"}
    assert modules(discover(["tree"])) == {}


def test_a_given_path_through_a_symlink_keeps_the_link_spelling(in_tmp: Path) -> None:
    """The given path is the caller's: a link in it is followed wherever it leads."""
    write(in_tmp, "real/pkg/__init__.py", "real/pkg/mod.py")
    (in_tmp / "link").symlink_to(in_tmp / "real", target_is_directory=True)
    found = discover(["link/pkg"])
    assert modules(found) == {"link/pkg/__init__.py": "pkg", "link/pkg/mod.py": "pkg.mod"}


# --------------------------------------------------------------------------
# Never importing


def test_discovery_never_executes_the_code_it_finds(in_tmp: Path) -> None:
    marker = in_tmp / "executed"
    write(
        in_tmp, "canary_pkg/__init__.py", "canary_pkg/mod.py", text=f"open({str(marker)!r}, 'w')\n"
    )
    found = discover(["canary_pkg", "canary_pkg/mod.py"])
    assert sorted(modules(found).values()) == ["canary_pkg", "canary_pkg.mod"]
    assert not marker.exists()
    assert "canary_pkg" not in sys.modules


# --------------------------------------------------------------------------
# Properties

COMPONENT = st.sampled_from(["a", "b", "pkg", "mod_1", "_private"])
RELATIVE = st.lists(COMPONENT, min_size=1, max_size=4).map(lambda parts: "/".join(parts) + ".py")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(RELATIVE, min_size=1, max_size=8))
def test_in_a_plain_tree_every_module_name_mirrors_its_relative_path(
    relative_paths: set[str],
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write(root, *relative_paths)
        found = discover([root])
    expected = {str(root / rel): rel[: -len(".py")].replace("/", ".") for rel in relative_paths}
    assert modules(found) == expected
    assert found.diagnostics == ()
