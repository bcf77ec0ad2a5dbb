"""Flow-sensitive locals (``flagtrace.versions``): which assignments reach a read.

Each test summarises a small source and asks, for the call ``x()`` written in
it, which assignments of ``x`` can reach the read of ``x``: their source text,
``<entry>`` for the value on entry (parameters, imports), or ``ALL`` when the
read is flow-insensitive (every binding of the name). The end-to-end tests run
the call graph on a package, and a twin test checks that every recorded index
really is an assignment of the name it is read as, on every fixture package.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagtrace.api import callgraph_pycg
from flagtrace.model import CallSite, NameExpr, Scope, SourceFile, SubscriptExpr
from flagtrace.resolve.values import key_text
from flagtrace.summarize import summarize_source
from flagtrace.versions import ENTRY

ROOT = Path(__file__).resolve().parent.parent
ALL = frozenset({"ALL"})


def _scopes(source: str) -> dict[str, Scope]:
    summary = summarize_source(SourceFile("m.py", "m", "."), textwrap.dedent(source).encode())
    return {s.qualname: s for s in summary.scopes}


def reaches(
    source: str, call: str = "x()", scope: str | None = None, nth: int = 0
) -> frozenset[str]:
    """What reaches the callee of the ``nth`` call written ``call`` (in ``scope``)."""
    scopes = _scopes(source)
    found: list[tuple[Scope, CallSite]] = [
        (sc, site)
        for qn, sc in scopes.items()
        if scope is None or qn == f"m.{scope}" or (scope == "" and qn == "m")
        for site in sc.calls
        if site.text == call
    ]
    sc, site = found[nth]
    func = site.func
    assert isinstance(func, NameExpr), func
    if func.at < 0:
        return ALL
    reach = sc.reaching[func.at]
    if reach is None:
        return ALL
    return frozenset("<entry>" if i == ENTRY else sc.assignments[i].text for i in reach)


def test_a_later_rebinding_does_not_reach_an_earlier_read() -> None:
    src = """
    def f(): pass
    def g(): pass
    def main():
        x = f
        x()
        x = g
        x()
    """
    assert reaches(src, nth=0) == {"f"}
    assert reaches(src, nth=1) == {"g"}


def test_branches_join() -> None:
    src = """
    def main(c, d):
        x = f
        if c:
            x = g
        elif d:
            x = h
        else:
            pass
        x()
    """
    assert reaches(src) == {"f", "g", "h"}
    src = """
    def main(c):
        if c:
            x = g
        else:
            x = h
        x()
    """
    assert reaches(src) == {"g", "h"}


def test_an_arm_that_returns_does_not_reach_past_the_if() -> None:
    src = """
    def main(c):
        x = f
        if c:
            x = g
            return
        x()
    """
    assert reaches(src) == {"f"}


def test_a_conditional_expression_and_a_short_circuit_walrus_join() -> None:
    src = """
    def main(c):
        x = f
        y = (x := g) if c else 0
        x()
    """
    assert reaches(src) == {"f", "g"}
    src = """
    def main(c):
        x = f
        ok = c and (x := g)
        x()
    """
    assert reaches(src) == {"f", "g"}


def test_loops_reach_a_fixpoint() -> None:
    src = """
    def main(items):
        x = f
        for i in items:
            x()
            x = g
        x()
    """
    assert reaches(src, nth=0) == {"f", "g"}
    assert reaches(src, nth=1) == {"f", "g"}
    src = """
    def main(c):
        x = f
        while c:
            x()
            if c:
                x = g
                continue
            x = h
            break
        x()
    """
    assert reaches(src, nth=0) == {"f", "g"}  # h only leaves by ``break``
    assert reaches(src, nth=1) == {"f", "g", "h"}


def test_nested_loops() -> None:
    src = """
    def main(a, b):
        x = f
        for i in a:
            for j in b:
                x()
            x = g
        x()
    """
    assert reaches(src, nth=0) == {"f", "g"}
    assert reaches(src, nth=1) == {"f", "g"}


def test_a_loop_else_runs_only_without_break() -> None:
    src = """
    def main(items):
        x = f
        for i in items:
            x = g
            break
        else:
            x()
    """
    assert reaches(src) == {"f"}


def test_try_handlers_see_every_binding_of_the_body() -> None:
    src = """
    def main():
        x = f
        try:
            x = g
            x = h
        except ValueError:
            x()
        x()
    """
    assert reaches(src, nth=0) == {"f", "g", "h"}
    assert reaches(src, nth=1) == {"f", "g", "h"}
    src = """
    def main():
        try:
            x = g
        except ValueError:
            x = h
        else:
            x()
        finally:
            x()
    """
    assert reaches(src, nth=0) == {"g"}
    assert reaches(src, nth=1) == ALL  # every binding, and unbound: stored as "all"


def test_with_body_may_be_left_by_a_swallowed_exception() -> None:
    src = """
    def main(cm):
        x = f
        with cm:
            x = g
            x()
            x = h
        x()
    """
    assert reaches(src, nth=0) == {"g"}
    assert reaches(src, nth=1) == {"f", "g", "h"}


def test_comprehension_targets_are_their_own() -> None:
    src = """
    def main(fs):
        x = f
        ys = [x() for x in fs]
        x()
    """
    assert reaches(src, nth=0) == {"fs"}
    assert reaches(src, nth=1) == {"f"}


def test_a_generator_expression_reads_when_consumed() -> None:
    src = """
    def main(items):
        x = f
        gen = (x() for i in items)
        x = g
        list(gen)
    """
    assert reaches(src) == ALL


def test_match_cases_are_alternatives() -> None:
    src = """
    def main(v):
        x = f
        match v:
            case 1:
                x = g
            case [y]:
                x = y
            case _:
                pass
        x()
    """
    assert reaches(src) == {"f", "g", "y"}


def test_a_break_in_a_try_runs_its_finally_first() -> None:
    src = """
    def main(items):
        x = f
        for i in items:
            try:
                x = g
                break
            finally:
                x = h
        x()
    """
    # h from the finally; g too, since the break's state is joined with the finally's
    # end rather than replaced by it (wider than Python, never narrower)
    assert reaches(src) == {"f", "g", "h"}


def test_del_unbinds() -> None:
    src = """
    def main(c):
        x = f
        if c:
            del x
            x = g
        x()
    """
    assert reaches(src) == {"f", "g"}


def test_parameters_and_imports_are_the_entry_value() -> None:
    src = """
    def main(x, c):
        x()
        if c:
            x = g
        x()
        x = h
    """
    assert reaches(src, nth=0) == {"<entry>"}
    assert reaches(src, nth=1) == {"<entry>", "g"}
    src = """
    def main():
        from pkg import x
        x = wrap(x)
        x()
    """
    assert reaches(src) == {"wrap(x)"}


def test_closures_see_every_version() -> None:
    src = """
    def main():
        x = f
        def inner():
            x()
        x = g
        inner()
    """
    assert reaches(src, scope="main.inner") == ALL
    src = """
    def main():
        x = f
        def inner():
            nonlocal x
            x = h
        inner()
        x()
    """
    assert reaches(src, scope="main") == ALL  # a nested function rebinds it


def test_global_names_stay_flow_insensitive() -> None:
    src = """
    x = f
    def rebind():
        global x
        x = g
    rebind()
    x()
    """
    assert reaches(src, scope="") == ALL
    src = """
    x = f
    x()
    x = g
    def later():
        x()
    """
    assert reaches(src, scope="") == {"f"}  # module code, in order
    assert reaches(src, scope="later") == ALL  # a function runs later: every version


def test_a_rebound_decorator_name() -> None:
    src = """
    a = dec1
    a = dec2
    @a
    def func(): pass
    """
    scopes = _scopes(src)
    (site,) = [s for s in scopes["m"].calls if s.text == "@a"]
    assert isinstance(site.func, NameExpr)
    reach = scopes["m"].reaching[site.func.at]
    assert reach is not None
    assert {scopes["m"].assignments[i].text for i in reach} == {"dec2"}


def item(source: str, nth: int = 0) -> frozenset[str]:
    """What reaches the ``nth`` read of ``d["a"]`` called in module code: the
    stores' texts, or ``ALL`` (whatever the container holds)."""
    scope = _scopes(source)["m"]
    sites = [s for s in scope.calls if isinstance(s.func, SubscriptExpr)]
    func = sites[nth].func
    assert isinstance(func, SubscriptExpr)
    reach = scope.reaching[func.at] if func.at >= 0 else None
    if reach is None:
        return ALL
    return frozenset(scope.assignments[i].text for i in reach)


