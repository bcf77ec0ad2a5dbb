"""The rewrites of ``flagtrace fix`` one shape at a time, without the analysis.

The golden cases (``tests/test_fix.py``) go through the analysis; these hand the
rewrite a :class:`Repair` directly, for shapes the analysis rarely produces but
the rewrite must still get right or refuse: a reset in a callee, ``del`` as the
reset, one-line clauses, names already taken, setters nested in setters. Also
the judgement of whether one instance of a class can be entered twice, and that a
repaired setter shows no hazard (a save kept on ``self``; a call in a handler of a
``try`` whose ``finally`` restores).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flagtrace.api import analyze
from flagtrace.fix_class import ClassUses
from flagtrace.fix_rewrite import Repair, rewrite

BOTH = frozenset({"FT101", "FT102"})


def _fix(
    source: str,
    function: str,
    set_line: int,
    *,
    kind: str = "contextmanager",
    codes: frozenset[str] = BOTH,
    flag: str = "FLAG",
    reenter: bool = False,
) -> tuple[str, str | None]:
    source = textwrap.dedent(source)
    repair = Repair(f"pkg.m.{function}", kind, flag, set_line, codes, set_line)
    result = rewrite(source.encode(), [repair], lambda name, returns_self: reenter)
    (outcome,) = result.outcomes
    compile(result.code, "m.py", "exec", dont_inherit=True)  # whatever it gives compiles
    return result.code.decode(), outcome.refused


def test_del_as_the_reset_becomes_a_restore() -> None:
    code, refused = _fix(
        """\
        def f():
            global FLAG
            FLAG = True
            work()
            del FLAG
        """,
        "f",
        3,
        kind="function",
    )
    assert refused is None
    assert code == textwrap.dedent(
        """\
        def f():
            global FLAG
            prev = FLAG
            FLAG = True
            try:
                work()
            finally:
                FLAG = prev
        """
    )


def test_an_annotated_set_through_the_module_in_a_with_block_is_repaired_where_it_is() -> None:
    code, refused = _fix(
        """\
        def f(lock):
            with lock:
                mod.FLAG: bool = True
                work()
                mod.FLAG = False
            return 1
        """,
        "f",
        3,
        kind="function",
    )
    assert refused is None
    assert code == textwrap.dedent(
        """\
        def f(lock):
            with lock:
                prev = mod.FLAG
                mod.FLAG: bool = True
                try:
                    work()
                finally:
                    mod.FLAG = prev
            return 1
        """
    )


def test_the_saved_name_avoids_every_name_the_function_uses() -> None:
    code, refused = _fix(
        """\
        def f(prev):
            global FLAG
            FLAG = True
            def inner():
                return prev_FLAG
            yield inner
            FLAG = False
        """,
        "f",
        3,
    )
    assert refused is None
    assert "prev_FLAG_2 = FLAG" in code and "FLAG = prev_FLAG_2" in code


def test_a_redefined_function_is_found_by_its_hash_qualname() -> None:
    source = """\
    def f():
        pass


    def f():
        global FLAG
        FLAG = True
        yield
        FLAG = False
    """
    code, refused = _fix(source, "f#2", 7)
    assert refused is None
    assert code.startswith("def f():\n    pass\n") and "finally:" in code


@pytest.mark.parametrize(
    ("source", "set_line", "reason"),
    [
        (
            """\
            def f():
                global FLAG
                FLAG = True
                yield
                reset()
            """,
            3,
            "reset elsewhere (in a callee?)",
        ),
        (
            """\
            def f():
                global FLAG
                FLAG = True
                yield
                FLAG = False
                FLAG = None
            """,
            3,
            "written 3 times",
        ),
        (
            """\
            def f():
                global FLAG
                FLAG = True; x = 1
                yield
                FLAG = False
            """,
            3,
            "shares its line",
        ),
        (
            """\
            def f():
                global FLAG
                FLAG = True
                work()
                try: yield
                except KeyError: raise
                FLAG = False
            """,
            3,
            "",  # one-line clauses: wrapped whole in a new try, not refused
        ),
        (
            """\
            def f():
                global FLAG
                FLAG = True
                FLAG += 1
                yield
                FLAG = False
            """,
            3,
            "augmented assignment",
        ),
        (
            """\
            def f():
                global FLAG
                FLAG = True
                for _ in range(2):
                    yield
                FLAG = False
            """,
            3,
            "yields inside a loop",
        ),
        (
            """\
            def f(items):
                global FLAG
                for item in items:
                    FLAG = True
                    if item:
                        continue
                    work(item)
                    FLAG = False
            """,
            4,
            "`continue` between the set and the reset",
        ),
        (
            """\
            def f():
                global FLAG
                FLAG = True
                yield
                FLAG, other = False, 1
            """,
            3,
            "assigned together with other names",
        ),
    ],
)
def test_shapes_that_are_refused_are_left_exactly_as_they_were(
    source: str, set_line: int, reason: str
) -> None:
    code, refused = _fix(source, "f", set_line)
    if not reason:
        assert refused is None
        return
    assert refused is not None and reason in refused
    assert code == textwrap.dedent(source)


def test_a_setter_nested_in_another_setter_waits_for_the_next_run() -> None:
    source = textwrap.dedent(
        """\
        def outer():
            global FLAG
            FLAG = True
            def inner():
                global FLAG
                FLAG = True
                yield
                FLAG = False
            yield inner
            FLAG = False
        """
    )
    repairs = [
        Repair("pkg.m.outer", "contextmanager", "FLAG", 3, BOTH),
        Repair("pkg.m.outer.inner", "contextmanager", "FLAG", 6, BOTH),
    ]
    result = rewrite(source.encode(), repairs, lambda name, returns_self: False)
    reasons = {o.repair.function: o.refused for o in result.outcomes}
    assert reasons["pkg.m.outer"] is None
    assert "run flagtrace fix again" in (reasons["pkg.m.outer.inner"] or "")


def test_a_plain_setter_method_of_a_repaired_class_is_repaired_too() -> None:
    source = textwrap.dedent(
        """\
        class C:
            def __enter__(self):
                global FLAG
                FLAG = True

            def __exit__(self, *exc):
                global FLAG
                FLAG = False

            def run(self, fn):
                global FLAG
                FLAG = True
                fn()
                FLAG = False
        """
    )
    repairs = [
        Repair("pkg.m.C.__enter__", "class", "FLAG", 4, frozenset({"FT102"})),
        Repair("pkg.m.C.run", "function", "FLAG", 12, BOTH),
    ]
    result = rewrite(source.encode(), repairs, lambda name, returns_self: False)
    assert [o.refused for o in result.outcomes] == [None, None]
    code = result.code.decode()
    assert "FLAG = self._prev_FLAG" in code and "finally:\n            FLAG = prev" in code


def test_a_class_whose_instance_may_be_entered_twice_saves_on_a_stack() -> None:
    source = """\
    class C:
        def __enter__(this):
            global FLAG
            FLAG = True
            return this

        def __exit__(this, *exc):
            global FLAG
            FLAG = False
    """
    code, refused = _fix(source, "C.__enter__", 4, kind="class", codes=frozenset({"FT102"}))
    assert refused is None
    assert "this._prev_FLAG = FLAG" in code and "FLAG = this._prev_FLAG" in code
    code, _ = _fix(source, "C.__enter__", 4, kind="class", codes=frozenset({"FT102"}), reenter=True)
    assert 'this.__dict__.setdefault("_prev_FLAG_stack", []).append(FLAG)' in code
    assert "FLAG = this._prev_FLAG_stack.pop()" in code


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("@dataclass(frozen=True)\n", "frozen dataclass"),
        ("@dataclass(slots=True)\n", "__slots__"),
    ],
)
def test_a_class_with_nowhere_to_save_is_refused(extra: str, reason: str) -> None:
    source = extra + textwrap.dedent(
        """\
        class C:
            def __enter__(self):
                global FLAG
                FLAG = True

            def __exit__(self, *exc):
                global FLAG
                FLAG = False
        """
    )
    _, refused = _fix(source, "C.__enter__", 5, kind="class", codes=frozenset({"FT102"}))
    assert refused is not None and reason in refused


def test_a_conditional_reset_in_exit_is_refused() -> None:
    source = """\
    class C:
        def __enter__(self):
            global FLAG
            FLAG = True

        def __exit__(self, *exc):
            global FLAG
            if exc[0] is None:
                FLAG = False
    """
    _, refused = _fix(source, "C.__enter__", 4, kind="class", codes=frozenset({"FT102"}))
    assert refused is not None and "conditional" in refused


@pytest.mark.parametrize(
    ("uses", "returns_self", "reenters"),
    [
        (
            "with C():\n    pass\nasync def g():\n    async with m.C(1):\n        x = 1\n",
            True,
            False,
        ),
        ("from m import C\nwith C() as c:\n    pass\n", False, False),
        ("from m import C\nwith C() as c:\n    pass\n", True, True),
        ("cm = C()\nwith cm:\n    pass\n", False, True),
        ("stack.enter_context(C())\n", False, True),
        ("class D(C):\n    pass\n", False, True),
        ("from m import C as K\nwith K():\n    pass\n", False, True),
        ("def f(x: C) -> None:\n    pass\n", False, True),
        ("this is not python (C\n", False, True),
        ("with Other():\n    pass\n", False, False),
    ],
)
def test_which_uses_of_a_class_let_one_instance_be_entered_twice(
    uses: str, returns_self: bool, reenters: bool
) -> None:
    sources = [b"class C:\n    pass\n", uses.encode()]
    assert ClassUses(lambda: iter(sources)).may_reenter("C", returns_self) is reenters


# ------------------------------------------------------------------------------ engine gaps


def _hazards(tmp_path: Path, source: str, flag: str = "FLAG") -> set[tuple[str, str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text(textwrap.dedent(source))
    report = analyze([str(pkg)], [flag])
    assert report.errors == ()
    return {(h.function.rpartition(".")[2], h.code) for f in report.flags for h in f.hazards}


def test_a_repaired_class_has_no_hazard_left(tmp_path: Path) -> None:
    hazards = _hazards(
        tmp_path,
        """\
        FLAG = False

        class C:
            def __enter__(self):
                global FLAG
                self._prev_FLAG = FLAG
                FLAG = True

            def __exit__(self, *exc):
                global FLAG
                FLAG = self._prev_FLAG
        """,
    )
    assert hazards == set()


def test_a_call_in_a_handler_of_a_try_whose_finally_restores_is_not_a_leak(
    tmp_path: Path,
) -> None:
    hazards = _hazards(
        tmp_path,
        """\
        from contextlib import contextmanager

        FLAG = False

        @contextmanager
        def on():
            global FLAG
            prev = FLAG
            FLAG = True
            try:
                yield
            except Exception:
                report()
                raise
            finally:
                FLAG = prev
        """,
    )
    assert hazards == set()
