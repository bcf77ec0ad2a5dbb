"""The hazard oracle: generated setters run for real, compared with flagtrace's hazards.

Why: FT101-FT103 are what a pre-commit hook fails a commit on, and reachability's
oracle (``oracle.py``) says nothing about them. Each generated *case* is one setter,
written the way real projects write them, in its own module ``pkg/c<i>/state.py``
(flag ``FLAG = False``, or ``FLAG = 0``), combining:

* the setter's kind: ``@contextmanager`` (``cm``), a class with ``__enter__`` /
  ``__exit__`` (``class``, its ``__exit__`` may return True), a plain function
  ``run(fn, x)`` that sets, calls ``fn`` and resets (``func``);
* how the flag is set and reset: ``global`` write, ``mod.FLAG = v`` (``attr``),
  ``setattr(mod, "FLAG", v)``, tuple assignment, a helper function (``_on()``), a
  helper method (``_CTL.on()``), a parameterized setter paired by the caller
  (``_put(True) ... _put(False)``);
* reset to a constant, or restore of a value saved in a local, on ``self``, or on a
  module-level stack, or a counter (``FLAG += 1`` ... ``FLAG -= 1``, ``count``: in
  the setter's own function, or in ``__enter__`` and ``__exit__``, as a ``global``
  or ``mod.FLAG`` write);
* where the reset is: in ``finally``, after the ``yield``/call without ``try``, nowhere;
* guards against nesting (``assert not FLAG``, ``if FLAG: raise``) before or inside the
  ``try``; statements between the set and the ``try`` (harmless bookkeeping, a loop
  with ``break``/``continue``, a call into analysed code that raises on one input, a
  call into ``json`` that raises on one input, ``assert``, ``if ...: raise``, an early
  ``return``); ``except Exception`` handlers that call and re-raise; statements in
  ``finally`` before the reset.

Every statement that can raise raises on exactly one input ``x`` (its own number; the
``with`` body / ``fn`` raises on ``x == -1``), so each can raise independently and
"can raise" is a behavioural fact. ``run_cases`` runs the cases in one subprocess
(``_DRIVER``) and answers per case:

* FT103: some input makes the setter complete normally with the flag left set;
* FT101: not FT103, and some input makes an exception leave the setter (or the
  ``with`` statement) with the flag set;
* FT102: used inside itself, the inner use completes and the flag is no longer set
  as the outer use set it (a guard that makes nesting fail loudly is not FT102).

"Set" is the flag's truth, as flagtrace sees a flag: a counter is set above 0.

``analyse_cases`` asks flagtrace for the hazards of every case's flag in one analysis;
``compare`` lists the cases whose codes differ.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.soundness.programs import Chooser, DrawChooser, RandomChooser

CODES = ("FT101", "FT102", "FT103")
BODY_RAISES = -1  # the input on which the ``with`` body / ``fn`` raises

KINDS = ("cm", "func", "class")
SET_FORMS = ("global", "attr", "setattr", "tuple", "helper", "method", "param")
RESET_FORMS = ("global", "attr", "setattr", "tuple", "helper", "method")
# statements between the set and the ``try``; the raising ones get an input number
BETWEEN = ("harmless", "loop", "note", "fail", "ext", "assert", "if_raise", "return")
RAISING = {"fail", "ext", "assert", "if_raise"}


@dataclass(frozen=True)
class Case:
    kind: str
    set_form: str
    reset_form: str
    restore: str  # "const", "local", "self", "stack", "count"
    reset_pos: str  # "finally", "after", "none" (class: "finally" means in __exit__)
    guard: str  # "none", "assert", "if_raise", "in_try"
    between: tuple[str, ...]
    handler: str  # "none", "note", "ext"
    final_pre: str  # "none", "harmless", "fail", "ext"
    exit_true: bool = False
    #: the flag's first value, which a constant reset writes back: ``False``, or ``0``
    #: (a counter, a level: the reset ``FLAG = 0`` is no set)
    initial: str = "False"

    @property
    def has_try(self) -> bool:
        if self.kind == "class":
            return False
        return self.reset_pos == "finally" or self.handler != "none" or self.guard == "in_try"

    @property
    def shape(self) -> str:
        """A short label for the benchmark's counts per shape."""
        parts = [self.kind, f"set={self.set_form}", f"reset={self.reset_pos}/{self.restore}"]
        if self.initial != "False":
            parts.append(f"initial={self.initial}")
        return " ".join(parts)


