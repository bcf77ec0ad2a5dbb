"""Jedi: settle, on demand and within a time budget, calls our resolver could not.

This is the only module that imports jedi. It is never used for whole-program
work (a jedi query costs milliseconds to seconds; SGLang has ~20k unresolved
call sites): callers hand it the few sites that matter (those on the way from an
entry whose verdict would otherwise rest on unresolved calls, or the first ones
in a ``callgraph`` run) and a budget in seconds.

Jedi analyses source statically; it is given a project whose ``sys_path`` is
the analysed roots only and ``load_unsafe_extensions=False``, so it never
imports the analysed code (it may introspect compiled standard-library modules
in its own subprocess, as it always does).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from flagtrace.model import CallEdge, Resolution, UnresolvedCall

_CALLEE_NAME = re.compile(r"([A-Za-z_]\w*)\s*$")


class _Script(Protocol):
    """The part of ``jedi.Script`` used here (jedi ships no type information)."""

    def goto(self, line: int, column: int, *, follow_imports: bool = ...) -> list[object]: ...

    def infer(self, line: int, column: int) -> list[object]: ...


@dataclass
class JediResult:
    edges: list[CallEdge] = field(default_factory=list)
    queries: int = 0
    settled_sites: set[tuple[str, int]] = field(default_factory=set)  # (caller scope, site)
    out_of_budget: bool = False


def callee_column(text: str, column: int) -> int | None:
    """The 1-based column of the called name in a call whose source starts at
    ``column``: ``self.runner.replay(x)`` -> the ``r`` of ``replay``."""
    head = text.split("\n", 1)[0]
    depth = 0
    for i, ch in enumerate(head):
        if ch in "([{":
            if depth == 0 and ch == "(":
                m = _CALLEE_NAME.search(head[:i])
                return column + m.start(1) if m else None
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return None


def settle(
    sites: Iterable[tuple[str, UnresolvedCall]],
    roots: Sequence[str],
    known: set[str],
    budget: float,
) -> JediResult:
    """Ask jedi where each call goes; keep answers that name analysed functions.

    ``sites`` are (caller scope qualname, unresolved call); ``known`` are the
    analysed function qualnames (classes resolve to their ``__init__``).
    """
    result = JediResult()
    if budget <= 0:
        return result
    try:
        import jedi
    except ImportError:  # pragma: no cover - jedi is a dependency
        return result
    deadline = time.perf_counter() + budget
    project = jedi.Project(
        path=roots[0] if roots else ".",
        sys_path=[str(Path(r)) for r in roots],
        load_unsafe_extensions=False,
        smart_sys_path=False,
    )
    scripts: dict[str, _Script] = {}
    for scope_qn, call in sites:
        if time.perf_counter() > deadline:
            result.out_of_budget = True
            break
        col = callee_column(call.text, call.location.column)
        if col is None:
            continue
        path = call.location.path
        script = scripts.get(path)
        if script is None:
            try:
                script = jedi.Script(path=path, project=project)
            except Exception:  # unreadable or undecodable: nothing to learn here
                continue
            scripts[path] = script
        result.queries += 1
        try:
            # what the called name is bound to, else what its value is inferred to be
            names = script.goto(call.location.line, col - 1, follow_imports=True)
            if not any(_target(n, known) for n in names):
                names = script.infer(call.location.line, col - 1)
        except Exception:  # jedi has internal errors on odd code; the site stays unresolved
            continue
        for name in names:
            target = _target(name, known)
            if target is None:
                continue
            result.edges.append(
                CallEdge(
                    call.caller, target, call.location, Resolution.JEDI, (), call.site, call.text
                )
            )
            result.settled_sites.add((scope_qn, call.site))
    return result


def _target(name: object, known: set[str]) -> str | None:
    """The analysed function a jedi name stands for, if any: a function itself, a
    class's ``__init__``, an instance's ``__call__``."""
    full: str | None = getattr(name, "full_name", None)
    kind = getattr(name, "type", None)
    if not full:
        return None
    if kind == "function" and full in known:
        return full
    if kind == "class" and f"{full}.__init__" in known:
        return f"{full}.__init__"
    if kind == "instance" and f"{full}.__call__" in known:
        return f"{full}.__call__"
    return None
