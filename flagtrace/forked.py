"""Independent questions about one built program, answered in forked workers.

Why: ``flagtrace scan`` judges every flag with a setter (233 on vLLM 0.34.0, 144
on SGLang 0.5.9) on the same call graph, one after the other, and each flag's
analysis is independent of the others'. The graph they share is hundreds of MiB
to GiB of Python objects: sending it to a worker would cost more than the work,
but a child made by ``fork`` has it already, copy-on-write. So the parent builds
everything the questions share, forks, and each worker answers questions by
their index and sends back only the answer.

Only where ``fork`` is the platform's own (Linux); elsewhere (macOS, Windows)
the questions are answered in this process, in order. The answers are the same
either way: each question must depend only on what was built before the fork.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import gc
import multiprocessing
import sys
from collections.abc import Callable
from typing import TypeVar, cast

_T = TypeVar("_T")

#: the question being answered by the current pool: set in the parent just before
#: the workers are forked, so each child finds it without it being pickled
_ASKED: Callable[[int], object] | None = None


def forks() -> bool:
    """Whether questions are answered in forked workers here (the platform's own
    start method is ``fork``), or in this process."""
    return sys.platform.startswith("linux")


def answer_all(
    answer: Callable[[int], _T],
    count: int,
    jobs: int,
    stop: Callable[[_T], bool] | None = None,
) -> list[_T]:
    """``[answer(i) for i in range(count)]``, from ``jobs`` forked workers (in this
    process where ``fork`` is not the platform's start method, or with one job).

    Questions are handed out in order, one at a time as workers become free: their
    costs differ by orders of magnitude (one flag's setters reach thousands of
    callers, another's none). With ``stop``, none is handed out after an answer
    ``stop`` holds for comes back: the list is then the answers of the questions
    handed out until then, the first ones (what follows such an answer is the
    caller's to ask again, perhaps of another program).

    A worker that dies (out of memory, a native crash) breaks its pool: the
    questions handed out that it left unanswered are answered here, one after the
    other, so the run gives the same answers, later. An exception raised by a
    question is raised here, as in a serial run."""
    if jobs <= 1 or count <= 1 or not forks():
        out: list[_T] = []
        for i in range(count):
            out.append(answer(i))
            if stop is not None and stop(out[-1]):
                break
        return out
    global _ASKED
    found: dict[int, _T] = {}
    handed = 0
    broken = stopped = False
    # what was built so far goes to the permanent generation (as ``memory.gc_paused``
    # leaves it): a child's collections would otherwise walk, and so copy, every
    # page of the program the parent shares with it
    gc.freeze()
    _ASKED = answer
    try:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(jobs, count), mp_context=context
        ) as pool:
            running: dict[concurrent.futures.Future[object], int] = {}
            try:
                while True:
                    while not stopped and handed < count and len(running) < jobs:
                        running[pool.submit(_answer, handed)] = handed
                        handed += 1
                    if not running:
                        break
                    done, _ = concurrent.futures.wait(
                        running, return_when=concurrent.futures.FIRST_COMPLETED
                    )
                    for future in done:
                        got = found[running.pop(future)] = cast(_T, future.result())
                        stopped = stopped or (stop is not None and stop(got))
            except concurrent.futures.process.BrokenProcessPool:
                broken = True  # what is missing is answered below
    finally:
        _ASKED = None
    out = []
    for i in range(count if broken and not stopped else handed):
        out.append(found[i] if i in found else answer(i))
        if i >= handed and stop is not None and stop(out[-1]):
            break  # asked here after the pool broke: as the pool would have stopped
    return out


def _answer(index: int) -> object:
    asked = _ASKED
    if asked is None:  # only a child forked by ``answer_all`` runs this
        raise RuntimeError("flagtrace.forked: a worker without a question")
    try:
        return asked(index)
    finally:
        # A flag's analysis leaves cyclic garbage (~240k objects on SGLang 0.5.9) that
        # the flag stages do not collect while they run (``memory.gc_deferred``); in a
        # worker a collection walks only what the worker made (what it inherited is
        # frozen), so it is cheap to collect after every question.
        gc.collect()
