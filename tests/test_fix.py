"""``flagtrace fix`` on golden cases, and how it treats the files it writes.

Each ``fixtures/fix/<case>/`` holds ``before/`` (a mini project), ``after/`` (the
files ``fix --write`` must produce; files it must not touch are absent) and
``case.json`` (flags, ``select``, and the setters it must report as not fixed,
with a piece of the reason). Every case is run three ways: ``--write`` gives
``after/`` exactly and the analysis of the result has no FT101/FT102 left on the
repaired setters; a second run changes nothing (idempotent); ``--diff`` prints
the same change and touches nothing.

``FLAGTRACE_UPDATE_GOLDEN=1`` rewrites ``after/`` from what fix produces (then
read the diff of ``fixtures/fix`` before committing it).
"""

from __future__ import annotations

import difflib
import io
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.fix import FixError, parse_select, plan_fixes, run_fix, write_changes
from tests.registry import REPO

CASES_DIR = REPO / "fixtures" / "fix"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if (p / "case.json").is_file())
UPDATE = os.environ.get("FLAGTRACE_UPDATE_GOLDEN") == "1"


def _case(name: str) -> dict[str, object]:
    data = json.loads((CASES_DIR / name / "case.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _fix(tree: str, case: dict[str, object], *, write: bool) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    flags = case["flags"]
    select = case.get("select", [])
    assert isinstance(flags, list) and isinstance(select, list)
    code = run_fix([tree], flags, select, write=write, use_cache=False, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _not_fixed(case: dict[str, object]) -> list[list[str]]:
    value = case.get("not_fixed", [])
    assert isinstance(value, list)
    return value


@pytest.mark.parametrize("name", CASES)
def test_fix_write_gives_the_golden_files_and_a_second_run_changes_nothing(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = _case(name)
    before_dir = CASES_DIR / name / "before"
    after_dir = CASES_DIR / name / "after"
    shutil.copytree(before_dir, tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    refused = _not_fixed(case)

    code, out, err = _fix("tree", case, write=True)
    assert out == ""
    assert code == (1 if refused else 0), err
    for function, reason in refused:
        assert any(function in line and reason in line for line in err.splitlines()), err
    assert err.count(": not fixed (") == len(refused), err

    before, got = _files(before_dir), _files(tmp_path / "tree")
    if UPDATE:
        shutil.rmtree(after_dir, ignore_errors=True)
        for rel, data in got.items():
            if data != before[rel]:
                (after_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                (after_dir / rel).write_bytes(data)
    expected = {**before, **_files(after_dir)}
    assert got.keys() == expected.keys()
    for rel in expected:
        assert got[rel].decode() == expected[rel].decode(), rel
    assert _files(after_dir) or refused, "a golden case changes something or refuses"

    # what was repaired has none of the selected hazards left (what was refused still has)
    flags, select = case["flags"], case.get("select", ["FT101", "FT102"])
    assert isinstance(flags, list) and isinstance(select, list)
    report = analyze(["tree"], flags)
    assert report.errors == ()
    refused_functions = {function for function, _ in refused}
    left = {
        (h.function, h.code)
        for f in report.flags
        for h in f.hazards
        if h.code in select and h.function not in refused_functions
    }
    assert left == set()

    # idempotent: nothing more to do
    code, out, err = _fix("tree", case, write=False)
    assert out == ""
    assert code == (1 if refused else 0), err
    assert _files(tmp_path / "tree") == got


@pytest.mark.parametrize("name", CASES)
def test_fix_diff_prints_the_change_and_writes_nothing(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = _case(name)
    before_dir = CASES_DIR / name / "before"
    shutil.copytree(before_dir, tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    code, out, _ = _fix("tree", case, write=False)
    assert code == 1
    assert _files(tmp_path / "tree") == _files(before_dir)
    before = _files(before_dir)
    expected = {**before, **_files(CASES_DIR / name / "after")}
    want = "".join(
        "".join(
            difflib.unified_diff(
                before[rel].decode().splitlines(keepends=True),
                expected[rel].decode().splitlines(keepends=True),
                f"a/tree/{rel}",
                f"b/tree/{rel}",
            )
        )
        for rel in sorted(before)
        if before[rel] != expected[rel]
    )
    assert out == want


def test_the_golden_cases_cover_every_shape_the_issue_names() -> None:
    assert {
        "contextmanager",
        "asynccontextmanager",
        "class_based",
        "plain_setter",
        "partly_protected",
        "comments",
        "refused",
    } <= set(CASES)


# ------------------------------------------------------------------------------ the files


LEAKY = """\
from contextlib import contextmanager

FLAG = False


@contextmanager
def on():
    global FLAG
    FLAG = True
    yield
    FLAG = False
"""

FIXED = """\
from contextlib import contextmanager

FLAG = False


@contextmanager
def on():
    global FLAG
    prev = FLAG
    FLAG = True
    try:
        yield
    finally:
        FLAG = prev
"""


def _project(tmp_path: Path, source: bytes | str = LEAKY) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    data = source.encode() if isinstance(source, str) else source
    (pkg / "state.py").write_bytes(data)
    return pkg / "state.py"


@pytest.mark.parametrize(
    ("label", "encode"),
    [
        ("crlf line endings", lambda s: s.replace("\n", "\r\n").encode()),
        ("a utf-8 bom", lambda s: b"\xef\xbb\xbf" + s.encode()),
        (
            "a latin-1 cookie",
            lambda s: ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + s).encode("latin-1"),
        ),
        ("tab indentation", lambda s: s.replace("    ", "\t").encode()),
    ],
)
def test_write_keeps_the_encoding_line_endings_and_indentation(
    tmp_path: Path, label: str, encode: object
) -> None:
    assert callable(encode)
    path = _project(tmp_path, encode(LEAKY))
    plan = plan_fixes([str(tmp_path / "pkg")], ["FLAG"])
    assert write_changes(plan) == []
    assert path.read_bytes() == encode(FIXED), label


def test_write_keeps_the_file_mode_and_writes_through_a_symlink(tmp_path: Path) -> None:
    link_dir = tmp_path / "linked"
    link_dir.mkdir()
    (link_dir / "__init__.py").write_text("")
    # the target stays inside the analysed tree (a link out of it is not read),
    # under a name discovery does not take for a module
    real = _project(tmp_path).rename(link_dir / "state.py.real")
    real.chmod(0o640)
    (link_dir / "state.py").symlink_to(real)
    plan = plan_fixes([str(link_dir)], ["FLAG"])
    assert write_changes(plan) == []
    assert (link_dir / "state.py").is_symlink()
    assert real.read_text() == FIXED
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.rglob(".flagtrace-*")] == []


def test_a_file_changed_after_the_plan_is_not_written(tmp_path: Path) -> None:
    path = _project(tmp_path)
    plan = plan_fixes([str(tmp_path / "pkg")], ["FLAG"])
    path.write_text(LEAKY + "\n# edited meanwhile\n")
    errors = write_changes(plan)
    assert len(errors) == 1 and "changed since it was analysed" in errors[0]
    assert path.read_text().endswith("# edited meanwhile\n")


def test_a_file_changed_while_it_was_analysed_is_not_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _project(tmp_path)
    import flagtrace.fix as fix

    real_analyze = fix.analyze

    def analyze_then_edit(*args: object, **kwargs: object) -> object:
        report = real_analyze(*args, **kwargs)  # type: ignore[arg-type]
        path.write_text(LEAKY + "# edited during the analysis\n")
        return report

    monkeypatch.setattr(fix, "analyze", analyze_then_edit)
    plan = plan_fixes([str(tmp_path / "pkg")], ["FLAG"])
    assert plan.changes == ()
    (refused,) = plan.not_fixed
    assert "changed while it was analysed" in refused.reason


def test_exit_codes_and_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)

    def run(*args: str, flags: tuple[str, ...] = ("FLAG",), write: bool = False) -> tuple[int, str]:
        err = io.StringIO()
        code = run_fix(list(args), flags, (), write=write, out=io.StringIO(), err=err)
        return code, err.getvalue()

    assert run("pkg")[0] == 1  # a diff to apply
    code, err = run("pkg", flags=("NOPE",))
    assert code == 2 and "flagtrace: error:" in err and "NOPE" in err
    code, err = run("missing_dir")
    assert code == 2 and "missing_dir" in err
    code, err = run("pkg", flags=())
    assert code == 2 and "no flag to fix" in err and len(err.splitlines()) == 1
    assert run("pkg", write=True)[0] == 0  # everything fixed
    assert run("pkg")[0] == 0  # nothing left


def test_flags_come_from_pyproject_when_not_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _project(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.flagtrace]\nflags = ["FLAG"]\n')
    monkeypatch.chdir(tmp_path)
    code = run_fix(["pkg"], (), write=True, out=io.StringIO(), err=io.StringIO())
    assert code == 0
    assert path.read_text() == FIXED


def test_a_bad_pyproject_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.flagtrace]\nflagz = 1\n")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    assert run_fix(["pkg"], ("FLAG",), out=io.StringIO(), err=err) == 2
    assert len(err.getvalue().splitlines()) == 1 and "flagz" in err.getvalue()


@pytest.mark.parametrize(
    ("given", "codes"),
    [
        ((), ("FT101", "FT102")),
        (("ft102",), ("FT102",)),
        (("FT102,FT101",), ("FT101", "FT102")),
        (("FT101", "FT102"), ("FT101", "FT102")),
    ],
)
def test_select_takes_codes_in_any_case_and_order(
    given: tuple[str, ...], codes: tuple[str, ...]
) -> None:
    assert parse_select(given) == codes


@pytest.mark.parametrize("given", [("FT103",), ("FT101,nope",), (",",)])
def test_select_refuses_what_fix_does_not_repair(given: tuple[str, ...]) -> None:
    with pytest.raises(FixError, match="repairs FT101 and FT102"):
        parse_select(given)
