"""Triton kernels and what their bodies need of the tensors they are given: the kernel contract.

Triton's front end gives every value one type and refuses a program whose variable would change
type where two paths meet (``tests/test_kernel_contracts.py`` checks this model against
``triton.compile`` for a GPU target, on the CPU):

- an ``if`` whose branch rebinds a variable defined before it, or whose two branches both bind
  it, with values of two types ("initial value for `x` is of type int64[], but the then block
  redefines it as int32[]");
- a loop whose body rebinds a variable defined before it with a value of another type
  ("Loop-carried variable acc has initial type int32 but is re-assigned to int64").

A ``for`` loop's variable has the type of its ``range`` bounds (int64 where one is int64), is
bound afresh at the loop (no merge with a value it had before) and stays bound after it; a
``tl.static_range`` loop is unrolled: its body is straight-line code, run once per iteration.

A value loaded through a pointer parameter has the width of the tensor given for it. So a pointer
parameter **needs int32** where a value loaded through it (or computed from one) meets an int32
value (a literal, ``tl.program_id``, ``tl.arange``, an integer parameter, ``tl.full(...,
tl.int32)``) at such a meeting point. Anywhere else — loaded and stored, compared, cast with
``.to(...)`` — any integer width is fine, and an int64 tensor is no bug.

Read from Python's ``ast``: the project index keeps each kernel's contract (plain data).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from portlint.facts import TRITON_KERNEL_DECORATORS

INT32 = "int32"  # a value's kind: int32 for sure
# Triton calls whose result is int32 (`tl.program_id(0)`), and the dtype arguments that say so.
INT32_CALLS = frozenset({"program_id", "num_programs", "arange"})
INT32_DTYPES = frozenset({"tl.int32", "triton.language.int32"})
MAKERS = frozenset({"full", "zeros"})
COMBINING = frozenset({"where", "minimum", "maximum", "min", "max"})
# A kind: INT32, the pointer parameters a value was loaded through (a frozenset), or None.
Kind = str | frozenset[str] | None
RANGES = frozenset({"range"})  # `range`, `tl.range`: a loop whose variable is a value
UNROLLED = frozenset({"static_range"})  # `tl.static_range`: unrolled at compile time
# Where an assignment is: per enclosing block, the statement's position and the branch taken
# into the next block ("body", "orelse"); the last entry's branch is None. A position is a tuple
# compared in order: a statement's index, then (in a `for` statement) 0 for its loop region and
# 1 for after it, and (in an unrolled loop's body) the iteration and the index within the body.
Position = tuple[int, ...]
Path = tuple[tuple[Position, str | None], ...]
FRESH = (-1,)  # the position of a `for` loop's variable: before its body's statements


def name_of(node: ast.AST) -> str:
    """The dotted name ``node`` spells (``torch.int32``; "" where it spells none)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def is_kernel(node: ast.AST, kernel_names: frozenset[str] = TRITON_KERNEL_DECORATORS) -> bool:
    """A function decorated ``@triton.jit`` (or ``@jit`` from triton, ``@triton.autotune``...)."""
    if not isinstance(node, ast.FunctionDef):
        return False
    for decorator in node.decorator_list:
        name = name_of(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if name in kernel_names or name in ("jit", "autotune", "heuristics"):
            return True
    return False


@dataclass
class _Assignment:
    kind: Kind
    path: Path
    line: int
    fresh: bool = False  # a `for` loop's variable in its body: bound anew, merged with nothing


@dataclass
class _Body:
    """One walk of a kernel's body: each variable's assignments with the kind of value."""

    parameters: frozenset[str]
    assignments: dict[str, list[_Assignment]] = field(default_factory=dict)
    current: dict[str, Kind] = field(default_factory=dict)

    def kind(self, node: ast.AST) -> Kind:
        if isinstance(node, ast.Constant):
            return (
                INT32 if isinstance(node.value, int) and not isinstance(node.value, bool) else None
            )
        if isinstance(node, ast.Name):
            if node.id in self.current:
                return self.current[node.id]
            return INT32 if node.id in self.parameters else None  # an integer parameter is i32
        if isinstance(node, ast.BinOp):
            return _join(self.kind(node.left), self.kind(node.right))
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            return self.kind(node.operand)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _call(self, node: ast.Call) -> Kind:
        name = name_of(node.func)
        last = name.rsplit(".", 1)[-1]
        if isinstance(node.func, ast.Attribute) and last == "to":  # a cast: its own type
            return INT32 if node.args and name_of(node.args[0]) in INT32_DTYPES else None
        if last == "load" and node.args:
            pointer = _base_pointer(node.args[0])
            return frozenset({pointer}) if pointer in self.parameters else None
        if last in INT32_CALLS:
            return INT32
        if last in MAKERS:
            dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
            dtype = dtype or (node.args[2] if last == "full" and len(node.args) > 2 else None)
            dtype = dtype or (node.args[1] if last == "zeros" and len(node.args) > 1 else None)
            return INT32 if dtype is not None and name_of(dtype) in INT32_DTYPES else None
        if last in COMBINING:
            kinds = [self.kind(a) for a in node.args[1:] if last == "where"] or [
                self.kind(a) for a in node.args
            ]
            result: Kind = kinds[0] if kinds else None
            for other in kinds[1:]:
                result = _join(result, other)
            return result
        return None

    def block(self, body: list[ast.stmt], path: Path, prefix: Position = ()) -> None:
        for number, statement in enumerate(body):
            index = (*prefix, number)
            here = (*path, (index, None))
            if isinstance(statement, ast.Assign):
                kind = self.kind(statement.value)
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        self._bind(target.id, kind, here, statement.lineno)
            elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)) and isinstance(
                statement.target, ast.Name
            ):
                name = statement.target.id
                value = self.kind(statement.value) if statement.value else None
                if isinstance(statement, ast.AugAssign):
                    value = _join(self.current.get(name), value)
                self._bind(name, value, here, statement.lineno)
            elif isinstance(statement, ast.If):
                self.block(statement.body, (*path, (index, "body")))
                self.block(statement.orelse, (*path, (index, "orelse")))
            elif isinstance(statement, ast.For):
                self._for(statement, path, index)
            elif isinstance(statement, ast.While):
                # Twice: the second walk sees the kinds the body leaves for the next iteration.
                self.block(statement.body, (*path, (index, "body")))
                self.block(statement.body, (*path, (index, "body")))

    def _for(self, statement: ast.For, path: Path, index: Position) -> None:
        iterator = statement.iter
        last = name_of(iterator.func).rsplit(".", 1)[-1] if isinstance(iterator, ast.Call) else ""
        target = statement.target.id if isinstance(statement.target, ast.Name) else None
        if last in UNROLLED:  # straight-line code, twice: each copy sees the one before
            for iteration in (0, 1):
                if target:
                    self.current[target] = INT32  # a constexpr int
                self.block(statement.body, path, (*index, iteration))
            return
        kind: Kind = None
        if last in RANGES and isinstance(iterator, ast.Call):
            kinds = [self.kind(a) for a in iterator.args] or [None]
            kind = kinds[0]
            for other in kinds[1:]:
                kind = _join(kind, other)  # the bounds' common type: int64 if one is
        loop = (*path, ((*index, 0), "body"))
        for _ in range(2):  # twice: the second walk sees what the body leaves for the next
            if target:
                self._bind(target, kind, (*loop, (FRESH, None)), statement.lineno, fresh=True)
            self.block(statement.body, loop)
        if target:  # the loop's variable stays bound after the loop
            self._bind(target, kind, (*path, ((*index, 1), None)), statement.lineno)

    def _bind(self, name: str, kind: Kind, path: Path, line: int, fresh: bool = False) -> None:
        self.current[name] = kind
        found = self.assignments.setdefault(name, [])
        if not any(a.path == path for a in found):
            found.append(_Assignment(kind, path, line, fresh))


