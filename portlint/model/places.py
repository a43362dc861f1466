"""What the flow pass (:mod:`portlint.model.flow`) records and carries: the regions of code
that run only on CUDA, the names a scope has bound to a meaning, the summaries of the module's
functions, and the shapes of code it asks about (a block that leaves, an arm that picks the
CPU)."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from portlint.facts import (
    APPLE_DEVICES,
    EXIT_CALLS,
    MESSAGE_METHODS,
    MESSAGE_PREFIXES,
    OTHER_DEVICES,
)
from portlint.model.conditions import Evidence, Meaning
from portlint.platform import dotted, words

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)
BLOCKS = ("body", "orelse", "finalbody", "handlers")  # (the fields that hold statements)
END = (1 << 30, 0)
NONE = object()  # (a name bound only to None so far)
FALSY = object()  # (bound only to a false constant so far: `HAS_X = False`)
APPLE_WORDS = frozenset(APPLE_DEVICES)
DEVICE_TEXT = re.compile("|".join(sorted(OTHER_DEVICES)), re.IGNORECASE)  # (before its words)
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


def picks_cpu(nodes: list[ast.AST]) -> bool:
    """Whether code names the CPU as the device (``"cpu"``, ``torch.device("cpu")``, a call of
    ``DeviceCPU()`` or ``self._cpu_call()``; not a test of it: ``elif device.type == "cpu":``
    handles the CPU, among other devices)."""
    for root in nodes:
        compared = {
            id(side)
            for node in walk(root)
            if isinstance(node, ast.Compare)
            for side in (node.left, *node.comparators)
        }
        for node in walk(root):
            if isinstance(node, ast.Constant) and node.value == "cpu" and id(node) not in compared:
                return True
            if isinstance(node, ast.Call) and "cpu" in words(dotted(node.func) or ""):
                return True
    return False


def picks_cuda(nodes: list[ast.AST]) -> bool:
    """Whether code picks CUDA by name: a ``"cuda"`` device string or a ``.cuda()`` call; not
    a device named to a ``torch.cuda`` call (``torch.cuda.get_device_capability(f"cuda:{i}")``
    asks about a CUDA device: it picks none for code that could run elsewhere)."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Call) and (dotted(node.func) or "").startswith("torch.cuda."):
            continue
        pending.extend(ast.iter_child_nodes(node))
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


def names_another_device(nodes: Sequence[ast.AST], apple: bool = True) -> bool:
    """Whether code names a device other than CUDA: ``torch.xpu``, ``is_npu()``, ``"mps"``
    (without ``apple``, one other than Apple's, which exist only on a Mac: a dispatch over
    CUDA, MPS and the CPU leaves XPU and NPU to the CPU)."""
    return bool(devices_named(nodes, apple))


def devices_named(nodes: Sequence[ast.AST], apple: bool = True) -> set[str]:
    """The devices other than CUDA that code names (:func:`names_another_device`)."""
    found: set[str] = set()
    for root in nodes:
        for node in walk(root):
            if isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = node.value.split(":")[0]
            else:
                continue
            found |= _devices_of(name)
    return found if apple else found - APPLE_WORDS


@functools.lru_cache(maxsize=1 << 15)  # (a tree reads the same few thousand names again and again)
def _devices_of(name: str) -> frozenset[str]:
    """The devices other than CUDA that a name or a string names (``has_mps``: the MPS)."""
    return frozenset(words(name)) & OTHER_DEVICES if DEVICE_TEXT.search(name) else frozenset()


# Words of a test of which torch release runs (`is_torch_version(">=", "2.3")`,
# `_is_torch_greater_or_equal_than_2_7`, `version.parse(torch.__version__) < ...`), and a flag
# named for a release (`TORCH_2_4`, `_TORCH_1_13`): true from that release on.
RELEASE_WORDS = frozenset({"version", "greater", "less", "older", "newer", "ge", "gt", "lt", "le"})
VENDOR_BUILDS = ("torch.version.hip", "torch.version.cuda")
RELEASE_FLAG = re.compile(r"_?(?:IS_)?TORCH_?\d+(?:_\d+)+", re.IGNORECASE)