def test_an_item_stored_under_a_literal_key_replaces_what_the_display_held() -> None:
    assert item('d = {"a": f}\nd["a"] = g\nd["a"]()\n') == {"g"}
    assert item("d = {'a': f}\nd['a'] = g\nd[\"a\"]()\n") == {"g"}  # keys by value
    assert item("d = [f, f]\nd[0x1] = g\nd[1]()\n") == {"g"}


def test_an_item_is_weak_again_after_anything_that_may_change_the_container() -> None:
    assert item('d = {}\nd["a"] = g\nlog()\nd["a"]()\n') == ALL  # a call
    assert item('d = {}\ne = d\nd["a"] = g\ne["a"] = h\nd["a"]()\n') == ALL  # an alias
    assert item('d = {}\nd["a"] = g\nd[k] = h\nd["a"]()\n') == ALL  # a key not followed
    assert item('d = {}\nd["a"] = g\nd = other\nd["a"]()\n') == ALL  # another container
    assert item('d = {}\nd["a"] = g\nclass C:\n    x = 1\nd["a"]()\n') == ALL
    src = """
    async def main():
        d = {}
        d["a"] = g
        await task
        d["a"]()
    """
    scope = _scopes(src)["m.main"]
    (site,) = [s for s in scope.calls if isinstance(s.func, SubscriptExpr)]
    assert isinstance(site.func, SubscriptExpr) and scope.reaching[site.func.at] is None


