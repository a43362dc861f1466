"""Fixes as data: line edits with a safety label, made at the positions of the nodes they change.

A rule describes a fix as node replacements, statements to insert before a statement, a run of
statements to wrap in a ``with``, and modules to import (:class:`Rewrite`), and gets a
:class:`PendingFix`. Once the file's findings are placed, :class:`FixMaker` turns each pending fix
of a reported finding into line edits: LibCST's code for each new node, indented as the old one
was, goes at the old node's span (for a node that is not an expression, at the span of the
expression or statement around it), inserted statements go before the first line of the
statement they precede, a wrapped run of statements is written again inside its ``with``, and an
import goes where :mod:`portlint.imports` says. The module is never generated again: a fix costs
the size of what it changes, not of the file. Each piece is checked first: the old node's code,
generated the same way, must be the text at its span (in a cut of the file,
``portlint.speed.cut``, a run of statements may miss lines that were dropped); where it is not,
the finding gets no fix.
"""

from __future__ import annotations

import ast
import functools
from bisect import bisect_right
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange

from portlint.findings import Edit, Fix, line_edits, split_lines
from portlint.imports import Imports, Placement


@dataclass
class Rewrite:
    """What a fix changes in the module, by node identity."""

    replace: dict[int, cst.CSTNode] = field(default_factory=dict)  # id(old node) -> new node
    insert_before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    wrap: tuple[int, int, cst.BaseExpression] | None = (
        None  # ids of first and last statement, with item
    )
    # Top-level modules the new nodes name (as ``torch.…``): where the module binds one under
    # another name in scope, the new nodes use that name; where it binds none, it is imported.
    imports: set[str] = field(default_factory=set)


@dataclass(frozen=True, order=True)
class PendingFix(Fix):
    """A fix as a rule describes it: its edits (none yet) are made once the finding is placed."""

    rewrite: Rewrite = field(default_factory=Rewrite, compare=False)


class _Rewriter(cst.CSTTransformer):
    """Applies a rewrite to the nodes it visits: a part of the module, never the whole."""

    def __init__(self, rewrite: Rewrite) -> None:
        super().__init__()
        self.rewrite = rewrite

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        return self.rewrite.replace.get(id(original_node), updated)

    def body(self, original: Sequence, updated: Sequence) -> list:
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
        return updated_node.with_changes(body=self.body(original_node.body, updated_node.body))


class _Renamed(cst.CSTTransformer):
    """New code with the module names it starts attribute chains with (``torch.…``) renamed to
    the module's own bindings (``th.…``); the nodes that were in the module keep theirs."""

    def __init__(self, names: dict[str, str], old: Mapping[int, cst.CSTNode]) -> None:
        super().__init__()
        self.names, self.old = names, old

    def leave_Attribute(self, original_node, updated_node):
        root = original_node.value
        if isinstance(root, cst.Name) and root.value in self.names and id(root) not in self.old:
            return updated_node.with_changes(value=root.with_changes(value=self.names[root.value]))
        return updated_node


@dataclass(frozen=True)
class _Change:
    """Replace the text at offsets ``start`` .. ``end`` of the file with ``text``."""

    start: int
    end: int
    text: str
    # At one offset: an import (0), then inserted statements (1), then code written again (2).
    order: int = 2