def generate(ch: Chooser) -> Case:
    kind = ch.choice(KINDS)
    set_form = ch.choice(SET_FORMS)
    reset_form = ch.choice(RESET_FORMS)
    if kind == "class":
        restore = ch.choice(("const", "self", "stack"))
        reset_pos = ch.choice(("finally", "none"))
        guard = ch.choice(("none", "assert", "if_raise"))
    else:
        restore = ch.choice(("const", "local", "stack"))
        reset_pos = ch.choice(("finally", "after", "none"))
        guard = ch.choice(("none", "assert", "if_raise", "in_try"))
        if guard == "in_try" and reset_pos != "finally":
            guard = "assert"  # a ``try`` needs a ``finally`` or a handler
    options = BETWEEN if kind == "func" else BETWEEN[:-1]
    between = tuple(ch.choice(options) for _ in range(ch.integer(0, 2)))
    handler = "none" if kind == "class" else ch.choice(("none", "note", "ext"))
    final_pre = ch.choice(("none", "harmless", "fail", "ext")) if reset_pos != "none" else "none"
    exit_true = kind == "class" and ch.chance(30)
    initial = ch.choice(("False", "0"))
    return Case(
        kind, set_form, reset_form, restore, reset_pos, guard, between, handler, final_pre,
        exit_true, initial,
    )  # fmt: skip


def random_cases(seed: int, n: int) -> list[Case]:
    ch = RandomChooser(random.Random(seed))
    return [generate(ch) for _ in range(n)]


def hypothesis_cases(n: int) -> Any:
    """The hypothesis strategy of a batch of ``n`` cases (shrinks to one minimal case)."""
    from hypothesis import strategies as st

    @st.composite
    def one(draw: Callable[[Any], Any]) -> Case:
        return generate(DrawChooser(draw))

    return st.lists(one(), min_size=1, max_size=n)


# ----------------------------------------------------------------------------- rendering