def test_an_item_stored_on_one_arm_only_is_weak() -> None:
    assert item('d = {"a": f}\nif c:\n    d["a"] = g\nd["a"]()\n') == ALL
    src = 'd = {"a": f}\nif c:\n    d["a"] = g\nelse:\n    d["a"] = h\nd["a"]()\n'
    assert item(src) == {"g", "h"}


def test_the_call_graph_follows_a_rebinding_after_use(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text(
        textwrap.dedent(
            """
            def f(): pass
            def g(): pass
            a = f
            b = a
            a = g
            b()
            """
        )
    )
    graph = callgraph_pycg([str(tmp_path)])
    assert graph["main"] == ["main.f"]


def _name_reads(value: object) -> Iterator[NameExpr | SubscriptExpr]:
    if isinstance(value, (NameExpr, SubscriptExpr)):
        yield value
    if isinstance(value, tuple):
        for item in value:
            yield from _name_reads(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _name_reads(getattr(value, f.name))


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (ROOT / "fixtures").rglob("*.py") if "hostile" not in str(p)),
    ids=lambda p: str(p.relative_to(ROOT / "fixtures")),
)
def test_every_reaching_index_is_an_assignment_of_the_name_read(path: Path) -> None:
    """The twin of the resolver's trust in ``Scope.reaching``: the table only
    ever points at assignments of the name, from a read in the same scope."""
    try:
        summary = summarize_source(SourceFile(str(path), "m", str(path.parent)), path.read_bytes())
    except Exception:  # a fixture that is meant not to parse
        pytest.skip("does not parse")
    for scope in summary.scopes:
        parts = (scope.calls, scope.assignments, scope.returns, scope.yields, scope.flow)
        for read in _name_reads(parts):
            if read.at < 0:
                continue
            assert read.at < len(scope.reaching), (scope.qualname, read)
            reach = scope.reaching[read.at]
            for i in reach or ():
                if i == ENTRY:
                    assert isinstance(read, NameExpr)  # an item is never strong from entry
                    continue
                target = scope.assignments[i].target
                if isinstance(read, NameExpr):
                    assert target.name == read.name, (scope.qualname, read)
                else:
                    assert target.key is not None and target.base is not None
                    assert key_text(target.key) == key_text(read.key), (scope.qualname, read)
                    assert isinstance(read.base, NameExpr) and isinstance(target.base, NameExpr)
                    assert target.base.name == read.base.name, (scope.qualname, read)