def _join(a: Kind, b: Kind) -> Kind:
    """The kind of a value computed from two: a loaded width wins over int32."""
    if isinstance(a, frozenset) or isinstance(b, frozenset):
        return (a if isinstance(a, frozenset) else frozenset()) | (
            b if isinstance(b, frozenset) else frozenset()
        )
    return INT32 if a == INT32 and b == INT32 else None


def _base_pointer(pointer: ast.AST) -> str:
    """The pointer an address is computed from: ``p`` in ``p + offsets``, ``p + i * stride``."""
    while isinstance(pointer, ast.BinOp) and isinstance(pointer.op, (ast.Add, ast.Sub)):
        pointer = pointer.left
    return pointer.id if isinstance(pointer, ast.Name) else ""


def _meet(a: _Assignment, b: _Assignment) -> bool:
    """Whether two assignments of one variable meet where Triton merges types: one before an
    ``if`` or a loop, the other inside it."""
    outer, inner = sorted((a, b), key=lambda assignment: len(assignment.path))
    depth = len(outer.path) - 1
    if inner.fresh:  # a `for` loop's variable merges with nothing before the loop
        return False
    if len(inner.path) <= len(outer.path) or inner.path[:depth] != outer.path[:depth]:
        return False
    return inner.path[depth][0] > outer.path[depth][0]


def _siblings(a: _Assignment, b: _Assignment) -> bool:
    """One in the body and one in the ``else`` of the same ``if``."""
    for depth, (step_a, step_b) in enumerate(zip(a.path, b.path, strict=False)):
        if step_a != step_b:
            return (
                step_a[0] == step_b[0]
                and {step_a[1], step_b[1]} == {"body", "orelse"}
                and a.path[:depth] == b.path[:depth]
            )
    return False


@dataclass(frozen=True)
class Need:
    """Why a pointer parameter needs int32: the variable and the line where int32 meets it."""

    variable: str
    line: int  # the assignment of the other type


def contract(kernel: ast.FunctionDef) -> dict[str, Need]:
    """Per pointer parameter of ``kernel`` that needs int32, why (see the module docstring)."""
    arguments = kernel.args
    parameters = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
    body = _Body(frozenset(parameters))
    body.block(kernel.body, ())
    needs: dict[str, Need] = {}
    for variable, assignments in body.assignments.items():
        loaded = [a for a in assignments if isinstance(a.kind, frozenset)]
        int32 = [a for a in assignments if a.kind == INT32]
        for one in loaded:
            for other in int32:
                if _meet(one, other) or _siblings(one, other):
                    assert isinstance(one.kind, frozenset)
                    for pointer in sorted(one.kind):
                        needs.setdefault(pointer, Need(variable, max(one.line, other.line)))
    return needs


def kernels_in(tree: ast.Module) -> dict[str, list]:
    """The module's kernels: per name, its line, its parameters in order, and per parameter that
    needs int32 the variable and the line (JSON-ready)."""
    found: dict[str, list] = {}
    for node in tree.body:
        if is_kernel(node):
            assert isinstance(node, ast.FunctionDef)
            arguments = node.args
            names = [
                a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            ]
            needs = {p: [n.variable, n.line] for p, n in contract(node).items()}
            found[node.name] = [node.lineno, names, needs]
    return found
