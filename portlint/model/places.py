"""What the flow pass (:mod:`portlint.model.flow`) records and carries: the regions of code
that run only on CUDA, the names a scope has bound to a meaning, the summaries of the module's
functions, and the shapes of blocks it asks about (one that leaves, one that only fails).
What code names of devices is in :mod:`portlint.model.devices`."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from portlint.facts import (
    EXIT_CALLS,
)
from portlint.model.conditions import Evidence, Meaning
from portlint.platform import dotted

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)
BLOCKS = ("body", "orelse", "finalbody", "handlers")  # (the fields that hold statements)
END = (1 << 30, 0)
NONE = object()  # (a name bound only to None so far)
FALSY = object()  # (bound only to a false constant so far: `HAS_X = False`)
# The methods that set an instance up: where one cannot return off CUDA, no instance exists there.
SET_UP = ("__init__", "setUp", "setUpClass", "setup_method", "setup_class")


# The fields of each kind of node that may hold nodes (not an expression's context, an operator
# or a constant's value): what a walk reads, cheaper than `ast.walk`'s.
FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}
LEAVES = frozenset({ast.Constant, type(None)})  # (no node in them)


def fields_of(kind: type) -> tuple[str, ...]:
    fields = tuple(f for f in getattr(kind, "_fields", ()) if f not in ("ctx", "op", "ops"))
    FIELDS[kind] = fields
    return fields


def walk(root: ast.AST) -> Iterator[ast.AST]:
    """``root`` and every node in it, as ``ast.walk`` gives them but for the contexts and
    operators."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        for name in FIELDS.get(node.__class__) or fields_of(node.__class__):
            value = getattr(node, name, None)
            if value.__class__ is list:
                pending.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                pending.append(value)


@dataclass(frozen=True, order=True)
class Region:
    """Code from ``start`` to ``end`` ((line, column), columns counted in UTF-8 bytes as ``ast``
    counts them) runs only on CUDA, by ``evidence``."""

    start: tuple[int, int]
    end: tuple[int, int]
    evidence: Evidence = field(compare=False)


@dataclass(frozen=True, order=True)
class Check:
    """A test that decides code (``start`` to ``end``, as :class:`Region` counts): it confines
    CUDA-only code, and is then no use of CUDA, where for each of its ``reads`` (the line of
    the evidence that the code it decides has, and whether the other arm does something of its
    own: :func:`does_otherwise`) that code needs CUDA, or the other arm does otherwise."""

    start: tuple[int, int]
    end: tuple[int, int]
    evidence: Evidence = field(compare=False)
    reads: tuple[tuple[int, bool], ...] = field(compare=False)

    def confines(self, needs: frozenset[int] | set[int]) -> bool:
        return all(dispatch or line in needs for line, dispatch in self.reads)


@dataclass
class Flag:
    """A name bound to a test (``use_cuda = torch.cuda.is_available()``): the test is a check
    where every branch that reads the name is one (:meth:`Flow.check`)."""

    value: ast.expr
    meaning: Meaning
    # Each reading: a branch's (evidence line, whether its other arm is another device's); None:
    # read as data, or by a branch that falls back to the CPU.
    reads: list[tuple[int, bool] | None] = field(default_factory=list)


@dataclass
class Summaries:
    """What the pass learns of the module's functions (by ``name`` or ``Class.name``), read by
    the next pass: those that cannot return unless on CUDA, those whose every ``return`` is a
    test of CUDA, and whether each use of a function is in CUDA-only code."""

    requires: dict[str, Evidence] = field(default_factory=dict)
    predicates: dict[str, Evidence] = field(default_factory=dict)
    answers: dict[str, list[Flag]] = field(default_factory=dict)  # (a predicate's returns)
    # Each use of a function: the line of the evidence that its code runs only on CUDA (None:
    # it may run anywhere).
    uses: dict[str, list[int | None]] = field(default_factory=dict)
    # A module function that returns nothing but device strings, and raises for any other
    # device (`get_device_type()`): the devices it can return.
    devices: dict[str, frozenset[str]] = field(default_factory=dict)


def span(node: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where an expression or a statement (its decorators too) starts and ends."""
    start = node.decorator_list[0] if getattr(node, "decorator_list", None) else node
    return (start.lineno, start.col_offset), (node.end_lineno or 0, node.end_col_offset or 0)


def block_span(body: list[ast.stmt]) -> tuple[tuple[int, int], tuple[int, int]]:
    return span(body[0])[0], span(body[-1])[1]


def leaves(body: list[ast.stmt]) -> bool:
    """Whether a block ends by leaving: ``return``, ``raise``, ``continue``, ``break``, a skip
    or an exit call."""
    last = body[-1] if body else None
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        return dotted(last.value.func) in EXIT_CALLS
    return isinstance(last, LEAVING)


def may_leave(body: list[ast.stmt]) -> bool:
    """Whether a block ends by leaving, or has a ``return`` of its own (not of a function in it)
    that may end it: ``try: return fused(x)`` ``except RuntimeError: pass``."""
    return leaves(body) or any(isinstance(node, ast.Return) for node in statements_in(body))


def statements_in(body: list[ast.stmt], own: bool = True) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and of the blocks in it, at any depth; ``own``: not those of
    the functions and classes it defines. (No expression is walked: a statement is never in
    one.)"""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.stmt, ast.excepthandler)) or (
            own and isinstance(node, (*FUNCTIONS, ast.ClassDef))
        ):
            continue  # (an expression given as an arm holds no statement: `a if t else b`)
        for name in BLOCKS:
            block = getattr(node, name, None)
            if block:
                pending.extend(block)
        for case in getattr(node, "cases", ()):  # (`match`)
            pending.extend(case.body)


