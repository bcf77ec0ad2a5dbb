"""A function that returns a parameter unchanged returns, at each call, what
that call passes (``Objects._returns_at``), not every argument any call passed.

Why: decorators that hand back what they decorate (``register`` returning
``cls``; transformers' ``requires`` returning ``fun`` for a class) made every
decorated name stand for up to 48 others, so calling one class reached all of
their ``__init__``s. Each test resolves a small package and reads the call
graph (PyCG's format: caller -> callees); the cases where the general answer
must stay (the parameter rebound, not passed, a bound method) are here too.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from flagtrace.api import callgraph_pycg

ROOT = Path(__file__).resolve().parent.parent


def callees(tmp_path: Path, source: str, caller: str) -> set[str]:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "m.py").write_text(textwrap.dedent(source))
    graph = callgraph_pycg([str(package)])
    return set(graph.get(f"pkg.m.{caller}", ()))


def test_a_class_decorator_that_returns_its_argument_keeps_the_class(tmp_path: Path) -> None:
    found = callees(
        tmp_path,
        """
        REGISTRY = []
        def register(cls):
            REGISTRY.append(cls)
            return cls
        @register
        class A:
            def __init__(self): pass
        @register
        class B:
            def __init__(self): pass
        def use():
            A()
        """,
        "use",
    )
    assert found == {"pkg.m.A.__init__"}


def test_an_identity_function_returns_what_each_call_passes(tmp_path: Path) -> None:
    found = callees(
        tmp_path,
        """
        def identity(x, unused=None):
            return x
        def f(): pass
        def g(): pass
        def use():
            identity(g)
            h = identity(x=f)
            h()
        """,
        "use",
    )
    assert "pkg.m.f" in found and "pkg.m.g" not in found


def test_a_function_with_several_returns_adds_the_others(tmp_path: Path) -> None:
    """requires' inner: ``return fun`` for a class, a wrapper otherwise."""
    found = callees(
        tmp_path,
        """
        def requires(*backends):
            def inner(fun):
                if isinstance(fun, type):
                    return fun
                def wrapper(*args):
                    return fun(*args)
                return wrapper
            return inner
        @requires("torch")
        class A:
            def __init__(self): pass
        @requires("torch")
        class B:
            def __init__(self): pass
        def use():
            A()
        """,
        "use",
    )
    assert "pkg.m.A.__init__" in found and "pkg.m.B.__init__" not in found
    assert "pkg.m.requires.inner.wrapper" in found


def test_a_rebound_or_unpassed_parameter_keeps_the_general_answer(tmp_path: Path) -> None:
    """``x`` rebound before the return, or not passed (its default), or assigned
    by a nested function through ``nonlocal``: every value the parameter may
    hold, as before."""
    found = callees(
        tmp_path,
        """
        def f(): pass
        def g(): pass
        def k(): pass
        def rebinds(x):
            if x:
                x = k
            return x
        def defaulted(x=g):
            return x
        def nested(x):
            def swap():
                nonlocal x
                x = k
            swap()
            return x
        def use():
            rebinds(f)()
            defaulted()()
            nested(f)()
        def other():
            defaulted(f)
        """,
        "use",
    )
    assert {"pkg.m.f", "pkg.m.g", "pkg.m.k"} <= found


def test_the_fixture_shows_the_reports(tmp_path: Path) -> None:
    """``fixtures/flags/identity_decorator``: Plain() no longer reaches the
    __init__ of every class ``register`` decorated."""
    graph = callgraph_pycg([str(ROOT / "fixtures" / "flags" / "identity_decorator" / "pkg")])
    assert set(graph["pkg.app.build_plain"]) >= {"pkg.handlers.Plain.__init__"}
    assert "pkg.handlers.Recorder.__init__" not in graph["pkg.app.build_plain"]


def test_a_registry_read_that_a_container_store_needs_first_still_resolves(
    tmp_path: Path,
) -> None:
    """``ITEMS.append(pick("a"))`` is a container store; evaluating it at the start
    of a round asks what ``pick`` returns, which reads the registry ``REG``. That
    answer used to be memoised for the round while the round's registry stores
    were still being collected (none of them), so ``REG[name]()`` in ``pick``
    resolved to nothing in every round. SGLang's
    ``ATTENTION_BACKENDS[backend_str](self)`` lost its 17 backends that way once
    the decorators' results stopped standing for every registered function."""
    found = callees(
        tmp_path,
        """
        REG = {}
        def register(name):
            def deco(fn):
                REG[name] = fn
                return fn
            return deco
        @register("a")
        def make_a(): pass
        @register("b")
        def make_b(): pass
        def pick(name):
            return REG[name]()
        ITEMS = []
        ITEMS.append(pick("a"))
        """,
        "pick",
    )
    assert {"pkg.m.make_a", "pkg.m.make_b"} <= found