class _Src:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.k = 0  # inputs handed out to raising statements

    def add(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def next_input(self) -> int:
        self.k += 1
        return self.k


def _value_write(form: str, value: str) -> str:
    """A statement writing ``value`` to the flag in ``form``."""
    return {
        "global": f"FLAG = {value}",
        "attr": f"_st.FLAG = {value}",
        "setattr": f'setattr(_st, "FLAG", {value})',
        "tuple": f"FLAG, OTHER = {value}, 1",
        "helper": f"_put({value})",
        "method": f"_CTL.put({value})",
        "param": f"_put({value})",
    }[form]


def _set_stmt(form: str) -> str:
    return {"helper": "_on()", "method": "_CTL.on()"}.get(form) or _value_write(form, "True")


def _raising(src: _Src, ind: int, what: str) -> None:
    """A statement of kind ``what`` (see ``BETWEEN``); raising ones raise on their input."""
    if what == "harmless":
        src.add(ind, "n = len(_LOG)")
        src.add(ind, "ok = isinstance(x, int)")
        src.add(ind, "_LOG.append(x)")
    elif what == "loop":
        src.add(ind, 'for key, val in {"a": 1, "b": 2}.items():')
        src.add(ind + 1, 'if key == "b":')
        src.add(ind + 2, "break")
        src.add(ind + 1, "if val < 0:")
        src.add(ind + 2, "continue")
        src.add(ind + 1, 'setattr(_st, "OTHER", val)')
    elif what == "note":
        src.add(ind, "_note(x)")
    elif what == "fail":
        src.add(ind, f"_fail(x, {src.next_input()})")
    elif what == "ext":
        src.add(ind, f'json.loads("{{" if x == {src.next_input()} else "1")')
    elif what == "assert":
        src.add(ind, f"assert x != {src.next_input()}")
    elif what == "if_raise":
        src.add(ind, f"if x == {src.next_input()}:")
        src.add(ind + 1, 'raise ValueError("refused")')
    elif what == "return":
        src.add(ind, f"if x == {src.next_input()}:")
        src.add(ind + 1, "return None")
    else:  # pragma: no cover - a typo in the generator
        raise ValueError(what)


def render(case: Case, package: str) -> str:
    """The module ``<package>.state`` for ``case``."""
    src = _Src()
    add = src.add
    add(0, "import json")
    add(0, "from contextlib import contextmanager")
    add(0, "")
    add(0, f"from {package} import state as _st")
    add(0, "")
    add(0, f"FLAG = {case.initial}")
    add(0, "OTHER = 0")
    add(0, "_LOG = []")
    add(0, "_STACK = []")
    add(0, "")
    add(0, "")
    add(0, "def _note(x):")
    add(1, "_LOG.append(x)")
    add(1, "return len(_LOG)")
    add(0, "")
    add(0, "")
    add(0, "def _fail(x, k):")
    add(1, "if x == k:")
    add(2, 'raise ValueError("fail")')
    add(1, "return x")
    resets = case.reset_form if case.reset_pos != "none" else ""
    if resets == "helper" or case.set_form == "param":
        add(0, "")
        add(0, "")
        add(0, "def _put(value):")
        add(1, "global FLAG")
        add(1, "FLAG = value")
    if case.set_form == "helper":
        add(0, "")
        add(0, "")
        add(0, "def _on():")
        add(1, "global FLAG")
        add(1, "FLAG = True")
    if "method" in (case.set_form, resets):
        add(0, "")
        add(0, "")
        add(0, "class _Ctl:")
        if case.set_form == "method":
            add(1, "def on(self):")
            add(2, "global FLAG")
            add(2, "FLAG = True")
        if case.set_form == "method" and resets == "method":
            add(0, "")
        if resets == "method":
            add(1, "def put(self, value):")
            add(2, "global FLAG")
            add(2, "FLAG = value")
        add(0, "")
        add(0, "")
        add(0, "_CTL = _Ctl()")
    add(0, "")
    add(0, "")
    if case.kind == "class":
        _render_class(case, src)
    else:
        _render_function(case, src)
    return "\n".join(src.lines) + "\n"


def _guard(src: _Src, ind: int, guard: str) -> None:
    if guard in ("assert", "in_try"):
        src.add(ind, 'assert not FLAG, "already set"')
    elif guard == "if_raise":
        src.add(ind, "if FLAG:")
        src.add(ind + 1, 'raise RuntimeError("already set")')


def _count_write(case: Case, op: str) -> str:
    """A counter's step (``count``): ``+=`` sets, ``-=`` takes it back."""
    return f"_st.FLAG {op} 1" if case.set_form == "attr" else f"FLAG {op} 1"


def _save(src: _Src, ind: int, case: Case) -> str:
    """Save the flag; the expression that restores it."""
    if case.restore == "count":
        return "count"  # nothing saved: the reset takes back what the set added
    if case.restore == "const":
        return case.initial
    if case.restore == "stack":
        src.add(ind, "_STACK.append(FLAG)")
        return "_STACK.pop()"
    if case.restore == "self":
        src.add(ind, "self._prev = FLAG")
        return "self._prev"
    if case.reset_form == "tuple":
        src.add(ind, "saved = (FLAG, OTHER)")
        return "saved"
    src.add(ind, "prev = _st.FLAG" if case.reset_form == "attr" else "prev = FLAG")
    return "prev"


def _reset(src: _Src, ind: int, case: Case, value: str) -> None:
    if case.restore == "count":
        src.add(ind, _count_write(case, "-="))
    elif case.reset_form == "tuple" and value == "saved":
        src.add(ind, "FLAG, OTHER = saved")
    else:
        src.add(ind, _value_write(case.reset_form, value))


def _final_pre(src: _Src, ind: int, case: Case) -> None:
    if case.final_pre == "harmless":
        src.add(ind, "_LOG.append(len(_LOG))")
    elif case.final_pre in ("fail", "ext"):
        _raising(src, ind, case.final_pre)


def _render_function(case: Case, src: _Src) -> None:
    add = src.add
    if case.kind == "cm":
        add(0, "@contextmanager")
        add(0, "def setter(x):")
        body = ["yield"]
    else:
        add(0, "def run(fn, x):")
        body = ["result = fn(x)"]
    add(1, "global FLAG, OTHER")
    if case.guard != "in_try":
        _guard(src, 1, case.guard)
    value = _save(src, 1, case)
    ind = 1
    if case.guard == "in_try":
        add(1, "try:")
        ind = 2
        _guard(src, 2, case.guard)
    add(ind, _count_write(case, "+=") if case.restore == "count" else _set_stmt(case.set_form))
    for b in case.between:
        _raising(src, ind, b)
    if case.has_try and case.guard != "in_try":
        add(1, "try:")
        ind = 2
    for line in body:
        add(ind, line)
    if case.has_try:
        if case.handler != "none":
            add(1, "except Exception as e:")
            _raising(src, 2, case.handler)
            add(2, "raise")
        if case.reset_pos == "finally":
            add(1, "finally:")
            _final_pre(src, 2, case)
            _reset(src, 2, case, value)
    if case.reset_pos == "after":
        _final_pre(src, 1, case)
        _reset(src, 1, case, value)
    if case.kind == "func":
        add(1, "return result")


def _render_class(case: Case, src: _Src) -> None:
    add = src.add
    add(0, "class Mode:")
    add(1, "def __init__(self, x):")
    add(2, "self.x = x")
    add(0, "")
    add(1, "def __enter__(self):")
    add(2, "global FLAG, OTHER")
    add(2, "x = self.x")
    _guard(src, 2, case.guard)
    value = _save(src, 2, case)
    add(2, _count_write(case, "+=") if case.restore == "count" else _set_stmt(case.set_form))
    for b in case.between:
        _raising(src, 2, b)
    add(2, "return self")
    add(0, "")
    add(1, "def __exit__(self, *exc):")
    add(2, "global FLAG, OTHER")
    add(2, "x = self.x")
    if case.reset_pos != "none":
        _final_pre(src, 2, case)
        _reset(src, 2, case, value)
    add(2, "return True" if case.exit_true else "return None")


def write_package(root: Path, cases: Sequence[Case]) -> list[str]:
    """Write ``pkg/c<i>/state.py`` per case under ``root``; the flags' qualnames."""
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    flags = []
    for i, case in enumerate(cases):
        d = root / "pkg" / f"c{i}"
        d.mkdir(exist_ok=True)
        (d / "__init__.py").write_text("", encoding="utf-8")
        (d / "state.py").write_text(render(case, f"pkg.c{i}"), encoding="utf-8")
        flags.append(f"pkg.c{i}.state.FLAG")
    return flags


# ----------------------------------------------------------------------------- running

_DRIVER = r"""
import importlib, json, sys

root, spec = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, root)
BODY = -1


def answer(i, kind, inputs):
    mod = importlib.import_module(f"pkg.c{i}.state")
    start = mod.FLAG

    def unit(x, body):
        if kind == "cm":
            with mod.setter(x):
                body(x)
        elif kind == "class":
            with mod.Mode(x):
                body(x)
        else:
            mod.run(body, x)

    def body(x):
        if x == BODY:
            raise KeyError("body")

    def fresh():
        mod.FLAG = start
        mod._STACK.clear()

    codes = set()
    leaked = False
    for x in [0, BODY, *range(1, inputs + 1)]:
        fresh()
        try:
            unit(x, body)
        except Exception:
            if mod.FLAG:  # set or not, as flagtrace sees a flag (a counter: above 0)
                leaked = True
        else:
            if mod.FLAG:
                codes.add("FT103")
    if leaked and "FT103" not in codes:
        codes.add("FT101")
    fresh()
    seen = []

    def outer(x):
        outer_value = mod.FLAG
        try:
            unit(0, lambda y: None)
        except Exception:
            return
        seen.append(bool(mod.FLAG) == bool(outer_value))

    try:
        unit(0, outer)
    except Exception:
        pass
    if seen and not seen[0]:
        codes.add("FT102")
    return sorted(codes)


print(json.dumps({str(i): answer(i, kind, n) for i, kind, n in spec}))
"""


def inputs_of(case: Case) -> int:
    """How many inputs make some statement raise (or return early)."""
    n = sum(1 for b in case.between if b in RAISING or b == "return")
    n += case.handler in ("fail", "ext")
    n += case.final_pre in ("fail", "ext")
    return n + 2  # slack: an input past the last one raises nowhere


def run_cases(root: Path, cases: Sequence[Case]) -> dict[int, list[str]]:
    """The behavioural hazards of each case, from one subprocess."""
    spec = [[i, c.kind, inputs_of(c)] for i, c in enumerate(cases)]
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(root), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the hazard driver failed:\n{proc.stderr}")
    return {int(k): v for k, v in json.loads(proc.stdout).items()}


@dataclass
class Finding:
    codes: list[str]
    hazards: list[str] = field(default_factory=list)  # "FT101 fn line: message"


def analyse_cases(root: Path, flags: Sequence[str]) -> dict[int, Finding]:
    """flagtrace's hazards (FT101-FT103) per case, from one analysis."""
    from flagtrace.api import analyze

    report = analyze([str(root / "pkg")], list(flags), jobs=1)
    if report.errors:
        raise RuntimeError("flagtrace reported errors: " + "; ".join(map(str, report.errors)))
    out: dict[int, Finding] = {}
    for fr in report.flags:
        i = int(fr.qualname.split(".")[1][1:])
        hs = [h for h in fr.hazards if h.code in CODES]
        out[i] = Finding(
            sorted({h.code for h in hs}),
            [f"{h.code} {h.function}:{h.location.line}: {h.message}" for h in hs],
        )
    return out


@dataclass
class Difference:
    index: int
    case: Case
    source: str
    behaviour: list[str]
    flagtrace: Finding

    def __str__(self) -> str:
        found = "\n".join(f"    {h}" for h in self.flagtrace.hazards) or "    (none)"
        return (
            f"case {self.index} ({self.case.shape}): running it gives {self.behaviour}, "
            f"flagtrace gives {self.flagtrace.codes}\n{self.source}\n"
            f"  flagtrace's hazards:\n{found}"
        )


BATCH = 50  # cases per subprocess and analysis: one flag's analysis walks every module


def compare(root: Path, cases: Sequence[Case]) -> list[Difference]:
    """Write, run and analyse ``cases`` under ``root`` (in batches of ``BATCH``);
    the cases where running and flagtrace disagree, numbered from 0 over ``cases``."""
    return compare_with_behaviour(root, cases)[0]


def compare_with_behaviour(
    root: Path, cases: Sequence[Case]
) -> tuple[list[Difference], dict[int, list[str]]]:
    """``compare``, and what running each case gave (for the benchmark's counts)."""
    out: list[Difference] = []
    behaviour: dict[int, list[str]] = {}
    for start in range(0, len(cases), BATCH):
        batch = root / f"batch{start // BATCH}"
        diffs, got = _compare_batch(batch, cases[start : start + BATCH])
        for d in diffs:
            d.index += start
            out.append(d)
        behaviour.update({start + i: codes for i, codes in got.items()})
    return out, behaviour


def _compare_batch(
    root: Path, cases: Sequence[Case]
) -> tuple[list[Difference], dict[int, list[str]]]:
    flags = write_package(root, cases)
    behaviour = run_cases(root, cases)
    static = analyse_cases(root, flags)
    out = []
    for i, case in enumerate(cases):
        found = static.get(i, Finding([]))
        if behaviour[i] != found.codes:
            source = (root / "pkg" / f"c{i}" / "state.py").read_text(encoding="utf-8")
            out.append(Difference(i, case, source, behaviour[i], found))
    return out, behaviour
