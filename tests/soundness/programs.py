"""Small random programs with a global flag, for the soundness oracle.

A program is a package ``pkg`` on disk: ``pkg/state.py`` holds ``FLAG = False``
and the setters (``@contextmanager`` generators with and without ``try/finally``,
restoring the saved value or resetting to a constant; classes with
``__enter__``/``__exit__``; the sticky ``set_flag(v)``; the accessor ``is_on()``),
and 1-3 modules ``pkg/m1.py``... hold functions ``f0``, ``f1``... (some may live in
``state.py`` too) that call each other, enter setters (nested), call the sticky
setter, read the flag, branch on parameters and constants, loop over small ranges,
return early, raise ``ValueError`` and catch it further up the stack.

Every line that reads the flag in the code *using* it ends with ``# read`` (the
setters' own ``prev = FLAG`` and the accessor's body are not marked); no line both
reads and writes the flag, so the value at the start of a marked line is the value
the read sees. The tracer (``tracer.py``) records that value at every marked line.

Termination and determinism: ``f0``..``f{e-1}`` are the entries (no parameters;
their first statement is ``n = K``); the other functions take ``n``. A call to a
function with a higher index passes ``n`` (or, from an entry, a literal 0..2); a call
to a lower or equal index (recursion) is always ``if n > 0: fj(n - 1)``. Every
cycle of calls therefore decreases ``n``; loops are ``for _ in range(1 or 2)``.

The generator draws from a :class:`Chooser`, so the same code is driven by
hypothesis (the property test, which shrinks) and by ``random.Random`` (the
benchmark). Every choice shrinks towards the simpler program: fewer statements,
fewer features, the first option of each list.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

READ_MARK = "# read"
SUPPRESS = "<suppress>"  # the with item ``contextlib.suppress(ValueError)``
FLAG_QUALNAME = "pkg.state.FLAG"


# ----------------------------------------------------------------------------- choosers


class Chooser(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...

    def chance(self, percent: int) -> bool:
        """True about ``percent`` % of the time; shrinks to False."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``; shrinks to the first."""
        ...


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def chance(self, percent: int) -> bool:
        return self.rng.randrange(100) < percent

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


