"""The one evaluator of conditions: what a test being true, or being false, says of where the
code it decides runs.

A condition's :class:`Meaning` is a pair: the evidence that code run where it holds runs only
on CUDA (or ROCm, whose torch device type is "cuda" too), and the same where it fails. Either may
be missing: "unknown" is an answer, and most tests have it. The forms are a closed list,
:data:`FORMS` (each with code it reads and code it does not; ``docs/platform-model.md`` lists
them):

- torch's own queries: ``torch.cuda.is_available()`` and ``is_initialized()``,
  ``torch.cuda.device_count()`` (true, or compared with a number), ``x.is_cuda``,
  ``torch.version.cuda`` / ``torch.version.hip`` (true or not ``None``);
- a comparison with a CUDA device type or a CUDA-only backend, written as a string
  (``device.type == "cuda"``, ``backend != "nccl"``, ``dev in ("cuda", "hip")``,
  ``str(device).startswith("cuda")``) or as an enum
  member (``self._enum == PlatformEnum.CUDA``);
- a platform layer's query: a call of a predicate that asks for CUDA or ROCm by its whole name
  (``current_platform.is_cuda()``, ``is_rocm()``, ``is_cuda_alike()``,
  ``is_torch_cuda_available()``) or a name given by ``guard-functions``;
- a name bound to one of these in the scope or the module (``_is_cuda = is_cuda()``), a
  function of the module whose every ``return`` is one (:class:`portlint.model.summaries`
  tells), a value made only under a CUDA condition tested for ``None``;
- ``not``, ``and``, ``or`` of these; ``all()`` or ``any()`` of one over a collection.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from portlint.facts import CUDA_DEVICE_TYPES, OTHER_DEVICES
from portlint.platform import count_says_cuda, dotted, string_says_cuda


@dataclass(frozen=True)
class Evidence:
    """Why code runs only on CUDA: the kind (a form or a recogniser of
    :mod:`portlint.model.recognisers`), what says so, and the line that says so (0: the
    module's path)."""

    kind: str
    why: str
    line: int


@dataclass(frozen=True)
class Meaning:
    """Where code that a condition decides runs: ``if_true`` is the evidence that code run where
    the condition holds runs only on CUDA, ``if_false`` where it fails; None: unknown."""

    if_true: Evidence | None = None
    if_false: Evidence | None = None

    def negated(self) -> Meaning:
        return Meaning(self.if_false, self.if_true)

    @property
    def known(self) -> bool:
        return self.if_true is not None or self.if_false is not None

    @property
    def waits(self) -> bool:
        """Whether what it says waits for another module (:data:`PENDING`)."""
        return is_pending(self.if_true) or is_pending(self.if_false)


UNKNOWN = Meaning()
# The kind of evidence that another module's answer decides (:meth:`Conditions.imported`).
PENDING = "pending"


def pending(want: str, module: str, name: str) -> str:
    """What pending evidence waits for: that ``name`` of ``module`` (as the import wrote it:
    ``.utils``) is, by the module's exports (:meth:`portlint.model.PlatformModel.exports`), ``want``."""
    return f"{want} {module} {name}"


def answers(said: str, want: str) -> bool:
    """Whether what another module exports of a name (its kind) gives what pending evidence
    waits for: the same kind, or, for ``other-than:D`` (the name differs from device ``D``), a
    closed set of devices (``devices:cuda,hip,xpu``) whose others are all CUDA's."""
    if want.startswith(OTHER_THAN) and said.startswith(DEVICE_SET):
        rest = set(said.removeprefix(DEVICE_SET).split(",")) - {want.removeprefix(OTHER_THAN)}
        return bool(rest) and rest <= CUDA_DEVICE_TYPES
    return said == want


# What a name bound to the result of a function that returns only device strings exports
# (``devices:cuda,hip,xpu``), and what a comparison of an imported name with a device waits for.
DEVICE_SET = "devices:"
OTHER_THAN = "other-than:"


def is_pending(evidence: Evidence | None) -> bool:
    return evidence is not None and evidence.kind == PENDING


def known(evidence: Evidence | None) -> Evidence | None:
    """``evidence``, where it does not wait for another module: what code is under."""
    return None if is_pending(evidence) else evidence


@dataclass(frozen=True)
class Form:
    """A form of condition the evaluator reads: its kind, a line of documentation, a test that
    holds only on CUDA in that form and one like it that does not (``tests/test_model.py``
    puts each before ``torch.cuda.synchronize()``)."""

    kind: str
    doc: str
    cuda: str
    anywhere: str


FORMS = (
    Form("torch-query", "torch's own questions: availability, the device count, `.is_cuda`",
         "torch.cuda.is_available() and x.is_cuda", "torch.cuda.is_available() or x.is_cpu"),
    Form("torch-query", "the device count compared with a number",
         "torch.cuda.device_count() >= 2", "torch.cuda.device_count() < 2"),
    Form("torch-build", "the build's CUDA or HIP version", "torch.version.hip is not None",
         "torch.version.hip is None"),
    Form("device-type", "a comparison with a CUDA device type or CUDA-only backend",
         "x.device.type == 'cuda'", "x.device.type != 'cuda'"),
    Form("device-type", "a device string that starts with a CUDA device type",
         "str(device).startswith('cuda')", "str(device).startswith('cpu')"),
    Form("device-type", "a comparison with an enum member named for CUDA or ROCm",
         "self._enum == PlatformEnum.ROCM", "self._enum == PlatformEnum.XPU"),
    Form("platform-query", "a platform layer's question, by its whole name",
         "current_platform.is_cuda_alike()", "current_platform.is_cuda_graph_enabled()"),
    Form("torch-query", "`not`, `and` and `or` of these",
         "not (not torch.cuda.is_available())", "not torch.cuda.is_available()"),
    Form("device-type", "`all()` or `any()` of one of these over a collection",
         "all(d.type == 'cuda' for d in devices)", "all(d.type != 'cuda' for d in devices)"),
)  # fmt: skip

# torch.cuda's questions that hold only where CUDA is.
TORCH_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.is_initialized"})
COUNTS = frozenset({"torch.cuda.device_count"})
BUILD_ATTRIBUTES = frozenset({"torch.version.cuda", "torch.version.hip"})
# A predicate's whole name asks for CUDA or ROCm: `is_cuda`, `_is_hip`, `is_cuda_alike`,
# `is_torch_cuda_available`, `cuda_is_available`, `use_rocm` (not `is_cuda_graph_enabled`).
PREDICATE = re.compile(
    r"_*(?:(?:is|use|using|on|has)_(?:torch_)?(?:cuda|rocm|hip|nvidia|cuda_alike)(?:_available)?"
    r"|(?:torch_)?cuda_(?:is_)?available)",
    re.IGNORECASE,
)
# An enum member that names CUDA or ROCm: `PlatformEnum.CUDA`, `DeviceType.ROCM`.
ENUM_MEMBERS = frozenset({"CUDA", "ROCM", "HIP"})
_COUNT_OPERATORS = {
    ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!=",
}  # fmt: skip
_SWAPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "==": "==", "!=": "!="}


