"""Graph-capture regions: the code a CUDA graph records.

Three shapes: the body of ``with torch.cuda.graph(...)`` (alone or among other items); the rest of
a block after ``stack.enter_context(torch.cuda.graph(...))``; and the statements between
``g.capture_begin()`` and ``g.capture_end()`` in one block. ``CaptureRegionProvider`` marks each
capture call, and every call and ``with`` statement inside a region, with that region.

A module's own context manager that hands its arguments to ``torch.cuda.graph`` and yields inside
it (``@contextmanager def graph_context(*args, **kwargs): with torch.cuda.graph(*args, **kwargs):
yield``; Transformer Engine's ``_graph_context_wrapper``) is ``torch.cuda.graph`` where the module
calls it: its arguments, ``stream=`` among them, are the capture's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeGuard

import libcst as cst
from libcst.metadata import BatchableMetadataProvider

from portlint.analysis.names import argument, dotted_name, method_name, qualified_names
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import children, walk
from portlint.facts import CAPTURE_BEGIN, CAPTURE_CONTEXTS, CAPTURE_END

_CONTEXT_MANAGERS = frozenset({"contextlib.contextmanager"})


@dataclass(frozen=True, eq=False)
class CaptureRegion:
    kind: str  # "with", "enter_context" or "capture_begin"
    call: cst.Call  # the call that starts the capture
    stream: cst.BaseExpression | None  # the `stream=` argument, where the capture takes one
    body: tuple[cst.CSTNode, ...] = ()  # the code it captures: a block, or statements


def _calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    if isinstance(node, cst.Call):
        yield node
    for child in children(node):
        yield from _calls(child)


class CaptureRegionProvider(BatchableMetadataProvider[CaptureRegion]):
    METADATA_DEPENDENCIES = (NameProvider, ParentProvider)

    def __init__(self) -> None:
        super().__init__()
        self.active: list[CaptureRegion] = []
        self.closing: dict[
            int, list[CaptureRegion]
        ] = {}  # regions that end with a block or statement
        self.wrappers: frozenset[str] = frozenset()  # the module's context managers of a capture

    def visit_Module(self, node: cst.Module) -> None:
        self.wrappers = frozenset(
            f.name.value for f in walk(node) if isinstance(f, cst.FunctionDef) and self._wraps(f)
        )

    def _is_capture(self, node: cst.BaseExpression | None) -> TypeGuard[cst.Call]:
        return isinstance(node, cst.Call) and (
            bool(qualified_names(self, node.func) & CAPTURE_CONTEXTS)
            or (isinstance(node.func, cst.Name) and node.func.value in self.wrappers)
        )

    def _wraps(self, function: cst.FunctionDef) -> bool:
        """Whether ``function`` is a context manager that gives all its arguments to
        ``torch.cuda.graph`` and yields inside the capture."""
        params = function.params
        star, double = params.star_arg, params.star_kwarg
        if not (
            isinstance(star, cst.Param)
            and double is not None
            and any(
                qualified_names(self, d.decorator) & _CONTEXT_MANAGERS for d in function.decorators
            )
        ):
            return False
        forwarded = [f"*{star.name.value}", f"**{double.name.value}"]
        return any(
            isinstance(n, cst.With)
            and any(
                isinstance(item.item, cst.Call)
                and qualified_names(self, item.item.func) & CAPTURE_CONTEXTS
                and [f"{a.star}{dotted_name(a.value)}" for a in item.item.args] == forwarded
                for item in n.items
            )
            and any(isinstance(y, cst.Yield) for y in walk(n.body))
            for n in walk(function.body)
        )

    def _open(self, region: CaptureRegion, closes_with: cst.CSTNode) -> None:
        self.set_metadata(region.call, region)
        self.active.append(region)
        self.closing.setdefault(id(closes_with), []).append(region)

    def _close(self, node: cst.CSTNode) -> None:
        for region in self.closing.pop(id(node), []):
            self.active.remove(region)

    # `with torch.cuda.graph(g, ...):` captures its body.
    def visit_With_body(self, node: cst.With) -> None:
        for item in node.items:
            if self._is_capture(item.item):
                stream = argument(item.item, "stream", 2)
                value = stream.value if stream else None
                region = CaptureRegion("with", item.item, value, (node.body,))
                self._open(region, node.body)

    def leave_With_body(self, node: cst.With) -> None:
        self._close(node.body)

    # `stack.enter_context(torch.cuda.graph(g))` and `g.capture_begin()` capture what follows.
    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        starts = [
            c for c in _calls(original_node) if method_name(c) in ("enter_context", CAPTURE_BEGIN)
        ]
        block = self.get_metadata(ParentProvider, original_node, None) if starts else None
        body = list(getattr(block, "body", ()))
        if starts and original_node in body:
            assert block is not None  # the statement is in its body
            rest = body[body.index(original_node) + 1 :]
            for call in starts:
                self._open_after(call, rest, block)
        self._close(original_node)

    def _open_after(self, call: cst.Call, rest: list[cst.CSTNode], block: cst.CSTNode) -> None:
        if method_name(call) == "enter_context":
            capture = call.args[0].value if call.args else None
            if not self._is_capture(capture):
                return
            stream = argument(capture, "stream", 2)
            kind, covered, closes_with = "enter_context", rest, block
        else:
            capture, stream = call, None
            assert isinstance(call.func, cst.Attribute)  # a start: `<graph>.capture_begin()`
            graph = dotted_name(call.func.value)
            end = next((i for i, s in enumerate(rest) if self._ends_capture(s, graph)), None)
            covered = rest if end is None else rest[: end + 1]
            closes_with = block if end is None else rest[end]
            kind = "capture_begin"
        if covered:
            value = stream.value if stream else None
            self._open(CaptureRegion(kind, capture, value, tuple(covered)), closes_with)

    @staticmethod
    def _ends_capture(statement: cst.CSTNode, graph: str | None) -> bool:
        return any(
            method_name(c) == CAPTURE_END
            and isinstance(c.func, cst.Attribute)  # it is: the call has a method name
            and dotted_name(c.func.value) == graph
            for c in _calls(statement)
        )

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._close(original_node)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._close(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.active and self.active[-1].call is not node:
            self.set_metadata(node, self.active[-1])

    def visit_With(self, node: cst.With) -> None:  # `with stream:` inside a capture
        if self.active:
            self.set_metadata(node, self.active[-1])