def asks_torch_release(test: ast.expr) -> bool:
    """Whether ``test`` asks which torch release runs, or whether torch has an attribute
    (``hasattr(torch, "accelerator")``), and names no device."""
    found: set[str] = set()
    for node in walk(test):
        if isinstance(node, ast.Name):
            if RELEASE_FLAG.fullmatch(node.id):
                return True
            found.update(words(node.id))
        elif isinstance(node, ast.Attribute):
            if node.attr in ("hip", "cuda") and dotted(node) in VENDOR_BUILDS:
                return False  # (a test of the build's vendor, not of the release)
            found.update(words(node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(words(node.value))
    if "cuda" in found or found & OTHER_DEVICES:
        return False  # (`hasattr(torch, "xpu")`, `torch.version.cuda`: a test of a device)
    return "torch" in found and bool(found & RELEASE_WORDS or "hasattr" in found)


def names_cuda_api(nodes: Sequence[ast.AST]) -> bool:
    """Whether code names CUDA in a name it reads (``torch.cuda.amp.GradScaler``), not in a
    string nor in a name it binds (``torch_cuda_amp_custom_fwd = ...``)."""
    return any(
        "cuda" in words(node.id if isinstance(node, ast.Name) else node.attr)
        for root in nodes
        for node in walk(root)
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Store)
    )


def asks_another_device(test: ast.expr) -> bool:
    """Whether a test asks whether another device (not Apple's) is there: it calls a function
    or method named for one (``is_torch_npu_available()``, ``torch.xpu.is_available()``), or
    asks for any device but the CPU (``x.device.type != "cpu"``)."""
    return any(
        (isinstance(node, ast.Call) and names_another_device([node.func], apple=False))
        or _not_the_cpu(node)
        for node in walk(test)
    )


def _not_the_cpu(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.NotEq)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == "type"
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value == "cpu"
    )


def does_otherwise(nodes: list[ast.AST]) -> bool:
    """Whether the arm taken off CUDA does something of its own there: raises (a requirement:
    ``raise``, a failed ``assert``), calls anything but a message (another implementation, a
    skip), or is another device's."""
    for root in nodes:
        for node in walk(root):
            if isinstance(node, (ast.Raise, ast.Assert)):
                return True
            if isinstance(node, ast.Call):
                callee = node.func
                last = (
                    callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
                )
                shown = last.removesuffix("_once")  # (transformers' `logger.warning_once`)
                if shown not in MESSAGE_METHODS and not last.startswith(MESSAGE_PREFIXES):
                    return True
    return names_another_device(nodes)


def requires_it(other_arm: Sequence[ast.AST]) -> bool:
    """Whether the arm taken off CUDA only fails: ``raise``, or a failed ``assert``."""
    return bool(other_arm) and all(isinstance(node, (ast.Raise, ast.Assert)) for node in other_arm)


def launches(nodes: Sequence[ast.AST], kernels: frozenset[str]) -> bool:
    """Whether code launches one of the module's Triton ``kernels`` (``kernel[grid](...)``)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in kernels
        for root in nodes
        for node in walk(root)
    )


def falls_back_to_cpu(cuda_arm: list[ast.AST], other_arm: list[ast.AST]) -> bool:
    """Whether the arm taken off CUDA runs on the CPU (or on CUDA anyway): it names no other
    device but Apple's, and it picks the CPU, or either arm picks CUDA by name (``"cuda" if
    torch.cuda.is_available() else "cpu"``, ``if torch.cuda.is_available(): model.cuda()``,
    ``x.cuda() if x.is_cuda else x``, ``w if w.is_cuda else w.cuda()``)."""
    if names_another_device(other_arm, apple=False):
        return False  # (a dispatch over devices: the CPU is the last resort)
    return picks_cpu(other_arm) or picks_cuda(cuda_arm) or picks_cuda(other_arm)


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

    def binds(self, name: str) -> bool:
        """Whether this scope or one around it has bound ``name`` so far."""
        scope: Scope | None = self
        while scope is not None:
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