class Conditions:
    """Evaluates conditions of one module. ``resolve`` gives a name's qualified name (through
    the module's imports); ``bound`` gives the meaning a plain name was bound to where it is
    read (a flag, a value made only on CUDA), or None; ``calls`` gives the meaning of a call
    of the module's own predicate, or None; ``source`` is the module's text, for the evidence's
    words."""

    def __init__(
        self,
        resolve: Callable[[ast.expr], str | None],
        bound: Callable[[str], Meaning | None],
        calls: Callable[[ast.Call], Meaning | None],
        segment: Callable[[Any], str],
        guard_functions: frozenset[str] = frozenset(),
        origins: Mapping[str, tuple[str, str]] | None = None,
        held: Callable[[str], ast.expr | None] = lambda name: None,
        values: Callable[[str], frozenset[str] | None] = lambda name: None,
    ) -> None:
        self.resolve = resolve
        # The devices a name of the module can only be (`DEVICE_TYPE`): Flow._devices.
        self.values = values
        self.bound = bound
        self.held = held  # (the test a name was bound to: `num_gpus = torch.cuda.device_count()`)
        self.calls = calls
        self.segment = segment
        self.guard_functions = guard_functions
        self.origins = origins or {}  # a name `from m import n` binds -> (m, n)

    def meaning(self, test: ast.expr) -> Meaning:
        """What ``test`` being true or false says of the platform."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.meaning(test.operand).negated()
        if isinstance(test, ast.BoolOp):
            return self._boolean(test)
        if (element := _every_or_any(test)) is not None:
            inner = self.meaning(element)
            return Meaning(self._whole(test, inner.if_true), self._whole(test, inner.if_false))
        if isinstance(test, ast.NamedExpr):
            return self.meaning(test.value)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self._compared(test, test.left, test.ops[0], test.comparators[0])
        if _starts_cuda(test):  # `device.startswith("cuda")`
            return self.holds(test, "device-type")
        said = self._query(test)
        if said:
            return self.holds(test, said)
        if isinstance(test, ast.Name):
            return self.bound(test.id) or self.imported(test, test.id, "test")
        if isinstance(test, ast.Attribute) and (dotted(test) or "").count(".") == 1:
            return self.bound(dotted(test) or "") or UNKNOWN  # `self.alt_stream`
        if isinstance(test, ast.Call):
            called = self.calls(test)
            if called is None and isinstance(test.func, ast.Name):
                return self.imported(test, test.func.id, "test")
            return called or UNKNOWN
        return UNKNOWN

    def tells_vendors_apart(self, test: ast.expr) -> bool:
        """Whether ``test`` reads ``torch.version.hip`` or ``torch.version.cuda``: it tells
        NVIDIA's build from AMD's, so what it decides is one vendor's code, not code that an
        accelerator-neutral test could route elsewhere."""
        return any(
            isinstance(node, ast.Attribute) and self.resolve(node) in BUILD_ATTRIBUTES
            for node in ast.walk(test)
        )

    def imported(self, node: ast.expr, name: str, want: str) -> Meaning:
        """A name another module of the project binds (``from .utils import HAS_CUDA``): what it
        means is known only once the project is joined, so the evidence is pending
        (:data:`PENDING`; ``want``: what the other module must say of it, :func:`pending`)."""
        source = self.origins.get(name)
        if source is None:
            return UNKNOWN
        return Meaning(if_true=Evidence(PENDING, pending(want, *source), node.lineno))

    def holds(self, test: ast.expr, kind: str) -> Meaning:
        """True only on CUDA: ``kind`` of evidence, ``test``'s code as what says so."""
        return Meaning(if_true=Evidence(kind, f"`{self.segment(test)}`", test.lineno))

    def _boolean(self, test: ast.BoolOp) -> Meaning:
        parts = [self.meaning(value) for value in test.values]
        parts.sort(key=lambda part: part.waits)  # (what is known first)
        if isinstance(test.op, ast.And):  # true: every part held; false: one failed
            if_true = next((p.if_true for p in parts if p.if_true), None)
            if_false = _every([p.if_false for p in parts])
        else:  # true: one part held; false: every part failed
            if_true = _every([p.if_true for p in parts])
            if_false = next((p.if_false for p in parts if p.if_false), None)
        return Meaning(self._whole(test, if_true), self._whole(test, if_false))

    def _whole(self, test: ast.expr, part: Evidence | None) -> Evidence | None:
        """The evidence of a part, said of the whole ``and``/``or`` (or ``all()``/``any()``;
        pending evidence stays what it waits for)."""
        if part is None or is_pending(part):
            return part
        return Evidence(part.kind, f"`{self.segment(test)}`", test.lineno)

    def _query(self, test: ast.expr) -> str | None:
        """The kind of a query that is true only on CUDA, asked as a value or a call."""
        callee = test.func if isinstance(test, ast.Call) else test
        name = self.resolve(callee)
        if name in TORCH_QUERIES and isinstance(test, ast.Call):
            return "torch-query"
        if name in COUNTS and isinstance(test, ast.Call):
            return "torch-query"  # (a count is true where it is not 0)
        if name in BUILD_ATTRIBUTES and not isinstance(test, ast.Call):
            return "torch-build"
        last = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
        if (
            isinstance(callee, ast.Attribute)
            and last == "is_cuda"
            and not isinstance(test, ast.Call)
        ):
            return "torch-query"  # a tensor's or a device's `.is_cuda`
        if isinstance(test, ast.Call) and (
            PREDICATE.fullmatch(last) or (name or last) in self.guard_functions
        ):
            return "platform-query"
        return None

    def _compared(
        self, test: ast.Compare, left: ast.expr, op: ast.cmpop, right: ast.expr
    ) -> Meaning:
        for one, other in ((left, right), (right, left)):
            if names_cuda(one):  # `x.type == "cuda"`, `platform is PlatformEnum.ROCM`
                if isinstance(op, (ast.Eq, ast.Is)) or (isinstance(op, ast.In) and one is left):
                    return self.holds(test, "device-type")
                if isinstance(op, (ast.NotEq, ast.IsNot)) or (
                    isinstance(op, ast.NotIn) and one is left
                ):
                    return self.holds(test, "device-type").negated()
            if isinstance(one, ast.Constant) and one.value is None:  # `torch.version.hip is None`
                inner = self.meaning(other)
                if inner.if_true is not None and inner.if_true.kind == "set-flag":
                    return UNKNOWN  # (`False is not None`: a flag that is set or not is no None)
                if isinstance(op, ast.IsNot):
                    return inner
                if isinstance(op, ast.Is):
                    return Meaning(None, inner.if_true)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            other_device = self._other_device(test, left, right) or self._other_device(
                test, right, left
            )
            if other_device is not None:
                return other_device if isinstance(op, ast.Eq) else other_device.negated()
        if isinstance(op, (ast.In, ast.NotIn)) and _all_cuda(right):
            meaning = self.holds(test, "device-type")
            return meaning if isinstance(op, ast.In) else meaning.negated()
        return self._count(test, left, op, right)

    def _other_device(self, test: ast.Compare, name: ast.expr, device: ast.expr) -> Meaning | None:
        """``name == "xpu"``, where ``name`` can only be one of a closed set of devices (bound
        to what a function returns that returns nothing but device strings, and raises for any
        other device): false only on CUDA where every other device of the set is CUDA's; for a
        name imported from another module of the project, what its set is waits for it."""
        if not (
            isinstance(name, ast.Name)
            and isinstance(device, ast.Constant)
            and device.value in OTHER_DEVICES
        ):
            return None
        values = self.values(name.id)
        if values == frozenset():  # (a name of the function's own)
            return None
        if values is None:
            source = self.origins.get(name.id)
            if source is None:
                return None
            want = pending(f"{OTHER_THAN}{device.value}", *source)
            return Meaning(if_false=Evidence(PENDING, want, test.lineno))
        rest = values - {device.value}
        if not rest or not rest <= CUDA_DEVICE_TYPES:
            return None
        why = f"`{self.segment(test)}`, `{name.id}` being one of {', '.join(sorted(values))}"
        return Meaning(if_false=Evidence("device-set", why, test.lineno))

    def _count(self, test: ast.Compare, left: ast.expr, op: ast.cmpop, right: ast.expr) -> Meaning:
        """``torch.cuda.device_count() >= 2`` holds only on CUDA; ``< 2`` fails only there."""
        operator = _COUNT_OPERATORS.get(type(op))
        if operator is not None and isinstance(left, ast.Constant):
            left, right, operator = right, left, _SWAPPED[operator]
        number = right.value if isinstance(right, ast.Constant) else None
        if operator is None or type(number) is not int or not self.is_count(left):
            return UNKNOWN
        said = count_says_cuda(operator, number)
        meaning = self.holds(test, "torch-query") if said else UNKNOWN
        return meaning.negated() if said == -1 else meaning

    def is_count(self, node: ast.expr, followed: frozenset[str] = frozenset()) -> bool:
        """Whether ``node`` is a count of CUDA devices, or a name bound to one (``followed``:
        the names already followed, where two are bound to each other: `a = b`, `b = a`)."""
        name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if name and name not in followed and (held := self.held(name)):
            return self.is_count(held, followed | {name})  # (`num_gpus > 0`, `self.world > 1`)
        if not isinstance(node, ast.Call):
            return False
        if (
            dotted(node.func) == "len" and len(node.args) == 1
        ):  # `len(torch.cuda.default_generators)`
            return (self.resolve(node.args[0]) or "").startswith("torch.cuda.")
        return self.resolve(node.func) in COUNTS


