"""Guards around parsing one file with libcst: cheap checks before, a big
stack during, a depth check after, and one clear line when it fails.

libcst's native parser is fast on ordinary code but not on every input:

* it overflows the C stack, killing the whole process with a segfault, on
  brackets nested about 1,500 deep or an operator chain (``1+1+...``) about
  10,000 long, and it needs time quadratic in the nesting depth before that
  (``f(f(...))`` 1,000 deep takes 15-20 s);
* its errors for bytes that are not text have no line numbers.

So before parsing, :func:`check` decodes the file the way CPython would (BOM,
``# -*- coding: ... -*-`` cookie, else UTF-8), refuses NUL bytes, and measures
how deep the expressions nest: first roughly, with one regular-expression pass
over the text (about 3% of the cost of indexing; it over-counts, as it cannot
tell ``a*b + c`` from ``a + b + c``), and, only for the rare file that pass
finds deep, exactly, from CPython's own tree of the file (``ast.parse`` builds
a tree and runs nothing; it refuses what is too deep instead of crashing).
What CPython itself would refuse, or what is too deep to parse safely, becomes
a :class:`SourceProblem` with a line number; a file that is deep but within the
limits is flagged ``careful``, so the caller parses it on a thread with a large
stack (:func:`run_with_big_stack`) and then checks that the summary is shallow
enough to pickle and walk (:func:`check_summary`).

When libcst rejects a file, :func:`syntax_error` turns its multi-line message
into one line. libcst's tokenizer errors carry no usable line number and its
parser errors list every token it expected, so CPython's parser is asked too,
and its message is used when it is about the same place ("Missing parentheses
in call to 'print'", "'(' was never closed"). Python 2 code gets a hint.

Nothing here imports or runs the analysed code.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import io
import os
import re
import threading
import tokenize
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "MAX_BRACKET_DEPTH",
    "MAX_EXPRESSION_DEPTH",
    "MAX_SUMMARY_DEPTH",
    "Nesting",
    "Prescan",
    "SourceProblem",
    "check",
    "check_summary",
    "decode",
    "max_file_bytes",
    "nesting",
    "one_line",
    "run_with_big_stack",
    "syntax_error",
    "too_large",
]

T = TypeVar("T")

#: CPython's tokenizer refuses more (``too many nested parentheses``).
MAX_BRACKET_DEPTH = 200
#: Nodes along one path of the syntax tree (``1+1+...+1`` with N operands is
#: N-1 deep). The deepest real code seen (sympy's polynomial tables) is ~570;
#: CPython 3.11 compiles up to ~3,000; libcst takes 1-7 s at 2,000 on the
#: slowest constructs, and crashes (on an 8 MiB stack) at ~10,000.
MAX_EXPRESSION_DEPTH = 2000
#: Below these rough counts a file is parsed as usual; from them on, the exact
#: depth is measured and the parse runs on a thread with a large stack.
CAREFUL_DEPTH = 100
CAREFUL_BRACKETS = 50
#: When CPython cannot parse the file (newer syntax, or a real error that
#: libcst will report), the rough count decides, allowing for its over-count.
ROUGH_OVERCOUNT = 3
#: That stack: 2,000 levels need well under 64 MiB; the rest is margin, and
#: memory is only committed as the stack grows.
BIG_STACK = 512 * 1024 * 1024
#: Expressions nested inside each other in one file's summary (attribute,
#: subscript and container chains, ``and``/``or``, ``x if c else y``).
#: Summaries are pickled (worker processes, the cache) and walked by later
#: stages under Python's default recursion limit; pickling one costs about
#: three frames per level.
MAX_SUMMARY_DEPTH = 150
#: CPython's parser is asked for a better message only for files this small.
CPYTHON_MESSAGE_LIMIT = 4_000_000
#: Larger files are reported, not parsed (libcst needs ~15 s and ~300 MB per MB
#: of source); ``FLAGTRACE_MAX_FILE_MB`` changes the limit.
MAX_FILE_MB = 10
MAX_FILE_ENV = "FLAGTRACE_MAX_FILE_MB"


class SourceProblem(Exception):
    """The file cannot be analysed; ``message`` is one line, ``line`` 1-based or None."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True, slots=True)
class Nesting:
    """How deep one file's expressions nest, and the line of the deepest point."""

    brackets: int
    brackets_line: int
    expression: int
    expression_line: int


@dataclass(frozen=True, slots=True)
class Prescan:
    """What :func:`check` found in a file it accepts."""

    encoding: str
    careful: bool  # parse on a big-stack thread, then check_summary()
    nesting: Nesting  # rough, or exact when careful and CPython could parse it


