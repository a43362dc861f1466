"""Fixes as data: line edits with a safety label, built from a LibCST rewrite of the module.

A rule describes a fix as node replacements, statements to insert before a statement, a run of
statements to wrap in a ``with``, and imports to add. :func:`build_fix` rewrites the module with
LibCST (so indentation and formatting stay right) and turns the difference into line edits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from portlint.findings import Fix, line_edits


@dataclass
class Rewrite:
    """What a fix changes in the module, by node identity."""

    replace: dict[int, cst.CSTNode] = field(default_factory=dict)  # id(old node) -> new node
    insert_before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    wrap: tuple[int, int, cst.BaseExpression] | None = (
        None  # ids of first and last statement, with item
    )
    imports: set[str] = field(default_factory=set)  # modules to `import` if not imported plainly


class _Rewriter(cst.CSTTransformer):
    def __init__(self, rewrite: Rewrite) -> None:
        super().__init__()
        self.rewrite = rewrite

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        return self.rewrite.replace.get(id(original_node), updated)

    def _body(self, original: tuple, updated: tuple) -> list:
        body: list = []
        wrapping: list | None = None
        first, last, item = self.rewrite.wrap or (None, None, None)
        for old, new in zip(original, updated, strict=True):
            body.extend(self.rewrite.insert_before.get(id(old), []))
            if id(old) == first:
                wrapping = []
            if wrapping is not None:
                wrapping.append(new)
                if id(old) == last:
                    assert item is not None  # a wrap is under way: it has its item
                    block = cst.IndentedBlock(body=wrapping)
                    body.append(cst.With(items=[cst.WithItem(item)], body=block))
                    wrapping = None
                continue
            body.append(new)
        return body

    def leave_IndentedBlock(self, original_node, updated_node):
        return updated_node.with_changes(body=self._body(original_node.body, updated_node.body))

    def leave_Module(self, original_node, updated_node):
        body = self._body(original_node.body, updated_node.body)
        missing = sorted(m for m in self.rewrite.imports if not _imports_plainly(original_node, m))
        if missing:
            at = _import_position(body)
            body[at:at] = [cst.parse_statement(f"import {m}\n") for m in missing]
        return updated_node.with_changes(body=body)


def _imports_plainly(module: cst.Module, name: str) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and any(
                    alias.asname is None and cst.Module([]).code_for_node(alias.name) == name
                    for alias in small.names
                ):
                    return True
    return False


def _import_position(body: list) -> int:
    """After the module docstring and ``from __future__`` imports."""
    at = 0
    for index, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        small = statement.body[0]
        docstring = (
            index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)
        )
        future = (
            isinstance(small, cst.ImportFrom)
            and isinstance(small.module, cst.Name)
            and small.module.value == "__future__"
        )
        if not (docstring or future):
            break
        at = index + 1
    return at


def build_fix(module: cst.Module, rewrite: Rewrite, applicability: str, message: str) -> Fix | None:
    new_code = module.visit(_Rewriter(rewrite)).code
    edits = line_edits(module.code, new_code)
    return Fix(applicability, message, edits) if edits else None
