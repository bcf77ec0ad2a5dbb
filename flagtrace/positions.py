"""Positions and source text of CST nodes, from one code-generation pass.

Why not ``libcst.metadata.PositionProvider``? Measured on SGLang 0.5.9 it costs
about twice the parse itself, and a ``CSTVisitor`` walk another 0.7x, because
both touch every whitespace node. Instead we make one code-generation pass with
a ``CodegenState`` subclass (the same hook PositionProvider uses) that records
token offsets for the nodes we care about -- about 0.2x the parse -- and the
summary walk (``flagtrace.summarize``) reads positions and source text from
those offsets.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import libcst as cst
from libcst._nodes.internal import CodegenState

from flagtrace.model import Location

MAX_TEXT = 120  # longest source text kept for a guard or a value
MAX_CALL_TEXT = 60  # calls are shown with their source line; this is a label

#: The nodes whose spans are recorded: every node a summary can point at or
#: quote. Whitespace, punctuation and operators are left out; they are most of
#: the tree.
_TRIVIA_BASES = (
    cst.BaseExpression,
    cst.BaseSmallStatement,
    cst.BaseCompoundStatement,
    cst.SimpleStatementLine,
    cst.Decorator,
    cst.Arg,
    cst.Param,
    cst.WithItem,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.MatchCase,
    cst.MatchPattern,  # quoted in a ``case`` guard
)


class SpanRecorder(CodegenState):
    """Code generation that remembers where each non-trivia node starts and ends.

    ``starts``/``ends`` map ``id(node)`` to an index in ``tokens``. Statements
    get their *syntactic* start (after leading blank lines, comments and
    decorators' own lines), like ``PositionProvider`` gives.
    """

    #: node type -> recorded or not, filled on first sight (``isinstance`` on
    #: every node of every file would cost more than the lookup)
    _interesting: dict[type[cst.CSTNode], bool] = {}

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.starts: dict[int, int] = {}  # whitespace-inclusive: for source text
        self.syntactic: dict[int, int] = {}  # where the node's own code starts: for positions
        self.ends: dict[int, int] = {}

    def before_codegen(self, node: cst.CSTNode) -> None:
        t = type(node)
        keep = self._interesting.get(t)
        if keep is None:
            keep = self._interesting[t] = isinstance(node, _TRIVIA_BASES)
        if keep:
            self.starts[id(node)] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if self._interesting.get(type(node)):
            self.ends[id(node)] = len(self.tokens)

    # The base is a ``@contextmanager`` generator; libcst only enters what this
    # returns, so one shared ``nullcontext`` does. It is called for about every
    # sixth token (547k times on 95k lines of SGLang), and the generator version
    # made this whole pass about 35% slower, hence the one ignore in this module.
    def record_syntactic_position(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> AbstractContextManager[None]:
        self.syntactic[id(node)] = len(self.tokens)
        return _NULL_CONTEXT


_NULL_CONTEXT = nullcontext()


class SourceSpans:
    """Positions and text of the nodes of one module, from the recorded token offsets.

    Nodes are looked up by ``id()``: the module must stay alive (and unchanged)
    as long as this object is used.
    """

    def __init__(self, module: cst.Module, path: str) -> None:
        rec = SpanRecorder(module.default_indent, module.default_newline)
        module._codegen(rec)
        self.path = path
        self.tokens = rec.tokens
        self.starts = rec.starts
        self.syntactic = rec.syntactic
        self.ends = rec.ends
        lines = [1] * (len(self.tokens) + 1)
        cols = [0] * (len(self.tokens) + 1)
        line, col = 1, 0
        for i, tok in enumerate(self.tokens):
            lines[i] = line
            cols[i] = col
            n = tok.count("\n")
            if n:
                line += n
                col = len(tok) - tok.rfind("\n") - 1
            else:
                col += len(tok)
        lines[-1] = line
        cols[-1] = col
        self._lines = lines
        self._cols = cols
        self.line_count = line

    def location(self, node: cst.CSTNode) -> Location:
        i = self.syntactic.get(id(node))
        if i is None:
            i = self.starts.get(id(node), 0)
        # skip tokens that are pure whitespace so we point at the code itself
        toks = self.tokens
        while i < len(toks) and toks[i].strip() == "":
            i += 1
        return Location(self.path, self._lines[i], self._cols[i] + 1)

    def line(self, node: cst.CSTNode) -> int:
        return self.location(node).line

    def end_line(self, node: cst.CSTNode) -> int:
        # ``min``: libcst pops a module's trailing newline token after the last node was
        # recorded when the file ends in a comment ending in a backslash (it takes the backslash
        # before the newline for a continuation), so that node's end is one past the tokens
        end = min(self.ends.get(id(node), len(self.tokens)), len(self.tokens))
        return self._lines[end]

    def text(self, node: cst.CSTNode, limit: int = MAX_TEXT) -> str:
        """The node's source on one line (whitespace runs collapsed), cut at ``limit``."""
        s = self.starts.get(id(node))
        e = self.ends.get(id(node))
        if s is None or e is None:
            return ""
        raw = "".join(self.tokens[s:e])
        text = " ".join(raw.split())
        if len(text) > limit:
            text = text[: limit - 3] + "..."
        return text
