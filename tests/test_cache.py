"""The persistent summary cache, and what a run says on stderr (progress, summary).

Every test builds real files in ``tmp_path`` and uses a real cache directory;
nothing about the cache is mocked. ``tests/conftest.py`` points
``FLAGTRACE_CACHE_DIR`` at a session temporary directory, so no test (and no
subprocess) touches the user's cache dir.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagtrace.api import Project, build_callgraph, load_project
from flagtrace.cache import (
    ENV_VARIABLE,
    MAGIC,
    SUMMARY_RECORDS,
    SUMMARY_TYPES,
    SummaryCache,
    default_directory,
    encode_entry,
    load_entry,
    schema,
)
from flagtrace.cli import main
from flagtrace.index import SUMMARY_FORMAT, index_file, summary_digest, summary_digests
from flagtrace.model import IndexResult, SourceFile
from flagtrace.progress import RunStatus
from flagtrace.report.callgraph_pycg import pycg
from tests.registry import REPO

STORY = REPO / "fixtures" / "flags" / "sglang_story"

MODULE = '''\
"""Module {i}."""
from pkg import state
from pkg.mod{j} import helper{j}

FLAG_{i} = False


def helper{i}(x):
    if state.enabled and x > {i}:
        return helper{j}(x - 1)
    return x


class Worker{i}:
    def run(self, y):
        with state.switch():
            return self.step(y) + helper{i}(y)

    def step(self, y):
        return [helper{j}(v) for v in range(y)]
'''

STATE = """\
from contextlib import contextmanager

enabled = False


@contextmanager
def switch():
    global enabled
    old = enabled
    enabled = True
    try:
        yield
    finally:
        enabled = old
"""


def make_tree(root: Path, modules: int = 12) -> Path:
    """A package of ``modules`` modules that import and call each other."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The package."""\n')
    (pkg / "state.py").write_text(STATE)
    for i in range(modules):
        (pkg / f"mod{i}.py").write_text(MODULE.format(i=i, j=(i + 1) % modules))
    return pkg


def entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*.pkl") if not p.name.startswith(".tmp-"))


def load(
    paths: list[Path], cache: SummaryCache | None, jobs: int = 1
) -> tuple[Project, list[IndexResult]]:
    seen: list[IndexResult] = []
    project = load_project([str(p) for p in paths], jobs=jobs, cache=cache, on_result=seen.append)
    return project, seen


def reindexed(results: list[IndexResult]) -> list[str]:
    return sorted(Path(r.source.path).name for r in results if not r.cached)


# --------------------------------------------------------------------------
# Hits, misses, invalidation


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_second_run_reads_every_file_from_the_cache(tmp_path: Path, jobs: int) -> None:
    pkg = make_tree(tmp_path / "src")
    cache_dir = tmp_path / "cache"
    cold, _ = load([pkg], SummaryCache(cache_dir), jobs)
    assert cold.cache_hits == 0
    assert len(entries(cache_dir)) == len(cold.files) == 14
    warm, results = load([pkg], SummaryCache(cache_dir), jobs)
    assert warm.cache_hits == len(warm.files) == 14
    assert all(r.cached for r in results)
    assert warm.summaries == cold.summaries
    assert warm.lines == cold.lines


def test_entries_live_under_the_summary_format_and_the_key(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=2)
    cache_dir = tmp_path / "cache"
    cache = SummaryCache(cache_dir)
    load([pkg], cache)
    shared = 0
    for entry in entries(cache_dir):
        assert entry.parent.parent == cache_dir / f"v{SUMMARY_FORMAT}"
        assert entry.parent.name == entry.stem[:2]
        assert len(entry.stem) == 64
        stored = load_entry("summary", entry.read_bytes(), SUMMARY_TYPES)
        assert isinstance(stored, tuple)
        magic, key, stored_schema, summary, diagnostic, digest, shape = stored
        assert (magic, key, stored_schema) == (MAGIC, entry.stem, schema())
        assert summary is not None and summary.path.endswith(".py") and diagnostic is None
        # the digest of the summary as first built (a loaded one shares its
        # equal records, and pickles to other bytes)
        source = SourceFile(summary.path, summary.module, str(tmp_path / "src"), summary.is_package)
        fresh = index_file(source)
        assert fresh.summary is not None
        assert digest == summary_digest(fresh.summary) == fresh.digest
        assert shape == summary_digests(fresh.summary)[1] == fresh.shape
        # what was stored is that summary, each of its small records once
        assert summary == fresh.summary
        small = [r for r in _records(summary) if isinstance(r, SUMMARY_RECORDS)]
        assert len({id(r) for r in small}) == len(set(small))
        shared += len(small) - len(set(small))
    assert shared > 0


