"""Random edits of a Python project, as a developer makes them between two runs.

``tests/test_edit_sequences.py`` applies sequences of these to copies of the flag
fixtures (and a few real ones to SGLang) and checks after each that a run reusing
the cache answers exactly what a cold run answers. The edits are written as text,
the way an editor leaves a file, and each keeps the file valid Python except
``break_syntax`` (a later ``revert`` may mend it): add, remove and change functions,
imports, classes, modules, setters and reads of the flag, and move code down.

Test code may parse the fixtures with ``ast``: it is flagtrace that never imports or
runs the code it analyses, and these are our own files.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: names the added methods take, shared with the fixtures' own methods so that by-name
#: dispatch (every analysed method of the name) changes with them
COMMON_METHODS = ("forward", "step", "run", "__enter__", "__exit__", "replay", "all_reduce")


@dataclass
class EditedTree:
    """A tree being edited: its files' texts as they were, and the flag it asks about."""

    root: Path
    flag: str | None  # the flag's bare name (its last dotted part), if the tree defines it
    history: dict[Path, list[str | None]] = field(default_factory=dict)
    #: files ``break_syntax`` broke, with their text before
    broken: dict[Path, str] = field(default_factory=dict)
    counter: int = 0

    def modules(self) -> list[Path]:
        return sorted(self.root.rglob("*.py"))

    def module_name(self, path: Path) -> str:
        parts = list(path.relative_to(self.root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def write(self, path: Path, text: str | None) -> None:
        """Change ``path`` to ``text`` (None: delete it), remembering what it was."""
        before = path.read_text(encoding="utf-8") if path.exists() else None
        self.history.setdefault(path, []).append(before)
        self.broken.pop(path, None)
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def fresh_name(self, stem: str) -> str:
        self.counter += 1
        return f"_{stem}_{self.counter}"

    def flag_modules(self) -> list[Path]:
        """Modules that bind the flag at module level (where a setter or a read of it
        by its bare name makes sense)."""
        if self.flag is None:
            return []
        return [p for p in self.modules() if self.flag in _module_level_names(p)]


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, ValueError, OSError):
        return None


def _module_level_names(path: Path) -> set[str]:
    tree = _parse(path)
    if tree is None:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method whose body starts on a line of its own."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.body and node.body[0].lineno > node.lineno:
                found.append(node)
    return found


def _top_functions(tree: ast.Module) -> list[str]:
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]


def _pick(p: EditedTree, rng: random.Random) -> tuple[Path, ast.Module] | None:
    """A module of ``p`` and its tree (None: it does not parse now)."""
    path = rng.choice(p.modules())
    tree = _parse(path)
    return None if tree is None else (path, tree)


