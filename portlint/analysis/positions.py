"""Node positions, as LibCST's ``PositionProvider`` gives them, for every node but whitespace.

LibCST computes positions by generating the module's code and noting where each node starts and
ends, whitespace and punctuation included (most of a tree's nodes), with a generator-based
context manager per node. This provider generates the same code with the same bookkeeping
(lighter) and leaves out whitespace and comments, which no rule reports and no analysis asks
about (punctuation stays: LibCST ends an ``import`` at its closing parenthesis).
``tests/test_names.py`` checks every other node's position equal to LibCST's on real files.
"""

from __future__ import annotations

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata import BaseMetadataProvider
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

from portlint.analysis.walk import WHITESPACE_TYPES


class _Syntactic:
    """``record_syntactic_position`` as a plain context manager (LibCST's is a generator)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

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
    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Syntactic:
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


class PositionProvider(BaseMetadataProvider[CodeRange]):
    def _gen_impl(self, module: cst.Module) -> None:
        state = _State(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            provider=self,
        )
        module._codegen(state)
