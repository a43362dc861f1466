"""Where a fix finds the module its new code names (``torch``), read from Python's parse of the
whole file: the name the module already binds it to where the fix is, or else where an
``import`` of it goes.

A binding is in scope at the fix's site where it is made in the module or a function around the
site (before the site, in a function, or at module level for code at module level) or in a class
whose body holds the site itself; an ``import`` under ``if TYPE_CHECKING:`` binds nothing when the
code runs. Where no binding is in scope, the import goes where the module's own imports of that
library are, so that an optional import stays optional:

- in the innermost function around the site that imports the library: before its first such
  import;
- else, where the module imports it at its top level only inside a block (``try:`` ... ``except
  ImportError``, ``if``): before the first such import, in that block;
- else, where the module imports it only inside other functions (a lazy import): at the start of
  the function around the site;
- else (the module imports it unconditionally, or not at all): at the top, after the docstring
  and the ``from __future__`` imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Placement:
    """Where ``import module`` goes: a line of its own before ``line``, indented by ``indent``;
    or, ``inline``, as ``import module; `` at ``column`` of ``line`` (before a statement that
    does not start its line, as in ``try: from torch import cuda``)."""

    line: int
    column: int  # in characters
    indent: str
    inline: bool


class Imports:
    """What a module binds and imports, read from Python's parse of it (``tree``; ``lines``: the
    file's lines, with their ends), each scope once, for all the fixes of its findings."""

    def __init__(self, tree: ast.Module, lines: list[str]) -> None:
        self.tree, self.lines = tree, lines
        self._read: dict[tuple[ast.AST, str], _Scope] = {}
        self._anywhere: dict[str, bool] = {}

    def binding_or_placement(self, module: str, site: tuple[int, int]) -> str | Placement:
        """The name ``module`` is bound to at ``site`` (line, 0-based column), or where to import
        it."""
        chain = self._scopes(site, module)
        for scope in reversed(chain):
            if isinstance(scope.node, ast.ClassDef) and scope is not chain[-1]:
                continue  # a class's names are not in scope in its methods
            # Code in a function runs once the module has run: every import at module level
            # counts.
            before_only = scope is not chain[0] or len(chain) == 1
            names = [name for at, name in scope.bindings if not (before_only and at >= site)]
            if names:
                return module if module in names else names[0]
        return self._placement(chain, module)

    def _placement(self, chain: list[_Scope], module: str) -> Placement:
        functions = [scope for scope in chain if isinstance(scope.node, FUNCTIONS)]
        for function in reversed(functions):
            if function.imports:
                return _before(function.imports[0], self.lines)
        top = chain[0].imports
        if top and not any(statement in self.tree.body for statement in top):
            return _before(top[0], self.lines)
        if functions and not top and self._imported_anywhere(module):
            body = functions[-1].node.body  # type: ignore[attr-defined]  # a function's
            first = body[1] if _docstring(body[0]) and len(body) > 1 else body[0]
            return _before(first, self.lines)
        return _top(self.tree)

    def _imported_anywhere(self, module: str) -> bool:
        if module not in self._anywhere:
            self._anywhere[module] = any(_imports(s, module) for s in ast.walk(self.tree))
        return self._anywhere[module]

    def _scopes(self, site: tuple[int, int], module: str) -> list[_Scope]:
        """The module, then the functions and classes whose body holds ``site``, outermost
        first."""
        chain = [self._scope(self.tree, module)]
        while True:
            inner = next((s for start, end, s in chain[-1].nested if start <= site <= end), None)
            if inner is None:
                return chain
            chain.append(self._scope(inner, module))

    def _scope(self, node: ast.AST, module: str) -> _Scope:
        if (node, module) not in self._read:
            self._read[node, module] = _Scope(node, self.lines, module)
        return self._read[node, module]


class _Scope:
    """A module, function or class, as far as ``module`` goes: where its own statements bind
    the module and to what name, which of them import it, and the scopes right inside it with
    the span of their bodies."""

    def __init__(self, node: ast.AST, lines: list[str], module: str) -> None:
        self.node = node
        statements = list(_statements(node.body))  # type: ignore[attr-defined]  # a scope's
        self.bindings = [
            (_start(s, lines), name) for s in statements for name in _bindings(s, module)
        ]
        self.imports = [s for s in statements if _imports(s, module)]
        self.nested = [
            (_start(s.body[0], lines), (s.end_lineno or s.lineno, 1 << 30), s)
            for s in statements
            if isinstance(s, SCOPES)
        ]


def _top(tree: ast.Module) -> Placement:
    """After the docstring and the ``from __future__`` imports (before the comments and blank
    lines above the next statement; at the first statement, after those that open the file)."""
    body = tree.body
    at = 0
    while at < len(body) and ((at == 0 and _docstring(body[0])) or _future(body[at])):
        at += 1
    if at == 0:
        line = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", ()))])
    else:
        line = (body[at - 1].end_lineno or body[at - 1].lineno) + 1
    return Placement(line, 0, "", inline=False)


def _before(statement: ast.stmt, lines: list[str]) -> Placement:
    line, column = _start(statement, lines)
    indent = lines[line - 1][:column]
    return Placement(line, column, indent, inline=bool(indent.strip(" \t\f")))


def _start(statement: ast.stmt, lines: list[str]) -> tuple[int, int]:
    """Where ``statement`` starts: its line, and its column in characters (``ast`` counts bytes)."""
    text = lines[statement.lineno - 1]
    return statement.lineno, len(text.encode()[: statement.col_offset].decode(errors="replace"))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a scope, those of the blocks in it included, in order; not those of the
    functions and classes in it, nor those of an ``if TYPE_CHECKING:`` body."""
    for statement in body:
        yield statement
        if isinstance(statement, SCOPES):
            continue
        if isinstance(statement, ast.If) and _type_checking(statement.test):
            yield from _statements(statement.orelse)
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(statement, name, []))
        for holder in [*getattr(statement, "handlers", []), *getattr(statement, "cases", [])]:
            yield from _statements(holder.body)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _bindings(statement: ast.stmt, module: str) -> list[str]:
    """The names ``statement`` binds ``module`` to (``import torch``, ``import torch as th``;
    ``import torch.nn`` binds ``torch`` too)."""
    if not isinstance(statement, ast.Import):
        return []
    return [
        alias.asname or module
        for alias in statement.names
        if alias.name == module or (alias.asname is None and alias.name.startswith(module + "."))
    ]


def _imports(statement: ast.AST, module: str) -> bool:
    """Whether ``statement`` imports ``module`` or a module of it."""
    if isinstance(statement, ast.Import):
        return any(_of(alias.name, module) for alias in statement.names)
    return (
        isinstance(statement, ast.ImportFrom)
        and not statement.level
        and _of(statement.module or "", module)
    )


def _of(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def _future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, (str, bytes))
    )