def _every_or_any(test: ast.expr) -> ast.expr | None:
    """The element's test of ``all(<test> for x in xs)`` or ``any(...)`` (one loop, no ``if``)."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and len(test.args) == 1):
        return None
    loop = test.args[0] if test.func.id in ("all", "any") and not test.keywords else None
    if isinstance(loop, (ast.GeneratorExp, ast.ListComp)) and len(loop.generators) == 1:
        return None if loop.generators[0].ifs else loop.elt
    return None


def names_cuda(node: ast.AST) -> bool:
    """A CUDA device type or CUDA-only backend as a string (``"cuda"``, ``"cuda:0"``,
    ``"nccl"``), or an enum member named for CUDA (``PlatformEnum.CUDA``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return string_says_cuda(node.value)
    return isinstance(node, ast.Attribute) and node.attr in ENUM_MEMBERS


def names_only_cuda(node: ast.expr) -> bool:
    """A CUDA device type (``"cuda"``, ``DeviceType.CUDA``), or a tuple or list of only those."""
    return names_cuda(node) or _all_cuda(node)


def _starts_cuda(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "startswith"
        and len(node.args) == 1
        and names_only_cuda(node.args[0])
        and not isinstance(node.args[0], ast.Attribute)
    )


def _all_cuda(node: ast.expr) -> bool:
    return (
        isinstance(node, (ast.Tuple, ast.List, ast.Set))
        and bool(node.elts)
        and all(names_cuda(e) for e in node.elts)
    )


def bindings_of(statements: Iterable[ast.stmt]) -> Mapping[str, str]:
    """What the names that a module's imports among ``statements`` bind stand for (``import
    torch.cuda as tc`` binds ``tc`` to ``torch.cuda``; ``from torch import cuda`` binds
    ``cuda``)."""
    found: dict[str, str] = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                found[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _every(evidence: list[Evidence | None]) -> Evidence | None:
    """The evidence of parts that must all say so: none where one does not, pending where one
    waits for another module."""
    if not evidence or any(e is None for e in evidence):
        return None
    return next((e for e in evidence if is_pending(e)), evidence[0])


def origins_of(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """The names the module's top-level ``from ... import`` statements bind, with the module as
    written (``.utils`` for a relative import) and the name there."""
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = (module, alias.name)
    return found


def resolver(bindings: Mapping[str, str]) -> Callable[[ast.expr], str | None]:
    """The qualified name of a chain of names and attributes, through ``bindings``."""

    def resolve(node: ast.expr) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return bindings[head] + dot + rest if head in bindings else name

    return resolve
