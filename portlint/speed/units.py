"""The units of a file that a cut (:mod:`portlint.speed.cut`) keeps or drops, read with ``ast``:
top-level functions and classes and the methods of classes, and the units that may call a kept
one (callers of callers, to a fixpoint)."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

from portlint.calls import callers_anywhere, callers_in_class, definition_key, words_of

# A function's name after `def` (wherever it is: a name too many only keeps more; a pattern that
# starts with a literal is searched for as fast as ``str.find``, one that starts with ``^`` is not).
DEF = re.compile(r"def[ \t]+(\w+)")


@dataclass(eq=False)
class Unit:
    name: str
    start: int  # first line (of the first decorator), 1-based
    end: int  # last line
    owner: str | None  # the class of a method; None for a top-level function or class
    body_start: int | None = None  # a top-level function's first body line, if it starts one
    docstring: tuple[int, int] | None = None  # its docstring's first and last lines
    text: str = ""
    code: str = ""  # the text without the docstring and comment lines: where evidence is sought
    body: str = ""  # the code from ``body_start`` on

    @property
    def method(self) -> bool:
        return self.owner is not None

    @functools.cached_property
    def defined_names(self) -> set[str]:
        """Its name and the names of the functions defined in it (read off the text: a name too
        many only keeps more)."""
        return {self.name, *DEF.findall(self.text)}

    @functools.cached_property
    def words(self) -> frozenset[str]:
        return words_of(self.text)


def span_of(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)]), node.end_lineno or node.lineno


def _body_start(node: ast.AST, lines: list[str]) -> int | None:
    """The line a function's body starts, where that line holds nothing of its header."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    first = node.body[0]
    if first.lineno <= node.lineno or lines[first.lineno - 1][: first.col_offset].strip():
        return None
    return first.lineno


def _docstring(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> tuple[int, int] | None:
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.lineno, first.end_lineno or first.lineno
    return None


def units_of(tree: ast.Module, lines: list[str]) -> tuple[list[Unit], dict[int, list[Unit]]]:
    """Top-level functions and classes; for each class (by its index), its methods."""
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    units, methods = [], {}
    for node in tree.body:
        if not isinstance(node, definitions):
            continue
        body_start = _body_start(node, lines)
        units.append(Unit(node.name, *span_of(node), None, body_start, _docstring(node)))
        if isinstance(node, ast.ClassDef):
            methods[len(units) - 1] = [
                Unit(child.name, *span_of(child), node.name, None, _docstring(child))
                for child in node.body
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return units, methods


def without_docstring(
    lines: list[str], start: int, end: int, docstring: tuple[int, int] | None
) -> str:
    """Lines ``start`` to ``end`` without the docstring."""
    if docstring and start <= docstring[0]:
        return "".join(lines[start - 1 : docstring[0] - 1] + lines[docstring[1] : end])
    return "".join(lines[start - 1 : end])


def callers_closure(candidates: list[Unit], kept: list[Unit]) -> list[Unit]:
    """``kept``, and the candidates that may call a function defined in a kept unit, to a
    fixpoint (callers of callers: whether a function is guarded depends on its callers being
    guarded).

    A call counts as :mod:`portlint.calls` says.
    """
    kept = list(kept)
    followed: set[int] = set()
    while True:
        new = [u for u in kept if id(u) not in followed]
        if not new:
            return kept
        followed |= {id(u) for u in new}
        anywhere: set[str] = set()
        in_class: dict[str, set[str]] = {}
        for unit in new:
            names = unit.defined_names
            anywhere |= {definition_key(name, unit.owner) for name in names}
            if unit.owner is not None:
                in_class.setdefault(unit.owner, set()).update(names)
        calls = callers_anywhere(anywhere)
        sought = {key.rpartition(".")[2] for key in anywhere}
        own = {owner: callers_in_class(names) for owner, names in in_class.items()}
        kept_ids = {id(u) for u in kept}
        kept += [
            u
            for u in candidates
            if id(u) not in kept_ids
            and (
                (not sought.isdisjoint(u.words) and calls.search(u.text))
                or (
                    u.owner in own
                    and not in_class[u.owner].isdisjoint(u.words)
                    and own[u.owner].search(u.text)
                )
            )
        ]
