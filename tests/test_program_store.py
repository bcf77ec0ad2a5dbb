"""Stored resolved programs (``flagtrace.program_store``): a new question on an unchanged
tree skips indexing and resolution and answers exactly what a cold run answers; an edit,
another analysis digest, or a damaged or foreign entry means resolving again."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from flagtrace import api
from flagtrace import program_store as store_module
from flagtrace.cache import SummaryCache, dump_entry, encode_entry, entry_header, load_entry
from flagtrace.cli import main
from flagtrace.model import ModuleSummary
from flagtrace.program_store import KIND, program_types
from flagtrace.prune import Pruning
from flagtrace.resolve import ResolvedProgram, resolve
from flagtrace.resolve.rounds import KEPT_ANSWERS
from flagtrace.resolve.state import RoundMemo, RunMemo
from tests.regen_goldens import CASES, SCAN_CASES, Case, case_roots, normalise
from tests.registry import REPO
from tests.test_cache_safety import _short, payloads

STORY = REPO / "fixtures" / "flags" / "sglang_story"
VERIFY = ["--entry", "pkg.speculative.eagle_worker.EAGLEWorker.verify"]
FIRST = ["--flag", "_in_piecewise_cuda_graph", *VERIFY, "--jedi-budget", "0"]
#: a new question: the same flag, another entry point
DECODE = "pkg.model_executor.model_runner.ModelRunner.forward_decode"
SECOND = ["--flag", "_in_piecewise_cuda_graph", "--entry", DECODE, "--jedi-budget", "0"]


class Resolutions:
    """Counts the resolutions ``analyze`` runs (wraps ``api.resolve_project``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = api.resolve_project

        def counting(project: api.Project) -> ResolvedProgram:
            self.count += 1
            return real(project)

        monkeypatch.setattr(api, "resolve_project", counting)


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> Resolutions:
    return Resolutions(monkeypatch)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(STORY / "pkg", tmp_path / "src" / "pkg")
    return tmp_path / "src"


def check(tree: Path, args: list[str], cache: Path | None, out: Path) -> tuple[int, str]:
    """``flagtrace check . ARGS --format json`` in ``tree``: exit code, report (no time)."""
    here = os.getcwd()
    os.chdir(tree)
    try:
        cache_args = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
        code = main(["check", ".", *args, "--format", "json", "-q", "-o", str(out), *cache_args])
    finally:
        os.chdir(here)
    return code, normalise(out.read_text(encoding="utf-8"))


def stored_entries(cache: Path) -> list[Path]:
    return sorted((cache / "programs").glob("v*/??/*.pkl"))


# --------------------------------------------------------------------------
# A new question reuses the program and answers as a cold run does


def test_a_new_question_skips_resolution_and_matches_a_cold_run(
    tree: Path, tmp_path: Path, resolutions: Resolutions
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    check(tree, FIRST, cache, out)
    assert resolutions.count == 1 and len(stored_entries(cache)) == 1
    code, report = check(tree, SECOND, cache, out)
    assert resolutions.count == 1  # the second question resolved nothing
    assert (code, report) == check(tree, SECOND, None, tmp_path / "cold.json")
    assert [e["entry"] for e in json.loads(report)["flags"][0]["entries"]] == [DECODE]


def test_a_new_question_indexes_nothing(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    api.analyze([str(tree)], ["_in_piecewise_cuda_graph"], cache=SummaryCache(cache), jobs=1)
    indexed: list[object] = []
    reused: list[tuple[int, int]] = []
    report = api.analyze(
        [str(tree)],
        ["_in_piecewise_cuda_graph"],
        [DECODE],
        cache=SummaryCache(cache),
        jobs=1,
        on_result=indexed.append,
        on_reused=lambda files, lines: reused.append((files, lines)),
    )
    files = len(list(tree.rglob("*.py")))
    assert indexed == [] and reused == [(files, report.lines)]


@pytest.mark.parametrize("name", [root.name for root in case_roots()])
def test_every_flag_fixture_answered_from_a_stored_program_matches_its_golden(
    name: str, tmp_path: Path, resolutions: Resolutions
) -> None:
    """Another question first (the same one with ``--include-tests`` toggled: other
    options, the same program), then the case's own: no resolution, the golden."""
    case = Case.load(CASES / name)
    other = [a for a in case.args if a != "--include-tests"]
    if other == list(case.args):
        other.append("--include-tests")
    cache = tmp_path / "cache"
    env_cache = ["--cache-dir", str(cache)]
    here = os.getcwd()
    os.chdir(case.root)
    try:
        main(
            [case.subcommand, ".", *other, "--format", "json", "-q", *env_cache, "-o", "/dev/null"]
        )
        before = resolutions.count
        code = main(
            [case.subcommand, ".", *case.args, "--format", "json", "-q", *env_cache]
            + ["-o", str(tmp_path / "out.json")]
        )
    finally:
        os.chdir(here)
    assert resolutions.count == before, "the stored program was not used"
    assert code == case.exit_code
    golden = case.golden.read_text(encoding="utf-8")
    assert normalise((tmp_path / "out.json").read_text(encoding="utf-8")) == golden


@pytest.mark.parametrize("name", [root.name for root in case_roots(SCAN_CASES)])
def test_a_second_scan_of_every_scan_fixture_resolves_nothing_and_matches_its_golden(
    name: str, tmp_path: Path, resolutions: Resolutions
) -> None:
    case = Case.load(SCAN_CASES / name)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    here = os.getcwd()
    os.chdir(case.root)
    try:
        outs = [tmp_path / "first.json", tmp_path / "second.json"]
        codes = [
            main(["scan", ".", *case.args, "--format", "json", "-q", *cache, "-o", str(out)])
            for out in outs
        ]
    finally:
        os.chdir(here)
    assert resolutions.count == 1, "the second scan resolved the program again"
    assert codes == [case.exit_code] * 2
    golden = case.golden.read_text(encoding="utf-8")
    assert [normalise(out.read_text(encoding="utf-8")) for out in outs] == [golden] * 2


def test_scan_and_check_share_the_stored_program(
    tree: Path, tmp_path: Path, resolutions: Resolutions
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"

    def scan() -> str:
        here = os.getcwd()
        os.chdir(tree)
        try:
            main(["scan", ".", "--format", "json", "-q", "--cache-dir", str(cache), "-o", str(out)])
        finally:
            os.chdir(here)
        return normalise(out.read_text(encoding="utf-8"))

    scanned = scan()
    assert resolutions.count == 1 and len(stored_entries(cache)) == 1
    answered = check(tree, FIRST, cache, out)
    assert resolutions.count == 1  # the check took the program the scan stored
    assert answered == check(tree, FIRST, None, tmp_path / "cold.json")
    assert resolutions.count == 2  # the cold check, run without a cache
    shutil.rmtree(cache / "programs")
    check(tree, SECOND, cache, out)  # stores the program again
    assert resolutions.count == 3
    assert scan() == scanned
    assert resolutions.count == 3  # the scan took the program the check stored


# --------------------------------------------------------------------------
# What invalidates a stored program


def test_an_edit_invalidates_the_stored_program(
    tree: Path, tmp_path: Path, resolutions: Resolutions
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    check(tree, FIRST, cache, out)
    setter = tree / "pkg" / "compilation" / "piecewise_context_manager.py"
    with setter.open("a", encoding="utf-8") as fh:
        fh.write("\n\ndef added_by_the_test():\n    return 1\n")
    result = check(tree, SECOND, cache, out)
    assert resolutions.count == 2
    assert result == check(tree, SECOND, None, tmp_path / "cold.json")
    assert len(stored_entries(cache)) == 2  # the edited program is stored beside the old one


def test_a_comment_keeps_the_stored_program(
    tree: Path, tmp_path: Path, resolutions: Resolutions
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    check(tree, FIRST, cache, out)
    with (tree / "pkg" / "__init__.py").open("a", encoding="utf-8") as fh:
        fh.write("\n# a comment changes no summary\n")
    result = check(tree, SECOND, cache, out)
    assert resolutions.count == 1
    assert result == check(tree, SECOND, None, tmp_path / "cold.json")


def test_another_analysis_digest_invalidates_the_stored_program(
    tree: Path, tmp_path: Path, resolutions: Resolutions, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    check(tree, FIRST, cache, out)
    monkeypatch.setattr(store_module, "analysis_digest", lambda: "an edited resolver")
    result = check(tree, SECOND, cache, out)
    assert resolutions.count == 2
    assert result == check(tree, SECOND, None, tmp_path / "cold.json")


def test_another_format_is_another_directory(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    check(tree, FIRST, cache, tmp_path / "out.json")
    assert [p.relative_to(cache).parts[:2] for p in stored_entries(cache)] == [
        ("programs", f"v{store_module.FORMAT}")
    ]


# --------------------------------------------------------------------------
# Damaged, foreign and hostile entries


def _damaged(real: bytes, key: str, markers: Path) -> dict[str, bytes]:
    header = entry_header(KIND)
    pickled = real[len(header) :]
    hostile = payloads(markers)
    return {
        "truncated": real[: len(real) // 2],
        "empty": b"",
        "no header (a plain pickle)": pickled,
        "a report's header": entry_header("report") + pickled,
        "another key": real.replace(key.encode(), ("0" * len(key)).encode(), 1),
        "not a program": encode_entry(KIND, ("flagtrace-program", key, "a string")),
        "os.system": header + hostile["os.system"],
        "builtins.exec": header + hostile["builtins.exec"],
    }


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "empty",
        "no header (a plain pickle)",
        "a report's header",
        "another key",
        "not a program",
        "os.system",
        "builtins.exec",
    ],
)
def test_a_damaged_or_foreign_program_is_ignored_with_one_line(
    damage: str,
    tree: Path,
    tmp_path: Path,
    resolutions: Resolutions,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    markers = tmp_path / "markers"
    markers.mkdir()
    check(tree, FIRST, cache, out)
    (entry,) = stored_entries(cache)
    entry.write_bytes(_damaged(entry.read_bytes(), entry.stem, markers)[damage])
    capsys.readouterr()
    result = check(tree, SECOND, cache, out)
    err = capsys.readouterr().err
    assert resolutions.count == 2
    assert result == check(tree, SECOND, None, tmp_path / "cold.json")
    lines = err.strip().splitlines()
    if damage != "empty" or lines:
        assert lines == [
            f"flagtrace: warning: stored program {entry} is damaged or not flagtrace's; "
            "ignored, resolving again"
        ]
    assert "Traceback" not in err
    assert list(markers.iterdir()) == []
    # rewritten: the entry loads again
    assert load_entry(KIND, entry.read_bytes(), program_types(), parts=2) is not None


def _build_on_class(module: str, name: str, attribute: str) -> bytes:
    """A pickle that sets ``attribute`` on the class ``module.name`` (BUILD's slot state)."""
    return (
        pickle.PROTO
        + b"\x02c"
        + f"{module}\n{name}\n".encode()
        + pickle.NONE
        + pickle.EMPTY_DICT
        + _short(attribute)
        + pickle.NONE
        + pickle.SETITEM
        + pickle.TUPLE2
        + pickle.BUILD
        + pickle.STOP
    )


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("flagtrace.resolve.rounds", "Resolver"),
        ("flagtrace.resolve.program", "Program"),
        ("flagtrace.resolve.state", "RoundMemo"),
    ],
)
def test_a_pickle_that_rewrites_a_resolver_class_is_a_miss_and_the_class_is_put_back(
    module: str, name: str
) -> None:
    """``BUILD`` on a plain class (no ``__setstate__``) sets class attributes for the
    whole process; the load undoes it and makes the entry a miss."""
    cls = program_types().table[(module, name)]
    before = dict(vars(cls))
    attack = _build_on_class(module, name, "resolve_site")
    # the attack is real: a plain unpickler lets BUILD rewrite the class
    plain = pickle.Unpickler(io.BytesIO(attack)).load()
    assert plain is cls and vars(cls)["resolve_site"] is None
    type.__delattr__(cls, "resolve_site")
    assert load_entry(KIND, entry_header(KIND) + attack, program_types()) is None
    assert dict(vars(cls)) == before


def test_every_global_of_a_stored_program_is_allowed(tree: Path, tmp_path: Path) -> None:
    seen: set[tuple[str, str]] = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module_name: str, global_name: str, /) -> object:
            seen.add((module_name, global_name))
            return super().find_class(module_name, global_name)

    cache = tmp_path / "cache"
    check(tree, FIRST, cache, tmp_path / "out.json")
    (entry,) = stored_entries(cache)
    blob = entry.read_bytes()
    Recorder(io.BytesIO(blob[len(entry_header(KIND)) :])).load()
    assert seen <= set(program_types().table)
    assert {("collections", "defaultdict"), ("flagtrace.resolve.rounds", "Resolver")} <= seen
    # the summaries are not stored again: the loading run takes them from the summary cache
    assert not {("flagtrace.model", "Scope"), ("flagtrace.model", "ModuleSummary")} & seen


def test_cache_info_counts_programs_and_clear_removes_them(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    check(tree, FIRST, cache, tmp_path / "out.json")
    capsys.readouterr()
    assert main(["cache", "info", "--cache-dir", str(cache)]) == 0
    assert "programs:  1" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(cache)]) == 0
    assert not (cache / "programs").exists()


def test_only_the_newest_programs_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "KEEP", 2)
    cache = tmp_path / "cache"
    trees = []
    for i in range(3):
        root = tmp_path / f"src{i}"
        shutil.copytree(STORY / "pkg", root / "pkg")
        (root / "pkg" / "extra.py").write_text(f"def f{i}():\n    return {i}\n")
        trees.append(root)
        check(root, FIRST, cache, tmp_path / "out.json")
    assert len(stored_entries(cache)) == 2


# --------------------------------------------------------------------------
# SGLang: the benchmark's new question, byte for byte


@pytest.mark.slow
def test_sglang_new_question_matches_a_cold_run(tmp_path: Path) -> None:
    from tests.registry import download

    root = download("sglang==0.5.9") / "sglang"
    entry = "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"
    second = "sglang.srt.compilation.piecewise_context_manager._forward_context"
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def run(flag: str, *cache_args: str) -> tuple[int, str, str]:
        out = tmp_path / "out.json"
        done = subprocess.run(
            [sys.executable, "-m", "flagtrace", "check", str(root), "--flag", flag]
            + ["--entry", entry, "--format", "json", "-o", str(out), *cache_args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.returncode, normalise(out.read_text(encoding="utf-8")), done.stderr

    run("_in_piecewise_cuda_graph", "--cache-dir", str(cache))
    assert len(stored_entries(cache)) == 1
    code, reused, err = run(second, "--cache-dir", str(cache))
    counts = re.search(r"([\d,]+) files \(([\d,]+) cached\)", err)
    assert counts is not None and counts.group(1) == counts.group(2), err
    # cold: the same summaries (copied, so nothing is parsed again), no stored program
    summaries_only = tmp_path / "summaries-only"
    summaries_only.mkdir()
    for fmt in cache.glob("v*"):
        shutil.copytree(fmt, summaries_only / fmt.name)
    cold_code, cold, _ = run(second, "--cache-dir", str(summaries_only))
    assert (code, reused) == (cold_code, cold)


# --------------------------------------------------------------------------
# Stored prunings: a new question with the same facts and entries loads one


class Prunings:
    """Counts the prunings computed (``Pruning._compute``), not loaded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = Pruning._compute

        def counting(pruning: Pruning, entries: Sequence[str]) -> None:
            self.count += 1
            real(pruning, entries)

        monkeypatch.setattr(Pruning, "_compute", counting)


@pytest.fixture
def prunings(monkeypatch: pytest.MonkeyPatch) -> Prunings:
    return Prunings(monkeypatch)


def stored_prunings(cache: Path) -> list[Path]:
    return sorted((cache / "programs").glob(f"v*/??/*{store_module.PRUNING_SUFFIX}"))


#: the first question again with an option pruning does not depend on: a new report
SAME_PRUNING = [*FIRST, "--include-tests"]


def test_the_same_facts_and_entries_load_the_stored_pruning(
    tree: Path, tmp_path: Path, prunings: Prunings
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    check(tree, FIRST, cache, out)
    assert prunings.count == 1 and len(stored_prunings(cache)) == 1
    code, report = check(tree, SAME_PRUNING, cache, out)
    assert prunings.count == 1  # loaded, not computed
    assert (code, report) == check(tree, SAME_PRUNING, None, tmp_path / "cold.json")


def test_other_entries_are_another_pruning_and_the_newest_are_kept(
    tree: Path, tmp_path: Path, prunings: Prunings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "KEEP_PRUNINGS", 2)
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    flag = ["--flag", "_in_piecewise_cuda_graph", "--jedi-budget", "0"]
    for i, entries in enumerate(([*VERIFY], ["--entry", DECODE], [*VERIFY, "--entry", DECODE])):
        check(tree, [*flag, *entries], cache, out)
        assert prunings.count == i + 1
    assert len(stored_prunings(cache)) == 2
    # the oldest (verify alone) went: computed again, and stored again
    result = check(tree, [*flag, *VERIFY, "--include-tests"], cache, out)
    assert prunings.count == 4
    assert result == check(tree, [*flag, *VERIFY, "--include-tests"], None, tmp_path / "c.json")


def test_prunings_go_with_their_program(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "KEEP", 1)
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    check(tree, FIRST, cache, out)
    (first,) = stored_prunings(cache)
    with (tree / "pkg" / "__init__.py").open("a", encoding="utf-8") as fh:
        fh.write("\n\ndef added_by_the_test():\n    return 1\n")
    check(tree, FIRST, cache, out)
    (entry,) = stored_entries(cache)
    assert not first.exists()
    assert [p.name.split(".")[0] for p in stored_prunings(cache)] == [entry.stem]


@pytest.mark.parametrize("damage", ["truncated", "another question", "os.system"])
def test_a_damaged_or_foreign_pruning_is_ignored_with_one_line(
    damage: str,
    tree: Path,
    tmp_path: Path,
    prunings: Prunings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    markers = tmp_path / "markers"
    markers.mkdir()
    check(tree, FIRST, cache, out)
    (stored,) = stored_prunings(cache)
    real = stored.read_bytes()
    header = entry_header(store_module.PRUNING_KIND)
    loaded = load_entry(store_module.PRUNING_KIND, real, store_module.pruning_types())
    assert isinstance(loaded, tuple)
    damaged = {
        "truncated": real[: len(real) // 2],
        "another question": encode_entry(
            store_module.PRUNING_KIND, (*loaded[:2], ((), ("pkg.other",)), *loaded[3:])
        ),
        "os.system": header + payloads(markers)["os.system"],
    }
    stored.write_bytes(damaged[damage])
    capsys.readouterr()
    result = check(tree, SAME_PRUNING, cache, out)
    err = capsys.readouterr().err
    assert prunings.count == 2  # computed again
    assert err.strip().splitlines() == [
        f"flagtrace: warning: stored pruning {stored} is damaged or not flagtrace's; pruning again"
    ]
    assert list(markers.iterdir()) == []
    assert result == check(tree, SAME_PRUNING, None, tmp_path / "cold.json")
    # rewritten: it loads again
    assert load_entry(store_module.PRUNING_KIND, stored.read_bytes(), store_module.pruning_types())


def test_pruning_leaves_resolution_s_memo_as_it_found_it(tree: Path) -> None:
    """What pruning asks resolution is forgotten (``ValueQuery.forgetting``): the flag
    stages then answer alike after a computed or a loaded pruning."""
    graph = api.build_callgraph(api.load_project([str(tree)], jobs=1))
    resolver = graph.values._r
    memo = resolver.memo
    sizes = {name: len(getattr(memo, name)) for name in ("variables", "call_results", "returns")}
    pruning = Pruning(graph)
    assert resolver.memo is memo
    assert {name: len(getattr(memo, name)) for name in sizes} == sizes
    again = Pruning(graph, stored=pruning.state())
    assert again.state() == pruning.state()
    assert list(again.graph.nx.edges) == list(pruning.graph.nx.edges)
    assert again.rta_cuts == pruning.rta_cuts


def _registry_stored(tmp_path: Path) -> tuple[Path, Path, tuple[ModuleSummary, ...]]:
    """A check of the registry fixture (its ``BACKENDS[name] = cls`` fills a
    container store) with a cache: the cache directory, its stored program and
    the summaries it was resolved from (from the summary cache, as a run loads them)."""
    registry = tmp_path / "registry"
    shutil.copytree(REPO / "fixtures" / "flags" / "dict_registry" / "pkg", registry / "pkg")
    cache = tmp_path / "cache"
    check(registry, ["--flag", "_capturing", "--jedi-budget", "0"], cache, tmp_path / "out.json")
    (entry,) = stored_entries(cache)
    summaries = api.load_project([registry], cache=SummaryCache(cache)).summaries
    return cache, entry, summaries


def _rewrite(entry: Path, resolved: ResolvedProgram, displays: object, named: object) -> None:
    """Store ``resolved`` in ``entry`` again, with other displays or named state."""
    with resolved.values.program_apart():
        detached = store_module._Detached(
            tuple(resolved.program.modules),
            displays,  # type: ignore[arg-type]
            replace(resolved, program=None),  # type: ignore[arg-type]
        )
        with resolved.values.named_state_apart():
            blob = io.BytesIO()
            dump_entry(KIND, (store_module.MAGIC, entry.stem, detached), blob, then=(named,))
    entry.write_bytes(blob.getvalue())


def test_a_stored_program_carries_only_the_memo_tables_resolution_keeps(tmp_path: Path) -> None:
    """Resolution's last-round memo is dropped before the program is stored but
    for its container stores and ``KEPT_ANSWERS`` (``Resolver.settle``): the flag
    stages' value questions start from the same state in the run that resolved
    and in a run that loads, and a memo answer cut at a recursive lookup cannot
    differ between them. The kept tables (and the parameter values and the run
    memo's named tables) travel as a second pickle and are put back on load."""
    cache, entry, summaries = _registry_stored(tmp_path)
    stored = store_module.ProgramStore(SummaryCache(cache)).get(entry.stem, summaries)
    assert stored is not None
    loaded = stored.values._r
    fresh = resolve(summaries).values._r
    for r in (loaded, fresh):
        for name in RoundMemo.__dataclass_fields__:
            if name == "widen_at":  # a setting, not state
                continue
            value = getattr(r.memo, name)
            assert not value or name in ("container_stores", *KEPT_ANSWERS), name
        assert not r.site_callees and not r.resolved_empty
    for name in ("container_stores", *KEPT_ANSWERS):
        assert getattr(loaded.memo, name) == getattr(fresh.memo, name), name
        assert getattr(loaded.memo, name), name  # BACKENDS[name] = cls, its variables...
    for name in RunMemo.__dataclass_fields__:
        if name != "passthrough":  # code alone decides it: not stored, computed on demand
            assert getattr(loaded.run_memo, name) == getattr(fresh.run_memo, name), name
    assert not loaded.run_memo.passthrough and fresh.run_memo.passthrough
    assert loaded.run_memo.binding_scopes and loaded.run_memo.mro
    assert loaded.param_values == fresh.param_values and loaded.param_values


def test_a_stored_program_without_its_named_state_is_a_miss(tmp_path: Path) -> None:
    """What is stored apart (parameter values, kept memo tables, the run memo's
    named tables) is a second pickle in the entry: an entry whose second is not
    all of that is damaged."""
    cache, entry, summaries = _registry_stored(tmp_path)
    program = store_module.ProgramStore(SummaryCache(cache)).get(entry.stem, summaries)
    assert program is not None
    with program.values.named_state_apart() as named, program.values.program_apart() as displays:
        half = named._replace(memo={"variables": {}})
    for second in (half, named._replace(param_values={}), ["not", "a", "state"]):
        _rewrite(entry, program, displays, second)
        warnings: list[str] = []
        store = store_module.ProgramStore(SummaryCache(cache), warn=warnings.append)
        assert store.get(entry.stem, summaries) is None
        assert len(warnings) == 1 and "damaged or not flagtrace's" in warnings[0]


def test_a_stored_program_finds_the_displays_it_met_in_the_summaries(tmp_path: Path) -> None:
    """The container displays resolution met are stored by origin and found again
    in the summaries, the very objects (memo keys stand for an expression by its
    identity); a display the summaries lack, or summaries of other modules, make
    the entry a miss."""
    cache, entry, summaries = _registry_stored(tmp_path)
    store = store_module.ProgramStore(SummaryCache(cache))
    program = store.get(entry.stem, summaries)
    assert program is not None
    containers = program.values._r.run_memo.containers
    assert containers  # BACKENDS = {} and the registry's other displays
    by_module = {s.module: s for s in summaries}
    for origin, (_, display) in containers.items():
        module, _, number = origin.rpartition(":")
        assert display is by_module[module].containers[int(number) - 1]
    with program.values.named_state_apart() as named, program.values.program_apart() as displays:
        pass
    origin, scope = next(iter(displays.items()))
    module = origin.rpartition(":")[0]
    for wrong in ({**displays, f"{module}:999": scope}, {**displays, origin: 7}):
        _rewrite(entry, program, wrong, named)
        warnings: list[str] = []
        store = store_module.ProgramStore(SummaryCache(cache), warn=warnings.append)
        assert store.get(entry.stem, summaries) is None and len(warnings) == 1
    _rewrite(entry, program, displays, named)
    assert store.get(entry.stem, summaries) is not None
    assert store.get(entry.stem, summaries[1:]) is None