def _records(value: object) -> Iterator[object]:
    """Every record reachable from ``value`` (each occurrence)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield value
        for f in dataclasses.fields(value):
            yield from _records(getattr(value, f.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _records(item)


def test_changing_one_file_reindexes_exactly_that_file(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src")
    cache_dir = tmp_path / "cache"
    load([pkg], SummaryCache(cache_dir), jobs=2)
    target = pkg / "mod3.py"
    target.write_text(target.read_text() + "\n\ndef added():\n    return helper3(1)\n")
    project, results = load([pkg], SummaryCache(cache_dir), jobs=2)
    assert reindexed(results) == ["mod3.py"]
    assert project.cache_hits == len(project.files) - 1
    summary = next(s for s in project.summaries if s.module == "pkg.mod3")
    assert "pkg.mod3.added" in {s.qualname for s in summary.scopes}
    # the new version is cached too; the old entry stays (another checkout may want it)
    _, again = load([pkg], SummaryCache(cache_dir))
    assert reindexed(again) == []
    assert len(entries(cache_dir)) == len(project.files) + 1


def test_touching_a_file_without_changing_it_is_still_a_hit(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=3)
    cache_dir = tmp_path / "cache"
    load([pkg], SummaryCache(cache_dir))
    os.utime(pkg / "mod1.py", (1, 1))
    _, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == []


def test_the_same_bytes_under_another_module_name_are_another_entry(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=3)
    cache_dir = tmp_path / "cache"
    load([pkg], SummaryCache(cache_dir))
    (pkg / "copy.py").write_bytes((pkg / "mod1.py").read_bytes())
    project, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == ["copy.py"]
    copy = next(s for s in project.summaries if s.module == "pkg.copy")
    assert copy.path.endswith("copy.py")
    assert all(s.qualname.startswith("pkg.copy") for s in copy.scopes)


def test_files_that_cannot_be_indexed_are_not_cached_and_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = make_tree(tmp_path / "src", modules=2)
    (pkg / "broken.py").write_text("def broken(:\n    pass\n")
    (pkg / "big.py").write_text("x = 1  # " + "padding " * 150_000 + "\n")  # 1.2 MB, one line
    monkeypatch.setenv("FLAGTRACE_MAX_FILE_MB", "1")
    cache_dir = tmp_path / "cache"
    cold, _ = load([pkg], SummaryCache(cache_dir))
    assert [Path(d.path).name for d in cold.diagnostics] == ["big.py", "broken.py"]
    assert len(entries(cache_dir)) == len(cold.files) - 2
    warm, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == ["big.py", "broken.py"]
    assert warm.diagnostics == cold.diagnostics
    # the limit is the environment's, not the file's: with a larger one it is indexed and cached
    monkeypatch.setenv("FLAGTRACE_MAX_FILE_MB", "5")
    _, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == ["big.py", "broken.py"]
    _, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == ["broken.py"]


# --------------------------------------------------------------------------
# The cache never changes an answer


@pytest.mark.parametrize("jobs", [1, 2])
def test_results_are_identical_with_and_without_the_cache(tmp_path: Path, jobs: int) -> None:
    fixture_dirs = [STORY, make_tree(tmp_path / "src")]
    for root in fixture_dirs:
        plain, _ = load([root], None, jobs)
        cache = tmp_path / f"cache-{root.name}"
        cold, _ = load([root], SummaryCache(cache), jobs)
        warm, _ = load([root], SummaryCache(cache), jobs)
        assert warm.cache_hits == len(warm.files)
        assert plain.summaries == cold.summaries == warm.summaries
        assert plain.diagnostics == warm.diagnostics
        graphs = [pycg(build_callgraph(p)) for p in (plain, cold, warm)]
        assert graphs[0] == graphs[1] == graphs[2]
        assert graphs[0]


def test_the_check_report_is_identical_with_and_without_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    args = [str(STORY), "--flag", "_in_piecewise_cuda_graph", "--format", "json", "-q"]
    args += ["--entry", "pkg.speculative.eagle_worker.EAGLEWorker.verify"]
    reports = []
    for extra in (
        ["--no-cache"],
        ["--cache-dir", str(tmp_path / "c")],
        ["--cache-dir", str(tmp_path / "c")],
    ):
        code = main([*args, *extra, "-o", str(tmp_path / "out.json")])
        assert code == 1  # the story leaks the flag
        report = json.loads((tmp_path / "out.json").read_text())
        report["stats"].pop("seconds")
        reports.append(report)
    assert reports[0] == reports[1] == reports[2]


# --------------------------------------------------------------------------
# Bad entries are misses and get rebuilt


def test_corrupt_entries_are_ignored_and_rebuilt(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=4)
    cache_dir = tmp_path / "cache"
    cache = SummaryCache(cache_dir)
    load([pkg], cache)
    by_name = {}
    for source in load_project([str(pkg)]).files:
        key = cache.key(source, Path(source.path).read_bytes())
        by_name[Path(source.path).name] = cache.path_for(key)
    truncated = by_name["mod0.py"]
    truncated.write_bytes(truncated.read_bytes()[:100])
    by_name["mod1.py"].write_bytes(b"\x00garbage, not a pickle\xff" * 10)
    by_name["mod2.py"].write_bytes(encode_entry("summary", {"not": "an entry"}))
    by_name["mod3.py"].write_bytes(b"")
    by_name["state.py"].write_bytes(pickle.dumps({"a plain": "pickle"}, protocol=5))
    project, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == ["mod0.py", "mod1.py", "mod2.py", "mod3.py", "state.py"]
    assert project.diagnostics == ()
    assert project.summaries == load([pkg], None)[0].summaries
    # rebuilt in place: the next run hits everything
    _, again = load([pkg], SummaryCache(cache_dir))
    assert reindexed(again) == []


def test_entries_of_another_version_or_key_are_ignored_and_overwritten(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=2)
    cache_dir = tmp_path / "cache"
    cache = SummaryCache(cache_dir)
    load([pkg], cache)
    files = {Path(f.path).name: f for f in load_project([str(pkg)]).files}
    paths = {n: cache.path_for(cache.key(f, Path(f.path).read_bytes())) for n, f in files.items()}

    def read(name: str) -> tuple[object, ...]:
        entry = load_entry("summary", paths[name].read_bytes(), SUMMARY_TYPES)
        assert isinstance(entry, tuple)
        return entry

    magic, key, _, summary, diagnostic, digest, shape = read("mod0.py")
    foreign = "flagtrace 0.0.1; summary 0; libcst 0.0; cpython 3.0; indexer 0"
    paths["mod0.py"].write_bytes(
        encode_entry("summary", (magic, key, foreign, summary, diagnostic, digest, shape))
    )
    other = read("mod1.py")
    paths["mod1.py"].write_bytes(encode_entry("summary", (MAGIC, "0" * 64, *other[2:])))
    # a summary of another file stored under this key must not be served either
    paths["state.py"].write_bytes(
        encode_entry(
            "summary", (MAGIC, paths["state.py"].stem, schema(), summary, None, digest, shape)
        )
    )

    _, results = load([pkg], SummaryCache(cache_dir))
    assert reindexed(results) == ["mod0.py", "mod1.py", "state.py"]
    assert read("mod0.py")[2] == schema()
    assert read("mod1.py")[1] == paths["mod1.py"].stem


def test_other_summary_formats_are_separate_directories(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    old = cache_dir / "v0" / "ab"
    old.mkdir(parents=True)
    (old / ("ab" + "0" * 62 + ".pkl")).write_bytes(b"old format")
    pkg = make_tree(tmp_path / "src", modules=2)
    project, _ = load([pkg], SummaryCache(cache_dir))
    info = SummaryCache(cache_dir).info()
    assert info.formats == ("v0", f"v{SUMMARY_FORMAT}")
    assert info.entries == len(project.files) + 1


# --------------------------------------------------------------------------
# Concurrency, switches, locations


def test_two_concurrent_runs_both_succeed_and_leave_a_valid_cache(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=60)
    cache_dir = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flagtrace",
                "callgraph",
                str(pkg),
                "--format",
                "pycg",
                "-j",
                "2",
                "--cache-dir",
                str(cache_dir),
                "-o",
                str(tmp_path / f"out{i}.json"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert [
            line for line in err.splitlines() if not line.startswith("flagtrace: 62 files")
        ] == [], err
    assert (tmp_path / "out0.json").read_text() == (tmp_path / "out1.json").read_text()
    assert not [p for p in cache_dir.rglob("*") if p.name.startswith(".tmp-")]
    project, results = load([pkg], SummaryCache(cache_dir))
    assert project.cache_hits == len(project.files) == 62
    for entry in entries(cache_dir):
        stored = load_entry("summary", entry.read_bytes(), SUMMARY_TYPES)
        assert isinstance(stored, tuple) and stored[0] == MAGIC
    import json

    assert json.loads((tmp_path / "out0.json").read_text()) == pycg(build_callgraph(project))


def test_no_cache_neither_reads_nor_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = make_tree(tmp_path / "src", modules=3)
    cache_dir = tmp_path / "cache"
    assert (
        main(["callgraph", str(pkg), "--no-cache", "--cache-dir", str(cache_dir), "-o", os.devnull])
        == 0
    )
    assert not cache_dir.exists()
    assert main(["callgraph", str(pkg), "--cache-dir", str(cache_dir), "-o", os.devnull]) == 0
    assert len(entries(cache_dir)) == 5
    capsys.readouterr()
    assert (
        main(["callgraph", str(pkg), "--no-cache", "--cache-dir", str(cache_dir), "-o", os.devnull])
        == 0
    )
    assert "(0 cached)" in capsys.readouterr().err
    project, _ = load([pkg], SummaryCache(cache_dir, enabled=False))
    assert project.cache_hits == 0


def test_the_environment_variable_chooses_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = tmp_path / "from-env"
    monkeypatch.setenv(ENV_VARIABLE, str(chosen))
    assert default_directory() == chosen
    assert SummaryCache().directory == chosen
    pkg = make_tree(tmp_path / "src", modules=2)
    assert main(["callgraph", str(pkg), "-o", os.devnull]) == 0
    assert len(entries(chosen)) == 4
    # --cache-dir wins over the variable
    flag = tmp_path / "from-flag"
    assert main(["callgraph", str(pkg), "--cache-dir", str(flag), "-o", os.devnull]) == 0
    assert len(entries(flag)) == 4


def test_the_test_session_never_uses_the_user_cache_dir() -> None:
    import platformdirs

    directory = default_directory()
    assert os.environ.get(ENV_VARIABLE)
    assert directory != Path(platformdirs.user_cache_dir("flagtrace", appauthor=False))


def test_cache_info_and_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache_dir = tmp_path / "cache"
    pkg = make_tree(tmp_path / "src", modules=3)
    assert main(["cache", "info", "--cache-dir", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert f"directory: {cache_dir}" in out and "entries:   0" in out and "formats:   none" in out
    load([pkg], SummaryCache(cache_dir))
    keep = cache_dir / "notes.txt"
    keep.write_text("not ours")
    assert main(["cache", "info", "--cache-dir", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert "entries:   5" in out
    assert f"v{SUMMARY_FORMAT} (current)" in out
    size = sum(p.stat().st_size for p in entries(cache_dir))
    assert SummaryCache(cache_dir).info().size == size
    assert main(["cache", "clear", "--cache-dir", str(cache_dir)]) == 0
    assert "removed 5 cache entries" in capsys.readouterr().out
    assert entries(cache_dir) == []
    assert keep.read_text() == "not ours"  # clear only deletes what the cache wrote
    assert SummaryCache(cache_dir).info().entries == 0


def test_an_unwritable_cache_dir_warns_once_and_the_run_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the cache directory should be")
    pkg = make_tree(tmp_path / "src", modules=12)
    plain, _ = load([pkg], None)
    monkeypatch.setenv(ENV_VARIABLE, str(blocker / "cache"))
    for jobs in ("1", "2"):
        assert main(["callgraph", str(pkg), "-j", jobs, "-o", str(tmp_path / "out.json")]) == 0
        err = capsys.readouterr().err
        warnings = [line for line in err.splitlines() if "warning" in line]
        assert len(warnings) == 1, err
        assert warnings[0].startswith("flagtrace: warning: cache directory ")
        assert "running without the cache" in warnings[0]
    project, _ = load([pkg], SummaryCache(blocker / "cache", warn=None), jobs=2)
    assert project.summaries == plain.summaries
    assert blocker.read_text().startswith("a file")


def test_the_cache_object_travels_to_workers_without_its_warning(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path / "c")
    clone = pickle.loads(pickle.dumps(cache))
    assert (clone.directory, clone.enabled, clone.schema) == (cache.directory, True, schema())


# --------------------------------------------------------------------------
# Progress and the summary line


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_and_is_erased(tmp_path: Path) -> None:
    pkg = make_tree(tmp_path / "src", modules=3)
    stream = FakeTerminal()
    status = RunStatus(stream=stream, delay=0)
    assert status.showing
    load_project(
        [str(pkg)],
        cache=SummaryCache(tmp_path / "c"),
        on_start=status.on_start,
        on_result=status.on_result,
    )
    status.close()
    assert not status.showing
    assert "flagtrace: " in stream.getvalue()  # the bar was drawn
    assert (status.files, status.cached, status.errors) == (5, 0, 0)
    assert status.lines > 0
    status.close()  # twice is fine


@pytest.mark.parametrize(
    ("quiet", "stream", "delay"),
    [(True, FakeTerminal(), 0), (False, io.StringIO(), 0), (False, FakeTerminal(), 60)],
    ids=["quiet", "not-a-terminal", "short-run"],
)
def test_progress_stays_silent(
    tmp_path: Path, quiet: bool, stream: io.StringIO, delay: float
) -> None:
    pkg = make_tree(tmp_path / "src", modules=3)
    with RunStatus(quiet, stream=stream, delay=delay) as status:
        load_project([str(pkg)], on_start=status.on_start, on_result=status.on_result)
        assert not status.showing
    assert stream.getvalue() == ""
    assert status.files == 5


def test_the_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = make_tree(tmp_path / "src", modules=3)
    (pkg / "broken.py").write_text("def broken(:\n")
    cache_dir = str(tmp_path / "c")
    for cached in ("0", "5"):  # the broken file is tried again every time
        assert main(["callgraph", str(pkg), "--cache-dir", cache_dir, "-o", os.devnull]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith("flagtrace: error: ")
        assert err[-1].startswith(f"flagtrace: 6 files ({cached} cached), ")
        assert " lines, 1 error, " in err[-1]
    args = [str(STORY), "--flag", "_in_piecewise_cuda_graph", "--cache-dir", cache_dir]
    assert main([*args, "--format", "json", "-o", os.devnull]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and err[0].startswith("flagtrace: 17 files (0 cached), ")
        and " 0 errors, " in err[0]
    )
    assert main([*args, "--format", "json", "-o", os.devnull, "--quiet"]) == 1
    assert capsys.readouterr().err == ""


def test_status_counts_and_formats() -> None:
    clock = iter([0.0, 2.5]).__next__
    status = RunStatus(True, clock=clock)
    status.on_start(2)
    line = status.summary(0)
    assert line == "flagtrace: 0 files (0 cached), 0 lines, 0 errors, 2.5s"


def _hammer(cache_dir: str, rounds: int) -> None:
    """Store the same entries over and over (run in two processes at once)."""
    cache = SummaryCache(cache_dir)
    results = load_project([str(STORY)]).files
    blobs = [(s, Path(s.path).read_bytes()) for s in results]
    from flagtrace.index import index_file

    indexed = [(cache.key(s, data), index_file(s, data)) for s, data in blobs]
    for _ in range(rounds):
        for key, result in indexed:
            assert cache.put(key, result)


def test_concurrent_writers_never_expose_a_partial_entry(tmp_path: Path) -> None:
    import multiprocessing

    cache_dir = str(tmp_path / "cache")
    cache = SummaryCache(cache_dir)
    files = [(s, Path(s.path).read_bytes()) for s in load_project([str(STORY)]).files]
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_hammer, args=(cache_dir, 10)) for _ in range(2)]
    for w in writers:
        w.start()
    reads = hits = 0
    while any(w.is_alive() for w in writers):
        for source, data in files:
            path = cache.path_for(cache.key(source, data))
            if path.exists():
                reads += 1
                hit = cache.get(source, cache.key(source, data))
                assert hit is not None, f"partial or invalid entry {path}"
                hits += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert reads == hits
    assert not [p for p in Path(cache_dir).rglob(".tmp-*")]
    project, _ = load([STORY], cache)
    assert project.cache_hits == len(project.files)