def asks_tensor(test: ast.expr) -> bool:
    """Whether ``test`` asks a tensor's ``.is_cuda`` itself (not ``self.is_cuda``, a flag),
    alone, negated or among ``and``/``or``."""
    if isinstance(test, ast.Attribute) and test.attr == "is_cuda":
        return not (isinstance(test.value, ast.Name) and test.value.id == "self")
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return asks_tensor(test.operand)
    return isinstance(test, ast.BoolOp) and any(map(asks_tensor, test.values))


def requires_it(other_arm: Sequence[ast.AST]) -> bool:
    """Whether the arm taken off CUDA only fails: ``raise``, or a failed ``assert``."""
    return bool(other_arm) and all(isinstance(node, (ast.Raise, ast.Assert)) for node in other_arm)


class Scope:
    """The names a scope has bound to a meaning (flags, values made only on CUDA), over those
    of the scopes around it."""

    def __init__(self, outer: Scope | None = None) -> None:
        self.outer = outer
        self.meanings: dict[str, Meaning] = {}
        self.flags: dict[str, Flag] = {}
        # What a name was bound to: NONE (only None so far), the evidence that every other value
        # was made only on CUDA, or None (one was made off CUDA too).
        self.made: dict[str, object] = {}

    def lookup(self, name: str) -> Meaning | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.meanings:
                return scope.meanings[name]
            made = scope.made.get(name, NONE)
            if isinstance(made, Evidence):
                return Meaning(if_true=made)
            if name in scope.made:
                return None
            scope = scope.outer
        return None

    def binds(self, name: str, local: bool = False) -> bool:
        """Whether this scope or one around it has bound ``name`` so far (``local``: one of
        the functions and classes around, not the module)."""
        scope: Scope | None = self
        while scope is not None and not (local and scope.outer is None):
            if name in scope.made or name in scope.meanings:
                return True
            scope = scope.outer
        return False

    def flag(self, name: str) -> Flag | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.meanings:
                return scope.flags.get(name)
            scope = scope.outer
        return None


def own(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own code, not of the functions and classes it defines."""
    return own_of(*ast.iter_child_nodes(function))


def unbound_off_cuda(
    cuda_arm: list, other_arm: list, rest: list, scope: Scope, decides: Callable[[ast.expr], bool]
) -> bool:
    """Whether the ``rest`` of a block after a branch with no other arm reads, outside code a
    test of the platform decides, a name only its CUDA arm binds (and does not leave): off CUDA,
    ``UnboundLocalError`` (``if torch.cuda.is_available(): size = ...``, ``return size``)."""
    if other_arm or may_leave(cuda_arm):
        return False
    fresh = {
        target.id
        for node in own_of(*cuda_arm)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and not scope.binds(target.id)
    }
    for statement in rest:
        if isinstance(statement, ast.If) and decides(statement.test):
            continue  # (read again only where the platform is asked again)
        names = [n for n in own_of(statement) if isinstance(n, ast.Name) and n.id in fresh]
        if any(isinstance(n.ctx, ast.Load) for n in names):
            return True
        fresh -= {n.id for n in names}  # (bound again before it is read)
    return False


def own_of(*roots: ast.AST) -> Iterator[ast.AST]:
    """``roots`` and their nodes, not those of the functions and classes they define."""
    pending = list(roots)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def exits_first(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function's first statement (after its docstring) is ``if ...: return``
    (``return False``, ``None``, ``0``) with no ``else``."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    first = body[0] if body else None
    return (
        isinstance(first, ast.If)
        and not first.orelse
        and len(first.body) == 1
        and isinstance(first.body[0], ast.Return)
        and (first.body[0].value is None or false(first.body[0].value))
    )


def false(node: ast.expr) -> bool:
    """``None``, ``False``, ``0``, ``""``: a constant that is false."""
    return isinstance(node, ast.Constant) and not node.value


def ranged(iterable: ast.expr) -> bool:
    """``range(n)`` or ``range(start, n)``: a loop whose body runs only where ``n`` is not 0."""
    return (
        isinstance(iterable, ast.Call)
        and dotted(iterable.func) == "range"
        and len(iterable.args) in (1, 2)
    )


def checks_value(requirement: ast.stmt, previous: ast.stmt) -> bool:
    """Whether ``requirement`` (``assert``, or ``if ...: raise``) tests a name that the statement
    right before it binds: the value was made to be checked, and off CUDA the run stops there."""
    if isinstance(requirement, ast.Assert) or (
        isinstance(requirement, ast.If) and requires_it(requirement.body)
    ):
        test = requirement.test
    else:
        return False
    if not isinstance(previous, (ast.Assign, ast.AnnAssign)):
        return False
    targets = previous.targets if isinstance(previous, ast.Assign) else [previous.target]
    bound = {t.id for t in targets if isinstance(t, ast.Name)}
    return any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(test))
