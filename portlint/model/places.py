"""What the flow pass (:mod:`portlint.model.flow`) records and carries: the regions of code
that run only on CUDA, the names a scope has bound to a meaning, the summaries of the module's
functions, and the shapes of code it asks about (a block that leaves, an arm that picks the
CPU)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from portlint.facts import EXIT_CALLS
from portlint.model.conditions import Evidence, Meaning
from portlint.platform import dotted

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)
END = (1 << 30, 0)
NONE = object()  # (a name bound only to None so far)


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
    CUDA-only code, and is then no use of CUDA, where the code decided by each of ``lines`` (the
    lines of the tests whose evidence that code has) needs CUDA."""

    start: tuple[int, int]
    end: tuple[int, int]
    evidence: Evidence = field(compare=False)
    lines: tuple[int, ...] = field(compare=False)


@dataclass
class Flag:
    """A name bound to a test (``use_cuda = torch.cuda.is_available()``): the test is a check
    where every branch that reads the name is one (:meth:`Flow.check`)."""

    value: ast.expr
    meaning: Meaning
    reads: list[int | None] = field(default_factory=list)  # (each branch's test line; None: CPU)


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


def picks_cpu(nodes: list[ast.AST]) -> bool:
    """Whether code names the CPU as the device (``"cpu"``, ``torch.device("cpu")``)."""
    return any(
        isinstance(node, ast.Constant) and node.value == "cpu"
        for root in nodes
        for node in ast.walk(root)
    )


def picks_cuda(nodes: list[ast.AST]) -> bool:
    """Whether code picks CUDA by name: a ``"cuda"`` device string or a ``.cuda()`` call."""
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.split(":")[0] == "cuda":
                    return True
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "cuda"
            ):
                return True
    return False


def falls_back_to_cpu(cuda_arm: list[ast.AST], other_arm: list[ast.AST]) -> bool:
    """Whether the arm taken off CUDA runs on the CPU: it picks the CPU, or there is none and
    the CUDA arm picks CUDA by name (``if torch.cuda.is_available(): model.cuda()``)."""
    return picks_cpu(other_arm) if other_arm else picks_cuda(cuda_arm)


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

    def flag(self, name: str) -> Flag | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.meanings:
                return scope.flags.get(name)
            scope = scope.outer
        return None
