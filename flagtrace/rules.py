"""The registry of finding codes: one stable code per kind of finding, with a
one-line summary, an explanation of the risk and its fix, and a bad and a fixed
example.

It is data, below every stage, so that the engine (which starts each hazard's
message with its rule's summary), the reporters (SARIF rules, concise lines)
and the CLI (``flagtrace explain``) read one table.

Why examples as whole modules: ``tests/test_rules.py`` runs flagtrace on each
one (``--flag _flag``) and checks that the bad example produces its code and the
fixed one does not, so the documentation cannot drift from the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagtrace.model import HazardKind

#: The code of the one finding that is not a hazard in a setter: an entry point
#: that can run a read of the flag while the flag is set.
OBSERVES_SET = "FT001"

#: The flag every example defines (``flagtrace example.py --flag _flag``).
EXAMPLE_FLAG = "_flag"


#: The fixed form of FT101, FT102 and FT103 alike: save, set, and restore in ``finally``.
_RESTORED_IN_FINALLY = """\
from contextlib import contextmanager

_flag = False


@contextmanager
def capturing():
    global _flag
    prev = _flag
    _flag = True
    try:
        yield
    finally:
        _flag = prev
"""


@dataclass(frozen=True, slots=True)
class Rule:
    """A finding's stable code, its one-line summary (the start of every such
    hazard's message), an explanation of the risk and its fix, and two examples:
    a module where flagtrace reports the code and the same module fixed."""

    code: str
    #: the hazard kind; None for FT001, which is about entries, not setters
    kind: HazardKind | None
    summary: str
    explanation: str
    bad: str
    fixed: str


#: The hazard rules were called this before FT001 joined them.
HazardRule = Rule

_FT001 = Rule(
    OBSERVES_SET,
    None,
    "an entry point can run a read of the flag while the flag is set",
    "A function nobody calls (or an `--entry`) reaches, through calls, code that reads the flag "
    "while a setter up the stack has it set: that code behaves differently depending on who "
    "called it, far from the `with`. Pass the state explicitly (a parameter), or make the "
    "reader independent of the flag.",
    """\
from contextlib import contextmanager

_flag = False


@contextmanager
def capturing():
    global _flag
    prev = _flag
    _flag = True
    try:
        yield
    finally:
        _flag = prev


def kernel(x):
    if _flag:  # far from the `with`: behaves differently under capture
        return 0
    return x


def entry(x):
    with capturing():
        return kernel(x)
""",
    """\
from contextlib import contextmanager

_flag = False


@contextmanager
def capturing():
    global _flag
    prev = _flag
    _flag = True
    try:
        yield
    finally:
        _flag = prev


def kernel(x, capture):
    if capture:  # the caller says so: no hidden state
        return 0
    return x


def entry(x):
    with capturing():
        return kernel(x, capture=True)
""",
)

_HAZARD_RULES: tuple[Rule, ...] = (
    Rule(
        "FT101",
        HazardKind.EXCEPTION_LEAK,
        "an exception after the flag is set skips the reset and leaves the flag set",
        "The reset is not in a `finally` (or the flag is set before the `try` that protects "
        "it), so an exception raised in the `with` body, or between the set and the `try`, "
        "leaves the flag set for everything that runs afterwards. Put the reset in `finally`.",
        """\
from contextlib import contextmanager

_flag = False


@contextmanager
def capturing():
    global _flag
    prev = _flag
    _flag = True
    yield  # an exception in the `with` body never comes back here
    _flag = prev
""",
        _RESTORED_IN_FINALLY,
    ),
    Rule(
        "FT102",
        HazardKind.NON_REENTRANT,
        "the reset writes a constant instead of restoring the previous value",
        "Nested use clears the flag early: the inner exit resets it while the outer scope "
        "still expects it set. Save the previous value and restore it (`prev = X; X = True; "
        "try: yield; finally: X = prev`).",
        """\
from contextlib import contextmanager

_flag = False


@contextmanager
def capturing():
    global _flag
    _flag = True
    try:
        yield
    finally:
        _flag = False  # a nested `with capturing():` clears it for the outer one
""",
        _RESTORED_IN_FINALLY,
    ),
    Rule(
        "FT103",
        HazardKind.STICKY,
        "the flag is set and some path returns without resetting it",
        "Code that runs after this function returns sees the flag set, including code that has "
        "nothing to do with the caller. Prefer a context manager that resets in `finally`.",
        """\
_flag = False


def enable_capture():
    global _flag
    _flag = True  # still set when the caller moves on
""",
        _RESTORED_IN_FINALLY,
    ),
    Rule(
        "FT104",
        HazardKind.THREAD_UNSAFE,
        "a plain module global is set in code that runs on another thread",
        "The flag is process-wide, so other threads observe it while this thread has it set. "
        "Use `threading.local()` or a `contextvars.ContextVar`.",
        """\
import threading
from contextlib import contextmanager

_flag = False


@contextmanager
def capturing():
    global _flag
    prev = _flag
    _flag = True
    try:
        yield
    finally:
        _flag = prev


def work():
    with capturing():  # every other thread sees _flag set meanwhile
        pass


def main():
    threading.Thread(target=work).start()
""",
        """\
import threading
from contextlib import contextmanager
from contextvars import ContextVar

_flag = False
_capturing = ContextVar("capturing", default=False)


@contextmanager
def capturing():
    token = _capturing.set(True)  # each thread has its own value
    try:
        yield
    finally:
        _capturing.reset(token)


def work():
    with capturing():
        pass


def main():
    threading.Thread(target=work).start()
""",
    ),
)

RULES: dict[HazardKind, Rule] = {r.kind: r for r in _HAZARD_RULES if r.kind is not None}

#: Every rule by code, in code order: what ``flagtrace explain`` lists.
BY_CODE: dict[str, Rule] = {
    r.code: r for r in sorted((_FT001, *RULES.values()), key=lambda r: r.code)
}