def _valid(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _insert_at_body(text: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> str:
    """``lines`` put before the first statement of ``fn``'s body, indented as it is."""
    first = fn.body[0]
    source = text.splitlines(keepends=True)
    row = first.lineno - 1
    indent = source[row][: len(source[row]) - len(source[row].lstrip())]
    block = "".join(f"{indent}{line}\n" for line in lines)
    return "".join(source[:row]) + block + "".join(source[row:])


def _append(text: str, block: str) -> str:
    return text.rstrip("\n") + "\n\n\n" + block.rstrip("\n") + "\n"


# --------------------------------------------------------------------------
# The edits: each returns a description, or None when it does not apply here


def add_function(p: EditedTree, rng: random.Random) -> str | None:
    picked = _pick(p, rng)
    if picked is None:
        return None
    path, tree = picked
    name = p.fresh_name("added")
    callees = _top_functions(tree)
    body = [f"{rng.choice(callees)}()"] if callees and rng.random() < 0.7 else []
    other = rng.choice(p.modules())
    other_tree = _parse(other)
    if other != path and other_tree is not None and _top_functions(other_tree):
        alias = p.fresh_name("m")
        body += [f"import {p.module_name(other)} as {alias}"]
        body += [f"{alias}.{rng.choice(_top_functions(other_tree))}()"]
    lines = "".join(f"    {line}\n" for line in body or ["pass"])
    text = _append(path.read_text(encoding="utf-8"), f"def {name}():\n{lines}    return 1\n")
    p.write(path, text)
    return f"add function {name} to {p.module_name(path)}"


def remove_function(p: EditedTree, rng: random.Random) -> str | None:
    picked = _pick(p, rng)
    if picked is None:
        return None
    path, tree = picked
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    if not defs:
        return None
    node = rng.choice(defs)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    assert node.end_lineno is not None
    source = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text = "".join(source[:start] + source[node.end_lineno :])
    if not _valid(text):
        return None
    p.write(path, text)
    return f"remove {node.name} from {p.module_name(path)}"


def change_body(p: EditedTree, rng: random.Random) -> str | None:
    picked = _pick(p, rng)
    if picked is None or not _functions(picked[1]):
        return None
    path, tree = picked
    fn = rng.choice(_functions(tree))
    callees = [n for n in _top_functions(tree) if n != fn.name]
    choices: list[list[str]] = [["pass"], ["x_edit = 1"]]
    if callees:
        choices.append([f"{rng.choice(callees)}()"])
    if fn.args.args and fn.args.args[0].arg == "self":
        choices.append([f"self.{rng.choice(COMMON_METHODS)}()"])
    text = path.read_text(encoding="utf-8")
    changed = _insert_at_body(text, fn, rng.choice(choices))
    if not _valid(changed):
        return None
    p.write(path, changed)
    return f"change the body of {fn.name} in {p.module_name(path)}"


def move_code(p: EditedTree, rng: random.Random) -> str | None:
    """Comment or blank lines put above a statement: everything below it moves and
    nothing else changes (a stored resolved program, kept per shape, serves)."""
    picked = _pick(p, rng)
    if picked is None:
        return None
    path, tree = picked
    statements: list[ast.stmt] = list(tree.body)
    for fn in _functions(tree):
        statements += fn.body
    if not statements:
        return None
    node = rng.choice(statements)
    decorators = getattr(node, "decorator_list", [])
    row = min([node.lineno, *(d.lineno for d in decorators)]) - 1
    source = path.read_text(encoding="utf-8").splitlines(keepends=True)
    indent = source[row][: len(source[row]) - len(source[row].lstrip())]
    lines = rng.choice([["# moved"], ["", ""], ["# moved", "# again", ""]])
    block = "".join(f"{indent}{line}\n" if line else "\n" for line in lines)
    text = "".join(source[:row]) + block + "".join(source[row:])
    if not _valid(text):
        return None
    p.write(path, text)
    return f"move the code of {p.module_name(path)} from line {row + 1} down {len(lines)}"


def add_import(p: EditedTree, rng: random.Random) -> str | None:
    path, other = rng.choice(p.modules()), rng.choice(p.modules())
    other_tree = _parse(other)
    if other_tree is None or _parse(path) is None:
        return None
    names = _top_functions(other_tree) + sorted(_module_level_names(other))
    if names and rng.random() < 0.7:
        line = f"from {p.module_name(other)} import {rng.choice(names)}"
    else:
        line = f"import {p.module_name(other)}"
    p.write(path, _append(path.read_text(encoding="utf-8"), line))
    return f"{line} in {p.module_name(path)}"


def add_class(p: EditedTree, rng: random.Random) -> str | None:
    picked = _pick(p, rng)
    if picked is None:
        return None
    path, tree = picked
    bases = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    base = f"({rng.choice(bases)})" if bases and rng.random() < 0.5 else ""
    name = p.fresh_name("Added").title().replace("_", "")
    method = rng.choice(COMMON_METHODS)
    args = "self, *exc" if method == "__exit__" else "self"
    callees = _top_functions(tree)
    call = f"{rng.choice(callees)}()" if callees else "pass"
    block = f"class {name}{base}:\n    def {method}({args}):\n        {call}\n"
    if rng.random() < 0.5:
        block += f"\n\n{name}().{method}()\n" if method != "__exit__" else ""
    p.write(path, _append(path.read_text(encoding="utf-8"), block))
    return f"add class {name}{base} with {method} to {p.module_name(path)}"


def add_setter(p: EditedTree, rng: random.Random) -> str | None:
    modules = p.flag_modules()
    if not modules or p.flag is None:
        return None
    path, flag = rng.choice(modules), p.flag
    name = p.fresh_name("set_flag")
    if rng.random() < 0.5:
        block = f"def {name}(value=True):\n    global {flag}\n    {flag} = value\n"
    else:
        block = (
            f"import contextlib\n\n\n@contextlib.contextmanager\ndef {name}():\n"
            f"    global {flag}\n    old = {flag}\n    {flag} = True\n    try:\n"
            f"        yield\n    finally:\n        {flag} = old\n"
        )
    text = _append(path.read_text(encoding="utf-8"), block)
    tree = ast.parse(text)
    users = [f for f in _functions(tree) if f.name != name]
    if users and rng.random() < 0.7:  # and call it from somewhere
        user = rng.choice(users)
        call = [f"{name}()"] if "value" in block else [f"with {name}():", "    pass"]
        text = _insert_at_body(text, user, call)
    if not _valid(text):
        return None
    p.write(path, text)
    return f"add setter {name} to {p.module_name(path)}"


def add_read(p: EditedTree, rng: random.Random) -> str | None:
    modules = p.flag_modules()
    if not modules or p.flag is None:
        return None
    path = rng.choice(modules)
    tree = _parse(path)
    if tree is None or not _functions(tree):
        return None
    fn = rng.choice(_functions(tree))
    text = _insert_at_body(path.read_text(encoding="utf-8"), fn, [f"if {p.flag}:", "    pass"])
    if not _valid(text):
        return None
    p.write(path, text)
    return f"read {p.flag} in {fn.name} of {p.module_name(path)}"


def add_module(p: EditedTree, rng: random.Random) -> str | None:
    packages = sorted({m.parent for m in p.modules() if m.name == "__init__.py"})
    if not packages:
        return None
    package = rng.choice(packages)
    other = rng.choice(p.modules())
    other_tree = _parse(other)
    if other_tree is None or not _top_functions(other_tree):
        return None
    name = p.fresh_name("mod")
    callee = rng.choice(_top_functions(other_tree))
    text = f"from {p.module_name(other)} import {callee}\n\n\ndef run():\n    {callee}()\n"
    p.write(package / f"{name}.py", text)
    return f"add module {name} calling {p.module_name(other)}.{callee}"


def remove_module(p: EditedTree, rng: random.Random) -> str | None:
    keep = set(p.flag_modules())  # without the flag every question is an error
    candidates = [m for m in p.modules() if m.name != "__init__.py" and m not in keep]
    if len(candidates) < 2:
        return None
    path = rng.choice(candidates)
    p.write(path, None)
    return f"remove module {p.module_name(path)}"


def move_module(p: EditedTree, rng: random.Random) -> str | None:
    """A module renamed, its text unchanged: the same bytes under another module name
    (a summary or a stored file state keyed by content alone would be reused)."""
    keep = set(p.flag_modules())
    candidates = [m for m in p.modules() if m.name != "__init__.py" and m not in keep]
    if not candidates:
        return None
    path = rng.choice(candidates)
    target = path.with_name(p.fresh_name("moved").lstrip("_") + ".py")
    text = path.read_text(encoding="utf-8")
    p.write(path, None)
    p.write(target, text)
    return f"move {p.module_name(path)} to {p.module_name(target)}"


def break_syntax(p: EditedTree, rng: random.Random) -> str | None:
    path = rng.choice(p.modules())
    before = path.read_text(encoding="utf-8")
    p.write(path, _append(before, "def broken(:\n    pass\n"))
    p.broken[path] = before
    return f"break the syntax of {p.module_name(path)}"


def mend_syntax(p: EditedTree, rng: random.Random) -> str | None:
    """A broken file as it was before: one broken file hides its module from the
    analysis, and a sequence that kept it broken would test little else."""
    if not p.broken:
        return None
    path = rng.choice(sorted(p.broken))
    p.write(path, p.broken[path])
    return f"mend the syntax of {p.module_name(path)}"


def revert(p: EditedTree, rng: random.Random) -> str | None:
    """A file back to an earlier text of this sequence (a file that did not exist
    then is removed): the caches meet keys they have seen before."""
    edited = sorted(p.history)
    if not edited:
        return None
    path = rng.choice(edited)
    earlier = rng.choice(p.history[path])
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if earlier == current:
        return None
    p.write(path, earlier)
    return f"revert {path.relative_to(p.root)}"


EDITS: tuple[tuple[Callable[[EditedTree, random.Random], str | None], int], ...] = (
    (add_function, 3),
    (remove_function, 2),
    (change_body, 4),
    (move_code, 3),
    (add_import, 2),
    (add_class, 2),
    (add_setter, 3),
    (add_read, 3),
    (add_module, 1),
    (remove_module, 1),
    (move_module, 1),
    (break_syntax, 1),
    (mend_syntax, 6),
    (revert, 3),
)


def random_edit(p: EditedTree, rng: random.Random) -> str:
    """Apply one edit that applies to ``p``, chosen by weight; its description."""
    edits = [edit for edit, _ in EDITS]
    weights = [weight for _, weight in EDITS]
    for _ in range(100):
        done = rng.choices(edits, weights)[0](p, rng)
        if done is not None:
            return done
    raise AssertionError(f"no edit applies to {p.root}")
