"""Resolve: which functions can each call site reach?

A value-flow analysis over the module summaries, in the spirit of PyCG, but
flow-sensitive for local names (a read evaluates only the assignments that
reach it, ``Scope.reaching``, see ``flagtrace.versions``): every variable,
attribute and call result evaluates to a set of abstract values (``values``:
functions, classes, instances, modules, builtins, external names), and a call
site's callees are what its callee expression evaluates to (``calls``). The
parts:

* ``values``   the value domain;
* ``program``  lookup tables over the summaries;
* ``state``    the memo tables of a round and of the run;
* ``names``    scopes, variables, imports, annotations;
* ``classes``  MRO and class attributes;
* ``objects``  expressions, instance fields, call results, containers;
* ``calls``    callees and argument bindings of a site;
* ``rounds``   the rounds, to a fixpoint;
* ``resolved`` the frozen result the later stages read.

Results do not depend on the process's string-hash seed: wherever the order
of visiting values can change what a cut recursive lookup answers, values are
visited in a fixed order (``values.ordered``).
"""

from __future__ import annotations

from collections.abc import Iterable

from flagtrace.model import ModuleSummary
from flagtrace.resolve.program import Program
from flagtrace.resolve.resolved import ResolvedProgram, ValueQuery, resolve_program
from flagtrace.resolve.rounds import Resolver, SiteKey

__all__ = ["Program", "ResolvedProgram", "Resolver", "SiteKey", "ValueQuery", "resolve"]


def resolve(summaries: Iterable[ModuleSummary]) -> ResolvedProgram:
    """Build the program tables and run the value-flow rounds."""
    resolver = Resolver(Program(summaries))
    resolver.run()
    return resolve_program(resolver)
