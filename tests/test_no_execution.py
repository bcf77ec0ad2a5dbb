"""flagtrace never imports or runs the code it analyses, in any worker, nor through jedi.

The test builds, in ``tmp_path``, a project whose every file would leave a marker file behind
and then raise if Python ever ran it: a package ``__init__.py``, its modules' top-level code,
a ``__main__.py`` and an ``if __name__ == "__main__":`` block, a ``conftest.py`` and a
``setup.py``, a class body, a decorator, a default argument and a module ``__getattr__``. The
package also holds a flag that a context manager sets and a function reads, and calls that
flagtrace cannot resolve by itself (so jedi, when this flagtrace has it, is asked about them).

It runs ``check --flag`` (with an entry, and with entry discovery) and ``callgraph`` with one
and with two worker processes and asserts: no marker file exists, nothing the analysed code
raises shows up (exit codes are the expected ones, stderr has no traceback), the findings are
there (so the files were really analysed), and neither ``sys.modules`` nor ``sys.path`` of the
test process gained anything from the analysed tree.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import click
import pytest

from flagtrace.cli import callgraph_cmd, check_cmd, main

PACKAGE = "detonator"
PAYLOAD = "DETONATED"  # in every exception the analysed code would raise


def _options(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in param.opts}


# No summary cache: a second run must parse again, in its own workers.
NO_CACHE = ["--no-cache"] if "--no-cache" in _options(check_cmd) else []


def booby_trap(markers: Path, name: str) -> str:
    """Code that leaves ``markers/<name>.ran`` behind and raises, if it is ever run."""
    return textwrap.dedent(
        f"""\
        import pathlib as _pathlib
        _pathlib.Path({str(markers)!r}, {name + ".ran"!r}).write_text("executed")
        raise RuntimeError({PAYLOAD + ": " + name!r})
        """
    )


def build_project(root: Path, markers: Path) -> Path:
    """The trapped project; returns the directory to analyse."""
    tree = root / "project"
    pkg = tree / PACKAGE
    (pkg / "plugins").mkdir(parents=True)
    (tree / "tests").mkdir()
    markers.mkdir()

    def write(relative: str, code: str) -> None:
        (tree / relative).write_text(code, encoding="utf-8")

    write(
        "setup.py",
        booby_trap(markers, "setup") + "from setuptools import setup\nsetup(name='detonator')\n",
    )
    write("conftest.py", booby_trap(markers, "conftest"))
    write("tests/conftest.py", booby_trap(markers, "tests_conftest"))
    write(
        "tests/test_detonator.py",
        booby_trap(markers, "test_module")
        + "from detonator.runner import run\n\n\ndef test_run():\n    run(1)\n",
    )
    write(
        f"{PACKAGE}/__init__.py",
        booby_trap(markers, "package_init") + "from detonator.runner import run\n",
    )
    write(
        f"{PACKAGE}/__main__.py",
        booby_trap(markers, "package_main") + "from detonator.runner import run\nrun(0)\n",
    )
    write(
        f"{PACKAGE}/state.py",
        booby_trap(markers, "state")
        + textwrap.dedent(
            """
            from contextlib import contextmanager

            _armed = False


            @contextmanager
            def armed():
                global _armed
                _armed = True
                yield
                _armed = False


            def __getattr__(name):
                raise AttributeError(name)
            """
        ),
    )
    write(
        f"{PACKAGE}/ops.py",
        booby_trap(markers, "ops")
        + textwrap.dedent(
            f"""
            from detonator import state


            def _trap(markers={str(markers)!r}):
                import pathlib
                pathlib.Path(markers, "decorator.ran").write_text("executed")
                raise RuntimeError("{PAYLOAD}: decorator")


            def traced(fn):
                _trap()
                return fn


            class Op:
                _trap()  # in the class body

                @traced
                def apply(self, x, default=_trap()):
                    if state._armed:  # the read
                        return x
                    return -x
            """
        ),
    )
    write(
        f"{PACKAGE}/runner.py",
        booby_trap(markers, "runner")
        + textwrap.dedent(
            """
            from detonator.ops import Op
            from detonator.plugins import REGISTRY
            from detonator.state import armed


            def run(x):
                with armed():
                    return Op().apply(x)


            def dispatch(kind, payload):
                handler = REGISTRY[kind]  # not resolvable without running the code
                return handler(payload).execute()


            def call_back(callback, name):
                getattr(Op(), name)()  # unresolved: jedi may be asked about these
                return callback()


            if __name__ == "__main__":
                run(2)
            """
        ),
    )
    write(f"{PACKAGE}/plugins/__init__.py", booby_trap(markers, "plugins_init") + "REGISTRY = {}\n")
    write(
        f"{PACKAGE}/plugins/loud.py",
        booby_trap(markers, "plugin") + "from detonator.plugins import REGISTRY\n\n\n"
        "class Loud:\n    def execute(self):\n        return 1\n\n\n"
        "REGISTRY['loud'] = Loud\n",
    )
    return tree


def analysed_modules_loaded(tree: Path) -> list[str]:
    """Modules in ``sys.modules`` that come from the analysed tree (or carry its names)."""
    found = []
    root = str(tree)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name == PACKAGE or name.startswith(PACKAGE + ".") or path.startswith(root):
            found.append(name)
    return found


@pytest.mark.parametrize("jobs", [1, 2], ids=["jobs1", "jobs2"])
def test_analysing_a_package_never_imports_or_runs_any_of_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    markers = tmp_path / "markers"
    tree = build_project(tmp_path, markers)
    modules_before = set(sys.modules)
    path_before = list(sys.path)
    monkeypatch.chdir(tmp_path)  # a relative import of the tree would find it from here

    report = tmp_path / "report.json"
    discovered = tmp_path / "discovered.json"
    graph = tmp_path / "graph.json"
    runs = {
        "check": main(
            [
                str(tree),
                "--flag",
                "_armed",
                "--entry",
                f"{PACKAGE}.runner.run",
                "--format",
                "json",
                "-o",
                str(report),
                "--jobs",
                str(jobs),
                "--quiet",
                *NO_CACHE,
            ]
        ),
        "check with entry discovery": main(
            [
                "check",
                str(tree),
                "--flag",
                f"{PACKAGE}.state._armed",
                "--format",
                "json",
                "-o",
                str(discovered),
                "--jobs",
                str(jobs),
                "--quiet",
                *NO_CACHE,
            ]
        ),
        "callgraph": main(
            [
                "callgraph",
                str(tree),
                "--format",
                "json",
                "-o",
                str(graph),
                "--jobs",
                str(jobs),
                "--quiet",
                *(["--no-cache"] if "--no-cache" in _options(callgraph_cmd) else []),
            ]
        ),
    }
    stderr = capsys.readouterr().err

    assert sorted(p.name for p in markers.iterdir()) == [], "analysed code was executed"
    assert PAYLOAD not in stderr and "Traceback" not in stderr, stderr
    assert runs == {"check": 1, "check with entry discovery": 1, "callgraph": 0}, (runs, stderr)
    assert analysed_modules_loaded(tree) == []
    assert {
        name for name in set(sys.modules) - modules_before if PACKAGE in name or "conftest" in name
    } == set()
    assert sys.path == path_before

    # the files were really analysed: the flag, its setter, its reader and the leak are all there
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["errors"] == []
    (flag,) = data["flags"]
    assert flag["qualname"] == f"{PACKAGE}.state._armed"
    assert [s["function"] for s in flag["setters"]] == [f"{PACKAGE}.state.armed"]
    assert {r["function"] for r in flag["readers"]} == {f"{PACKAGE}.ops.Op.apply"}
    (entry,) = flag["entries"]
    assert entry["entry"] == f"{PACKAGE}.runner.run" and entry["observes_set"] is True
    assert json.loads(discovered.read_text(encoding="utf-8"))["errors"] == []
    edges = json.loads(graph.read_text(encoding="utf-8"))
    assert edges["errors"] == []
    assert edges["stats"]["unresolved"] > 0
    if "jedi_queries" in edges["stats"]:  # jedi was asked about them, and ran nothing either
        assert edges["stats"]["jedi_queries"] > 0
    assert os.path.isdir(tree / PACKAGE)  # nothing deleted or rewritten either


def test_the_traps_do_go_off_when_python_imports_the_package(tmp_path: Path) -> None:
    """The control: importing the package for real leaves a marker and raises, so the test
    above would notice if flagtrace did the same."""
    import subprocess

    markers = tmp_path / "markers"
    tree = build_project(tmp_path, markers)
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(tree)!r}); import {PACKAGE}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert PAYLOAD in done.stderr
    assert (markers / "package_init.ran").exists()
