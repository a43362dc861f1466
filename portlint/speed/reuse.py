"""Parse again only what changed: an open document's parts, as LibCST parsed them last time.

In the editor a file is linted again at every pause in typing, and most of its text is what it
was. LibCST's nodes carry no position (positions are computed from the tree as a whole), so a
module's tree can be put together from trees of its parts parsed alone, where each part's tree
is the one LibCST builds for it inside the whole. :class:`Parts` parses a text in parts, keeps
each part's tree by its text, and parses again only the parts whose text is new: typing in one
function of vLLM's 7,000-line ``gpu_model_runner.py`` parses that method, not the 2,000 lines of
its cut (about 90 ms).

The parts: the module's top-level statements, in runs; a class that is a run of its own is cut
again into runs of its body's statements (the file above is one class); a run of fewer than
:data:`MIN_LINES` lines is joined to the next. A run may end where the next statement starts
after nothing but empty lines and comment lines at that statement's own indentation: LibCST gives
those lines to the statement below (``leading_lines``), as it gives them to the first statement of
a part parsed alone (to the module's ``header`` at the top, moved to the statement here). A line
of spaces or a comment indented deeper may belong to the block above (its ``footer``), so there
the statements stay in one part. A class's later parts are parsed after the class's own header
lines (``class A(Base):``), and their statements are taken from that class. A part the text
repeats (the ``pass`` of each method a cut dropped) has a tree for each place: a tree holds a node
once, or positions and parents would mix the two places.

The tree is used only where every part agrees on what the whole would have detected: the
newline, and the indentation of the first indented block (a block whose indentation is the
module's default is written without one). Where anything does not fit (a part that LibCST or
the count of statements refuses), the text is parsed whole, as without parts. The tests compare
the two trees node for node over the repository's files (``tests/reuse_checks.py``), and
``scripts/check_reuse.py`` over whole releases.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst

from portlint.bounds import Known
from portlint.findings import split_lines

EMPTY_LINES = frozenset({"\n", "\r\n", "\r"})
# The fewest lines a part has (but the last of a block): a part of fewer costs more to parse
# alone (LibCST's start) than to parse again with its neighbours.
MIN_LINES = 40


@dataclass(frozen=True)
class _Tree:
    """A part parsed alone: its statements, with what the module around them held."""

    statements: tuple[cst.BaseStatement, ...]
    header: tuple[cst.EmptyLine, ...]  # the module's (a part's leading empty lines)
    footer: tuple[cst.EmptyLine, ...]  # the module's (after the file's last statement)
    block_footer: tuple[cst.EmptyLine, ...]  # the class body's, for a part of a class
    owner: cst.ClassDef | None  # the class around a part of a class
    indent: str | None  # the module's default indentation, where the part has a block
    newline: str
    trailing_newline: bool


class Parts:
    """The parts of one document that its last lint parsed, by their text (see the module)."""

    def __init__(self, min_lines: int = MIN_LINES) -> None:
        self.min_lines = min_lines  # the fewest lines of a part (but the last of a block)
        self._known: dict[tuple[str | None, str], list[_Tree]] = {}
        self.in_parts = False  # whether the last text was parsed in parts
        self.parsed = 0  # how many of its parts were parsed (not known from before)
        self.known = Known()  # what Python's verdict found of the parts of its last text

    def parse(
        self,
        parse: Callable[[str], cst.Module],
        text: str,
        statements: Sequence[ast.stmt],
        lines: Sequence[int] | None,
    ) -> cst.Module:
        """``text`` parsed by ``parse``, in parts where it can be. ``statements``: its top-level
        statements as ``ast`` parsed them, in the lines of the file; ``lines``: the line of the
        file that each line of ``text`` is (None: the text is the file's)."""
        text_lines = split_lines(text)
        runs = _runs(text_lines, statements, lines, self.min_lines)
        known, self._known = self._known, {}
        self.in_parts, self.parsed = False, 0
        module = None
        if runs is not None:
            with contextlib.suppress(cst.ParserSyntaxError):  # (a part alone: parsed whole)
                module = self._assembled(parse, text_lines, runs, known)
        if module is None:
            return parse(text)
        self.in_parts = True
        return module

    def _assembled(self, parse, text_lines, runs, known) -> cst.Module | None:
        trees: list[_Tree] = []
        body: list[cst.BaseStatement] = []
        for run in runs:
            if isinstance(run, _Run):
                tree = self._tree(parse, None, "".join(text_lines[run.start : run.end]), known)
                if tree is None or len(tree.statements) != run.count:
                    return None
                trees.append(tree)
                body += _joined(tree, first=not body)
                continue
            header = "".join(text_lines[run.header_start : run.header_end])
            parts = []
            for number, inner in enumerate(run.parts):
                part = "".join(text_lines[inner.start : inner.end])
                tree = self._tree(parse, header if number else "", part, known)
                if tree is None or tree.owner is None or len(tree.statements) != inner.count:
                    return None
                parts.append(tree)
            trees += parts
            first, last = parts[0], parts[-1]
            assert first.owner is not None and isinstance(first.owner.body, cst.IndentedBlock)
            inner = [statement for part in parts for statement in part.statements]
            block = first.owner.body.with_changes(body=inner, footer=last.block_footer)
            owner = first.owner.with_changes(body=block)
            if body and first.header:
                owner = owner.with_changes(leading_lines=(*first.header, *owner.leading_lines))
            body.append(owner)
            if any(part.block_footer for part in parts[:-1]):
                return None
        if any(tree.footer for tree in trees[:-1]):
            return None
        indents = {tree.indent for tree in trees if tree.indent is not None}
        if len(indents) > 1 or len({tree.newline for tree in trees}) > 1:
            return None
        return cst.Module(
            body=body,  # type: ignore[arg-type]  # (LibCST types a block's statements wider)
            header=trees[0].header,
            footer=trees[-1].footer,
            default_indent=indents.pop() if indents else "    ",
            default_newline=trees[0].newline,
            has_trailing_newline=trees[-1].trailing_newline,
        )

    def _tree(self, parse, header: str | None, text: str, known) -> _Tree | None:
        """The tree of a part: one parsed before, or parsed now. ``header``: None for a run of
        top-level statements; for a part of a class, the class's header lines, or "" for the
        first part (which starts with the class). A part that the text repeats (the ``pass``
        of each method a cut dropped) has a tree for each place: a tree holds a node once."""
        key = header, text
        trees = self._known.setdefault(key, [])
        earlier = known.get(key, ())
        tree = earlier[len(trees)] if len(trees) < len(earlier) else None
        if tree is None:
            tree = _parsed_alone(parse, header, text)
            if tree is None:
                return None
            self.parsed += 1
        trees.append(tree)
        return tree


def _parsed_alone(parse, header: str | None, text: str) -> _Tree | None:
    module = parse((header or "") + text)
    if header is None:
        blocks = any(_has_block(statement) for statement in module.body)
        return _Tree(
            tuple(module.body),
            tuple(module.header),
            tuple(module.footer),
            (),
            None,
            module.default_indent if blocks else None,
            module.default_newline,
            module.has_trailing_newline,
        )
    if len(module.body) != 1 or (header and module.header):
        return None
    (owner,) = module.body
    if not isinstance(owner, cst.ClassDef) or not isinstance(owner.body, cst.IndentedBlock):
        return None
    return _Tree(
        tuple(owner.body.body),
        tuple(module.header),
        tuple(module.footer),
        tuple(owner.body.footer),
        owner,
        module.default_indent,
        module.default_newline,
        module.has_trailing_newline,
    )


def _joined(tree: _Tree, first: bool) -> list[cst.BaseStatement]:
    """A top-level part's statements as the whole module holds them: the empty lines that lead
    the part (the header of its own module) lead its first statement, but at the file's top."""
    statements = list(tree.statements)
    if tree.header and not first:
        head = statements[0]
        leading = (*tree.header, *head.leading_lines)  # type: ignore[attr-defined]
        statements[0] = head.with_changes(leading_lines=leading)
    return statements


def _has_block(node: cst.CSTNode) -> bool:
    """Whether ``node`` (a statement, or a clause of one) has an indented block: where LibCST
    detects the module's default indentation."""
    if isinstance(node, cst.Match):
        return True
    if isinstance(getattr(node, "body", None), cst.IndentedBlock):
        return True
    clauses = [getattr(node, "orelse", None), getattr(node, "finalbody", None)]
    clauses += getattr(node, "handlers", ())
    return any(clause is not None and _has_block(clause) for clause in clauses)


@dataclass(frozen=True)
class _Run:
    """Statements of one block parsed together: lines ``start`` to ``end`` (0-based, end out)
    of the text, holding ``nodes`` (as ``ast`` parsed them), which are ``count`` statements as
    LibCST counts them (``a = 1; b = 2`` is one)."""

    start: int
    end: int
    nodes: tuple[ast.stmt, ...]
    count: int


@dataclass(frozen=True)
class _Class:
    """A class parsed in parts (runs of its body's statements): the lines of its header, and
    the parts, the first of which starts with the class itself."""

    header_start: int
    header_end: int
    parts: tuple[_Run, ...]


class _Lines:
    """The text's lines, and where each line of the file is in them."""

    def __init__(self, text_lines: list[str], lines: Sequence[int] | None, min_lines: int) -> None:
        self.text_lines, self.min_lines = text_lines, min_lines
        self.file_lines = lines if lines is not None else range(1, len(text_lines) + 1)
        self.index = {line: number for number, line in enumerate(self.file_lines)}

    def runs(self, nodes: Sequence[ast.stmt], start: int, end: int) -> list[_Run] | None:
        """``nodes`` (the statements of one block, on lines ``start`` to ``end`` of the text)
        in runs: a run ends where the next statement starts after nothing but empty lines and
        comment lines at its own indentation (:func:`_owned_below`)."""
        runs: list[_Run] = []
        run_start, taken, count = start, [nodes[0]], 1
        for before, node in itertools.pairwise(nodes):
            at = self.index.get(_first_line(node))
            if at is None:
                return None
            end_of_before = before.end_lineno or before.lineno
            if _first_line(node) <= end_of_before:  # (on a line of the one before: `a; b`)
                taken.append(node)
                continue
            indent = _indent(self.text_lines[at])
            while (
                at > 0
                and _owned_below(self.text_lines[at - 1], indent)
                and self.file_lines[at - 1] > end_of_before
            ):
                at -= 1
            if at > 0 and self.file_lines[at - 1] <= end_of_before:
                runs.append(_Run(run_start, at, tuple(taken), count))
                run_start, taken, count = at, [node], 1
            else:
                taken.append(node)
                count += 1
        runs.append(_Run(run_start, end, tuple(taken), count))
        return runs

    def in_parts(self, run: _Run) -> _Class | None:
        """A run that is one class, cut into parts at its body's statements, where it can be."""
        node = run.nodes[0] if len(run.nodes) == 1 else None
        if not isinstance(node, ast.ClassDef) or len(node.body) < 2:
            return None
        header_start = self.index.get(_first_line(node))
        body_start = self.index.get(_first_line(node.body[0]))
        if header_start is None or body_start is None or node.body[0].lineno == node.lineno:
            return None
        last = self.text_lines[body_start - 1].strip()
        if not last or last.startswith("#"):  # (a comment or an empty line before the body)
            return None
        parts = self.runs(node.body, run.start, run.end)
        if parts is None or len(parts) < 2:
            return None
        return _Class(header_start, body_start, tuple(_merged(parts, self.min_lines)))


def _runs(
    text_lines: list[str],
    statements: Sequence[ast.stmt],
    lines: Sequence[int] | None,
    min_lines: int,
) -> list[_Run | _Class] | None:
    """The parts of the text (see the module), or None where it cannot be cut."""
    if not statements:
        return None
    where = _Lines(text_lines, lines, min_lines)
    runs = where.runs(statements, 0, len(text_lines))
    if runs is None:
        return None
    return _merged([where.in_parts(run) or run for run in runs], min_lines)


R = TypeVar("R", _Run, _Run | _Class)


def _merged(runs: list[R], min_lines: int) -> list[R]:
    """``runs``, those of fewer than ``min_lines`` lines joined to the next (but a class
    in parts): each part parsed costs LibCST a start of its own, more than a few short
    statements do."""
    merged: list[R] = []
    for run in runs:
        last = merged[-1] if merged else None
        if isinstance(last, _Run) and isinstance(run, _Run) and last.end - last.start < min_lines:
            merged[-1] = _Run(last.start, run.end, last.nodes + run.nodes, last.count + run.count)
        else:
            merged.append(run)
    return merged


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _owned_below(line: str, indent: str) -> bool:
    """Whether LibCST gives ``line``, between two statements indented by ``indent``, to the
    statement below: an empty line, or a comment line indented as that statement (one indented
    deeper may be the footer of the block above)."""
    return line in EMPTY_LINES or (line.startswith(indent) and line[len(indent) :][:1] == "#")


def _first_line(node: ast.stmt) -> int:
    """A statement's first line: its first decorator's, where it has one."""
    decorators = getattr(node, "decorator_list", None)
    return min(node.lineno, *(d.lineno for d in decorators)) if decorators else node.lineno
