"""The flag-state lattice the interpreter computes over, and the shapes of
flow it asks about.

A flag is *unset* (its initial value), *set* (any other value), or either; a
state also remembers where in the current function it became set (the
``SetEvent`` a witness shows as its ``enter`` or ``set`` step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flagtrace.model import (
    Approximation,
    Branch,
    Flow,
    Guard,
    Location,
    StepKind,
    TryBlock,
    WithBlock,
    WriteStep,
    YieldStep,
    walk,
)


@dataclass(frozen=True, slots=True)
class SetEvent:
    """Where the flag became set: entering a context manager, or a setter call."""

    kind: StepKind  # ENTER (a context manager entered) or SET (a setter called)
    function: str
    location: Location
    via: str  # the setter's qualname
    text: str
    #: an ENTER of a context manager taken from a container (``CONTAINER_CONTEXT``)
    approximation: Approximation | None = None


@dataclass(frozen=True, slots=True)
class State:
    unset: bool
    set: bool
    origin: SetEvent | None = None  # set inside the current function (None: inherited)

    @property
    def key(self) -> tuple[bool, bool]:
        return (self.unset, self.set)

    def join(self, other: State | None) -> State:
        if other is None:
            return self
        return State(self.unset or other.unset, self.set or other.set, self.origin or other.origin)


UNSET = State(True, False)
SET = State(False, True)


def join(a: State | None, b: State | None) -> State | None:
    if a is None:
        return b
    return a.join(b)


@dataclass(slots=True)
class Run:
    """What interpreting one function body from one entry state observed."""

    calls: list[tuple[int, State]] = field(default_factory=list)  # (site, state before the call)
    #: (where, accessor or None, state, the read's guards)
    reads: list[tuple[Location, str | None, State, tuple[Guard, ...]]] = field(default_factory=list)
    exit: State | None = None  # normal returns
    raised: State | None = None  # exceptions leaving the function
    yields: State | None = None


def yield_protected(
    flow: tuple[Flow, ...], is_flag_write: Callable[[WriteStep], bool], protected: bool = False
) -> bool:
    """True if every ``yield`` sits in a ``try`` whose ``finally`` or handlers write the flag."""
    result = True
    for step in flow:
        if isinstance(step, YieldStep) and not protected:
            return False
        if isinstance(step, TryBlock):
            writes = any(
                isinstance(s, WriteStep) and is_flag_write(s)
                for block in (step.finalbody, *step.handlers)
                for s in walk(block)
            )
            result &= yield_protected(step.body, is_flag_write, protected or writes)
            for block in (*step.handlers, step.orelse, step.finalbody):
                result &= yield_protected(block, is_flag_write, protected)
        elif isinstance(step, WithBlock):
            result &= yield_protected(step.body, is_flag_write, protected)
        elif isinstance(step, Branch):
            result &= yield_protected(step.body, is_flag_write, protected) and yield_protected(
                step.orelse, is_flag_write, protected
            )
    return result


def catches_around_yield(flow: tuple[Flow, ...], inside: bool = False) -> bool:
    """Does some ``yield`` sit inside a ``try`` with handlers (so the generator
    may catch what the ``with`` body raises)?"""
    for step in flow:
        if isinstance(step, YieldStep) and inside:
            return True
        if isinstance(step, TryBlock):
            if catches_around_yield(step.body, inside or bool(step.handlers)):
                return True
            if any(
                catches_around_yield(b, inside)
                for b in (*step.handlers, step.orelse, step.finalbody)
            ):
                return True
        elif isinstance(step, WithBlock):
            if catches_around_yield(step.body, inside):
                return True
        elif isinstance(step, Branch):
            if catches_around_yield(step.body, inside) or catches_around_yield(step.orelse, inside):
                return True
    return False
