"""A module global rebound inside a function (``global handler; handler = h``)
holds what the function stores, for every reader of the global.

Resolution used to read a global's module-level assignments only: a call
through ``handler()`` missed the function a setter installed, and a global that
only functions assign was not found at all. Checked against a real run of the
same programs (our own generated code, run in a fresh interpreter).
"""

from __future__ import annotations

from pathlib import Path

from flagtrace.api import load_project
from flagtrace.resolve import Program, Resolver
from tests.real_runs import calls_made

_SOURCE = """\
def fa():
    pass


def fb():
    pass


def fc():
    pass


current = fa
other = fb


def switch():
    global current
    current = other


def use_current():
    current()


def set_handler(h):
    global _handler
    _handler = h


def install():
    set_handler(fc)


def run():
    _handler()
"""

#: runs every setter, then every reader
_SET_THEN_READ = """
import pkg.a as a
a.switch()
a.install()
traced()
a.use_current()
a.run()
untraced()
"""


def _callees(root: Path) -> dict[str, set[str]]:
    resolver = Resolver(Program(load_project([str(root)], jobs=1).summaries))
    resolver.run()
    out: dict[str, set[str]] = {}
    for (scope, _), callees in resolver.site_callees.items():
        out.setdefault(scope.rsplit(".", 1)[1], set()).update(
            c.qualname.rsplit(".", 1)[1] for c in callees
        )
    return out


def test_calls_through_a_rebound_global_reach_what_a_real_run_calls(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(_SOURCE)
    observed = calls_made(tmp_path, _SET_THEN_READ)
    assert ("use_current", "fb") in observed
    assert ("run", "fc") in observed

    static = _callees(package)
    assert static["use_current"] == {"fa", "fb"}  # the module's value, and switch()'s
    assert static["run"] == {"fc"}  # only functions bind it; install() passes fc
    for caller, callee in observed:
        if caller in ("use_current", "run"):
            assert callee in static[caller], (caller, callee)
