"""The cyclic collector around the stages (``flagtrace.memory``).

The flag stages run with the collector paused and must give it back, without
freezing what they leave: a process asking many questions (``scan``, the sweep)
would otherwise keep each question's cyclic garbage for good.
"""

from __future__ import annotations

import gc
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import flagtrace.verdicts as verdicts
from flagtrace.api import analyze_project, build_callgraph, load_project
from flagtrace.discover import discover
from flagtrace.index import _index_chunk, _index_chunk_encoded, index_many
from flagtrace.memory import indexing_worker
from flagtrace.model import SourceFile
from tests.registry import REPO

STORY = REPO / "fixtures" / "flags" / "sglang_story"


def test_the_flag_stages_pause_the_collector_and_give_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = load_project([str(STORY)], jobs=1)
    graph = build_callgraph(project)
    seen: list[bool] = []
    analyse = verdicts.analyse_flag

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return analyse(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(verdicts, "analyse_flag", watched)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    report, _ = analyze_project(project, graph, ["_in_piecewise_cuda_graph"], [])
    assert seen == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # nothing the question made is frozen
    assert report.flags and any(e.observes_set for e in report.flags[0].entries)


SETTER = """\
from contextlib import contextmanager

_flag_{i} = False


@contextmanager
def enable_{i}(level=-1, names=("a", "b"), scale=1e-3):
    global _flag_{i}
    _flag_{i} = names[0] != "a"  # an item by number: libcst's ``literal_eval``
    try:
        yield
    finally:
        _flag_{i} = False
"""


def _sources(root: Path, count: int) -> list[SourceFile]:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(count):
        (pkg / f"m{i}.py").write_text(SETTER.format(i=i))
    return discover([str(pkg)], []).files


def _index_in_worker(
    chunk: list[tuple[SourceFile, bytes | None, str | None]],
) -> tuple[bool, int, int, int]:
    """In an indexing worker: a chunk indexed, then what the collector says."""
    frozen = gc.get_freeze_count()
    encoded = _index_chunk_encoded(chunk)
    return gc.isenabled(), gc.collect(), frozen, len(encoded)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pool forks on Linux")
def test_an_indexing_worker_runs_without_the_collector_and_collects_each_chunk(
    tmp_path: Path,
) -> None:
    sources = _sources(tmp_path, 6)
    chunk = [(s, Path(s.path).read_bytes(), None) for s in sources]
    ctx = multiprocessing.get_context("fork")
    inherited = gc.get_freeze_count()  # what a worker finds frozen already
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=indexing_worker) as pool:
        enabled, left, frozen, size = pool.submit(_index_in_worker, chunk).result()
    assert not enabled  # the automatic runs walked the trees again and again
    assert frozen > inherited  # the rest it inherited is not walked by its collections
    assert left == 0  # the chunk's cyclic garbage was collected before it returned
    assert size > 0
    # the chunk does leave cyclic garbage: without ``collect_chunk`` a worker
    # would keep it, chunk after chunk
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        _index_chunk(chunk)
        assert gc.collect() > 0
    finally:
        if was:
            gc.enable()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pool forks on Linux")
def test_the_pool_indexes_as_this_process_does(tmp_path: Path) -> None:
    sources = _sources(tmp_path, 12)  # 8 files or more go to the pool
    alone = index_many(sources, jobs=1)
    pooled = index_many(sources, jobs=2)
    assert [r.summary for r in pooled] == [r.summary for r in alone]
    assert all(r.summary is not None and r.diagnostic is None for r in pooled)
