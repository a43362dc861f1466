"""Node positions, as LibCST's ``PositionProvider`` gives them, for every node but whitespace,
computed only for the statements that hold a node someone asks about.

LibCST computes positions by generating the module's code and noting where each node starts and
ends, whitespace and punctuation included, with a generator-based context manager per node:
about a third of a file's analysis, though a rule asks where a handful of nodes are. Here the
same code is generated with the same bookkeeping (lighter, and without entries for whitespace
and comments, which no rule reports and no analysis asks about; punctuation stays: LibCST ends an
``import`` at its closing parenthesis), but one *anchor* at a time: the innermost statement that
holds the node asked about and is a top-level statement or one in the body of a function, class,
loop, ``with``, ``if`` or ``try`` that is itself an anchor (generating a whole 300-line method for
one finding in it cost vLLM's run more than a second). Where an anchor's code starts comes from
Python's own parse of the same text (``ast``, which the engine has already made to cut the
file): the line of its first token, less its leading blank and comment lines. Without that
parse, or where the two parses do not line up, the whole module is generated at the first
question. Where the module is a cut of a file (``portlint.speed.cut``), the lines are the cut's
inside and the file's outside: each position given is moved to the line of the file it is on.
``tests/test_names.py`` checks every non-whitespace node's position equal to LibCST's on real
files, both ways, and in cuts.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata import BaseMetadataProvider
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

from portlint.analysis.parents import ParentProvider
from portlint.analysis.walk import WHITESPACE_TYPES
from portlint.speed.cut import source_line


class _Syntactic:
    """``record_syntactic_position`` as a plain context manager (LibCST's is a generator)."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(self, state, node, start_node, end_node) -> None:
        self.state, self.node = state, node
        self.start_node, self.end_node = start_node, end_node

    def __enter__(self) -> None:
        self.start = CodePosition(self.state.line, self.state.column)

    def __exit__(self, *exc_info) -> None:
        state, computed = self.state, self.state.provider._computed
        start = computed[self.start_node].start if self.start_node is not None else self.start
        if self.end_node is not None:
            end = computed[self.end_node].end
        else:
            end = CodePosition(state.line, state.column)
        computed[self.node] = CodeRange(start, end)


class _State(PositionProvidingCodegenState):
    # LibCST types it as a generator's context manager; any will do: it is only used in `with`.
    def record_syntactic_position(  # type: ignore[override]
        self, node, *, start_node=None, end_node=None
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in WHITESPACE_TYPES:
            self._stack.append(CodePosition(self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in WHITESPACE_TYPES:
            start = self._stack.pop()
            if node not in self.provider._computed:
                self.provider._computed[node] = CodeRange(
                    start, CodePosition(self.line, self.column)
                )

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)


# The compound statements whose body an anchor may be in, with their ``ast`` counterparts (whose
# ``body`` is the same block: an ``else``, ``except`` or ``finally`` block is not followed in).
AstNesting = (
    ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.For | ast.AsyncFor | ast.While
    | ast.With | ast.AsyncWith | ast.If | ast.Try
)  # fmt: skip
AST_NESTING: dict[
    type[cst.BaseCompoundStatement], type[AstNesting] | tuple[type[AstNesting], ...]
] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: ast.ClassDef,
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: ast.While,
    cst.With: (ast.With, ast.AsyncWith),
    cst.If: ast.If,
    cst.Try: ast.Try,
}
NESTING = tuple(AST_NESTING)


def _first_line(statement: ast.stmt) -> int:
    """The line of a statement's first token (its first decorator's ``@``, if it has one)."""
    decorators = getattr(statement, "decorator_list", ())
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _pair(
    body: Sequence[cst.BaseStatement], statements: Sequence[ast.stmt]
) -> dict[cst.CSTNode, ast.stmt] | None:
    """Each statement of a LibCST block with the first of its ``ast`` statements (a line of
    ``a; b`` is one LibCST statement and two ``ast`` ones), or None if they do not line up."""
    pairs: dict[cst.CSTNode, ast.stmt] = {}  # looked up with the nodes on a path of parents
    index = 0
    for node in body:
        if index >= len(statements):
            return None
        pairs[node] = statements[index]
        index += len(node.body) if isinstance(node, cst.SimpleStatementLine) else 1
    return pairs if index == len(statements) else None


class Positions(Mapping[cst.CSTNode, CodeRange]):
    """Positions by node, generated anchor by anchor as nodes are asked about."""

    def __init__(
        self,
        module: cst.Module,
        parents: Mapping[cst.CSTNode, cst.CSTNode],
        source: str | None = None,
        statements: Sequence[ast.stmt] | None = None,
        lines: Sequence[int] | None = None,
    ) -> None:
        """``source``: the text ``module`` was parsed from; ``statements``: its top-level
        statements as ``ast`` parsed them. Without both, the whole module at the first question.
        ``lines``: where ``source`` is a cut (``portlint.speed.cut``), the line of the file that
        each of its lines is; the ``ast`` statements and the positions given are the file's."""
        self.module, self.parents, self._numbers = module, parents, lines
        self._computed: dict[cst.CSTNode, CodeRange] = {}
        self._lines: list[str] = []
        self._top: dict[cst.CSTNode, ast.stmt] | None = None
        if source is not None and statements is not None:
            self._lines = NEWLINE_RE.split(source)
            self._top = _pair(module.body, statements)
        self._bodies: dict[cst.CSTNode, dict[cst.CSTNode, ast.stmt] | None] = {}
        self._generated: set[cst.CSTNode] = set()
        self._whole = False

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        try:
            return self._in_file(self._computed[node])
        except KeyError:
            if self._whole:
                raise
        if not self._generate_anchor_of(node):
            self._generate_whole()
        return self._in_file(self._computed[node])

    def _in_file(self, where: CodeRange) -> CodeRange:
        """A range of the parsed text as a range of the file (they differ in a cut)."""
        if self._numbers is None:
            return where
        start, end = where.start, where.end
        return CodeRange(
            CodePosition(source_line(self._numbers, start.line), start.column),
            CodePosition(source_line(self._numbers, end.line), end.column),
        )

    def __iter__(self) -> Iterator[cst.CSTNode]:
        self._generate_whole()
        return iter(self._computed)

    def __len__(self) -> int:
        self._generate_whole()
        return len(self._computed)

    def _generate_whole(self) -> None:
        if not self._whole:
            self._whole = True
            self._computed = {}
            self.module._codegen(self._state())

    def _state(self, line: int = 1, indent: str | None = None) -> _State:
        state = _State(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            provider=self,  # type: ignore[arg-type]  # LibCST's state uses only its _computed
        )
        state.line = line
        if indent is not None:
            state.indent_tokens.append(indent)
        return state

    def _generate_anchor_of(self, node: cst.CSTNode) -> bool:
        """Generate the innermost statement that holds ``node`` and whose start the ``ast``
        statements tell (a top-level statement, or one in the body of a function, class, loop,
        ``with``, ``if`` or ``try`` such a statement is); False where none can be made alone."""
        if self._top is None:
            return False
        path = [node]
        while (parent := self.parents.get(path[-1])) is not None:
            path.append(parent)
        if len(path) < 2 or path[-1] is not self.module:
            return False
        level = len(path) - 2  # path[level]: the anchor so far
        anchor, statement, indent = path[level], self._top[path[level]], ""
        while anchor not in self._generated:
            body = getattr(anchor, "body", None)
            if not (
                isinstance(body, cst.IndentedBlock)
                and level >= 2
                and path[level - 1] is body
                and isinstance(anchor, NESTING)
                and (pairs := self._pairs(anchor, body, statement)) is not None
                and path[level - 2] in pairs
            ):
                break
            indent += self.module.default_indent if body.indent is None else body.indent
            level -= 2
            anchor, statement = path[level], pairs[path[level]]
        if anchor in self._generated:  # an anchor already made, and still no position: none
            return True
        # A key of the pairs: a statement of a block.
        assert isinstance(anchor, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        line = self._start_line(anchor, statement, indent)
        if line is None:
            return False
        self._generated.add(anchor)
        anchor._codegen(self._state(line, indent))
        return True

    def _pairs(
        self, anchor: cst.BaseCompoundStatement, body: cst.IndentedBlock, statement: ast.stmt
    ) -> dict[cst.CSTNode, ast.stmt] | None:
        """The statements of ``anchor``'s body with their ``ast`` ones (``statement``'s)."""
        if anchor not in self._bodies:
            same = AST_NESTING[type(anchor)]  # its counterparts in ``ast``
            self._bodies[anchor] = (
                _pair(body.body, statement.body) if isinstance(statement, same) else None
            )
        return self._bodies[anchor]

    def _start_line(
        self,
        anchor: cst.SimpleStatementLine | cst.BaseCompoundStatement,
        statement: ast.stmt,
        indent: str,
    ) -> int | None:
        """Where ``anchor``'s code starts: its first token's line less its leading lines, once
        the text agrees (those lines blank or comments; the first token where it should be)."""
        first = _first_line(statement)
        if self._numbers is not None:  # the file's line, in the cut
            index = bisect_left(self._numbers, first)
            if index == len(self._numbers) or self._numbers[index] != first:
                return None
            first = index + 1
        start = first - len(anchor.leading_lines)
        if start < 1 or first > len(self._lines):
            return None
        if any(self._lines[n].strip()[:1] not in ("", "#") for n in range(start - 1, first - 1)):
            return None
        text = self._lines[first - 1]
        if not text.startswith(indent) or text[len(indent) : len(indent) + 1] in ("", " ", "\t"):
            return None
        if getattr(anchor, "decorators", None) and text[len(indent)] != "@":
            return None
        return start


class PositionProvider(BaseMetadataProvider[CodeRange]):
    """Positions for a wrapper's module; anchor by anchor where the wrapper carries the text
    and the ``ast`` statements the module was parsed from (``portlint.visit``), else whole."""

    METADATA_DEPENDENCIES = (ParentProvider,)

    def _gen(self, wrapper) -> Positions:
        return Positions(
            wrapper.module,
            wrapper.resolve(ParentProvider),
            getattr(wrapper, "source", None),
            getattr(wrapper, "statements", None),
            getattr(wrapper, "lines", None),
        )
