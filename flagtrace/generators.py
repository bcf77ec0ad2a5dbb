"""Generators run where they are consumed, not where they are called.

Calling a generator function (``def f(): ... yield ...``), and so calling a
``@contextmanager`` or ``@asynccontextmanager`` function, runs none of its
body: it builds a generator object. The body runs, a piece at a time, where
that object is resumed: iterated (``for``, a comprehension, ``yield from``),
advanced (``next()``, ``.send()``), entered (``with``,
``ExitStack.enter_context``) or handed to library code that does one of these.

Resolution keeps the call of a generator function as an edge of the call graph
(it is a call: PyCG's ground truth and the ``callgraph`` command count it), and
adds the generator function as a callee of each site that resumes the object,
recording which ones it added that way (``ResolvedProgram.resumed``). The flag
stages ask ``runs_body`` which of a site's callees run their body there, so a
function that only builds and returns a context manager, or builds a generator
and discards it, neither reads nor sets the flag at that call.

Where the consumer is out of sight, the choice is the sound one for "can this
run while the flag is set?": a generator handed to a builtin or to library code
is taken to run there (``list(gen())``, ``stack.enter_context(cm())``,
``torch.cat(gens)`` alike), though some such code (``zip``, ``map``,
``itertools.chain``) only wraps it lazily; then the body is placed at the wrap,
not at the later iteration. A generator handed to a call flagtrace cannot
resolve at all runs nowhere: that site is an unresolved call, which every
*never* verdict it could affect already counts and names.
"""

from __future__ import annotations

from collections.abc import Collection

from flagtrace.model import Scope

#: Methods of a generator (or async generator) object that run its body: the
#: iteration protocol's ``__next__``, ``send``/``throw``, and a generator
#: context manager's ``__enter__`` (``contextlib`` advances it to the ``yield``).
RESUMING_METHODS = frozenset(
    {"__next__", "__anext__", "send", "asend", "throw", "athrow", "__enter__", "__aenter__"}
)
#: Builtins that return the generator they are given and run nothing of it.
ITER_BUILTINS = frozenset({"iter", "aiter"})


def runs_body(callee: Scope | None, qualname: str, resumed: Collection[str]) -> bool:
    """Does the callee ``qualname`` (its scope ``callee``, if analysed) run its
    body at a site that resumes the generator functions ``resumed``?

    Every callee that is not a generator function runs where it is called; a
    generator function only where its object is resumed.
    """
    return callee is None or not callee.is_generator or qualname in resumed
