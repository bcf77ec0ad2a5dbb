"""Equal large answers are one object, and visiting them in order sorts once.

Why it matters: on SGLang 0.5.23 thousands of lookups answer the same set of
~1,900 values (what any model's ``forward`` may return). One object per
distinct set (``RoundMemo.interned``) makes comparing two equal answers an
identity test wherever a round checks a record (``RoundMemo.holds``), lets
``values.ordered`` find the set's order instead of sorting it again, and keeps
one copy in memory. Neither may change what resolution answers: the order
``ordered`` gives is ``sorted``'s, and an interned answer equals the one
computed.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

from flagtrace.api import load_project
from flagtrace.memory import gc_paused
from flagtrace.resolve import Program, Resolver
from flagtrace.resolve.state import INTERN_AT
from flagtrace.resolve.values import CLASS, EXTERNAL, FUNCTION, Value, forget_orders, ordered

FUNCTIONS = INTERN_AT + 8  # more than ``INTERN_AT``, fewer than ``MAX_VALUES`` (48)


def _program(tmp_path: Path) -> Path:
    """Two functions that return the same many functions by different routes, and
    two module variables bound to each one's result, then called."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    defs = "\n".join(f"def f{i}():\n    pass\n" for i in range(FUNCTIONS))
    arms = "\n".join(f"    if n == {i}:\n        out = f{i}" for i in range(FUNCTIONS))
    (package / "mod.py").write_text(
        defs
        + "\n\ndef pick(n):\n    out = None\n"
        + arms
        + "\n    return out\n\n\ndef again(n):\n    chosen = pick(n)\n    return chosen\n\n\n"
        + textwrap.dedent(
            """\
            first = pick(1)
            second = again(2)
            first()
            second()
            """
        )
    )
    return package


def test_equal_large_answers_are_one_object(tmp_path: Path) -> None:
    project = load_project([_program(tmp_path)], jobs=1)
    resolver = Resolver(Program(project.summaries))
    with gc_paused():
        resolver.run()
    # the answers for the reads ``first()`` and ``second()`` (flow-sensitive at
    # module level: by the bindings that reach each read)
    reads = {
        key[1]: answer
        for key, answer in resolver.memo.reaching.items()
        if key[0] == "pkg.mod" and key[1] in ("first", "second")
    }
    first, second = reads["first"], reads["second"]
    assert {(FUNCTION, f"pkg.mod.f{i}", 0) for i in range(FUNCTIONS)} <= first
    assert first == second
    assert first is second  # computed apart, kept once
    # the call sites of both variables call every function, as without interning
    called = {
        c.qualname
        for (qn, _), callees in resolver.site_callees.items()
        if qn == "pkg.mod"
        for c in callees
    }
    assert {f"pkg.mod.f{i}" for i in range(FUNCTIONS)} <= called


def test_ordered_is_sorted_whether_or_not_it_kept_the_order() -> None:
    rng = random.Random(16)
    kinds = (FUNCTION, CLASS, EXTERNAL)
    forget_orders()
    try:
        for size in (0, 1, 2, 63, 64, 65, 500):
            values: frozenset[Value] = frozenset(
                (rng.choice(kinds), f"pkg.m{rng.randrange(10**6)}", rng.randrange(2))
                for _ in range(size)
            )
            expected = sorted(values)
            assert list(ordered(values)) == expected
            assert list(ordered(values)) == expected  # the kept order, asked again
            assert list(ordered(frozenset(values))) == expected  # an equal set, another object
            assert list(ordered(set(values))) == expected  # a mutable set is never kept
    finally:
        forget_orders()
