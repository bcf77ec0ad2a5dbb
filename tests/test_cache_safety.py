"""A cache directory written by a stranger cannot run code in flagtrace (issue 13, item 1).

The cache may be restored from an earlier CI job, or shared. Every test here
salts it with pickles that *would* run code when unpickled (``os.system``,
``builtins.exec``, ``subprocess.Popen``... each writing a marker file), first
proving that each one really does so under a plain ``pickle.loads`` in a fresh
interpreter, then checking that flagtrace reads them as misses, rewrites them,
gives the same answer as with a clean cache, and that no marker appears.
Poisoned files replace the entries a real run wrote, so they sit exactly
where the next run looks them up.
"""

from __future__ import annotations

import builtins
import copyreg
import dataclasses
import enum
import functools
import io
import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flagtrace import model
from flagtrace import results as results_module
from flagtrace.cache import (
    ENCODING,
    MAGIC,
    SUMMARY_TYPES,
    LoadableTypes,
    SummaryCache,
    encode_entry,
    entry_header,
    load_entry,
    record_types,
    schema,
)
from flagtrace.cli import main
from flagtrace.discover import discover
from flagtrace.model import CallKind, GuardKind, Location, ModuleSummary, Resolution
from flagtrace.program_store import KIND as PROGRAM_KIND
from flagtrace.program_store import MANIFEST_KIND as PROGRAM_MANIFEST_KIND
from flagtrace.program_store import program_types
from flagtrace.results import KIND as REPORT_KIND
from flagtrace.results import report_types
from tests.registry import REPO

FLAGS = REPO / "fixtures" / "flags"
STORY = FLAGS / "sglang_story"
CHECK_ARGS = [
    "--flag",
    "_in_piecewise_cuda_graph",
    "--entry",
    "pkg.speculative.eagle_worker.EAGLEWorker.verify",
    "--jedi-budget",
    "0",
    "-q",
]


# --------------------------------------------------------------------------
# Payloads: pickles that run code when a plain unpickler reads them


class _Reduce:
    """Pickles as ``fn(*args)``: what an attacker's ``__reduce__`` returns."""

    def __init__(self, fn: object, *args: object) -> None:
        self.fn = fn
        self.args = args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (self.fn, self.args)


def _unicode(text: str) -> bytes:
    """A ``BINUNICODE`` opcode pushing ``text``."""
    data = text.encode()
    return pickle.BINUNICODE + len(data).to_bytes(4, "little") + data


def _short(text: str) -> bytes:
    data = text.encode()
    return pickle.SHORT_BINUNICODE + bytes([len(data)]) + data


