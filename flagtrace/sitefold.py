"""What a call site's callees do to the flag, kept up to date as their transfers grow.

Why: a by-name call site can have hundreds of callees that may change the flag,
and the interpreter applied the site by joining each callee's transfer in turn,
at every run of every function that reaches the site. While transfers are
computed (``Interpreter._compute_transfers``), a function runs again whenever a
transfer it read grows, so a function with such a site did work in the product
of its callees and their growths: on vLLM 0.34.0 two flags of
``vllm.compilation.backends`` spent 420 and 567 s there.

A ``SiteFold`` holds the join of the callees' transfers instead (four booleans:
may the flag be unset/set after the site, entered unset/set) and, for the
witness, the first callee in the site's order that can leave the flag set. It
is folded once when first asked and updated in constant time per callee whose
transfer grows, and it knows which runs read it, so only those run again, and
only when one of its booleans changed. Transfers only grow (False to True),
so the folded booleans only grow and the first positions only move earlier.
"""

from __future__ import annotations

from collections.abc import Callable

#: a callee's transfer: (may be unset, may be set) after it, per entry state
Transfer = Callable[[str, bool], tuple[bool, bool]]

NOWHERE = 1 << 30  # a position no callee has


class SiteFold:
    """The join of a site's callees' transfers (``transfer(qn, entered_set)``), each
    absorbed with its position among the site's callees."""

    __slots__ = (
        "unset_from_unset",
        "set_from_unset",
        "unset_from_set",
        "set_from_set",
        "first_set_from_unset",
        "first_set_from_set",
        "first_change_from_unset",
        "readers",
    )

    def __init__(self) -> None:
        self.unset_from_unset = False
        self.set_from_unset = False
        self.unset_from_set = False
        self.set_from_set = False
        #: the first position whose callee, entered unset (set), may leave it set
        self.first_set_from_unset = NOWHERE
        self.first_set_from_set = NOWHERE
        #: the first position whose callee, entered unset, may leave it unset or set
        self.first_change_from_unset = NOWHERE
        #: the functions whose transfer runs read this fold
        self.readers: set[str] = set()

    def absorb(self, position: int, qn: str, transfer: Transfer) -> bool:
        """Join ``qn``'s current transfers in; True if a boolean changed."""
        after_unset = transfer(qn, False)
        after_set = transfer(qn, True)
        before = self.bits
        self.unset_from_unset |= after_unset[0]
        self.set_from_unset |= after_unset[1]
        self.unset_from_set |= after_set[0]
        self.set_from_set |= after_set[1]
        if after_unset[1] and position < self.first_set_from_unset:
            self.first_set_from_unset = position
        if after_set[1] and position < self.first_set_from_set:
            self.first_set_from_set = position
        if (after_unset[0] or after_unset[1]) and position < self.first_change_from_unset:
            self.first_change_from_unset = position
        return self.bits != before

    @property
    def bits(self) -> tuple[bool, bool, bool, bool]:
        return (self.unset_from_unset, self.set_from_unset, self.unset_from_set, self.set_from_set)

    def after(self, unset: bool, set_: bool) -> tuple[bool, bool]:
        """(may be unset, may be set) after the site, entered in a state that may
        be unset and may be set."""
        return (
            (unset and self.unset_from_unset) or (set_ and self.unset_from_set),
            (unset and self.set_from_unset) or (set_ and self.set_from_set),
        )

    def first_setting(self, unset: bool, set_: bool) -> int:
        """The first position whose callee may leave the flag set, entered in
        that state (``NOWHERE`` if none)."""
        first = NOWHERE
        if unset:
            first = self.first_set_from_unset
        if set_ and self.first_set_from_set < first:
            first = self.first_set_from_set
        return first
