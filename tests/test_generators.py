"""Generators run where they are consumed (issue 15, item 4).

Calling a generator function, or a ``@contextmanager`` function, runs none of
its body; the body's reads and writes happen where the object is iterated,
advanced or entered. These tests pin the verdicts of the fixture
``fixtures/flags/generators_consumed`` (each was a *yes* before, from the call
that only builds the object), the writes of a generator that sets the flag, a
setter context manager built by a factory and entered elsewhere, and the call
graph, which keeps the building call as an edge.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flagtrace.api import analyze, build_callgraph, load_project
from flagtrace.model import EntryVerdict, Evidence
from tests.registry import REPO

FIXTURE = REPO / "fixtures" / "flags" / "generators_consumed"

#: entry -> can it observe the flag set? (the comments in pkg/entries.py say why)
EXPECTED = {
    "build_region": False,
    "discard_region": False,
    "enter_built_region": True,
    "enter_region_later": False,
    "iterate_events": True,
    "build_events": False,
    "next_event": True,
    "listed_events": True,
    "comprehended_events": True,
    "relayed_events": True,
    "batch_rows": True,
    "relay_only": False,
}


def verdicts(root: Path, flag: str, entries: list[str]) -> dict[str, EntryVerdict]:
    report = analyze([root], [flag], entries, jobs=1)
    assert not report.errors, report.errors
    (flag_report,) = report.flags
    return {v.entry.rpartition(".")[2]: v for v in flag_report.entries}


def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, source in files.items():
        (pkg / name).write_text(textwrap.dedent(source))
    return pkg


def test_fixture_bodies_run_where_consumed() -> None:
    got = verdicts(
        FIXTURE / "pkg", "_tracing", [f"pkg.entries.{name}" for name in sorted(EXPECTED)]
    )
    assert {name: v.observes_set for name, v in got.items()} == EXPECTED
    for v in got.values():
        # the factory's context manager reaches the ``with`` by value flow (its return value)
        factory = v.entry.endswith("enter_built_region")
        assert v.evidence is (Evidence.INFERRED if factory else Evidence.RESOLVED), v


def test_consuming_hop_is_the_resuming_site() -> None:
    """The witness enters the factory's context manager at the ``with`` (its
    ``__enter__``), not at the factory call, and iterates a generator at the
    ``for``'s ``__next__``."""
    got = verdicts(
        FIXTURE / "pkg",
        "_tracing",
        ["pkg.entries.enter_built_region", "pkg.entries.iterate_events"],
    )
    entered = got["enter_built_region"].witness
    assert [s.text for s in entered if s.callee == "pkg.parts.traced_region"] == [
        "<__enter__> make_region(name)"
    ]
    iterated = got["iterate_events"].witness
    assert [s.text for s in iterated if s.callee == "pkg.parts.events"] == ["<next> events(items)"]


SETTING_GENERATOR = """
    FLAG = False


    def is_on():
        return FLAG


    def switch_on():
        # a generator that sets the flag (and never restores it) when it runs
        global FLAG
        FLAG = True
        yield 1


    def iterated():
        for _ in switch_on():
            pass
        return is_on()


    def advanced():
        steps = switch_on()
        next(steps)
        return is_on()
"""


def test_a_generators_writes_happen_where_it_runs(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, {"state.py": SETTING_GENERATOR})
    got = verdicts(pkg, "FLAG", ["pkg.state.iterated", "pkg.state.advanced"])
    for name in ("iterated", "advanced"):
        assert got[name].observes_set
        assert not got[name].witness[0].before_entry  # set in the entry, where it runs
    (sets,) = [s for s in got["advanced"].witness if s.callee == "pkg.state.switch_on"]
    assert sets.text == "next(steps)"


def test_a_generator_only_built_sets_nothing(tmp_path: Path) -> None:
    """Without a site that runs it, the setting generator leaves the flag alone:
    no entry sees it set, not even as a sticky setter elsewhere."""
    source = SETTING_GENERATOR.split("    def iterated():")[0] + textwrap.indent(
        textwrap.dedent(
            """
            def built_only():
                steps = switch_on()
                return is_on(), steps
            """
        ),
        "    ",
    )
    pkg = write_package(tmp_path, {"state.py": source})
    assert not verdicts(pkg, "FLAG", ["pkg.state.built_only"])["built_only"].observes_set


FACTORY_SETTER = """
    from contextlib import contextmanager

    FLAG = False


    def is_on():
        return FLAG


    @contextmanager
    def switched_on():
        global FLAG
        FLAG = True
        try:
            yield
        finally:
            FLAG = False


    def make_switch():
        return switched_on()


    def entered_through_factory():
        with make_switch():
            return is_on()


    def built_through_factory():
        switch = make_switch()
        return is_on(), switch
"""


def test_a_setter_built_by_a_factory_sets_where_entered(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, {"state.py": FACTORY_SETTER})
    got = verdicts(
        pkg, "FLAG", ["pkg.state.entered_through_factory", "pkg.state.built_through_factory"]
    )
    assert got["entered_through_factory"].observes_set
    assert not got["built_through_factory"].observes_set


HANDED_OFF = """
    import somelib

    FLAG = False


    def is_on():
        return FLAG


    def set_on():
        global FLAG
        FLAG = True


    def reading():
        yield is_on()


    def to_library():
        set_on()
        somelib.consume(reading())  # library code may iterate it: taken to


    def to_unknown(sink):
        set_on()
        sink(reading())  # unresolved: the call is counted, the body placed nowhere
"""


def test_a_generator_handed_off(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, {"state.py": HANDED_OFF})
    got = verdicts(pkg, "FLAG", ["pkg.state.to_library", "pkg.state.to_unknown"])
    assert got["to_library"].observes_set
    unknown = got["to_unknown"]
    assert not unknown.observes_set
    assert unknown.evidence is Evidence.UNRESOLVED_CALLS
    assert unknown.unresolved_count >= 1


@pytest.mark.parametrize(
    ("site_text", "runs"),
    [("events(items)", False), ("<next> events(items)", True), ("<iter> events(items)", False)],
)
def test_call_graph_keeps_the_building_call(site_text: str, runs: bool) -> None:
    """The building call stays an edge (PyCG counts it); only where the body runs
    is it a callee whose body runs (``running_callees``)."""
    graph = build_callgraph(load_project([FIXTURE / "pkg"], jobs=1))
    scope = graph.program.scopes["pkg.entries.iterate_events"]
    (site,) = [i for i, call in enumerate(scope.calls) if call.text == site_text]
    called = {c.qualname for c in graph.site_callees(scope.qualname, site)}
    running = {c.qualname for c in graph.running_callees(scope.qualname, site)}
    assert ("pkg.parts.events" in running) is runs
    if site_text == "events(items)":
        assert "pkg.parts.events" in called