def payloads(marker_dir: Path) -> dict[str, bytes]:
    """Name -> a pickle that writes ``marker_dir/<name>`` when plainly unpickled."""

    def marker(name: str) -> str:
        return str(marker_dir / name)

    def touch(name: str) -> str:
        return f"touch {shlex.quote(marker(name))}"

    def write(name: str) -> str:
        return f"open({marker(name)!r}, 'w').close()"

    out = {
        "os.system": pickle.dumps(_Reduce(os.system, touch("os.system")), protocol=5),
        "builtins.exec": pickle.dumps(_Reduce(builtins.exec, write("builtins.exec")), protocol=5),
        "builtins.eval": pickle.dumps(_Reduce(builtins.eval, write("builtins.eval")), protocol=5),
        "subprocess.Popen": pickle.dumps(
            _Reduce(subprocess.Popen, ["touch", marker("subprocess.Popen")]), protocol=5
        ),
        "functools.partial": pickle.dumps(
            _Reduce(functools.partial(os.system, touch("functools.partial"))), protocol=5
        ),
        "copyreg._reconstructor": pickle.dumps(
            _Reduce(
                copyreg._reconstructor,  # type: ignore[attr-defined]
                subprocess.Popen,
                subprocess.Popen,
                ["touch", marker("copyreg._reconstructor")],
            ),
            protocol=5,
        ),
        # protocol 0: GLOBAL names the callable as text
        "GLOBAL os system": b"cos\nsystem\n(V" + touch("GLOBAL os system").encode() + b"\ntR.",
        # protocol 2: GLOBAL, binary argument
        "GLOBAL builtins exec": pickle.PROTO
        + b"\x02cbuiltins\nexec\n"
        + _unicode(write("GLOBAL builtins exec"))
        + pickle.TUPLE1
        + pickle.REDUCE
        + pickle.STOP,
        # protocol 4: STACK_GLOBAL takes module and name from the stack
        "STACK_GLOBAL subprocess Popen": pickle.PROTO
        + b"\x04"
        + _short("subprocess")
        + _short("Popen")
        + pickle.STACK_GLOBAL
        + pickle.MARK
        + _unicode("touch")
        + _unicode(marker("STACK_GLOBAL subprocess Popen"))
        + pickle.LIST
        + pickle.TUPLE1
        + pickle.REDUCE
        + pickle.STOP,
        "STACK_GLOBAL posix system": pickle.PROTO
        + b"\x04"
        + _short("posix")
        + _short("system")
        + pickle.STACK_GLOBAL
        + _unicode(touch("STACK_GLOBAL posix system"))
        + pickle.TUPLE1
        + pickle.REDUCE
        + pickle.STOP,
        # INST and OBJ call what they name, too
        "INST os system": pickle.MARK
        + b"V"
        + touch("INST os system").encode()
        + b"\nios\nsystem\n"
        + pickle.STOP,
        "OBJ posix system": pickle.MARK
        + b"cposix\nsystem\n"
        + _unicode(touch("OBJ posix system"))
        + pickle.OBJ
        + pickle.STOP,
    }
    # A dangerous object inside an allowed record, in a well-formed envelope: the
    # record type is allowed, what it holds is not.
    nested = ModuleSummary(
        "pkg.evil",
        "pkg/evil.py",
        False,
        (_Reduce(os.system, touch("nested in a record")),),  # type: ignore[arg-type]
        1,
    )
    out["nested in a record"] = pickle.dumps(
        (MAGIC, "0" * 64, schema(), nested, None, "0" * 64), protocol=5
    )
    return out