class FixMaker:
    """Makes the edits of the pending fixes of one parsed file (or cut of it).

    ``parents`` and ``positions``: the module's, positions being the file's; ``source``: the
    file's text; ``tree``: Python's parse of it (imports are placed by the whole file, which a
    cut may not hold)."""

    def __init__(
        self,
        module: cst.Module,
        parents: Mapping[cst.CSTNode, cst.CSTNode],
        positions: Mapping[cst.CSTNode, CodeRange],
        source: str,
        tree: ast.Module,
    ) -> None:
        self.module, self.parents, self.positions = module, parents, positions
        self.source, self.tree = source, tree

    @functools.cached_property
    def _lines(self) -> list[str]:
        return split_lines(self.source)

    @functools.cached_property
    def _offsets(self) -> list[int]:
        """Where each line of the file starts, and where the file ends."""
        offsets = [0]
        for line in self._lines:
            offsets.append(offsets[-1] + len(line))
        return offsets

    @functools.cached_property
    def _imports(self) -> Imports:
        return Imports(self.tree, self._lines)

    @functools.cached_property
    def _nodes(self) -> dict[int, cst.CSTNode]:
        """The module's nodes by identity, as rewrites name them."""
        nodes = {id(node): node for node in self.parents}
        nodes[id(self.module)] = self.module
        return nodes

    def fix(self, pending: PendingFix) -> Fix | None:
        """``pending`` with its edits; None where it changes nothing or cannot be made here (nor
        where its code nests too deeply to be written: the finding stands, without a fix)."""
        try:
            edits = self._edits(pending.rewrite)
        except RecursionError:
            return None
        return Fix(pending.applicability, pending.message, edits) if edits else None

    def _edits(self, rewrite: Rewrite) -> tuple[Edit, ...]:
        changes: list[_Change] = []
        names = {}
        for name in sorted(rewrite.imports):
            found = self._imports.binding_or_placement(name, self._site(rewrite))
            if isinstance(found, Placement):
                changes.append(self._import(name, found))
            elif found != name:
                names[name] = found
        if names:
            rewrite = self._renamed(rewrite, names)
        made = self._changes(rewrite)
        return () if made is None else _line_edits(self.source, self._offsets, changes + made)

    def _site(self, rewrite: Rewrite) -> tuple[int, int]:
        """Where the rewrite's first node is (line, column): the scope its new code runs in."""
        keys = [*rewrite.replace, *rewrite.insert_before, *(rewrite.wrap or ())[:1]]
        starts = [self.positions[self._nodes[key]].start for key in keys]
        return min((start.line, start.column) for start in starts)

    def _renamed(self, rewrite: Rewrite, names: dict[str, str]) -> Rewrite:
        renamed = _Renamed(names, self._nodes)
        wrap = rewrite.wrap
        if wrap is not None:
            item = _visited(wrap[2], renamed)
            assert isinstance(item, cst.BaseExpression)  # (an expression, renamed)
            wrap = (wrap[0], wrap[1], item)
        return Rewrite(
            replace={key: _visited(new, renamed) for key, new in rewrite.replace.items()},
            insert_before={
                key: [_statement(_visited(statement, renamed)) for statement in statements]
                for key, statements in rewrite.insert_before.items()
            },
            wrap=wrap,
        )

    def _import(self, name: str, place: Placement) -> _Change:
        at = self._offsets[place.line - 1]
        if place.inline:
            at += place.column
            return _Change(at, at, f"import {name}; ", order=0)
        statement = cst.parse_statement(f"import {name}\n")
        return _Change(at, at, self._code(statement, [place.indent]), order=0)

    def _changes(self, rewrite: Rewrite) -> list[_Change] | None:
        """The changes of the rewrite's nodes (an import's apart); None where one cannot be made
        (its old code is not the text where it is)."""
        nodes = self._nodes
        run: list[Statement] = []
        changes: list[_Change | None] = []
        if rewrite.wrap is not None:
            first, last = nodes[rewrite.wrap[0]], nodes[rewrite.wrap[1]]
            block = self.parents[first]
            body = list(block.body)  # type: ignore[attr-defined]  # a statement's parent: a block
            run = [_statement(s) for s in body[body.index(first) : body.index(last) + 1]]
            changes.append(self._statements(run, block, rewrite))
        units = list(dict.fromkeys(self._unit(nodes[key]) for key in rewrite.replace))
        written = {*run, *units}  # what is written again whole, with what is inside it
        for unit in units:
            if unit not in run and not self._within(unit, written):
                changes.append(self._region(unit, rewrite))
        for key, statements in rewrite.insert_before.items():
            statement = _statement(nodes[key])
            if statement not in written and not self._within(statement, written):
                indents = self._indents(self.parents[statement])
                span = self._span([statement], indents)
                text = "".join(self._code(s, indents) for s in statements)
                changes.append(None if span is None else _Change(span[0], span[0], text, 1))
        made = [change for change in changes if change is not None]
        return made if len(made) == len(changes) else None

    def _unit(self, node: cst.CSTNode) -> cst.CSTNode:
        """What to write again for a change of ``node``: the innermost expression or statement of
        a block that holds it (an expression's code depends on nothing around it, but for its
        indentation; a starred element's depends on its place in the list)."""
        while not (
            (isinstance(node, cst.BaseExpression) and not isinstance(node, cst.StarredElement))
            or isinstance(self.parents.get(node), (cst.IndentedBlock, cst.Module))
        ):
            node = self.parents[node]
        return node

    def _within(self, node: cst.CSTNode, written: Collection[cst.CSTNode]) -> bool:
        """Whether a node strictly above ``node`` is one of ``written``."""
        parent = self.parents.get(node)
        while parent is not None:
            if parent in written:
                return True
            parent = self.parents.get(parent)
        return False

    def _region(self, unit: cst.CSTNode, rewrite: Rewrite) -> _Change | None:
        if not isinstance(unit, cst.BaseExpression):
            return self._statements([_statement(unit)], self.parents[unit], rewrite)
        indents = self._indents(unit)
        where = self.positions[unit]
        start, end = where.start, where.end
        if unit.lpar:  # the parentheses are the expression's code, outside its position
            start, end = self.positions[unit.lpar[0]].start, self.positions[unit.rpar[-1]].end
        begin = self._offsets[start.line - 1] + start.column
        finish = self._offsets[end.line - 1] + end.column
        if self.source[begin:finish] != self._code(unit, indents):
            return None
        return _Change(begin, finish, self._code(_visited(unit, _Rewriter(rewrite)), indents))

    def _statements(
        self, run: list[Statement], block: cst.CSTNode, rewrite: Rewrite
    ) -> _Change | None:
        """The change of a run of consecutive statements of ``block``, written again whole
        (with what the rewrite inserts before them and the ``with`` it wraps them in)."""
        indents = self._indents(block)
        span = self._span(run, indents)
        if span is None:
            return None
        new = _Rewriter(rewrite).body(run, [_visited(s, _Rewriter(rewrite)) for s in run])
        return _Change(*span, "".join(self._code(s, indents) for s in new))

    def _span(self, run: Sequence[Statement], indents: list[str]) -> tuple[int, int] | None:
        """The offsets of the code of a run of consecutive statements, generated at
        ``indents``: from the first line of the first (its leading blank and comment lines
        included, and those of its first decorator) to the end of the last; None where that is
        not the text there (a cut of the file may have dropped lines between them)."""
        first = run[0]
        decorators = first.decorators if isinstance(first, DECORATED) else ()
        line = self.positions[decorators[0] if decorators else first].start.line
        line -= len(first.leading_lines) + (len(decorators[0].leading_lines) if decorators else 0)
        start = self._offsets[line - 1]
        old = "".join(self._code(statement, indents) for statement in run)
        return (start, start + len(old)) if self.source.startswith(old, start) else None

    def _indents(self, node: cst.CSTNode | None) -> list[str]:
        """The indentation LibCST generates code at inside ``node``: each block's around it."""
        indents = []
        while node is not None:
            if isinstance(node, cst.IndentedBlock):
                indents.append(self.module.default_indent if node.indent is None else node.indent)
            node = self.parents.get(node)
        return indents[::-1]

    def _code(self, node: cst.CSTNode, indents: list[str]) -> str:
        state = CodegenState(
            self.module.default_indent, self.module.default_newline, indent_tokens=list(indents)
        )
        node._codegen(state)
        return "".join(state.tokens)


Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement
DECORATED = (cst.FunctionDef, cst.ClassDef)


