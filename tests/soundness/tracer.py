"""Run a generated program for real and record what each read of the flag saw.

Usage (stdlib only; run in its own interpreter, never inside the test process)::

    python tracer.py PROJECT PLAN.json OUT.json

``PLAN.json`` is ``{"reads": [["pkg/m1.py", 7], ...], "runs": [["pkg.m1.f0"],
["pkg.m1.f1", "pkg.m1.f0"], ...], "flag_module": "pkg.state", "flag": "FLAG"}``, and
optionally ``"roots": [{"module": "pkg.tool"}, {"function": "pkg.m1.f0"}]`` with
``"entries"``: each root runs once more in a fresh process, as the program does
(``runpy`` for a ``__main__`` module), and each read is recorded with every
entry on the stack and where its callers were (``run_root``); the output is then
``{"runs": [...], "roots": [...]}``.
Each run is a sequence of entries called one after the other in a *fresh* process
(forked from this one before anything of the program was imported), so nothing
leaks between runs; within a run, later entries see what earlier ones left behind.

For every entry of every run the result holds: ``reads`` (``[path, line, repr of
the flag at the start of that line]`` for each execution of a marked line),
``edges`` (``[caller, callee]`` for each call between functions of the program,
module code named as the module, intermediate library frames such as contextlib's
skipped), ``lines`` (``[path, line]`` executed), ``error`` (the exception that ended
the entry, if any) and ``truncated`` (the run exceeded the step budget and was cut
short; what was recorded before is still real).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import traceback

STEP_BUDGET = 200_000
TIMEOUT_SECONDS = 20


class _Budget(BaseException):
    """Raised from the tracer to stop a run that takes too many steps."""


def _qualname(frame, module_names):  # type: ignore[no-untyped-def]
    code = frame.f_code
    module = frame.f_globals.get("__name__", "?")
    if code.co_name == "<module>":
        return module
    return f"{module}.{getattr(code, 'co_qualname', code.co_name)}"


def run_sequence(
    project: str, entries: list[str], reads: set[tuple[str, int]], flag_module: str, flag: str
) -> list[dict]:
    prefix = os.path.join(project, "")
    parts = [
        {"reads": [], "edges": set(), "lines": set(), "error": None, "truncated": False}
        for _ in entries
    ]
    state = {"cur": 0, "steps": 0, "stopped": False}

    def rel(filename: str) -> str:
        return os.path.relpath(filename, project).replace(os.sep, "/")

    def local(frame, event, arg):  # type: ignore[no-untyped-def]
        if state["stopped"]:
            return None
        if event == "line":
            state["steps"] += 1
            if state["steps"] > STEP_BUDGET:
                state["stopped"] = True
                parts[state["cur"]]["truncated"] = True
                raise _Budget()
            part = parts[state["cur"]]
            key = (rel(frame.f_code.co_filename), frame.f_lineno)
            part["lines"].add(key)
            if key in reads:
                mod = sys.modules.get(flag_module)
                value = getattr(mod, flag, "<unbound>") if mod is not None else "<not imported>"
                part["reads"].append([key[0], key[1], repr(value)])
        return local

    def global_trace(frame, event, arg):  # type: ignore[no-untyped-def]
        if state["stopped"] or event != "call":
            return None
        if not frame.f_code.co_filename.startswith(prefix):
            return None
        callee = _qualname(frame, None)
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(prefix):
            caller = caller.f_back
        parts[state["cur"]]["edges"].add(
            (_qualname(caller, None) if caller is not None else "<driver>", callee)
        )
        return local

    sys.path.insert(0, project)
    functions = []
    for qualname in entries:
        module, _, name = qualname.rpartition(".")
        functions.append(getattr(importlib.import_module(module), name))
    for i, fn in enumerate(functions):
        state["cur"] = i
        sys.settrace(global_trace)
        try:
            fn()
        except _Budget:
            pass
        except BaseException as exc:  # noqa: BLE001 - the program may raise anything
            parts[i]["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            sys.settrace(None)
        if state["stopped"]:
            break
    for p in parts:
        p["edges"] = sorted(p["edges"])
        p["lines"] = sorted(p["lines"])
    return parts


def run_root(project: str, root: dict, entries: list[str], reads: set[tuple[str, int]]) -> dict:
    """Run a program root the way a process does (a ``__main__`` module through
    ``runpy``, a console script's function by calling it) and record each read with
    every entry on the stack (one row per entry, outermost first; ``None`` outside
    every entry), each with the lines its callers were at when it was called (the
    oracle counts a read for an entry called by another entry only when no caller was
    inside a ``with`` then: see ``oracle.Source.inside_with``)."""
    import runpy

    prefix = os.path.join(project, "")
    wanted = set(entries)
    out: dict = {"reads": [], "error": None, "truncated": False}
    # stack: (entry, its frame, [path, line] of each caller frame in the project)
    state: dict = {"steps": 0, "stack": [], "stopped": False}

    def rel(filename: str) -> str:
        return os.path.relpath(filename, project).replace(os.sep, "/")

    def local(frame, event, arg):  # type: ignore[no-untyped-def]
        if state["stopped"]:
            return None
        if event == "line":
            state["steps"] += 1
            if state["steps"] > STEP_BUDGET:
                state["stopped"] = True
                out["truncated"] = True
                raise _Budget()
            key = (rel(frame.f_code.co_filename), frame.f_lineno)
            if key in reads:
                mod = sys.modules.get(plan_flag[0])
                value = getattr(mod, plan_flag[1], "<unbound>") if mod is not None else "?"
                if not state["stack"]:
                    out["reads"].append([None, key[0], key[1], repr(value), []])
                seen = set()
                for name, _, callers in state["stack"]:
                    if name not in seen:
                        seen.add(name)
                        out["reads"].append([name, key[0], key[1], repr(value), callers])
        elif event == "return" and state["stack"] and frame is state["stack"][-1][1]:
            state["stack"].pop()
        return local

    def callers(frame):  # type: ignore[no-untyped-def]
        out_ = []
        f = frame.f_back
        while f is not None:
            if f.f_code.co_filename.startswith(prefix):
                out_.append([rel(f.f_code.co_filename), f.f_lineno])
            f = f.f_back
        return out_

    def global_trace(frame, event, arg):  # type: ignore[no-untyped-def]
        if state["stopped"] or event != "call":
            return None
        if not frame.f_code.co_filename.startswith(prefix):
            return None
        name = _qualname(frame, None)
        if name.startswith("__main__.") and "module" in root:
            # the module runs as __main__: its functions are the root module's
            name = root["module"] + name[len("__main__") :]
        if name in wanted:
            state["stack"].append((name, frame, callers(frame)))
        return local

    plan_flag = (root.get("flag_module", "pkg.state"), root.get("flag", "FLAG"))
    sys.path.insert(0, project)
    sys.settrace(global_trace)
    try:
        if "module" in root:
            runpy.run_module(root["module"], run_name="__main__", alter_sys=True)
        else:
            module, _, name = root["function"].rpartition(".")
            getattr(importlib.import_module(module), name)()
    except _Budget:
        pass
    except BaseException as exc:  # noqa: BLE001 - the program may raise anything
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        sys.settrace(None)
    return out


def _root_forked(project: str, root: dict, entries: list[str], reads: set) -> dict:  # type: ignore[type-arg]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        signal.alarm(TIMEOUT_SECONDS)
        try:
            try:
                data = {"ok": True, **run_root(project, root, entries, reads)}
            except BaseException:  # noqa: BLE001
                data = {"ok": False, "traceback": traceback.format_exc()}
            with os.fdopen(w, "wb") as out:
                out.write(json.dumps(data).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as inp:
        raw = inp.read()
    os.waitpid(pid, 0)
    return json.loads(raw) if raw else {"ok": False, "traceback": "child died"}


def _in_child(
    project: str, entries: list[str], reads: set[tuple[str, int]], flag_module: str, flag: str
) -> dict:
    try:
        return {"ok": True, "parts": run_sequence(project, entries, reads, flag_module, flag)}
    except BaseException:  # noqa: BLE001
        return {"ok": False, "traceback": traceback.format_exc()}


def run_forked(
    project: str, entries: list[str], reads: set[tuple[str, int]], flag_module: str, flag: str
) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        signal.alarm(TIMEOUT_SECONDS)
        try:
            data = json.dumps(_in_child(project, entries, reads, flag_module, flag)).encode()
            with os.fdopen(w, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"ok": False, "traceback": f"child died (status {status})"}
    return json.loads(data)


def main(argv: list[str]) -> int:
    project, plan_path, out_path = argv
    project = os.path.realpath(project)
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    reads = {(p, int(line)) for p, line in plan["reads"]}
    flag_module = plan.get("flag_module", "pkg.state")
    flag = plan.get("flag", "FLAG")
    results = []
    for entries in plan["runs"]:
        if hasattr(os, "fork"):
            results.append(run_forked(project, entries, reads, flag_module, flag))
        else:  # pragma: no cover - one process per run elsewhere
            import subprocess
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                sub_plan = os.path.join(tmp, "plan.json")
                sub_out = os.path.join(tmp, "out.json")
                with open(sub_plan, "w", encoding="utf-8") as f:
                    json.dump({**plan, "runs": [entries]}, f)
                subprocess.run(
                    [sys.executable, __file__, project, sub_plan, sub_out],
                    check=False,
                    timeout=TIMEOUT_SECONDS * 2,
                )
                with open(sub_out, encoding="utf-8") as f:
                    results.extend(json.load(f))
    root_results = [
        _root_forked(
            project,
            {**root, "flag_module": flag_module, "flag": flag},
            plan.get("entries", []),
            reads,
        )
        for root in plan.get("roots", [])
    ]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"runs": results, "roots": root_results} if "roots" in plan else results, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
