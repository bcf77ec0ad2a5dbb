"""The soundness oracle: run a program for real, analyse it with flagtrace, compare.

``check_project(root, entries)`` analyses the package under ``root`` for
``pkg.state.FLAG``, runs it with ``tracer.py`` in a subprocess and returns an
:class:`Outcome` holding

* **violations** (must never happen):
  - ``false-never``: a fresh run of the entry read the flag set, flagtrace says
    *never observes set*;
  - ``false-never-after-entry``: the entry read the flag set when another entry (or
    itself) had run first in the same process, and flagtrace says *never*; checked for
    entries no program root reaches (flagtrace then assumes a sticky setter anywhere
    may have run before the entry);
  - ``false-never-in-root-run``: running a program root (a ``__main__`` block through
    ``runpy``, a console script's function) read the flag set while the entry ran (it
    was on the stack, called by the root or by another entry, but not inside a
    ``with``: that is the caller's business), and flagtrace says *never*;
  - ``bogus-witness``: a witness step that is not a real chain of calls or not a
    real read/set (see :func:`witness_problems`);
  - ``analysis-error``: flagtrace reported an error or raised;
* **false positives**: flagtrace says *observes set* but no run saw the flag set
  at a read, with a cause (:func:`classify_fp`).

Read sites are the lines marked ``# read`` (see ``programs.py``); everything else
about the source (which function a line is in, which calls, ``with`` items, reads and
writes of the flag it holds) comes from ``ast``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.soundness.programs import FLAG_QUALNAME, READ_MARK

TRACER = Path(__file__).with_name("tracer.py")
FLAG_MODULE, _, FLAG_NAME = FLAG_QUALNAME.rpartition(".")


# ----------------------------------------------------------------------------- the static facts


@dataclass
class LineFacts:
    function: str = ""  # innermost function (or module) the line belongs to
    calls: set[str] = field(default_factory=set)  # last name component of each call on the line
    with_items: set[str] = field(default_factory=set)  # names of the managers entered on the line
    class_def: str | None = None  # ``class X`` defined here: its qualname
    flag_read: bool = False
    flag_write: bool = False


class Source:
    """What the files of a project contain, line by line."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.facts: dict[tuple[str, int], LineFacts] = {}
        self.functions: dict[str, tuple[str, int, int]] = {}  # qualname -> (path, first, last line)
        self.read_sites: set[tuple[str, int]] = set()
        self.callnames: dict[str, set[str]] = {}  # function or module -> last names it calls
        self.roots: list[dict[str, str]] = []  # {"module": m} or {"function": qualname}
        #: (path, first, last line) of each ``with`` body whose items are not all
        #: ``contextlib.suppress``
        self.with_bodies: list[tuple[str, int, int]] = []
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            module = rel[:-3].replace("/", ".")
            if module.endswith(".__init__"):
                module = module[: -len(".__init__")]
            for i, line in enumerate(text.splitlines(), 1):
                if line.rstrip().endswith(READ_MARK):
                    self.read_sites.add((rel, i))
            tree = ast.parse(text)
            self._scan(tree, rel, module, module)
            if any(_is_main_test(node) for node in tree.body):
                self.roots.append({"module": module})
        self.roots += [{"function": f} for f in _console_scripts(root)]

    # -- the program roots, from the source alone (what flagtrace must agree with)

    def reach(self, start: str, strict: bool = False) -> set[str]:
        """Functions and modules ``start`` reaches by calls (``strict``: through at least
        one), names matched by their last part, classes through their methods: a
        superset of what any run can call."""
        by_last: dict[str, set[str]] = {}
        for qn in self.functions:
            by_last.setdefault(_last(qn), set()).add(qn)
        seen: set[str] = set()
        todo = [start]
        first = True
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            if not (first and strict):
                seen.add(node)
            first = False
            for name in self.callnames.get(node, ()):
                for callee in by_last.get(name, ()):
                    todo.append(callee)
                    # a class called (or entered) runs its methods
                    todo.extend(m for m in self.functions if m.startswith(callee + "."))
        return seen

    def inside_with(self, path: str, line: int) -> bool:
        """Is ``path:line`` in the body of a ``with`` that may set the flag?"""
        return any(p == path and first <= line <= last for p, first, last in self.with_bodies)

    def root_name(self, root: dict[str, str]) -> str:
        return root.get("module") or root["function"]

    @property
    def all_reads(self) -> set[tuple[str, int]]:
        """Every line that reads the flag (``FLAG`` or ``x.FLAG``), marked or not."""
        return {key for key, f in self.facts.items() if f.flag_read}

    def at(self, path: str, line: int) -> LineFacts:
        return self.facts.setdefault((path, line), LineFacts())

    def _scan(self, node: ast.AST, rel: str, module: str, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qn = f"{owner}.{child.name}"
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                self.functions[qn] = (rel, start, child.end_lineno or child.lineno)
                if isinstance(child, ast.ClassDef):
                    self.at(rel, child.lineno).class_def = qn
                    if not self.at(rel, child.lineno).function:
                        self.at(rel, child.lineno).function = owner
                for d in child.decorator_list:
                    self._scan_expr(d, rel, owner)
                self._scan(child, rel, module, qn)
                continue
            self._note(child, rel, owner)
            self._scan(child, rel, module, owner)

    def _scan_expr(self, node: ast.AST, rel: str, owner: str) -> None:
        for sub in ast.walk(node):
            self._note(sub, rel, owner)

    def _note(self, node: ast.AST, rel: str, owner: str) -> None:
        line = getattr(node, "lineno", None)
        if line is None:
            return
        facts = self.at(rel, line)
        if isinstance(node, ast.stmt) and not facts.function:
            facts.function = owner
        if isinstance(node, ast.Call):
            name = _last_name(node.func)
            if name:
                facts.calls.add(name)
                self.callnames.setdefault(owner, set()).add(name)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            names = set()
            for item in node.items:
                e = item.context_expr
                names.add(_last_name(e.func if isinstance(e, ast.Call) else e))
            if names - {"suppress"} and node.body:
                self.with_bodies.append((rel, node.body[0].lineno, node.end_lineno or line))
            for item in node.items:
                e = item.context_expr
                name = _last_name(e.func if isinstance(e, ast.Call) else e)
                if name:
                    self.at(rel, e.lineno).with_items.add(name)
        elif isinstance(node, ast.Name) and node.id == FLAG_NAME:
            if isinstance(node.ctx, ast.Load):
                facts.flag_read = True
            else:
                facts.flag_write = True
        elif isinstance(node, ast.Attribute) and node.attr == FLAG_NAME:
            if isinstance(node.ctx, ast.Load):
                facts.flag_read = True
            else:
                facts.flag_write = True


def _is_main_test(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` at module level."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    names = [node.test.left, *node.test.comparators]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
        isinstance(n, ast.Constant) and n.value == "__main__" for n in names
    )


def _console_scripts(root: Path) -> list[str]:
    """``[project.scripts]`` of the project's pyproject.toml, as qualified names."""
    import tomllib

    path = root / "pyproject.toml"
    if not path.is_file():
        return []
    scripts = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {}).get("scripts", {})
    return [target.replace(":", ".") for target in scripts.values()]


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _last(qualname: str) -> str:
    return qualname.rpartition(".")[2]


# ----------------------------------------------------------------------------- witness checks

DUNDERS = ("__enter__", "__exit__", "__aenter__", "__aexit__")


def _calls(facts: LineFacts, callee: str) -> bool:
    """Does the line call ``callee``? By last name; ``Cls.__enter__`` by entering ``Cls()``."""
    name = _last(callee)
    if name in facts.calls:
        return True
    if name in DUNDERS:
        owner = _last(callee.rpartition(".")[0])
        return owner in facts.with_items or owner in facts.calls
    return False


def _rel(root: Path, path: str) -> str:
    p = Path(path)
    if not p.is_absolute():
        # flagtrace reports paths as given; try relative to the root and to the cwd
        if (root / p).exists():
            return p.as_posix()
        p = Path.cwd() / p
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def _step_text(step: Any) -> str:
    loc = step.location
    callee = f" -> {step.callee}" if step.callee else ""
    pre = " (before entry)" if step.before_entry else ""
    return f"{step.step} {step.function}{callee} at {Path(loc.path).name}:{loc.line}{pre}"


def witness_problems(src: Source, entry: str, witness: tuple[Any, ...]) -> list[str]:
    """Why ``witness`` is not a real chain of calls ending at a real read (empty: it is)."""
    problems: list[str] = []
    # the calls inside a setter that set the flag (``setting``) are no link of the chain
    pre = [s for s in witness if s.before_entry and not s.setting]
    main = [s for s in witness if not s.before_entry and not s.setting]
    if not main:
        return ["the witness has no steps after the entry"]
    problems += _chain_problems(src, main, entry, "read")
    if pre:
        problems += [
            # ends where the flag was left set: a sticky setter call, or a context
            # manager entered by an entry whose exception skipped the reset
            f"before-entry part: {p}"
            for p in _chain_problems(src, pre, pre[0].function, ("set", "enter"))
        ]
    if not any(s.step in ("enter", "set") for s in witness):
        problems.append("no step shows where the flag became set (no enter/set step)")
    return problems


def _chain_problems(
    src: Source, steps: list[Any], start: str, last_kind: str | tuple[str, ...]
) -> list[str]:
    problems: list[str] = []
    cur = start
    for i, s in enumerate(steps):
        where = f"step {i + 1} ({_step_text(s)})"
        rel = _rel(src.root, s.location.path)
        facts = src.facts.get((rel, s.location.line), LineFacts())
        if s.function != cur:
            problems.append(f"{where}: runs in {s.function}, but the chain is in {cur}")
        if s.function in src.functions or "." in s.function:
            if facts.function != s.function and not (
                s.step == "call" and facts.class_def == s.callee
            ):
                problems.append(
                    f"{where}: line {rel}:{s.location.line} is not in {s.function} "
                    f"(it is in {facts.function or 'nothing'})"
                )
        if s.step == "call":
            if s.callee is None:
                problems.append(f"{where}: a call step without a callee")
                continue
            ok = _calls(facts, s.callee)
            if facts.class_def == s.callee:
                ok = True  # the class body runs with its enclosing scope
            if not ok:
                problems.append(
                    f"{where}: no call of {_last(s.callee)} on that line "
                    f"(calls there: {sorted(facts.calls) or 'none'})"
                )
            cur = s.callee
        elif s.step == "enter":
            name = _last(s.callee or "")
            if name not in facts.with_items and name not in facts.calls:
                problems.append(f"{where}: no `with {name}(...)` on that line")
        elif s.step == "set":
            name = _last(s.callee or "")
            if s.callee == s.function:
                # a write of the flag in the function itself, or a recursive call that sets it
                if not facts.flag_write and name not in facts.calls:
                    problems.append(
                        f"{where}: no write of the flag (or call of {name}) on that line"
                    )
            elif not _calls(facts, s.callee or ""):
                problems.append(f"{where}: no call of {name} on that line")
        elif s.step == "read":
            if s.callee is not None:
                if _last(s.callee) not in facts.calls:
                    problems.append(
                        f"{where}: no call of the accessor {_last(s.callee)} on that line"
                    )
            elif not facts.flag_read:
                problems.append(f"{where}: no read of the flag on that line")
            if i != len(steps) - 1:
                problems.append(f"{where}: a read that is not the last step")
        else:
            problems.append(f"{where}: unknown step kind {s.step!r}")
    kinds = (last_kind,) if isinstance(last_kind, str) else last_kind
    if steps and steps[-1].step not in kinds:
        problems.append(f"the last step is {steps[-1].step!r}, not {' or '.join(map(repr, kinds))}")
    return problems


# ----------------------------------------------------------------------------- running

#: a read in a run of a program root: (the entry it ran under, or None; path; line;
#: repr of the flag; where that entry's callers were when it was called)
RootRead = tuple[str | None, str, int, str, list[tuple[str, int]]]


@dataclass
class EntryRun:
    """What running one entry observed (in one run)."""

    reads: list[tuple[str, int, str]]  # (path, line, repr of the flag) at every read line
    edges: set[tuple[str, str]]
    lines: set[tuple[str, int]]
    error: str | None
    truncated: bool
    marked: frozenset[tuple[str, int]] = frozenset()  # the ``# read`` lines

    @property
    def saw_set(self) -> bool:
        """A marked read (code that uses the flag) saw it set."""
        return any(value != "False" and (p, line) in self.marked for p, line, value in self.reads)

    @property
    def saw_set_anywhere(self) -> bool:
        """Any read saw it set, the setters' own ``prev = FLAG`` included."""
        return any(value != "False" for _, _, value in self.reads)

    @property
    def set_reads(self) -> list[tuple[str, int]]:
        return sorted(
            {
                (p, line)
                for p, line, value in self.reads
                if value != "False" and (p, line) in self.marked
            }
        )


def run_program(
    root: Path,
    entries: list[str],
    read_sites: set[tuple[str, int]],
    pairs: bool = True,
    other_reads: set[tuple[str, int]] = frozenset(),  # type: ignore[assignment]
    roots: list[dict[str, str]] | None = None,
    root_reads: dict[str, list[RootRead]] | None = None,
) -> tuple[dict[str, EntryRun], dict[str, list[tuple[str, EntryRun]]]]:
    """Fresh run per entry; with ``pairs``, also every ``(first, entry)`` sequence.

    ``read_sites`` are the marked reads; ``other_reads`` are recorded too (the
    setters' own reads), but only count for :attr:`EntryRun.saw_set_anywhere`.
    """
    runs: list[list[str]] = [[e] for e in entries]
    if pairs:
        runs += [[a, b] for a in entries for b in entries]
    marked = frozenset(read_sites)
    plan = {
        "reads": sorted(marked | set(other_reads)),
        "runs": runs,
        "flag_module": FLAG_MODULE,
        "flag": FLAG_NAME,
    }
    if roots:
        plan["roots"] = roots
        plan["entries"] = entries
    with tempfile.TemporaryDirectory(prefix="flagtrace-run-") as tmp:
        plan_path = Path(tmp) / "plan.json"
        out_path = Path(tmp) / "out.json"
        plan_path.write_text(json.dumps(plan), encoding="utf-8")
        # -I: nothing from the environment or the cwd on sys.path; -B: no __pycache__ in fixtures
        proc = subprocess.run(
            [sys.executable, "-I", "-B", str(TRACER), str(root), str(plan_path), str(out_path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tracer failed ({proc.returncode}):\n{proc.stderr}")
        results = json.loads(out_path.read_text(encoding="utf-8"))
    if roots:
        for root, res in zip(roots, results["roots"], strict=True):
            if not res.get("ok"):
                raise RuntimeError(f"tracer crashed on root {root}:\n{res.get('traceback')}")
            if root_reads is not None:
                name = root.get("module") or root["function"]
                root_reads[name] = [
                    (e, p, int(line), v, [(cp, int(cl)) for cp, cl in callers])
                    for e, p, line, v, callers in res["reads"]
                ]
        results = results["runs"]
    fresh: dict[str, EntryRun] = {}
    after: dict[str, list[tuple[str, EntryRun]]] = {e: [] for e in entries}
    for seq, res in zip(runs, results, strict=True):
        if not res.get("ok"):
            raise RuntimeError(f"tracer crashed on {seq}:\n{res.get('traceback')}")
        parts = [_entry_run(p, marked) for p in res["parts"]]
        if len(seq) == 1:
            fresh[seq[0]] = parts[0]
        else:
            after[seq[1]].append((seq[0], parts[1]))
    return fresh, after


def _entry_run(p: dict[str, Any], marked: frozenset[tuple[str, int]]) -> EntryRun:
    return EntryRun(
        marked=marked,
        reads=[(a, int(b), c) for a, b, c in p["reads"]],
        edges={(a, b) for a, b in p["edges"]},
        lines={(a, int(b)) for a, b in p["lines"]},
        error=p["error"],
        truncated=p["truncated"],
    )


# ----------------------------------------------------------------------------- the verdict


@dataclass
class Violation:
    kind: str  # false-never | false-never-after-entry | bogus-witness | analysis-error
    entry: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.entry}: {self.detail}"


@dataclass
class EntryOutcome:
    entry: str
    observes_set: bool  # flagtrace's verdict
    evidence: str
    reason: str
    witness: tuple[Any, ...]
    saw_set: bool  # a fresh run read the flag set
    saw_set_after: bool  # some run with another entry first read it set
    saw_set_internal: bool = False  # only a setter's own read (``prev = FLAG``) saw it set
    fp_cause: str | None = None  # flagtrace says set, no fresh run saw it: why
    saw_set_in_root: bool = False  # a run of a program root read it set while the entry ran
    rooted: bool = False  # some program root reaches the entry
    sticky_scope: str | None = None  # flagtrace's verdict: why the witness starts before it

    @property
    def false_positive(self) -> bool:
        """flagtrace says set; no read in a fresh run of the entry, nor in a run of a
        program root while the entry ran, saw it (a setter's own read counts too)."""
        return self.fresh_false_positive and not self.saw_set_in_root

    @property
    def fresh_false_positive(self) -> bool:
        """The figure as measured before program roots: no fresh run of the entry saw it."""
        return self.observes_set and not self.saw_set and not self.saw_set_internal


@dataclass
class Outcome:
    entries: list[EntryOutcome] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    seconds_analysis: float = 0.0
    truncated_runs: int = 0  # runs the tracer's step budget cut short (what they saw counts)


def analyse(root: Path, entries: list[str]) -> Any:
    """flagtrace's report; ``FLAGTRACE_SOUNDNESS_STICKY_ANYWHERE=1`` ignores program roots
    (the verdicts as they were before them, for the benchmark's before/after figures)."""
    import os

    from flagtrace.api import analyze

    anywhere = os.environ.get("FLAGTRACE_SOUNDNESS_STICKY_ANYWHERE") == "1"
    return analyze([str(root)], [FLAG_QUALNAME], entries=entries, jobs=1, sticky_anywhere=anywhere)


def check_project(root: Path, entries: list[str], pairs: bool = True) -> Outcome:
    import time

    out = Outcome()
    src = Source(root)
    start = time.perf_counter()
    try:
        report = analyse(root, entries)
    except Exception as exc:  # noqa: BLE001 - an analyzer crash is a finding
        out.violations.append(
            Violation("analysis-error", "*", f"flagtrace raised {type(exc).__name__}: {exc}")
        )
        return out
    out.seconds_analysis = time.perf_counter() - start
    for err in report.errors:
        out.violations.append(
            Violation("analysis-error", "*", f"{err.path}:{err.line}: {err.message}")
        )
    verdicts = {}
    for flag in report.flags:
        for v in flag.entries:
            verdicts[v.entry] = v
    # a process runs one program root (flagtrace's promise, ``flagtrace.programs``): an
    # entry a root reaches runs the way that root runs it, and a generated program has no
    # input, so running the root is every run of it there is; an entry no root reaches may
    # run after any other entry (the pairs)
    reach = {src.root_name(r): src.reach(src.root_name(r)) for r in src.roots}

    def may_follow(first: str, entry: str) -> bool:
        return not any(entry in r for r in reach.values())  # any first entry, if none

    root_reads: dict[str, list[RootRead]] = {}
    fresh, after = run_program(
        root,
        entries,
        src.read_sites,
        pairs=pairs,
        other_reads=src.all_reads,
        roots=src.roots,
        root_reads=root_reads,
    )
    in_root: dict[str, list[str]] = {}
    for name, reads in root_reads.items():
        for entry_run, path, line, value, callers in reads:
            if entry_run is None or value == "False" or (path, line) not in src.read_sites:
                continue
            # an entry called inside a ``with`` (by the root or by another entry) runs
            # with the flag that ``with`` set: the caller's business, which flagtrace
            # judges from the caller (the entry itself is judged as it starts: fresh,
            # or after sticky writes left the flag set)
            if any(src.inside_with(cp, cl) for cp, cl in callers):
                continue
            in_root.setdefault(entry_run, []).append(f"{path}:{line} (root {name})")
    out.truncated_runs = sum(r.truncated for r in fresh.values())
    out.truncated_runs += sum(r.truncated for runs in after.values() for _, r in runs)
    for entry in entries:
        v = verdicts.get(entry)
        run = fresh[entry]
        saw_after = [
            (first, r)
            for first, r in after.get(entry, [])
            if r.saw_set and may_follow(first, entry)
        ]
        if v is None:
            out.violations.append(Violation("analysis-error", entry, "no verdict for this entry"))
            continue
        eo = EntryOutcome(
            entry,
            v.observes_set,
            v.evidence,
            v.reason,
            v.witness,
            run.saw_set,
            bool(saw_after),
            saw_set_internal=run.saw_set_anywhere and not run.saw_set,
            saw_set_in_root=entry in in_root,
            rooted=any(entry in r for r in reach.values()),
            sticky_scope=getattr(v, "sticky_scope", None),
        )
        out.entries.append(eo)
        if entry in in_root and not v.observes_set:
            out.violations.append(
                Violation(
                    "false-never-in-root-run",
                    entry,
                    f"a run of a program root read the flag set at {in_root[entry][0]} "
                    f"while the entry ran; flagtrace: {v.reason}",
                )
            )
        if run.saw_set and not v.observes_set:
            sites = ", ".join(f"{p}:{line}" for p, line in run.set_reads)
            out.violations.append(
                Violation(
                    "false-never",
                    entry,
                    f"a fresh run read the flag set at {sites}; flagtrace: {v.reason}",
                )
            )
        elif saw_after and not v.observes_set:
            first, r = saw_after[0]
            sites = ", ".join(f"{p}:{line}" for p, line in r.set_reads)
            out.violations.append(
                Violation(
                    "false-never-after-entry",
                    entry,
                    f"after {first} ran first, it read the flag set at {sites}; "
                    f"flagtrace: {v.reason}",
                )
            )
        if v.observes_set:
            problems = witness_problems(src, entry, v.witness)
            if problems:
                shown = "\n      ".join(_step_text(s) for s in v.witness)
                out.violations.append(
                    Violation(
                        "bogus-witness",
                        entry,
                        "; ".join(problems) + f"\n    witness:\n      {shown}",
                    )
                )
            if eo.false_positive:
                eo.fp_cause = classify_fp(src, eo, run)
    return out


def classify_fp(src: Source, eo: EntryOutcome, run: EntryRun) -> str:
    """Why flagtrace says *observes set* where no fresh run saw it (a guess from the witness)."""
    pre = [s for s in eo.witness if s.before_entry and not s.setting]
    main = [s for s in eo.witness if not s.before_entry and not s.setting]
    if pre:
        where = (
            "in a program root that reaches the entry"
            if eo.sticky_scope == "root"
            else "elsewhere, no program root reaches the entry"
            if eo.rooted is False
            else "elsewhere"
        )
        if eo.saw_set_after:
            return f"sticky setter {where} (seen when another entry ran first)"
        return f"sticky setter {where} (never seen set in any entry order)"
    for s in main:
        rel = _rel(src.root, s.location.path)
        if (rel, s.location.line) not in run.lines:
            guard = s.guard or ""
            if any(w in guard for w in ("False", "DEBUG")):
                return "branch not taken (constant condition)"
            if guard:
                return "branch not taken (condition on n / recursion depth)"
            return "witness path not executed (after a return/raise, or a loop/call not run)"
    return "flow imprecision (every witness step ran, but not with the flag set)"


# ----------------------------------------------------------------------------- saved cases


@dataclass
class SavedCase:
    """``fixtures/soundness/<name>/``: a minimal program the oracle once failed on.

    ``case.json`` holds ``entries``, ``violations`` (the kinds the oracle reports while
    the engine bug is there) and, while it is, ``xfail`` (what flagtrace gets wrong).
    """

    name: str
    root: Path
    entries: list[str]
    violations: list[str]
    xfail: str | None

    @classmethod
    def load(cls, root: Path) -> SavedCase:
        data = json.loads((root / "case.json").read_text(encoding="utf-8"))
        unknown = set(data) - {"entries", "violations", "xfail", "fixed"}
        if unknown:
            raise ValueError(f"{root}/case.json: unknown keys {sorted(unknown)}")
        return cls(
            root.name,
            root,
            list(data["entries"]),
            list(data.get("violations", [])),
            data.get("xfail"),
        )


def saved_cases(directory: Path) -> list[SavedCase]:
    return [SavedCase.load(p.parent) for p in sorted(directory.glob("*/case.json"))]


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    """Counts over many programs: verdicts, violations, false positives by cause."""
    entries = [e for o in outcomes for e in o.entries]
    said_set = [e for e in entries if e.observes_set]
    fps = [e for e in said_set if e.false_positive]
    fps_strict = [e for e in fps if not e.saw_set_after]
    fps_fresh = [e for e in said_set if e.fresh_false_positive]
    causes: dict[str, int] = {}
    for e in fps:
        causes[e.fp_cause or "?"] = causes.get(e.fp_cause or "?", 0) + 1
    kinds: dict[str, int] = {}
    for o in outcomes:
        for v in o.violations:
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
    return {
        "programs": len(outcomes),
        "entries": len(entries),
        "observed_set_fresh": sum(1 for e in entries if e.saw_set),
        "observed_set_any_order": sum(1 for e in entries if e.saw_set or e.saw_set_after),
        "observed_set_only_in_setters": sum(1 for e in entries if e.saw_set_internal),
        "flagtrace_observes_set": len(said_set),
        "false_positives": len(fps),
        "fp_rate": len(fps) / len(said_set) if said_set else 0.0,
        "false_positives_any_order": len(fps_strict),
        "fp_rate_any_order": len(fps_strict) / len(said_set) if said_set else 0.0,
        "false_positives_fresh_only": len(fps_fresh),
        "fp_rate_fresh_only": len(fps_fresh) / len(said_set) if said_set else 0.0,
        "entries_rooted": sum(1 for e in entries if e.rooted),
        "observed_set_in_root_runs": sum(1 for e in entries if e.saw_set_in_root),
        "fp_causes": dict(sorted(causes.items(), key=lambda kv: -kv[1])),
        "violations": dict(sorted(kinds.items())),
        "programs_with_violations": sum(1 for o in outcomes if o.violations),
        "truncated_runs": sum(o.truncated_runs for o in outcomes),
    }


def format_summary(s: dict[str, Any]) -> str:
    lines = [
        f"soundness oracle: {s['programs']} programs, {s['entries']} entries; "
        f"{s['observed_set_fresh']} read the flag set in a fresh run "
        f"({s['observed_set_any_order']} in some order of entries; "
        f"{s['observed_set_only_in_setters']} more only at a setter's own `prev = FLAG`)",
        f"  violations: {sum(s['violations'].values())} "
        f"in {s['programs_with_violations']} programs "
        + (
            f"({', '.join(f'{k} {v}' for k, v in s['violations'].items())})"
            if s["violations"]
            else ""
        ),
        f"  program roots reach {s['entries_rooted']} entries; "
        f"{s['observed_set_in_root_runs']} read the flag set in a run of a root",
        f"  flagtrace says observes set: {s['flagtrace_observes_set']}; "
        "false positives (no fresh run of the entry and no run of a program root saw it): "
        f"{s['false_positives']} = {s['fp_rate']:.1%}; not seen in any order of entries either: "
        f"{s['false_positives_any_order']} = {s['fp_rate_any_order']:.1%}; "
        f"not seen in a fresh run of the entry (the figure before program roots): "
        f"{s['false_positives_fresh_only']} = {s['fp_rate_fresh_only']:.1%}",
    ]
    for cause, n in s["fp_causes"].items():
        lines.append(f"    {n:4d}  {cause}")
    if s["truncated_runs"]:
        lines.append(f"  ({s['truncated_runs']} runs were cut short by the tracer's step budget)")
    return "\n".join(lines)