def _visited(node: cst.CSTNode, transformer: cst.CSTTransformer) -> cst.CSTNode:
    """``node`` through a transformer that neither removes nor splits nodes."""
    visited = node.visit(transformer)
    assert isinstance(visited, cst.CSTNode)  # (no sentinel)
    return visited


def _statement(node: cst.CSTNode) -> Statement:
    assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))  # (a block's)
    return node


def _line_edits(source: str, offsets: list[int], changes: list[_Change]) -> tuple[Edit, ...]:
    """The changes as whole-line edits, as :func:`portlint.findings.line_edits` makes them from
    the lines they touch (changes on the same or next lines are diffed together, as a diff of the
    whole file would take them); none where two changes overlap."""
    groups: list[tuple[int, int, list[_Change]]] = []  # first and last line, and the changes
    for change in sorted(changes, key=lambda c: (c.start, c.order)):
        first = bisect_right(offsets, change.start)
        last = bisect_right(offsets, max(change.start, change.end - 1))
        if groups and first <= groups[-1][1] + 1:
            groups[-1] = (groups[-1][0], max(last, groups[-1][1]), [*groups[-1][2], change])
        else:
            groups.append((first, last, [change]))
    edits: list[Edit] = []
    for first, last, group in groups:
        begin, end = offsets[first - 1], offsets[min(last, len(offsets) - 1)]
        pieces, at = [], begin
        for change in group:
            if change.start < at:
                return ()
            pieces += [source[at : change.start], change.text]
            at = change.end
        pieces.append(source[at:end])
        edits += [
            Edit(first + e.line - 1, 1, first + e.end_line - 1, 1, e.content)
            for e in line_edits(source[begin:end], "".join(pieces))
        ]
    return tuple(edits)