def _wait_for(path: Path, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


@pytest.fixture
def markers(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "markers"
    directory.mkdir()
    yield directory


def test_every_payload_really_runs_code_under_a_plain_unpickler(
    markers: Path, tmp_path: Path
) -> None:
    """The control: without it, a payload that is simply broken would 'pass'."""
    for name, blob in payloads(markers).items():
        blob_file = tmp_path / "blob"
        blob_file.write_bytes(blob)
        code = f"import pickle; pickle.loads(open({str(blob_file)!r}, 'rb').read())"
        subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
        assert _wait_for(markers / name), f"payload {name!r} did not run under pickle.loads"


def test_load_entry_refuses_every_payload_and_runs_none(markers: Path) -> None:
    for kind, types in (("summary", SUMMARY_TYPES), (REPORT_KIND, report_types())):
        for name, blob in payloads(markers).items():
            assert load_entry(kind, entry_header(kind) + blob, types) is None, name
    time.sleep(0.5)  # a Popen that had started would have touched its marker by now
    assert sorted(p.name for p in markers.iterdir()) == []


def test_the_unpickler_is_the_c_one() -> None:
    """Speed: only class lookups leave C (``benchmarks/bench_cache_load.py``)."""
    import _pickle

    from flagtrace.cache import _RecordUnpickler

    assert issubclass(_RecordUnpickler, _pickle.Unpickler)


# --------------------------------------------------------------------------
# What the allowed types can still do


def test_the_allowlist_is_every_dataclass_and_enum_of_the_model() -> None:
    expected = {
        (value.__module__, value.__qualname__)
        for value in vars(model).values()
        if isinstance(value, type)
        and value.__module__ == "flagtrace.model"
        and (dataclasses.is_dataclass(value) or issubclass(value, enum.Enum))
    }
    # and ``itemgetter``: an interned record's reference to its first copy
    assert set(SUMMARY_TYPES.table) == expected | {("operator", "itemgetter")}
    assert ("flagtrace.model", "ModuleSummary") in expected
    assert ("flagtrace.model", "GuardKind") in expected
    assert set(report_types().table) == expected | {
        ("flagtrace.results", "FileState"),
        ("flagtrace.results", "Stored"),
    }


@pytest.mark.parametrize(
    "cls",
    [t for t in report_types().table.values() if dataclasses.is_dataclass(t)],
    ids=lambda t: t.__qualname__,
)
def test_every_allowed_record_only_assigns_fields_when_loaded(cls: type) -> None:
    """What loading can call on a record: its ``__init__`` (REDUCE: the dataclass's,
    or ``model.record``'s, which stores each field through its slot's descriptor),
    ``object.__new__`` (NEWOBJ) and the dataclass ``__setstate__`` (BUILD), which
    only assign fields. A model type with its own ``__post_init__``, ``__new__``
    or ``__setstate__`` would run model code on a stranger's arguments: think
    before allowing it. Frozen and slotted is what makes BUILD on the *class*
    fail instead of setting class attributes."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen and "__slots__" in vars(cls)
    assert "__post_init__" not in vars(cls) and "__new__" not in vars(cls)
    assert vars(cls)["__setstate__"].__qualname__ == "_dataclass_setstate"
    init = vars(cls)["__init__"]
    if "_set0" in init.__code__.co_names:  # model.record's: it calls nothing but slot setters
        slots = [vars(cls)[f.name] for f in dataclasses.fields(cls)]
        setters = {name: init.__globals__[name] for name in init.__code__.co_names}
        assert setters == {f"_set{i}": slot.__set__ for i, slot in enumerate(slots)}
    state_on_class = pickle.PROTO + b"\x02c" + f"{cls.__module__}\n{cls.__qualname__}\n".encode()
    state_on_class += pickle.NONE + pickle.EMPTY_DICT + _short("x") + pickle.NONE + pickle.SETITEM
    state_on_class += pickle.TUPLE2 + pickle.BUILD + pickle.STOP
    assert load_entry("summary", entry_header("summary") + state_on_class, report_types()) is None
    assert "x" not in vars(cls)


def _build_on_member(enum_cls: type[enum.Enum], value: str, attribute: str) -> bytes:
    """A pickle that looks ``value`` up in ``enum_cls`` and sets ``attribute`` on the member."""
    return (
        pickle.PROTO
        + b"\x02c"
        + f"flagtrace.model\n{enum_cls.__qualname__}\n".encode()
        + _short(value)
        + pickle.TUPLE1
        + pickle.REDUCE
        + pickle.EMPTY_DICT
        + _short(attribute)
        + _short("evil")
        + pickle.SETITEM
        + pickle.BUILD
        + pickle.STOP
    )


def _build_on_class(enum_cls: type[enum.Enum], attribute: str) -> bytes:
    """A pickle that sets ``attribute`` on the enum class itself (BUILD's slot state)."""
    return (
        pickle.PROTO
        + b"\x02c"
        + f"flagtrace.model\n{enum_cls.__qualname__}\n".encode()
        + pickle.NONE
        + pickle.EMPTY_DICT
        + _short(attribute)
        + pickle.NONE
        + pickle.SETITEM
        + pickle.TUPLE2
        + pickle.BUILD
        + pickle.STOP
    )


def test_a_pickle_that_rewrites_an_enum_is_a_miss_and_the_enum_is_put_back() -> None:
    member_before = dict(vars(GuardKind.IF))
    class_before = dict(vars(CallKind))
    plain = pickle.Unpickler(io.BytesIO(_build_on_member(GuardKind, "if", "_value_")))
    # the attack is real: the C unpickler lets BUILD rewrite a process-wide member
    assert plain.load() is GuardKind.IF and vars(GuardKind.IF)["_value_"] == "evil"
    vars(GuardKind.IF).update(member_before)  # undo the demonstration by hand
    for blob in (
        _build_on_member(GuardKind, "if", "_value_"),
        _build_on_member(Resolution, "typed", "_name_"),
        _build_on_class(CallKind, "implicit"),
        _build_on_class(CallKind, "_member_map_"),
    ):
        assert load_entry("summary", entry_header("summary") + blob, SUMMARY_TYPES) is None
        assert GuardKind.IF.value == "if" and Resolution.TYPED.name == "TYPED"
        assert CallKind.ENTER.implicit is True and CallKind.CALL.implicit is False
        assert CallKind("call") is CallKind.CALL
    assert dict(vars(GuardKind.IF)) == member_before
    assert dict(vars(CallKind)) == class_before


def test_an_enum_called_with_names_cannot_make_a_new_enum() -> None:
    """REDUCE on an enum class with two arguments is the functional API; it
    refuses to extend an enum that has members, so no class is created."""
    blob = (
        pickle.PROTO
        + b"\x02cflagtrace.model\nGuardKind\n"
        + _short("Evil")
        + _short("A B")
        + pickle.TUPLE2
        + pickle.REDUCE
        + pickle.STOP
    )
    assert load_entry("summary", entry_header("summary") + blob, SUMMARY_TYPES) is None


def test_a_well_formed_entry_round_trips() -> None:
    """The twin of the refusals: the same machinery loads what flagtrace writes."""
    where = Location("pkg/mod.py", 3, 5)
    payload = (MAGIC, (where, GuardKind.ELSE, frozenset({1, 2}), {"k": [None, 1.5, b"x"]}))
    assert load_entry("summary", encode_entry("summary", payload), SUMMARY_TYPES) == payload


@pytest.mark.parametrize(
    "mangle",
    [
        lambda blob: blob[: len(blob) // 2],  # truncated
        lambda blob: blob + b"\x00",  # trailing bytes
        lambda blob: blob[len(entry_header("summary")) :],  # no header: an older flagtrace's
        lambda blob: blob.replace(b"summary", b"report", 1),  # another kind
        lambda blob: blob.replace(f"encoding {ENCODING}".encode(), b"encoding 1", 1),
        lambda blob: blob.replace(f"encoding {ENCODING}".encode(), b"encoding 99", 1),
    ],
    ids=["truncated", "trailing", "headerless", "other-kind", "older-encoding", "newer-encoding"],
)
def test_damaged_foreign_and_other_encodings_are_misses(mangle: Callable[[bytes], bytes]) -> None:
    blob = encode_entry("summary", (MAGIC, Location("a.py", 1)))
    assert load_entry("summary", blob, SUMMARY_TYPES) is not None
    assert load_entry("summary", mangle(blob), SUMMARY_TYPES) is None


# --------------------------------------------------------------------------
# Whole runs on a poisoned cache directory


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*.pkl") if not p.name.startswith(".tmp-"))


def _kind_of(path: Path, cache_dir: Path) -> str:
    if (cache_dir / "programs") in path.parents:
        return PROGRAM_MANIFEST_KIND if path.parent.name == "manifests" else PROGRAM_KIND
    return REPORT_KIND if (cache_dir / "results") in path.parents else "summary"


def _load(kind: str, blob: bytes, types: LoadableTypes) -> object | None:
    """``load_entry`` of an entry of ``kind``: a stored program is two pickles (the
    program, then the memo tables resolution keeps)."""
    return load_entry(kind, blob, types, parts=2 if kind == PROGRAM_KIND else 1)


def _types_of(kind: str) -> LoadableTypes:
    if kind == "summary":
        return SUMMARY_TYPES
    return program_types() if kind == PROGRAM_KIND else report_types()


def _bad_entries(path: Path, kind: str) -> list[bytes]:
    """Truncated, foreign and version-mismatched versions of the real entry at ``path``."""
    real = path.read_bytes()
    other = "summary" if kind == REPORT_KIND else REPORT_KIND
    pickled = real[len(entry_header(kind)) :]
    return [
        real[: len(real) // 2],
        entry_header(other) + pickled,
        real.replace(f"encoding {ENCODING}".encode(), f"encoding {ENCODING - 1}".encode(), 1),
        real.replace(f"encoding {ENCODING}".encode(), f"encoding {ENCODING + 1}".encode(), 1),
        pickled,  # the plain pickle an older flagtrace wrote
        b"",
    ]


def _poison(cache_dir: Path, pickles: list[bytes]) -> list[Path]:
    """Overwrite every entry a run wrote with ``pickles`` in turn, each behind the
    right header for its kind, so that it reaches the unpickler."""
    entries = _entries(cache_dir)
    assert entries
    for i, path in enumerate(entries):
        path.write_bytes(entry_header(_kind_of(path, cache_dir)) + pickles[i % len(pickles)])
    return entries


def _copy_story(tmp_path: Path) -> Path:
    tree = tmp_path / "src"
    shutil.copytree(STORY / "pkg", tree / "pkg")
    return tree


def _run_check(tree: Path, cache_dir: Path, out: Path) -> tuple[int, object]:
    code = main(
        [str(tree), *CHECK_ARGS, "--format", "json", "-o", str(out), "--cache-dir", str(cache_dir)]
    )
    report = json.loads(out.read_text())
    report["stats"].pop("seconds")
    return code, report


def _run_callgraph(tree: Path, cache_dir: Path, out: Path) -> tuple[int, str]:
    args = ["callgraph", str(tree), "--format", "json", "-o", str(out), "-q"]
    code = main([*args, "--jedi-budget", "0", "--cache-dir", str(cache_dir)])
    return code, out.read_text()


def _review_repo(tree: Path) -> Path:
    """``tree`` as a git repository of two commits: the story, then a change to a setter's
    module (so the review analyses both sides, through the cache under test)."""
    from tests.reviewrepo import git

    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "base")
    touched = next(tree.rglob("piecewise_context_manager.py"))
    touched.write_text(touched.read_text() + "\n# a change\n")
    git(tree, "commit", "-q", "-am", "head")
    return tree


def _run_review(tree: Path, cache_dir: Path, out: Path) -> tuple[int, object]:
    args = ["review", "pkg", "--base", "HEAD~1", "--head", "HEAD", *CHECK_ARGS]
    args += ["--format", "json", "-o", str(out), "--cache-dir", str(cache_dir)]
    here = os.getcwd()
    os.chdir(tree)
    try:
        code = main(args)
    finally:
        os.chdir(here)
    report = json.loads(out.read_text())
    report["stats"].pop("seconds")
    return code, report


_RUNS = {"check": _run_check, "callgraph": _run_callgraph, "review": _run_review}


@pytest.mark.parametrize("command", ["check", "callgraph", "review"])
def test_a_poisoned_cache_is_read_as_misses_and_runs_nothing(
    command: str, tmp_path: Path, markers: Path
) -> None:
    tree = _copy_story(tmp_path)
    if command == "review":
        _review_repo(tree)
    cache_dir = tmp_path / "cache"
    out = tmp_path / "out.json"
    run = _RUNS[command]
    clean = run(tree, tmp_path / "clean-cache", out)
    assert run(tree, cache_dir, out) == clean  # a real cache: every entry is where it is read

    evil = list(payloads(markers).values())
    enum_attacks = [
        _build_on_member(GuardKind, "if", "_value_"),
        _build_on_class(CallKind, "implicit"),
    ]
    per_run = len(_entries(cache_dir))
    for start in range(0, len(evil), per_run):  # every payload is read at least once
        poisoned = _poison(cache_dir, evil[start : start + per_run])
        assert run(tree, cache_dir, out) == clean
        # every poisoned entry was looked up, found wanting, and rewritten
        for path in poisoned:
            kind = _kind_of(path, cache_dir)
            types = _types_of(kind)
            assert _load(kind, path.read_bytes(), types) is not None, path
    _poison(cache_dir, enum_attacks)
    assert run(tree, cache_dir, out) == clean
    assert GuardKind.IF.value == "if" and CallKind.CALL.implicit is False
    time.sleep(0.5)  # a Popen that had started would have touched its marker by now
    assert sorted(p.name for p in markers.iterdir()) == []


@pytest.mark.parametrize("command", ["check", "callgraph", "review"])
def test_truncated_foreign_and_other_version_entries_are_misses_and_rewritten(
    command: str, tmp_path: Path
) -> None:
    tree = _copy_story(tmp_path)
    if command == "review":
        _review_repo(tree)
    cache_dir = tmp_path / "cache"
    out = tmp_path / "out.json"
    run = _RUNS[command]
    clean = run(tree, cache_dir, out)
    entries = _entries(cache_dir)
    for i, path in enumerate(entries):
        bad = _bad_entries(path, _kind_of(path, cache_dir))
        path.write_bytes(bad[i % len(bad)])
    assert run(tree, cache_dir, out) == clean
    for path in entries:
        kind = _kind_of(path, cache_dir)
        types = _types_of(kind)
        assert _load(kind, path.read_bytes(), types) is not None, path
    # rewritten: the next run reads every summary from the cache (review keys its files by
    # their paths in the repository, as each side's tree is analysed from its root)
    hits = SummaryCache(cache_dir)
    here = os.getcwd()
    os.chdir(tree if command == "review" else here)
    try:
        sources = discover(["pkg"] if command == "review" else [str(tree)]).files
        for source in sources:
            assert hits.get(source, hits.key(source, Path(source.path).read_bytes())) is not None
    finally:
        os.chdir(here)


# --------------------------------------------------------------------------
# Every type that real entries hold is allowed


class _Recorder(pickle.Unpickler):
    """A trusted unpickler (for entries this test just wrote) that notes every global."""

    def __init__(self, file: io.BytesIO, seen: set[tuple[str, str]]) -> None:
        super().__init__(file)
        self.seen = seen

    def find_class(self, module_name: str, global_name: str, /) -> object:
        self.seen.add((module_name, global_name))
        return super().find_class(module_name, global_name)


def test_every_type_in_the_fixtures_cached_summaries_and_reports_is_allowed(
    tmp_path: Path,
) -> None:
    cache_dir = tmp_path / "cache"
    cases = sorted(p.parent for p in FLAGS.glob("*/case.json"))
    for case in cases:
        args = json.loads((case / "case.json").read_text())["args"]
        out = tmp_path / f"{case.name}.json"
        main(
            [str(case), *args, "-o", str(out), "-q", "--jedi-budget", "0"]
            + ["--cache-dir", str(cache_dir)]
        )
    seen: dict[str, set[tuple[str, str]]] = {
        "summary": set(),
        REPORT_KIND: set(),
        PROGRAM_KIND: set(),
        PROGRAM_MANIFEST_KIND: set(),
    }
    for path in _entries(cache_dir):
        kind = _kind_of(path, cache_dir)
        blob = path.read_bytes()
        types = _types_of(kind)
        assert _load(kind, blob, types) is not None, path
        header = entry_header(kind)
        _Recorder(io.BytesIO(blob[len(header) :]), seen[kind]).load()
    assert seen["summary"] <= set(SUMMARY_TYPES.table)
    assert seen[REPORT_KIND] | seen[PROGRAM_MANIFEST_KIND] <= set(report_types().table)
    assert seen[PROGRAM_KIND] <= set(program_types().table)
    assert ("flagtrace.resolve.rounds", "Resolver") in seen[PROGRAM_KIND]
    # not vacuous: the fixtures exercise summaries, enums, witnesses and manifests
    assert {("flagtrace.model", "ModuleSummary"), ("flagtrace.model", "GuardKind")} <= seen[
        "summary"
    ]
    assert {
        ("flagtrace.model", "AnalysisReport"),
        ("flagtrace.model", "WitnessStep"),
        ("flagtrace.model", "Hazard"),
        ("flagtrace.results", "FileState"),
    } <= seen[REPORT_KIND]
    assert record_types(results_module) == {
        ("flagtrace.results", "FileState"): results_module.FileState,
        ("flagtrace.results", "Stored"): results_module.Stored,
    }
