"""The indexer: its cache key covers its own code, and the walk's frame.

The cache key test guards a split like the one that made ``flagtrace.summarize``
out of ``flagtrace.index``: were a module of the summary walk left out of
``index.INDEXER_SOURCES``, an edited walk would read the summaries an older one
wrote, and nothing else would notice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import flagtrace
from flagtrace.index import INDEXER_SOURCES, index_file
from flagtrace.model import Import, ModuleSummary, Scope, SourceFile
from flagtrace.summarize import summarize_source

PACKAGE = Path(flagtrace.__file__).resolve().parent


def _run(code: str, *args: str, pythonpath: Path | None = None) -> str:
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=pythonpath,  # ``python -c`` imports from the working directory first
    )
    return done.stdout


def test_every_module_that_indexing_a_file_runs_is_part_of_the_cache_key(tmp_path: Path) -> None:
    """Index one file in a fresh interpreter and list the flagtrace modules it loaded."""
    source = tmp_path / "m.py"
    source.write_text("import os\n\nX = 1\n\n\ndef f():\n    return os.getcwd()\n")
    loaded = _run(
        """
        import sys
        from flagtrace.index import index_file
        from flagtrace.model import SourceFile
        result = index_file(SourceFile(sys.argv[1], "m", sys.argv[2]))
        assert result.summary is not None, result.diagnostic
        print(" ".join(m for m in sys.modules if m.startswith("flagtrace.")))
        """,
        str(source),
        str(tmp_path),
    ).split()
    files = {name.split(".", 1)[1].replace(".", "/") + ".py" for name in loaded}
    assert "summarize.py" in files
    assert files <= set(INDEXER_SOURCES), sorted(files - set(INDEXER_SOURCES))


def test_an_edit_to_any_module_of_the_walk_changes_the_cache_schema(tmp_path: Path) -> None:
    """Edit each indexer source in a copy of the package: each edit changes ``schema()``
    (and with it every summary key), the untouched copy does not."""
    shutil.copytree(PACKAGE, tmp_path / "flagtrace", ignore=shutil.ignore_patterns("__pycache__"))
    out = _run(
        """
        import sys
        from pathlib import Path
        from flagtrace.cache import schema
        from flagtrace.index import INDEXER_SOURCES
        package = Path(sys.argv[1]) / "flagtrace"
        print("-", schema())
        for name in INDEXER_SOURCES:
            path = package / name
            original = path.read_bytes()
            path.write_bytes(original + b"# an edit\\n")
            schema.cache_clear()
            print(name, schema())
            path.write_bytes(original)
        schema.cache_clear()
        print("-", schema())
        """,
        str(tmp_path),
        pythonpath=tmp_path,
    )
    rows = [line.split(" ", 1) for line in out.splitlines()]
    before, after = rows[0][1], rows[-1][1]
    assert before == after
    edited = {name: key for name, key in rows[1:-1]}
    assert set(edited) == set(INDEXER_SOURCES) and "summarize.py" in edited
    assert all(key != before for key in edited.values()), edited


def _summary(tmp_path: Path, code: str) -> ModuleSummary:
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(code))
    result = index_file(SourceFile(str(path), "m", str(tmp_path)))
    assert result.summary is not None, result.diagnostic
    return result.summary


def _scope(summary: ModuleSummary, qualname: str) -> Scope:
    return next(s for s in summary.scopes if s.qualname == qualname)


def _imports(summary: ModuleSummary, qualname: str) -> dict[str, Import]:
    return {i.alias: i for i in _scope(summary, qualname).imports}


def test_a_class_body_keeps_the_import_context_a_function_body_does_not(tmp_path: Path) -> None:
    """A class body runs where it is written; a function body runs when called."""
    summary = _summary(
        tmp_path,
        """
        from typing import TYPE_CHECKING
        try:
            class A:
                import fast
            def f():
                import fast
        except ImportError:
            pass
        if TYPE_CHECKING:
            class B:
                import types_only
            def g():
                import types_only
        """,
    )
    assert _imports(summary, "m.A")["fast"].guarded
    assert not _imports(summary, "m.f")["fast"].guarded
    assert _imports(summary, "m.B")["types_only"].type_checking
    assert not _imports(summary, "m.g")["types_only"].type_checking


def test_guards_and_with_items_stop_at_the_scope_they_belong_to(tmp_path: Path) -> None:
    summary = _summary(
        tmp_path,
        """
        if ready:
            with lock:
                def f():
                    if inner:
                        call_in_f()
                class C:
                    call_in_c()
                call_at_top()
        after = lambda: call_in_lambda()
        call_after()
        """,
    )
    sites = {c.text: c for s in summary.scopes for c in s.calls if c.text.startswith("call_")}
    assert [g.text for g in sites["call_in_f()"].guards] == ["inner"]
    assert sites["call_in_f()"].with_items == ()
    assert sites["call_in_c()"].guards == () and sites["call_in_c()"].with_items == ()
    assert [g.text for g in sites["call_at_top()"].guards] == ["ready"]
    assert sites["call_at_top()"].with_items == ("lock",)
    assert sites["call_in_lambda()"].guards == ()
    assert sites["call_after()"].guards == () and sites["call_after()"].with_items == ()


def test_a_walk_that_fails_leaves_no_frame_behind() -> None:
    """The frame comes back on every path out of a scope, also when the walk raises."""
    import libcst as cst

    from flagtrace.expressions import ExpressionWalker
    from flagtrace.model import Location, ScopeKind
    from flagtrace.positions import SourceSpans
    from flagtrace.scopes import Frame, ScopeBuilder

    top = ScopeBuilder("m", ScopeKind.MODULE, "m", Location("m.py", 1), None)
    inner = ScopeBuilder("m.f", ScopeKind.FUNCTION, "f", Location("m.py", 2), top)
    walker = ExpressionWalker(
        SourceFile("m.py", "m", "."), SourceSpans(cst.parse_module(b""), "m.py")
    )
    walker.frame = outer = Frame(top)
    with pytest.raises(RuntimeError), walker.within(outer.function(inner)):
        assert walker.scope is inner
        raise RuntimeError("a bug in the walk")
    assert walker.frame is outer


# Known gaps (issue 15), kept visible: each test says what the summary should
# hold and fails today; strict, so fixing the gap flips it and it must be unmarked.


@pytest.mark.xfail(strict=True, reason="issue 15: one-line suites lose their small statements")
def test_statements_of_a_one_line_suite_are_summarised(tmp_path: Path) -> None:
    summary = _summary(
        tmp_path,
        """
        _flag = False
        def enable(): global _flag; _flag = True
        def get(): return _flag
        """,
    )
    assert _scope(summary, "m.enable").globals_declared == ("_flag",)
    assert _scope(summary, "m.get").returns


@pytest.mark.xfail(strict=True, reason="issue 15: operator operands' values are dropped")
def test_values_flow_through_sequence_concatenation(tmp_path: Path) -> None:
    summary = summarize_source(
        SourceFile("m.py", "m", "."), b"def a(): pass\nhandlers = [a] + []\n"
    )
    handlers = next(a for a in summary.module_scope.assignments if a.target.name == "handlers")
    assert getattr(handlers.value, "parts", ())


@pytest.mark.xfail(strict=True, reason="issue 15: some string forms are not walked")
def test_calls_inside_every_kind_of_string_are_recorded(tmp_path: Path) -> None:
    summary = _summary(tmp_path, 'x = "a" f"{k()}"\ny = t"{f()}"\n')
    assert {c.text for c in summary.module_scope.calls} == {"k()", "f()"}


def _guards_of(summary: ModuleSummary, text: str) -> list[str]:
    """The guards of the call written ``text``, rendered, innermost last."""
    (site,) = [c for s in summary.scopes for c in s.calls if c.text == text]
    return [f"{g.kind.value}: {g.render()}" for g in site.guards]


def test_exits_guard_only_what_follows_them_in_their_block(tmp_path: Path) -> None:
    summary = _summary(
        tmp_path,
        """
        def f(cfg):
            before()
            for item in cfg.items:
                if item.skip: continue
                in_loop()
            after_loop()
            with lock:
                if cfg.stop:
                    raise ValueError()
                in_with()
            after_with()
            if cfg.a:
                log()
            elif cfg.b:
                return
            falls_through()
            if cfg.c:
                pass
            else:
                return
            after_else()
            if cfg.d:
                if cfg.e:
                    return
                else:
                    raise KeyError()
            after_nested()
            if cfg.f:
                with lock:
                    return
            after_with_exit()
        """,
    )
    assert _guards_of(summary, "before()") == []
    assert _guards_of(summary, "in_loop()") == ["exit: not (item.skip)"]
    assert _guards_of(summary, "after_loop()") == []
    assert _guards_of(summary, "in_with()") == ["exit: not (cfg.stop)"]
    assert _guards_of(summary, "after_with()") == []
    # the first arm falls through, so nothing is known after the chain
    assert _guards_of(summary, "falls_through()") == []
    assert _guards_of(summary, "after_else()") == ["exit: cfg.c"]
    # an `if` whose every arm exits makes the arm it sits in exit
    assert _guards_of(summary, "after_nested()") == ["exit: cfg.c", "exit: not (cfg.d)"]
    assert _guards_of(summary, "after_with_exit()")[-1] == "exit: not (cfg.f)"


def test_expression_guards_and_their_parsed_form(tmp_path: Path) -> None:
    from flagtrace.model import (
        GuardBool,
        GuardCall,
        GuardCompare,
        GuardConst,
        GuardNot,
        GuardPath,
        GuardUnknown,
    )

    summary = _summary(
        tmp_path,
        """
        def f(cfg, xs):
            assert cfg.n is not None
            a = cfg.x and cfg.y() and first()
            b = cfg.x or (cfg.y and cfg.z) or second()
            c = third() if not cfg.mode == "graph" else fourth()
            d = [fifth(x) for x in xs if x[0] if x.ok]
        """,
    )
    assert _guards_of(summary, "first()") == [
        "assert: cfg.n is not None",
        "bool: cfg.x",
        "bool: cfg.y()",
    ]
    assert _guards_of(summary, "second()")[1:] == [
        "bool: not (cfg.x)",
        "bool: not ((cfg.y and cfg.z))",
    ]
    assert _guards_of(summary, "third()")[1:] == ['ifexp: not cfg.mode == "graph"']
    assert _guards_of(summary, "fourth()")[1:] == ['ifexp: not (not cfg.mode == "graph")']
    assert _guards_of(summary, "fifth(x)")[1:] == ["filter: x[0]", "filter: x.ok"]
    exprs = {g.text: g.expr for s in summary.scopes for c in s.calls for g in c.guards}
    assert exprs["cfg.n is not None"] == GuardCompare(
        GuardPath("cfg.n"), "is not", GuardConst("None")
    )
    assert exprs["cfg.y()"] == GuardCall("cfg.y", "")
    assert exprs["(cfg.y and cfg.z)"] == GuardBool("and", (GuardPath("cfg.y"), GuardPath("cfg.z")))
    assert exprs['not cfg.mode == "graph"'] == GuardNot(
        GuardCompare(GuardPath("cfg.mode"), "==", GuardConst('"graph"'))
    )
    assert exprs["x[0]"] == GuardUnknown("x[0]")


def test_a_read_carries_the_guards_of_its_statement(tmp_path: Path) -> None:
    from flagtrace.model import ReadStep, walk

    summary = _summary(
        tmp_path,
        """
        FLAG = False
        def f(cfg):
            if not cfg.on:
                return
            return cfg.ready and FLAG
        """,
    )
    (read,) = [s for s in walk(summary.scopes[1].flow) if isinstance(s, ReadStep)]
    assert [g.render() for g in read.guards] == ["not (not cfg.on)", "cfg.ready"]
