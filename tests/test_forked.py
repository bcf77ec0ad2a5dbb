"""``flagtrace.forked``: questions answered in forked workers give the serial answers.

Run on real forks (Linux, where flagtrace forks): the workers find what the parent
built before forking, a dying worker costs time and not answers, and an error in a
question reaches the caller as it would in one process.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest

from flagtrace.forked import answer_all

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="flagtrace forks only on Linux"
)


@linux_only
def test_answers_come_from_other_processes_in_the_order_of_the_questions() -> None:
    built = {i: i * i for i in range(40)}  # built before the fork: never pickled
    parent = os.getpid()

    def answer(i: int) -> tuple[int, int]:
        return built[i], os.getpid()

    answers = answer_all(answer, 40, jobs=2)
    assert [value for value, _ in answers] == [i * i for i in range(40)]
    workers = {pid for _, pid in answers}
    assert parent not in workers
    assert 1 <= len(workers) <= 2


def test_one_job_or_one_question_is_answered_here() -> None:
    parent = os.getpid()
    assert answer_all(lambda i: (i, os.getpid()), 5, jobs=1) == [(i, parent) for i in range(5)]
    assert answer_all(lambda i: (i, os.getpid()), 1, jobs=2) == [(0, parent)]
    assert answer_all(lambda i: i, 0, jobs=2) == []


@linux_only
def test_a_worker_that_dies_costs_time_not_answers() -> None:
    parent = os.getpid()

    def answer(i: int) -> int:
        if i == 3 and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
        return i + 100

    assert answer_all(answer, 8, jobs=2) == [i + 100 for i in range(8)]


@linux_only
def test_an_error_in_a_question_is_raised_to_the_caller() -> None:
    def answer(i: int) -> int:
        if i == 2:
            raise ValueError(f"question {i} has no answer")
        return i

    with pytest.raises(ValueError, match="question 2 has no answer"):
        answer_all(answer, 6, jobs=2)


@linux_only
def test_no_question_is_handed_out_after_a_stopping_answer() -> None:
    answers = answer_all(lambda i: i, 40, jobs=2, stop=lambda a: a == 5)
    # the answers up to the stopping one, and at most one more that was under way
    assert answers[:6] == [0, 1, 2, 3, 4, 5]
    assert len(answers) <= 7
    assert answers == list(range(len(answers)))


def test_a_stopping_answer_ends_a_serial_run_too() -> None:
    assert answer_all(lambda i: i, 40, jobs=1, stop=lambda a: a == 5) == [0, 1, 2, 3, 4, 5]