def check(data: bytes) -> Prescan:
    """Decode ``data`` and measure its nesting; raise :class:`SourceProblem`
    for what cannot (or must not) be parsed."""
    text, encoding = decode(data)
    rough = nesting(text)
    if rough.brackets > MAX_BRACKET_DEPTH:
        raise _too_many_brackets(rough.brackets, rough.brackets_line)
    if rough.expression < CAREFUL_DEPTH and rough.brackets < CAREFUL_BRACKETS:
        return Prescan(encoding, False, rough)
    exact = _exact_nesting(text, rough)
    if exact.expression > MAX_EXPRESSION_DEPTH:
        raise SourceProblem(
            f"nesting too deep to analyse (an expression {exact.expression} levels deep; "
            f"the limit is {MAX_EXPRESSION_DEPTH})",
            exact.expression_line,
        )
    return Prescan(encoding, True, exact)


def _too_many_brackets(depth: int | None, line: int | None) -> SourceProblem:
    levels = f"{depth} levels of brackets" if depth else "brackets"
    return SourceProblem(
        f"nesting too deep to analyse ({levels}; Python itself allows {MAX_BRACKET_DEPTH})", line
    )


def _exact_nesting(text: str, rough: Nesting) -> Nesting:
    """The depth of CPython's tree of ``text`` (``a or b or c`` counted as the
    two levels libcst makes of it), or the rough count if CPython cannot parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes must not reach stderr
            tree = ast.parse(text)
    except (RecursionError, MemoryError):  # CPython gives up (~3,000 deep) rather than crash
        raise SourceProblem(
            "nesting too deep to analyse (deeper than Python's own parser accepts; "
            f"the limit is {MAX_EXPRESSION_DEPTH} levels)",
            rough.expression_line,
        ) from None
    except SyntaxError as exc:
        if "too many nested parentheses" in str(exc.msg):
            raise _too_many_brackets(None, exc.lineno) from None
        if rough.expression > ROUGH_OVERCOUNT * MAX_EXPRESSION_DEPTH:
            raise SourceProblem(
                "nesting too deep to analyse (an expression about "
                f"{rough.expression // ROUGH_OVERCOUNT} levels deep; "
                f"the limit is {MAX_EXPRESSION_DEPTH})",
                rough.expression_line,
            ) from None
        return rough
    except ValueError:  # NUL bytes; decode() refuses them first
        return rough
    best, best_line = 0, 1
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]
    while stack:
        node, depth, line = stack.pop()
        depth += len(node.values) - 1 if isinstance(node, ast.BoolOp) else 1
        line = getattr(node, "lineno", line)
        if depth > best:
            best, best_line = depth, line
        stack.extend((child, depth, line) for child in ast.iter_child_nodes(node))
    return Nesting(rough.brackets, rough.brackets_line, best, best_line)


def check_summary(summary: object) -> None:
    """Raise :class:`SourceProblem` if expressions nest deeper than
    :data:`MAX_SUMMARY_DEPTH` in ``summary`` (any tree of records and tuples).

    The walk is iterative; it counts the expression records (``flagtrace.model.Expr``)
    on each path and remembers the last line a record on the path gave.
    """
    from flagtrace import model

    expr_types = tuple(typing.get_args(model.Expr)) or ()
    stack: list[tuple[object, int, int | None]] = [(summary, 0, None)]
    while stack:
        obj, depth, line = stack.pop()
        if isinstance(obj, (tuple, list, frozenset, set)):
            stack.extend((item, depth, line) for item in obj)
            continue
        if isinstance(obj, dict):
            stack.extend((item, depth, line) for item in obj.values())
            continue
        names = _field_names(type(obj))
        if not names:
            continue
        if isinstance(obj, expr_types):
            depth += 1
            if depth > MAX_SUMMARY_DEPTH:
                raise SourceProblem(
                    f"nesting too deep to analyse (more than {MAX_SUMMARY_DEPTH} levels of "
                    "attribute, subscript, container, boolean or conditional expressions "
                    "inside each other)",
                    line,
                )
        values = [getattr(obj, name, None) for name in names]
        for value in values:
            if isinstance(value, model.Location):
                line = value.line
        for value in values:
            if value is not None and not isinstance(value, (str, int, float, bool, model.Location)):
                stack.append((value, depth, line))


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = (
            tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
        )
        _FIELDS[cls] = names
    return names


def max_file_bytes() -> int:
    """The largest file to parse: ``$FLAGTRACE_MAX_FILE_MB`` MB, else :data:`MAX_FILE_MB`."""
    raw = os.environ.get(MAX_FILE_ENV, "").strip()
    try:
        megabytes = float(raw) if raw else MAX_FILE_MB
    except ValueError:
        megabytes = MAX_FILE_MB
    return int(megabytes * 1_000_000) if megabytes > 0 else MAX_FILE_MB * 1_000_000


def too_large(size: int, limit: int) -> str:
    """The message for a file over the size limit."""
    return (
        f"file too large to analyse ({size / 1_000_000:.1f} MB; the limit is "
        f"{limit / 1_000_000:g} MB, set {MAX_FILE_ENV} to change it)"
    )


def one_line(exc: BaseException) -> str:
    """An exception's text on one line (libcst's and codecs' run over several)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