class DrawChooser:
    """Adapts hypothesis' ``draw`` (from ``st.composite``)."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(self.st.integers(lo, hi)))

    def chance(self, percent: int) -> bool:
        return int(self.draw(self.st.integers(0, 99))) >= 100 - percent

    def choice(self, options: Sequence[T]) -> T:
        return options[int(self.draw(self.st.integers(0, len(options) - 1)))]


# ----------------------------------------------------------------------------- the plan


@dataclass
class CM:
    """``@contextmanager`` setter in state.py."""

    name: str
    finally_: bool  # the reset is in ``finally``
    restore: bool  # ``FLAG = prev`` instead of ``FLAG = False``
    value: bool = True  # the value it sets (False: a "disable" manager)
    set_in_try: bool = False  # ``FLAG = value`` inside the ``try``
    from_import: bool = False  # ``from contextlib import contextmanager``
    home: str = "state"  # the module it is defined in (elsewhere: ``state.FLAG = True``)


@dataclass
class ClassCM:
    """Class with ``__enter__`` (sets True) and ``__exit__``."""

    name: str
    restore: bool  # ``FLAG = self.prev`` instead of ``FLAG = False``
    suppress: bool = False  # ``__exit__`` returns True: swallows the exception
    home: str = "state"


@dataclass
class Stmt:
    kind: str
    # call: target function name, argument text; with: items; read: form; sticky/write: value
    target: str = ""
    arg: str = ""
    items: tuple[str, ...] = ()
    form: str = ""
    value: str = ""
    cond: str = ""
    count: int = 0
    body: list[Stmt] = field(default_factory=list)
    orelse: list[Stmt] = field(default_factory=list)
    final: list[Stmt] = field(default_factory=list)


@dataclass
class Func:
    name: str
    index: int
    module: str  # "state" or "m1".."m3"
    entry: bool
    n0: int = 0  # an entry's ``n = n0``
    body: list[Stmt] = field(default_factory=list)


@dataclass
class Module:
    name: str
    # how it names state's things: "state" (``from pkg import state``), "pkg" (``import
    # pkg.state``), "from" (``from pkg.state import cm1``)
    style: str


@dataclass
class MainBlock:
    """``if __name__ == "__main__":`` at the end of ``module``: the program's root.

    ``calls`` are ``call`` and ``sticky`` statements run in order, each ``call`` of an
    entry wrapped in ``try``/``except ValueError`` when ``guarded`` (a program that goes
    on after a failed step, so what the step left set is seen by the next)."""

    module: str
    calls: list[Stmt] = field(default_factory=list)
    guarded: bool = False


@dataclass
class Program:
    """A generated program: the plan and its rendered files."""

    modules: list[Module]
    cms: list[CM]
    classes: list[ClassCM]
    sticky: bool
    accessor: bool
    funcs: list[Func]
    files: dict[str, str] = field(default_factory=dict)  # "pkg/m1.py" -> source
    sticky_home: str = "state"
    accessor_home: str = "state"
    #: program roots: ``__main__`` blocks, and console scripts (pyproject.toml) naming a function
    mains: list[MainBlock] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)

    def home_of(self, name: str) -> str:
        """The module a setter or the accessor is defined in."""
        if name == "set_flag":
            return self.sticky_home
        if name == "is_on":
            return self.accessor_home
        for x in [*self.cms, *self.classes]:
            if x.name == name:
                return x.home
        raise KeyError(name)

    @property
    def entries(self) -> list[str]:
        return [f"pkg.{f.module}.{f.name}" for f in self.funcs if f.entry]

    @property
    def lines(self) -> int:
        return sum(src.count("\n") for src in self.files.values())

    def __repr__(self) -> str:
        # hypothesis prints the falsifying example with repr: show the program, not the plan
        return f"<program, entries {', '.join(self.entries)}:\n{self.source()}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis' pretty printer
        printer.text(repr(self))

    def write(self, root: Path) -> Path:
        """Write the package under ``root`` (which becomes the analysed directory)."""
        for rel, src in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(src, encoding="utf-8")
        return root

    def source(self) -> str:
        """All files, for failure messages."""
        out = []
        for rel in sorted(self.files):
            out.append(f"# ---- {rel}")
            out.append(self.files[rel].rstrip("\n"))
        out.append(f"# entries: {', '.join(self.entries)}")
        return "\n".join(out) + "\n"

    def features(self) -> set[str]:
        """Which constructs occur (for the benchmark's breakdown)."""
        out: set[str] = set()
        for cm in self.cms:
            out.add("cm-finally" if cm.finally_ else "cm-no-finally")
            out.add("cm-restore" if cm.restore else "cm-const-reset")
        for cls in self.classes:
            out.add("class-cm-restore-self" if cls.restore else "class-cm-const-reset")
            if cls.suppress:
                out.add("class-cm-suppress")
        if self.sticky:
            out.add("sticky-setter")
        if self.mains:
            out.add("main-block")
        if any(m.module == "tool" for m in self.mains):
            out.add("script-module")
        if self.scripts:
            out.add("console-script")

        def walk(body: list[Stmt]) -> None:
            for s in body:
                out.add(s.kind)
                walk(s.body)
                walk(s.orelse)
                walk(s.final)

        for f in self.funcs:
            walk(f.body)
        return out


# ----------------------------------------------------------------------------- generation

# statement kinds and their weights; the first of each list is where shrinking goes (and what
# hypothesis, which draws 0 often, generates most)
TOP_WEIGHTS = (
    ("with", 24),
    ("call", 22),
    ("read", 14),
    ("if", 8),
    ("try", 8),
    ("for", 4),
    ("ifread", 4),
    ("sticky", 5),
    ("raise", 4),
    ("return", 3),
    ("write", 2),
)
IN_WITH_WEIGHTS = (
    ("call", 35),
    ("read", 25),
    ("with", 10),
    ("if", 6),
    ("try", 5),
    ("for", 3),
    ("ifread", 2),
    ("sticky", 4),
    ("raise", 6),
    ("return", 3),
    ("write", 1),
)
LEAF_WEIGHTS = (
    ("call", 35),
    ("read", 35),
    ("sticky", 8),
    ("raise", 10),
    ("return", 6),
    ("write", 6),
)


def pick(c: Chooser, weights: Sequence[tuple[str, int]]) -> str:
    """A weighted choice drawn as one integer (shrinks to the first option)."""
    x = c.integer(0, sum(w for _, w in weights) - 1)
    for kind, w in weights:
        if x < w:
            return kind
        x -= w
    raise AssertionError("unreachable")


ENTRY_CONDS = ("n > 0", "n > 1", "n == 0", "n % 2 == 1", "DEBUG", "not DEBUG", "False", "True")


class _Gen:
    def __init__(
        self,
        c: Chooser,
        funcs: list[Func],
        has_setter: dict[str, Any],
        budget: int,
        exclude: frozenset[str],
    ) -> None:
        self.exclude = exclude
        self.in_finally = 0
        self.in_with = 0
        self.c = c
        self.funcs = funcs
        self.has = has_setter
        self.budget = budget

    def targets(self, fn: Func) -> list[Func]:
        out = []
        for g in self.funcs:
            if fn.entry:
                if not g.entry or g.index > fn.index:
                    out.append(g)
            elif not g.entry:
                out.append(g)
        # prefer forward calls first (shrinks towards them)
        return sorted(out, key=lambda g: (g.index <= fn.index, g.index))

    def block(self, fn: Func, depth: int, lo: int = 1) -> list[Stmt]:
        c = self.c
        n = c.integer(lo, 3 if depth == 0 else 2)
        out: list[Stmt] = []
        for k in range(n):
            if self.budget <= 0 and (k > 0 or depth > 0 or lo == 0):
                break
            self.budget -= 1
            out.append(self.stmt(fn, depth))
        return out

    def stmt(self, fn: Func, depth: int) -> Stmt:
        c = self.c
        if depth >= 2 or self.budget <= 0:
            weights = LEAF_WEIGHTS
        elif self.in_with:
            weights = IN_WITH_WEIGHTS
        else:
            weights = TOP_WEIGHTS
        kind = pick(c, weights)
        if kind in self.exclude or (kind == "for" and "loops" in self.exclude):
            kind = "read"
        if kind in ("raise", "return") and self.in_finally and "finally-exit" in self.exclude:
            kind = "read"
        targets = self.targets(fn)
        if kind == "call" and not targets:
            kind = "read"
        if kind == "with" and not (self.has["cm"] or self.has["class"]):
            kind = "call" if targets else "read"
        if kind == "ifread" and "ifread" in self.exclude:
            kind = "read"
        if kind == "sticky" and not self.has["sticky"]:
            kind = "read"
        if kind == "read":
            return Stmt("read", form=self.read_form())
        if kind == "call":
            g = c.choice(targets)
            if fn.entry:
                arg = "" if g.entry else str(c.integer(0, 2))
            elif g.index > fn.index:
                arg = "n"
            else:
                arg = "n - 1"  # rendered under ``if n > 0:``
            return Stmt("call", target=g.name, arg=arg)
        if kind == "with":
            items = [self.cm_item()]
            if c.chance(15):
                items.append(self.cm_item())
            self.in_with += 1
            body = self.block(fn, depth + 1)
            self.in_with -= 1
            return Stmt("with", items=tuple(items), body=body)
        if kind == "ifread":
            return Stmt("ifread", form=self.read_form(), body=self.block(fn, depth + 1, lo=0))
        if kind == "if":
            cond = c.choice(ENTRY_CONDS)
            orelse = self.block(fn, depth + 1) if c.chance(30) else []
            return Stmt("if", cond=cond, body=self.block(fn, depth + 1), orelse=orelse)
        if kind == "for":
            return Stmt("for", count=c.integer(1, 2), body=self.block(fn, depth + 1))
        if kind == "try":
            body = self.block(fn, depth + 1)
            handler = self.block(fn, depth + 1, lo=0)
            final: list[Stmt] = []
            if c.chance(25):
                self.in_finally += 1
                final = self.block(fn, depth + 1)
                self.in_finally -= 1
            return Stmt("try", body=body, orelse=handler, final=final)
        if kind == "raise":
            return Stmt("raise")
        if kind == "return":
            return Stmt("return")
        if kind == "sticky":
            return Stmt("sticky", value=c.choice(["True", "False", "True", "n > 1"]))
        # write: a plain assignment of the flag in a function
        return Stmt("write", value=c.choice(["True", "False"]))

    def read_form(self) -> str:
        c = self.c
        if self.has["accessor"] and c.chance(45):
            return "accessor"
        return "direct"

    def cm_item(self) -> str:
        names = list(self.has["names"])
        if "suppress" not in self.exclude and self.c.chance(12):
            return SUPPRESS
        return self.c.choice(names)


#: Constructs ``generate(exclude=...)`` can leave out (to isolate a class of failures).
EXCLUDABLE = (
    "import-pkg-state",  # modules that use ``import pkg.state`` / ``pkg.state.X``
    "from-import",  # modules that use ``from pkg.state import cm1, set_flag``
    "raise",
    "try",
    "return",
    "write",  # ``state.FLAG = True`` in an ordinary function
    "sticky",
    "class-cm",
    "class-suppress",  # ``__exit__`` returning True
    "class-restore",  # ``FLAG = self.prev``
    "cm-no-finally",
    "cm-disable",  # a contextmanager that sets False
    "accessor",
    "state-functions",  # functions f<i> in state.py
    "loops",
    "ifread",
    "finally-exit",  # ``return``/``raise`` inside a ``finally`` block
    "suppress",  # ``with contextlib.suppress(ValueError):``
    "remote-setters",  # setters and the accessor defined outside state.py (``state.FLAG = True``)
    "roots",  # ``__main__`` blocks, a script module, console scripts (program roots)
)


def generate(c: Chooser, exclude: frozenset[str] = frozenset()) -> Program:
    """Draw one program from ``c`` and render it (without the ``exclude``d constructs)."""
    unknown = set(exclude) - set(EXCLUDABLE)
    if unknown:
        raise ValueError(f"unknown constructs to exclude: {sorted(unknown)}")
    n_mods = c.integer(1, 3)
    modules = [Module("state", "bare")]
    styles = ["state"]
    if "import-pkg-state" not in exclude:
        styles.append("pkg")
    if "from-import" not in exclude:
        styles.append("from")
    for i in range(1, n_mods + 1):
        modules.append(Module(f"m{i}", c.choice(styles)))
    cms: list[CM] = []
    for i in range(c.integer(0, 2)):
        finally_ = c.chance(50) or "cm-no-finally" in exclude
        cms.append(
            CM(
                name=f"cm{i + 1}",
                finally_=finally_,
                restore=c.chance(50),
                value=not c.chance(10) or "cm-disable" in exclude,
                set_in_try=finally_ and c.chance(25),
                from_import=c.chance(30),
            )
        )
    classes: list[ClassCM] = []
    if c.chance(35) and "class-cm" not in exclude:
        classes.append(
            ClassCM(
                "Mode",
                restore=c.chance(40) and "class-restore" not in exclude,
                suppress=c.chance(15) and "class-suppress" not in exclude,
            )
        )
    sticky = c.chance(30) and "sticky" not in exclude
    accessor = c.chance(60) and "accessor" not in exclude
    if not cms and not classes and not sticky:
        cms.append(
            CM("cm1", finally_=c.chance(50) or "cm-no-finally" in exclude, restore=c.chance(50))
        )

    def home() -> str:
        # setters defined outside state.py write ``state.FLAG`` (``pkg.state.FLAG``)
        if "remote-setters" in exclude or not c.chance(25):
            return "state"
        return f"m{c.integer(1, n_mods)}"

    for x in [*cms, *classes]:
        x.home = home()
    sticky_home = home() if sticky else "state"
    accessor_home = home() if accessor else "state"
    n_funcs = c.integer(2, 5)
    n_entries = c.integer(1, min(3, n_funcs - 1))
    funcs: list[Func] = []
    for i in range(n_funcs):
        # modules m1.. first (shrinks there), state.py sometimes
        in_state = c.chance(15) and "state-functions" not in exclude
        module = "state" if in_state else f"m{c.integer(1, n_mods)}"
        funcs.append(Func(f"f{i}", i, module, entry=i < n_entries, n0=c.integer(0, 2)))
    has = {
        "cm": bool(cms),
        "class": bool(classes),
        "sticky": sticky,
        "accessor": accessor,
        "names": tuple(x.name for x in cms) + tuple(x.name for x in classes),
    }
    gen = _Gen(c, funcs, has, budget=c.integer(3, 10), exclude=exclude)
    for f in funcs:
        f.body = gen.block(f, 0)
    # drawn last, so a seed's functions are the same with or without roots
    mains, scripts = ([], []) if "roots" in exclude else _roots(c, funcs, modules, sticky, n_mods)
    prog = Program(
        modules,
        cms,
        classes,
        sticky,
        accessor,
        funcs,
        sticky_home=sticky_home,
        accessor_home=accessor_home,
        mains=mains,
        scripts=scripts,
    )
    prog.files = render(prog)
    return prog


def _roots(
    c: Chooser, funcs: list[Func], modules: list[Module], sticky: bool, n_mods: int
) -> tuple[list[MainBlock], list[str]]:
    """Where the program starts, as real programs do: most have a ``__main__`` block that
    runs some entries (sometimes calling the sticky setter first, or going on after a
    step that failed); some have a second script, ``pkg/tool.py``, whose ``__main__``
    calls the sticky setter and helper functions but no entry; some declare an entry as
    a console script. The rest stay libraries: no root, so every sticky write counts."""
    entries = [f for f in funcs if f.entry]
    helpers = [f for f in funcs if not f.entry]
    mains: list[MainBlock] = []
    if c.chance(65):
        main = MainBlock(f"m{c.integer(1, n_mods)}", guarded=c.chance(40))
        if sticky and c.chance(20):
            main.calls.append(Stmt("sticky", value="True"))
        for _ in range(c.integer(1, 2)):
            main.calls.append(Stmt("call", target=c.choice(entries).name))
        mains.append(main)
    if sticky and c.chance(50):
        modules.append(Module("tool", c.choice(["state", "pkg"])))
        tool = MainBlock("tool")
        tool.calls.append(Stmt("sticky", value="True"))
        if helpers and c.chance(50):
            tool.calls.append(Stmt("call", target=c.choice(helpers).name, arg="0"))
        mains.append(tool)
    scripts = []
    if c.chance(15):
        f = c.choice(entries)
        scripts.append(f"pkg.{f.module}:{f.name}")
    return mains, scripts


def hypothesis_programs(exclude: frozenset[str] = frozenset()) -> Any:
    """The hypothesis strategy of programs."""
    from hypothesis import strategies as st

    @st.composite
    def programs(draw: Callable[[Any], Any]) -> Program:
        return generate(DrawChooser(draw), exclude)

    return programs()


def random_program(seed: int, exclude: frozenset[str] = frozenset()) -> Program:
    return generate(RandomChooser(random.Random(seed)), exclude)


# ----------------------------------------------------------------------------- rendering


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _uses(body: list[Stmt], kinds: set[str]) -> bool:
    return any(
        s.kind in kinds or _uses(s.body, kinds) or _uses(s.orelse, kinds) or _uses(s.final, kinds)
        for s in body
    )


def _uses_cond(body: list[Stmt], word: str) -> bool:
    return any(
        word in s.cond
        or _uses_cond(s.body, word)
        or _uses_cond(s.orelse, word)
        or _uses_cond(s.final, word)
        for s in body
    )


class _Renderer:
    def __init__(self, prog: Program, module: Module) -> None:
        self.p = prog
        self.m = module
        self.by_name = {f.name: f for f in prog.funcs}
        self.imports_state = False  # from pkg import state
        self.imports_pkg_state = False  # import pkg.state
        self.from_names: set[str] = set()  # from pkg.state import ...
        self.module_imports: set[str] = set()  # from pkg import mX
        self.needs_contextlib = False

    # names of state's things as this module spells them
    def state_attr(self, name: str) -> str:
        if self.m.name == "state":
            return name
        if self.m.style == "pkg":
            self.imports_pkg_state = True
            return f"pkg.state.{name}"
        self.imports_state = True
        return f"state.{name}"

    def state_callable(self, name: str) -> str:
        if self.m.name != "state" and self.m.style == "from":
            self.from_names.add(name)
            return name
        return self.state_attr(name)

    def setter_ref(self, name: str) -> str:
        """How this module names a setter (or the accessor) of the program."""
        home = self.p.home_of(name)
        if home == self.m.name:
            return name
        if home == "state":
            return self.state_callable(name)
        self.module_imports.add(home)
        return f"{home}.{name}"

    def flag_read(self, form: str) -> str:
        if form == "accessor":
            return self.setter_ref("is_on") + "()"
        return self.state_attr("FLAG")

    def with_item(self, name: str) -> str:
        if name == SUPPRESS:
            self.needs_contextlib = True
            return "contextlib.suppress(ValueError)"
        return self.setter_ref(name) + "()"

    def call_text(self, s: Stmt) -> str:
        g = self.by_name[s.target]
        if g.module == self.m.name:
            name = g.name
        elif g.module == "state":
            name = self.state_attr(g.name)
        else:
            self.module_imports.add(g.module)
            name = f"{g.module}.{g.name}"
        return f"{name}({s.arg})"

    def block(self, out: _Lines, body: list[Stmt], indent: int) -> None:
        if not body:
            out.add(indent, "pass")
            return
        for s in body:
            self.stmt(out, s, indent)

    def stmt(self, out: _Lines, s: Stmt, i: int) -> None:
        k = s.kind
        if k == "read":
            out.add(i, f"v = {self.flag_read(s.form)}  {READ_MARK}")
        elif k == "ifread":
            out.add(i, f"if {self.flag_read(s.form)}:  {READ_MARK}")
            self.block(out, s.body, i + 1)
        elif k == "call":
            if s.arg == "n - 1":
                out.add(i, "if n > 0:")
                out.add(i + 1, self.call_text(s))
            else:
                out.add(i, self.call_text(s))
        elif k == "with":
            items = ", ".join(self.with_item(name) for name in s.items)
            out.add(i, f"with {items}:")
            self.block(out, s.body, i + 1)
        elif k == "if":
            out.add(i, f"if {s.cond}:")
            self.block(out, s.body, i + 1)
            if s.orelse:
                out.add(i, "else:")
                self.block(out, s.orelse, i + 1)
        elif k == "for":
            out.add(i, f"for _ in range({s.count}):")
            self.block(out, s.body, i + 1)
        elif k == "try":
            out.add(i, "try:")
            self.block(out, s.body, i + 1)
            out.add(i, "except ValueError:")
            self.block(out, s.orelse, i + 1)
            if s.final:
                out.add(i, "finally:")
                self.block(out, s.final, i + 1)
        elif k == "raise":
            out.add(i, 'raise ValueError("boom")')
        elif k == "return":
            out.add(i, "return")
        elif k == "sticky":
            out.add(i, f"{self.setter_ref('set_flag')}({s.value})")
        elif k == "write":
            out.add(i, f"{self.state_attr('FLAG')} = {s.value}")
        else:  # pragma: no cover
            raise AssertionError(k)

    def functions(self, out: _Lines) -> None:
        for f in self.p.funcs:
            if f.module != self.m.name:
                continue
            out.add(0, "")
            out.add(0, "")
            out.add(0, f"def {f.name}():" if f.entry else f"def {f.name}(n):")
            if self.m.name == "state" and _uses(f.body, {"write"}):
                out.add(1, "global FLAG")
            if f.entry:
                out.add(1, f"n = {f.n0}")
            self.block(out, f.body, 1)


def _render_setters(prog: Program, r: _Renderer, out: _Lines) -> None:
    """The setters and the accessor defined in ``r``'s module."""
    here = r.m.name
    local = here == "state"
    mine = [x.home for x in [*prog.cms, *prog.classes]] + [prog.sticky_home] * prog.sticky
    mine += [prog.accessor_home] * prog.accessor
    if here not in mine:
        return
    flag = "FLAG" if local else r.state_attr("FLAG")

    def glob(indent: int) -> None:
        if local:
            out.add(indent, "global FLAG")

    for cm in prog.cms:
        if cm.home != here:
            continue
        out.add(0, "")
        out.add(0, "")
        out.add(0, "@contextmanager" if cm.from_import else "@contextlib.contextmanager")
        out.add(0, f"def {cm.name}():")
        glob(1)
        reset = f"{flag} = prev" if cm.restore else f"{flag} = False"
        if cm.restore:
            out.add(1, f"prev = {flag}")
        if cm.finally_:
            if not cm.set_in_try:
                out.add(1, f"{flag} = {cm.value}")
            out.add(1, "try:")
            if cm.set_in_try:
                out.add(2, f"{flag} = {cm.value}")
            out.add(2, "yield")
            out.add(1, "finally:")
            out.add(2, reset)
        else:
            out.add(1, f"{flag} = {cm.value}")
            out.add(1, "yield")
            out.add(1, reset)
    for cls in prog.classes:
        if cls.home != here:
            continue
        out.add(0, "")
        out.add(0, "")
        out.add(0, f"class {cls.name}:")
        out.add(1, "def __enter__(self):")
        glob(2)
        if cls.restore:
            out.add(2, f"self.prev = {flag}")
        out.add(2, f"{flag} = True")
        out.add(2, "return self")
        out.add(0, "")
        out.add(1, "def __exit__(self, *exc):")
        glob(2)
        out.add(2, f"{flag} = self.prev" if cls.restore else f"{flag} = False")
        out.add(2, f"return {cls.suppress}")
    if prog.sticky and prog.sticky_home == here:
        out.add(0, "")
        out.add(0, "")
        out.add(0, "def set_flag(v):")
        glob(1)
        out.add(1, f"{flag} = v")
    if prog.accessor and prog.accessor_home == here:
        out.add(0, "")
        out.add(0, "")
        out.add(0, "def is_on():")
        out.add(1, f"return {flag}")


def _render_main(r: _Renderer, main: MainBlock, out: _Lines) -> None:
    out.add(0, "")
    out.add(0, "")
    out.add(0, 'if __name__ == "__main__":')
    for s in main.calls:
        if s.kind == "call" and main.guarded and r.by_name[s.target].entry:
            out.add(1, "try:")
            r.stmt(out, s, 2)
            out.add(1, "except ValueError:")
            out.add(2, "pass")
        else:
            r.stmt(out, s, 1)


def render(prog: Program) -> dict[str, str]:
    files = {"pkg/__init__.py": ""}
    if prog.scripts:
        lines = ["[project]", 'name = "pkg"', 'version = "0"', "", "[project.scripts]"]
        lines += [f'app{i} = "{target}"' for i, target in enumerate(prog.scripts)]
        files["pyproject.toml"] = "\n".join(lines) + "\n"
    for m in prog.modules:
        r = _Renderer(prog, m)
        body = _Lines()
        _render_setters(prog, r, body)
        r.functions(body)
        for main in prog.mains:
            if main.module == m.name:
                _render_main(r, main, body)
        head = _Lines()
        mine = [f for f in prog.funcs if f.module == m.name]
        cms_here = [cm for cm in prog.cms if cm.home == m.name]
        if any(not cm.from_import for cm in cms_here) or r.needs_contextlib:
            head.add(0, "import contextlib")
        if any(cm.from_import for cm in cms_here):
            head.add(0, "from contextlib import contextmanager")
        if r.imports_pkg_state:
            head.add(0, "import pkg.state")
        tail = _Lines()
        for mod in sorted(r.module_imports):
            # state.py imports the modules it calls at its end: they may import names from it
            (tail if m.name == "state" else head).add(0, f"from pkg import {mod}")
        if tail.lines:
            body.add(0, "")
            body.add(0, "")
            body.lines += tail.lines
        if r.imports_state:
            head.add(0, "from pkg import state")
        if r.from_names:
            head.add(0, f"from pkg.state import {', '.join(sorted(r.from_names))}")
        if head.lines and (m.name == "state" or any(_uses_cond(f.body, "DEBUG") for f in mine)):
            head.add(0, "")
        if m.name == "state":
            head.add(0, "FLAG = False")
        if any(_uses_cond(f.body, "DEBUG") for f in mine):
            head.add(0, "DEBUG = False")
        text = "\n".join(head.lines + body.lines).strip("\n") + "\n"
        files[f"pkg/{m.name}.py"] = text
    return files


# ------------------------------------------------------------------ shrinking (outside hypothesis)


def _lists(prog: Program) -> list[list[Stmt]]:
    """Every statement list of the program, in a fixed order."""
    out: list[list[Stmt]] = []

    def walk(body: list[Stmt]) -> None:
        out.append(body)
        for s in body:
            walk(s.body)
            walk(s.orelse)
            walk(s.final)

    for f in prog.funcs:
        walk(f.body)
    return out


def _all_stmts(prog: Program) -> list[Stmt]:
    return [s for body in _lists(prog) for s in body]


def _drop_calls(prog: Program, name: str) -> None:
    for body in _lists(prog):
        body[:] = [s for s in body if not (s.kind == "call" and s.target == name)]


def _rerendered(prog: Program) -> Program:
    # with items that name no manager any more, accessor reads without an accessor
    names = {cm.name for cm in prog.cms} | {c.name for c in prog.classes} | {SUPPRESS}
    for body in _lists(prog):
        keep = []
        for s in body:
            if s.kind == "with":
                s.items = tuple(i for i in s.items if i in names)
                if not s.items:
                    keep.extend(s.body)
                    continue
            if s.form == "accessor" and not prog.accessor:
                s.form = "direct"
            if s.kind == "sticky" and not prog.sticky:
                continue
            keep.append(s)
        body[:] = keep
    names = {f.name for f in prog.funcs}
    for main in prog.mains:
        main.calls = [
            s
            for s in main.calls
            if (s.kind == "call" and s.target in names) or (s.kind == "sticky" and prog.sticky)
        ]
    prog.scripts = [t for t in prog.scripts if t.rpartition(":")[2] in names]
    used = {f.module for f in prog.funcs} | {x.home for x in [*prog.cms, *prog.classes]}
    used |= {m.module for m in prog.mains}
    used |= {prog.sticky_home, prog.accessor_home}
    prog.modules = [m for m in prog.modules if m.name == "state" or m.name in used]
    prog.files = render(prog)
    return prog


def simpler(prog: Program) -> Any:
    """Programs one step simpler than ``prog`` (a generator of fresh copies)."""
    import copy

    def fresh() -> Program:
        return copy.deepcopy(prog)

    # drop a whole function (and the calls to it)
    for i, f in enumerate(prog.funcs):
        if f.entry and sum(g.entry for g in prog.funcs) == 1:
            continue
        p = fresh()
        gone = p.funcs.pop(i)
        _drop_calls(p, gone.name)
        yield _rerendered(p)
    # drop one statement; unwrap a compound one
    n = len(_all_stmts(prog))
    for k in range(n):
        p = fresh()
        for body in _lists(p):
            if k < len(body):
                del body[k]
                break
            k -= len(body)
        yield _rerendered(p)
    for k in range(n):
        p = fresh()
        for body in _lists(p):
            if k < len(body):
                s = body[k]
                if s.kind in ("with", "if", "for", "try", "ifread"):
                    body[k : k + 1] = s.body
                    break
                p = None  # type: ignore[assignment]
                break
            k -= len(body)
        if p is not None:
            yield _rerendered(p)
    # smaller parts of compound statements
    for k, s in enumerate(_all_stmts(prog)):
        for attr in ("orelse", "final"):
            if getattr(s, attr):
                p = fresh()
                setattr(_all_stmts(p)[k], attr, [])
                yield _rerendered(p)
        if s.kind == "with" and len(s.items) > 1:
            p = fresh()
            t = _all_stmts(p)[k]
            t.items = t.items[:1]
            yield _rerendered(p)
        if s.kind == "read" and s.form == "accessor":
            p = fresh()
            _all_stmts(p)[k].form = "direct"
            yield _rerendered(p)
    # fewer setters and helpers
    for i in range(len(prog.cms)):
        p = fresh()
        p.cms.pop(i)
        yield _rerendered(p)
    if prog.classes:
        p = fresh()
        p.classes = []
        yield _rerendered(p)
    for attr in ("sticky", "accessor"):
        if getattr(prog, attr):
            p = fresh()
            setattr(p, attr, False)
            yield _rerendered(p)
    # plainer spellings: one module, ``from pkg import state``, simple managers
    for i, f in enumerate(prog.funcs):
        if f.module != "m1":
            p = fresh()
            p.funcs[i].module = "m1"
            if not any(m.name == "m1" for m in p.modules):
                p.modules.append(Module("m1", "state"))
            yield _rerendered(p)
    for i, m in enumerate(prog.modules):
        if m.style not in ("state", "bare"):
            p = fresh()
            p.modules[i].style = "state"
            yield _rerendered(p)
    for i, x in enumerate([*prog.cms, *prog.classes]):
        if x.home != "state":
            p = fresh()
            [*p.cms, *p.classes][i].home = "state"
            yield _rerendered(p)
    for attr in ("sticky_home", "accessor_home"):
        if getattr(prog, attr) != "state":
            p = fresh()
            setattr(p, attr, "state")
            yield _rerendered(p)
    for i, cm in enumerate(prog.cms):
        if cm.from_import or cm.set_in_try:
            p = fresh()
            p.cms[i].from_import = p.cms[i].set_in_try = False
            yield _rerendered(p)


def shrink(prog: Program, fails: Callable[[Program], bool], budget: int = 400) -> Program:
    """Greedy: take the first simpler program that still ``fails``, until none does."""
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for cand in simpler(prog):
            tries += 1
            if fails(cand):
                prog = cand
                progress = True
                break
            if tries >= budget:
                break
    return prog
