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

import ast
import warnings

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


def python_verdict(path: str, source: str) -> ast.Module | Violation:
    """``source`` parsed by Python, or the one diagnostic that stops its analysis: Python's
    syntax error, or a bound that the file passes."""
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
    depth, line, nodes = deepest(tree)
    if depth > MAX_DEPTH:
        return Violation(path, line, 1, None, f"{TOO_DEEP} (nesting {depth}, over {MAX_DEPTH})")
    if nodes > MAX_NODES:
        return Violation(path, 1, 1, None, f"{TOO_LARGE} ({nodes:,} syntax nodes)")
    try:  # what only the compiler refuses: `return` outside a function, `nonlocal` at the top...
        compile_quietly(tree, path)
    except SyntaxError as error:
        return syntax_error(path, error)
    except RecursionError:
        return Violation(path, line, 1, None, TOO_DEEP)
    return tree


def compile_quietly(code: ast.Module | bytes, path: str) -> None:
    """``compile()`` without Python's warnings about the code (not portlint's to show, and an
    error where warnings are made errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(code, path, "exec", dont_inherit=True)


def syntax_error(path: str, error: SyntaxError) -> Violation:
    return Violation(path, error.lineno or 1, error.offset or 1, None, f"SyntaxError: {error.msg}")


def deepest(tree: ast.AST) -> tuple[int, int, int]:
    """The depth of ``tree`` in LibCST's levels, the line of its deepest node, and its node count
    (walked without recursion: the tree may be as deep as Python's parser allows)."""
    depth, line, nodes = 0, 1, 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
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
