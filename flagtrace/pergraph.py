"""What a call graph answers whatever the flag, computed once per graph.

Why: a process that asks about several flags on one resolved program (the
sweep, ``scan``, a script looping over ``flagtrace.api``) computed the entry
points, the program roots' reach and the thread targets again for every flag,
although none of them depends on it: about 3 s of each flag on vLLM 0.34.0,
whose own analysis takes 6 s for most flags. Pruning has its own cache
(``prune.pruning_for``), as each question gets a fresh copy of it.

The answers are kept as long as the graph lives, keyed by what else they depend
on; they must not be changed by their users.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import TypeVar

from flagtrace.callgraph import CallGraph

T = TypeVar("T")

_ANSWERS: weakref.WeakKeyDictionary[CallGraph, dict[Hashable, object]] = weakref.WeakKeyDictionary()


def once(graph: CallGraph, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, the first time ``graph`` is asked ``key``; the same object after."""
    answers = _ANSWERS.setdefault(graph, {})
    if key not in answers:
        answers[key] = compute()
    return answers[key]  # type: ignore[return-value]
