"""Python's own verdict on a file, and the bounds past which portlint does not analyse it.

A file portlint parses gets exactly CPython's verdict: where ``compile()`` refuses it (its parser,
or its compiler: ``return`` outside a function), portlint reports that syntax error at CPython's
line and stops.
Where CPython accepts it, the work LibCST and the rules would do is bounded first: a file whose
code nests deeper than :data:`MAX_DEPTH` (LibCST's parse and visits recurse once per level, so a
50,000-deep attribute chain or sum would end in a RecursionError or a stack overflow), or that
is too large (:data:`MAX_CHARACTERS`, :data:`MAX_NODES`: LibCST's tree costs about 5 kB a node, so a
10 MB line of literals would take gigabytes and minutes), gets one diagnostic and no analysis.
The bounds are far above real code: over 14,000 files of vLLM, SGLang, DeepSpeed, transformers,
diffusers and accelerate, the deepest nests 53 levels, the largest holds 48,000 nodes in 320 kB.
"""

from __future__ import annotations
import __future__

import ast
import warnings
from typing import NamedTuple

from portlint.findings import Violation, split_lines

# Nesting levels as LibCST builds them (see :func:`deepest`): real code reaches 53; LibCST and
# the rules run out of Python's default recursion limit from about 200 (a sum inside a fix).
MAX_DEPTH = 100
# A file's size in characters, checked before it is parsed at all; and its syntax tree's node
# count. At these bounds a check takes about 5 s and 0.5 GB, a fix about 20 s (2 cores, 2026).
MAX_CHARACTERS = 2_000_000
MAX_NODES = 100_000

TOO_DEEP = "too deeply nested to analyse"
TOO_LARGE = "too large to analyse"

# Nodes LibCST builds two levels for (a list and its elements, a call and its arguments), and
# three (a subscript, its elements and their index).
_TWO_LEVELS = (
    ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Call, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp,
)  # fmt: skip


def python_verdict(path: str, source: str, known: Known | None = None) -> ast.Module | Violation:
    """``source`` parsed by Python, or the one diagnostic that stops its analysis: Python's
    syntax error, or a bound that the file passes. ``known``: what an earlier verdict on a text
    of this file found of its statements (the editor's: see :class:`Known`)."""
    if len(source) > MAX_CHARACTERS:
        return Violation(path, 1, 1, None, f"{TOO_LARGE} ({len(source):,} characters)")
    try:
        with warnings.catch_warnings():  # (Python's warnings about the code are not portlint's)
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError as error:
        return syntax_error(path, error)
    except RecursionError:  # (Python's own bound on nesting, which compile() also refuses)
        return Violation(path, _longest_line(source), 1, None, TOO_DEEP)
    except MemoryError:
        return Violation(path, 1, 1, None, TOO_LARGE)
    units = known.units(tree, source) if known is not None else None
    depth, line, nodes = deepest(tree) if units is None else known.deepest(units)  # type: ignore[union-attr]
    if depth > MAX_DEPTH:
        if units is not None:  # (the line, as the walk of the whole tree finds it)
            depth, line, nodes = deepest(tree)
        return Violation(path, line, 1, None, f"{TOO_DEEP} (nesting {depth}, over {MAX_DEPTH})")
    if nodes > MAX_NODES:
        return Violation(path, 1, 1, None, f"{TOO_LARGE} ({nodes:,} syntax nodes)")
    try:  # what only the compiler refuses: `return` outside a function, `nonlocal` at the top...
        if units is None:
            compile_quietly(tree, path)
        else:
            known.compile(tree, units, path)  # type: ignore[union-attr]
    except SyntaxError as error:
        return syntax_error(path, error)
    except RecursionError:
        return Violation(path, line, 1, None, TOO_DEEP)
    return tree


