"""The registry of finding codes: one stable code per kind of finding, with a
one-line summary and an explanation of the risk and its fix.

It is data, below every stage, so that the engine (which starts each hazard's
message with its rule's summary), the reporters (SARIF rules, concise lines)
and the CLI (``flagtrace explain``) read one table.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagtrace.model import HazardKind

#: The code of the one finding that is not a hazard in a setter: an entry point
#: that can run a read of the flag while the flag is set.
OBSERVES_SET = "FT001"


@dataclass(frozen=True, slots=True)
class HazardRule:
    """A hazard kind's stable code, its one-line summary (the start of every such
    hazard's message) and an explanation of the risk and its fix."""

    code: str
    kind: HazardKind
    summary: str
    explanation: str


RULES: dict[HazardKind, HazardRule] = {
    r.kind: r
    for r in (
        HazardRule(
            "FT101",
            HazardKind.EXCEPTION_LEAK,
            "an exception after the flag is set skips the reset and leaves the flag set",
            "The reset is not in a `finally` (or the flag is set before the `try` that protects "
            "it), so an exception raised in the `with` body, or between the set and the `try`, "
            "leaves the flag set for everything that runs afterwards. Put the reset in `finally`.",
        ),
        HazardRule(
            "FT102",
            HazardKind.NON_REENTRANT,
            "the reset writes a constant instead of restoring the previous value",
            "Nested use clears the flag early: the inner exit resets it while the outer scope "
            "still expects it set. Save the previous value and restore it (`prev = X; X = True; "
            "try: yield; finally: X = prev`).",
        ),
        HazardRule(
            "FT103",
            HazardKind.STICKY,
            "the flag is set and some path returns without resetting it",
            "Code that runs after this function returns sees the flag set, including code that has "
            "nothing to do with the caller. Prefer a context manager that resets in `finally`.",
        ),
        HazardRule(
            "FT104",
            HazardKind.THREAD_UNSAFE,
            "a plain module global is set in code that runs on another thread",
            "The flag is process-wide, so other threads observe it while this thread has it set. "
            "Use `threading.local()` or a `contextvars.ContextVar`.",
        ),
    )
}