# --------------------------------------------------------------------------
# Decoding


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)


def decode(data: bytes) -> tuple[str, str]:
    """The text of ``data`` and its encoding, as CPython would decode the file."""
    nul = data.find(b"\0")
    if nul >= 0:
        line, column = _position(data, nul)
        raise SourceProblem(
            f"contains a NUL byte (column {column}); this is not Python source", line
        )
    cookie_line, cookie = _cookie(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        reason = str(exc)
        if reason.startswith("invalid or missing encoding declaration"):
            # the decode below says where the bad byte is
            encoding = cookie if cookie is not None and _known_codec(cookie) else "utf-8"
        elif reason.startswith("unknown encoding"):
            raise SourceProblem(
                f"unknown encoding {cookie or '?'!r} in the coding declaration", cookie_line
            ) from None
        elif reason.startswith("encoding problem"):
            raise SourceProblem(
                f"the coding declaration says {cookie or '?'!r} "
                "but the file starts with a UTF-8 BOM",
                cookie_line,
            ) from None
        else:
            raise SourceProblem(f"cannot read the encoding: {reason}", cookie_line) from None
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        line, column = _position(data, exc.start)
        name = codecs.lookup(encoding).name
        where = f"byte 0x{data[exc.start]:02x} at column {column}"
        if cookie is None:
            raise SourceProblem(
                f"not valid UTF-8 ({where}) and no coding declaration "
                "(add e.g. '# -*- coding: latin-1 -*-' if that is its encoding)",
                line,
            ) from None
        raise SourceProblem(f"not valid {name} as declared ({where})", line) from None
    except LookupError:  # detect_encoding checked the name; kept for odd codecs
        raise SourceProblem(f"unknown encoding {encoding!r}", cookie_line) from None


def _cookie(data: bytes) -> tuple[int | None, str | None]:
    """The line and name of a coding declaration in the first two lines, if any."""
    for number, raw in enumerate(data[:65536].split(b"\n", 2)[:2], start=1):
        match = _COOKIE.match(raw.removeprefix(b"\xef\xbb\xbf"))
        if match:
            return number, match.group(1).decode("ascii", "replace")
        if raw.strip() and not raw.lstrip().startswith(b"#"):
            break  # a cookie on line 2 counts only after a comment or blank line
    return None, None


def _known_codec(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in bytes) of ``offset``."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start + 1


# --------------------------------------------------------------------------
# Nesting


# Strings and comments are skipped whole; brackets, separators and operators
# are what the depth is counted from. Identifiers and numbers never match.
_TOKENS = re.compile(
    r"""
    (?P<skip>
        \#[^\r\n]*
      | \\\r?\n
      | (?:[rRbBuUfF]{1,2})?
        (?: '''(?:\\.|[^\\])*?'''
          | \"\"\"(?:\\.|[^\\])*?\"\"\"
          | '(?:\\.|[^\\'\r\n])*'
          | "(?:\\.|[^\\"\r\n])*"
        )
    )
    | (?P<open>[(\[{])
    | (?P<close>[)\]}])
    | (?P<sep>[,;\n])
    | (?P<op>[-+*/%@&|^~<>!.:]+=?|==|\b(?:and|or|not|if|else|lambda|in|is|await)\b)
    """,
    re.S | re.X,
)


def nesting(text: str) -> Nesting:
    """Measure nesting: bracket depth, and an upper estimate of expression depth.

    The expression depth along the current position is the number of open
    brackets, plus every operator-like token (``+``, ``.``, ``not``,
    ``lambda``, a closed bracket group such as a call's argument list, ...)
    since the last ``,`` at each open level, summed over the levels. A
    statement ends at ``;`` or a newline outside brackets.
    """
    stack: list[int] = []  # the chain of each enclosing level
    chain = 0  # tokens chained at the current level
    base = 0  # sum(stack) + len(stack)
    best = best_at = 0
    deepest = deepest_at = 0
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        if kind == "skip":
            continue
        if kind == "op":
            chain += 1
        elif kind == "open":
            stack.append(chain)
            base += chain + 1
            chain = 0
            if len(stack) > deepest:
                deepest, deepest_at = len(stack), match.start()
        elif kind == "close":
            if stack:
                outer = stack.pop()
                base -= outer + 1
                chain = outer + 1
            else:
                chain = 0  # unbalanced: the parser will say so
        else:  # sep
            if match.group() == ",":
                chain = 0
            elif match.group() == ";" or not stack:
                stack.clear()
                base = chain = 0
            continue
        if base + chain > best:
            best, best_at = base + chain, match.start()
    return Nesting(deepest, _line_of(text, deepest_at), best, _line_of(text, best_at))


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# --------------------------------------------------------------------------
# A big stack for deep files


def run_with_big_stack(fn: Callable[[], T], *, fallback: Callable[[], T] | None) -> T:
    """Run ``fn`` on a thread with a :data:`BIG_STACK`-byte stack and return
    (or raise) what it does.

    If no such thread can be made here (a tight address-space limit), the
    ``fallback`` runs on the calling thread instead, or without one a
    :class:`SourceProblem` says the file is too deep for this environment.
    """
    values: list[T] = []  # what ``fn`` returned, or
    errors: list[BaseException] = []  # what it raised, handed to the caller's thread

    def target() -> None:
        try:
            values.append(fn())
        except BaseException as exc:
            errors.append(exc)

    previous = threading.stack_size()
    try:
        threading.stack_size(BIG_STACK)
        worker = threading.Thread(target=target, name="flagtrace-deep-parse", daemon=True)
        worker.start()
    except (RuntimeError, ValueError, MemoryError):
        worker = None
    finally:
        threading.stack_size(previous)
    if worker is None:
        if fallback is not None:
            return fallback()
        raise SourceProblem(
            "nesting too deep to analyse here (cannot start a thread with a larger stack)"
        )
    worker.join()
    if errors:
        raise errors[0]
    return values[0]


# --------------------------------------------------------------------------
# One line for a syntax error


_LIBCST_AT = re.compile(r"^error at (\d+):(\d+): (.*)$", re.S)

# Python 2 constructs, matched on the line the error is on.
_PYTHON2 = re.compile(
    r"""^\s*(?:print|exec)\b\s*(?:[^\s(=.,)\]:;]|>>)   # print "x", print >>f, x, exec "code"
      | ^\s*except\b[^:#]*,\s*[A-Za-z_]\w*\s*:       # except E, e:
      | ^\s*raise\s+[\w.]+\s*,                           # raise E, "message"
      | `                                                # `repr`
      | <>                                               # a <> b
      | \b\d+[lL]\b                                       # 10L
      | \b0\d+\b                                          # 0777
      | \bur["']                                          # ur"raw unicode"
    """,
    re.X,
)


def syntax_error(
    text: str | None, line: int | None, column: int | None, message: str
) -> tuple[int | None, str]:
    """One line (and its line number) for a file libcst cannot parse.

    ``line``/``column``/``message`` are libcst's ``raw_line``, ``raw_column``
    and ``message``; ``text`` is the decoded file, or None if unknown.
    """
    kind, _, detail = message.strip().partition(": ")
    if not detail:
        kind, detail = "", message.strip()
    detail = " ".join(detail.split())
    at = _LIBCST_AT.match(detail)
    if at:
        line, column, detail = int(at.group(1)), int(at.group(2)), at.group(3)
    if kind == "tokenizer error":
        line = None  # libcst reports line 1 for every tokenizer error
    if detail.startswith("expected one of") and detail.count(",") > 5:
        detail = "invalid syntax"
    own = f"syntax error: {detail}" + (f" (column {column})" if at and column else "")
    result: tuple[int | None, str] = (line, own)
    if text is not None and len(text) <= CPYTHON_MESSAGE_LIMIT:
        cpython = _cpython_error(text)
        if cpython is not None:
            c_line, c_column, c_message = cpython
            same_place = (
                line is None
                or c_line in (line, line - 1)
                or (c_line is not None and c_line < line and "never closed" in c_message)
            )
            if same_place:
                column_note = f" (column {c_column})" if c_column else ""
                result = (c_line, f"syntax error: {c_message}{column_note}")
    if text is not None and result[0] is not None:
        lines = text.splitlines()
        if 0 < result[0] <= len(lines) and _PYTHON2.search(lines[result[0] - 1]):
            result = (result[0], result[1] + "; this looks like Python 2, flagtrace reads Python 3")
    return result


def _cpython_error(text: str) -> tuple[int | None, int | None, str] | None:
    """CPython's own complaint about ``text``, without running it, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes must not reach stderr
            ast.parse(text)
    except SyntaxError as exc:
        message = " ".join(str(exc.msg or "invalid syntax").split())
        return exc.lineno, exc.offset, message
    except Exception:  # MemoryError, RecursionError, ValueError: no better message
        return None
    return None