def compile_quietly(code: ast.Module | bytes, path: str, flags: int = 0) -> None:
    """``compile()`` without Python's warnings about the code (not portlint's to show, and an
    error where warnings are made errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(code, path, "exec", flags=flags, dont_inherit=True)


class _Unit(NamedTuple):
    """A part of a module that :class:`Known` judges alone: a top-level statement, a statement of
    a class's body, or a class's header (the class without its body)."""

    key: tuple  # what determines its tree: its kind, its lines' text and where on them it is
    node: ast.stmt  # the root of its walk (a class's header: a copy of the class, bodiless)
    level: int  # the level of LibCST's tree it is at (see :func:`deepest`)
    owner: ast.ClassDef | None  # the class it is of, for a statement of a class's body


class Known:
    """What Python's verdicts on the last text of one file found of its parts, by their text:
    which compile and how deep they nest. The next verdict on the file (the editor's, as the
    user types) parses the whole text again but walks and compiles only the parts that are new.

    A module's compile errors are its statements' own: a statement's tree is all that decides
    them, but for the placement of ``from __future__`` imports and ``global`` declarations, which
    depend on the statements around them (a module with either at top level, or a class with
    ``global``/``nonlocal`` in its body, is judged whole), and the future features, which are
    given to each compile. So a part compiles where it did before with the same text, and the
    statements of one class can be compiled without the others, in a copy of the class. Depths
    and node counts add up the same way: a part's walk does not depend on what is around it.
    """

    def __init__(self) -> None:
        self._parts: dict[tuple, tuple[int, int, int]] = {}  # compiled: (depth, line, nodes)
        self._new: list[_Unit] = []  # the parts the last verdict walked
        self._pending: dict[tuple, tuple[int, int, int]] = {}  # theirs, until they compile
        self.fresh = 0  # how many parts the last verdict walked and compiled

    def units(self, tree: ast.Module, source: str) -> list[_Unit] | None:
        """The parts of ``tree`` (whose text is ``source``), or None: judge it whole."""
        if any(isinstance(node, ast.Global) for node in tree.body) or not _futures_first(tree):
            return None
        lines = split_lines(source)
        flags = _future_flags(tree)  # (a part that compiles without a feature may not with it)

        def key(kind: str, node: ast.AST, first: int, last: int) -> tuple:
            text = "".join(lines[first - 1 : last])
            return kind, flags, text, node.col_offset, node.end_col_offset  # type: ignore[attr-defined]

        units = []
        for node in tree.body:
            first, last = _first_line(node), node.end_lineno or node.lineno
            if not _in_parts(node):
                units.append(_Unit(key("top", node, first, last), node, 1, None))
                continue
            assert isinstance(node, ast.ClassDef)
            head = _bodied(node, [])
            body_first = _first_line(node.body[0])
            units.append(_Unit(key("class", node, first, body_first - 1), head, 1, None))
            for statement in node.body:
                first, last = _first_line(statement), statement.end_lineno or statement.lineno
                units.append(_Unit(key("in class", statement, first, last), statement, 2, node))
        return units

    def deepest(self, units: list[_Unit]) -> tuple[int, int, int]:
        """:func:`deepest` of the tree of ``units``: the parts known from before not walked.
        The new parts are known once :meth:`compile` has compiled them."""
        self._new, self._pending = [], {}
        depth, line, nodes = 0, 1, 1  # (the module: one node, at level 0)
        parts, self._parts = self._parts, {}
        for unit in reversed(units):  # (the order of the walk of the whole tree)
            found = parts.get(unit.key)
            if found is None:
                self._new.append(unit)
                found = deepest(unit.node, unit.level)
                found = found[0], found[1] - unit.node.lineno, found[2]
                self._pending[unit.key] = found
            else:
                self._parts[unit.key] = found
            if found[0] > depth:
                depth, line = found[0], unit.node.lineno + found[1]
            nodes += found[2]
        self.fresh = len(self._new)
        return depth, line, nodes

    def compile(self, tree: ast.Module, units: list[_Unit], path: str) -> None:
        """Compile the parts of ``tree`` that :meth:`deepest` found new, in the order of the
        file (a class's statements in a copy of the class, with its header), with the module's
        future features; where they compile, they are known from now on."""
        if not self._new:
            return
        new = {id(unit.node) for unit in self._new}
        heads = (unit for unit in units if unit.owner is None)  # (one per top-level statement)
        body: list[ast.stmt] = []
        for node, head in zip(tree.body, heads, strict=True):
            if head.node is node:
                if id(node) in new:
                    body.append(node)
                continue
            assert isinstance(node, ast.ClassDef)  # (a class in parts)
            inner = [statement for statement in node.body if id(statement) in new]
            if inner or id(head.node) in new:
                body.append(_bodied(node, inner or [ast.Pass()]))
        compile_quietly(ast.Module(body, []), path, _future_flags(tree))
        self._parts.update(self._pending)


def _bodied(node: ast.ClassDef, body: list[ast.stmt]) -> ast.ClassDef:
    """A copy of class ``node`` with ``body``: what of it is compiled, or walked (no body)."""
    copy = ast.ClassDef(
        name=node.name, bases=node.bases, keywords=node.keywords, body=body,
        decorator_list=node.decorator_list,
    )  # fmt: skip
    if "type_params" in ast.ClassDef._fields:  # (Python 3.12: a class of no type parameters)
        setattr(copy, "type_params", [])  # noqa: B010 (a field of 3.12, unknown to older typing)
    return ast.fix_missing_locations(ast.copy_location(copy, node))


def _in_parts(node: ast.stmt) -> bool:
    """Whether a top-level statement is judged in parts: a class of more than one statement,
    whose header ends before its body's first line (so that lines hold the one and the other),
    whose body declares nothing ``global``/``nonlocal`` and that has no type parameters."""
    if not isinstance(node, ast.ClassDef) or len(node.body) < 2:
        return False
    body_first = _first_line(node.body[0])
    ends = [base.end_lineno or 0 for base in node.bases]
    ends += [keyword.end_lineno or 0 for keyword in node.keywords]
    return (
        max([node.lineno, *ends]) < body_first
        and not getattr(node, "type_params", None)
        and not any(isinstance(s, (ast.Global, ast.Nonlocal)) for s in node.body)
    )


def _futures_first(tree: ast.Module) -> bool:
    """Whether every ``from __future__`` import at the top of ``tree`` is where Python wants it:
    before every other statement but the docstring."""
    body = tree.body
    start = int(
        bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    )
    ended = False
    for node in body[start:]:
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if future and ended:
            return False
        ended = ended or not future
    return True


def _future_flags(tree: ast.Module) -> int:
    flags = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min(node.lineno, *(d.lineno for d in decorators)) if decorators else node.lineno


def syntax_error(path: str, error: SyntaxError) -> Violation:
    return Violation(path, error.lineno or 1, error.offset or 1, None, f"SyntaxError: {error.msg}")


def deepest(tree: ast.AST, level: int = 0) -> tuple[int, int, int]:
    """The depth of ``tree`` in LibCST's levels (``tree`` at ``level``), the line of its deepest
    node, and its node count (walked without recursion: the tree may be as deep as Python's
    parser allows)."""
    depth, line, nodes = level, getattr(tree, "lineno", 1), 0
    stack: list[tuple[ast.AST, int]] = [(tree, level)]
    push, pop = stack.append, stack.pop
    while stack:
        node, level = pop()
        nodes += 1
        if level > depth:
            depth, line = level, getattr(node, "lineno", line)
        step, fields, is_bool_op, has_context = _WALK.get(node.__class__) or _walk_of(node)
        level += len(node.values) if is_bool_op else step  # type: ignore[attr-defined]
        if has_context:  # (`Load()` and the like: a leaf, without a line, counted here)
            nodes += 1
            depth = max(depth, level)
        for name in fields:  # (ast.iter_child_nodes, without its generator)
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, level))
            elif isinstance(value, ast.AST):
                push((value, level))
    return depth, line, nodes


# By node class: the levels LibCST builds below a node of it, the fields that may hold nodes
# (but its expression context), whether it is a `BoolOp` (`a and b and c`: nested pairs in
# LibCST, one level per value) and whether it has an expression context.
_WALK: dict[type, tuple[int, tuple[str, ...], bool, bool]] = {}


def _walk_of(node: ast.AST) -> tuple[int, tuple[str, ...], bool, bool]:
    kind = node.__class__
    step = 3 if issubclass(kind, ast.Subscript) else 2 if issubclass(kind, _TWO_LEVELS) else 1
    fields = tuple(name for name in kind._fields if name != "ctx")
    _WALK[kind] = step, fields, issubclass(kind, ast.BoolOp), "ctx" in kind._fields
    return _WALK[kind]


def too_deep(path: str, source: str) -> Violation:
    """The diagnostic for a file whose analysis ran out of recursion all the same, in a nest that
    Python's tree does not show (LibCST nests each part of ``"a" "b" "c"``)."""
    return Violation(path, _longest_line(source), 1, None, TOO_DEEP)


def _longest_line(source: str) -> int:
    """Where a nest has no line of its own: the longest line (a nest that deep is long)."""
    lines = split_lines(source)
    return max(range(len(lines)), key=lambda index: len(lines[index])) + 1
