"""What a test says about the platform: whether it being true (or false) implies CUDA, whether
it asks about another device, whether it asks which torch release runs.

:class:`GuardTests` is the part of the guard analysis (:mod:`portlint.analysis.guards`) that
reads a single test; it reads the names the analysis has bound so far (``guard_names``: a name
assigned from a guard's test; ``cuda_only_values``: a name bound to a CUDA-only thing or None;
``version_names``: a name bound to a test of the torch release).
"""

from __future__ import annotations

import re

import libcst as cst

from portlint.analysis.names import dotted_name, qualified_names
from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import children
from portlint.facts import (
    APPLE_DEVICES,
    CUDA_DEVICE_TYPES,
    CUDA_SOURCE_KEYWORDS,
    CUDA_SOURCE_SUFFIXES,
    OTHER_DEVICES,
)
from portlint.platform import (
    SWAPPED,
    count_says_cuda,
    is_predicate,
    names_cuda,
    names_other_device,
    string_says_cuda,
    words,
)

GUARD_QUALIFIED = {
    "torch.cuda.is_available",
    "torch.cuda.is_initialized",
    "torch.cuda.device_count",
}
_OPERATORS = {
    cst.GreaterThan: ">", cst.GreaterThanEqual: ">=", cst.LessThan: "<",
    cst.LessThanEqual: "<=", cst.Equal: "==", cst.NotEqual: "!=",
}  # fmt: skip
GUARD_ATTRIBUTES = {"is_cuda", "torch.version.cuda", "torch.version.hip"}
VERSION_ATTRIBUTES = {"torch.version.cuda", "torch.version.hip"}
# Words of a test that asks which torch it runs under (`is_torch_greater_or_equal_than_2_7`,
# `version.parse(torch.__version__)`, `TORCH_VERSION`).
VERSION_WORDS = {"version", "greater", "less", "older", "newer", "ge", "gt", "lt", "le"}
# One of these is in the text of any module that tests the torch release: `version` (as in
# `torch.__version__`, `is_torch_version`, `packaging.version`) or the words around a bound.
VERSION_TEXT = ("version", "hasattr", "greater", "less", "older", "newer")
# A flag named for a torch release (`TORCH_2_4`, `TORCH_1_13`, `_TORCH_2_0`), as projects import
# their own tests of it: true from that release on.
RELEASE_FLAG = re.compile(r"_?(?:IS_)?TORCH_?\d+(?:_\d+)+", re.IGNORECASE)
RELEASE_TEXT = re.compile(r"TORCH_?\d+_\d", re.IGNORECASE)
_CODE = cst.Module([])


def string_values(node: cst.BaseExpression) -> list[str] | None:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return [node.evaluated_value]
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        values = [string_values(e.value) for e in node.elements]
        if all(v is not None for v in values):
            return [s for v in values if v is not None for s in v]
    return None


def asks_tensor_is_cuda(test: cst.CSTNode) -> bool:
    """Whether ``test`` asks a tensor's ``.is_cuda`` (not ``self.is_cuda``, a flag)."""
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return not (isinstance(test.value, cst.Name) and test.value.value == "self")
    if isinstance(test, cst.UnaryOperation):
        return asks_tensor_is_cuda(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return asks_tensor_is_cuda(test.left) or asks_tensor_is_cuda(test.right)
    return False


def words_in(node: cst.CSTNode, targets: bool = True, strings: set[str] | None = None) -> set[str]:
    """The words of the names in ``node``'s code (``torch.__version__`` -> torch, version);
    without ``targets``, not of the names it binds (``torch_cuda_fwd = ...``; ``hooks[
    torch.cuda.amp.GradScaler] = ...`` binds none). ``strings``, where given, gets its plain
    string literals (read in the same walk)."""
    found: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.update(words(current.value))
        elif (
            not targets
            and isinstance(current, cst.AssignTarget)
            and isinstance(current.target, cst.Name)
        ):
            continue
        elif (
            strings is not None
            and isinstance(current, cst.SimpleString)
            and isinstance(current.evaluated_value, str)
        ):
            strings.add(current.evaluated_value)
        pending.extend(children(current))
    return found


def compiles_cuda(call: cst.Call) -> bool:
    """A call given CUDA sources to build (``load(sources=["k.cu"])``, ``load_inline(
    cuda_sources=...)``, ``load_jit(cuda_files=[...])``): the code runs where nvcc built them."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in CUDA_SOURCE_KEYWORDS:
            return True
        values = string_values(arg.value) or []
        if any(value.endswith(CUDA_SOURCE_SUFFIXES) for value in values):
            return True
    return False


def picks_cpu(node: cst.CSTNode) -> bool:
    """Whether ``node`` names the CPU as a device (``"cpu"``, ``torch.device("cpu")``)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.SimpleString):
            value = current.evaluated_value
            if isinstance(value, str) and (value == "cpu" or value.startswith("cpu:")):
                return True
        pending.extend(children(current))
    return False


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def code_of(node: cst.CSTNode) -> str:
    return " ".join(_CODE.code_for_node(node).split())


class GuardTests(cst.BatchableCSTVisitor):
    """Reads tests, for :class:`~portlint.analysis.guards.GuardAnalysis` (which sets the names
    and flags used here)."""

    guard_functions: set[str]
    answering: frozenset[str]
    guard_names: list[dict[str, int]]
    count_names: list[set[str]]
    count_reads: dict[cst.CSTNode, str]
    cuda_only_values: set[str]
    held_names: list[set[str]]
    version_names: set[str]
    may_ask_versions: bool

    # --- What counts as a guard -----------------------------------------------------------
    def polarity(self, test: cst.BaseExpression) -> int:
        """+1 when ``test`` being true implies CUDA, -1 when it being false does, else 0."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return -self.polarity(test.expression)
        if isinstance(test, cst.BooleanOperation):
            left, right = self.polarity(test.left), self.polarity(test.right)
            if isinstance(test.operator, cst.And):
                return 1 if 1 in (left, right) else 0
            if -1 in (left, right):
                return -1
            return 1 if left == right == 1 else 0
        if isinstance(test, cst.Call):
            return 1 if self._is_guard_call(test) else 0
        if isinstance(test, (cst.Name, cst.Attribute)):
            return self._name_polarity(test)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._comparison_polarity(test)
        return 0

    def _name_polarity(self, test: cst.Name | cst.Attribute) -> int:
        dotted = dotted_name(test)
        for scope in reversed(self.guard_names):
            if dotted in scope:
                return scope[dotted]
        last = test.value if isinstance(test, cst.Name) else test.attr.value
        if last == "is_cuda" or dotted in GUARD_ATTRIBUTES:
            return 1
        if isinstance(test, cst.Attribute) and qualified_names(self, test) & GUARD_ATTRIBUTES:
            return 1
        # A name (not a call) that names CUDA holds a CUDA-only thing or a CUDA flag
        # (`if fa_cuda:`, `if self.cuda_stream:`), as does one bound to "a CUDA thing or None".
        return 1 if names_cuda(last) or self.holds_cuda_only(dotted) else 0

    def holds_cuda_only(self, name: str | None) -> bool:
        """Whether ``name`` holds a CUDA-only thing or None: a module's name or ``self.x`` read
        from the whole module, or one the current function bound to one."""
        return name is not None and (
            name in self.cuda_only_values or any(name in scope for scope in self.held_names)
        )

    def _is_guard_call(self, call: cst.Call) -> bool:
        dotted = dotted_name(call.func)
        last = dotted.rsplit(".", 1)[-1] if dotted else ""
        if dotted in self.guard_functions or dotted in self.answering:
            return True
        if is_predicate(last) and names_cuda(last):
            return True
        if self._may_resolve_to_torch_cuda(call.func, dotted) and qualified_names(
            self, call.func
        ) & (GUARD_QUALIFIED | self.guard_functions):
            return True
        if dotted is None:
            return False
        if last == "startswith" and call.args:
            values = string_values(call.args[0].value)
            # (`device.startswith("cuda:")`: a device string with an index)
            return bool(values and all(v.removesuffix(":") in CUDA_DEVICE_TYPES for v in values))
        if dotted == "isinstance" and len(call.args) == 2:
            kinds = call.args[1].value
            classes = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
            return all(self._names_cuda_constant(c, classes=True) for c in classes)
        return False

    def _may_resolve_to_torch_cuda(self, node: cst.BaseExpression, dotted: str | None) -> bool:
        """Whether resolving ``node`` can give a configured guard or a name under ``torch.cuda``:
        it says ``cuda``, or starts with a name an import binds to something under it (most
        callees do neither, and resolving is the cost)."""
        if self.guard_functions or dotted is None:
            return True
        names = self.get_metadata(NameProvider, node, None)
        head = dotted.partition(".")[0]
        return names is not None and ("cuda" in dotted or head in names.names_imported_from("cuda"))

    def _names_cuda_constant(self, node: cst.BaseExpression, classes: bool = False) -> bool:
        """A constant or enum member that names CUDA or GPUs (``DistributedType.MULTI_GPU``,
        ``CUDA_DISTRIBUTED_TYPES``), ``torch.cuda`` itself, or (``classes``) a class named for
        CUDA."""
        dotted = dotted_name(node)
        if dotted is None:
            return False
        last = dotted.rsplit(".", 1)[-1]
        if self._may_resolve_to_torch_cuda(node, dotted) and "torch.cuda" in qualified_names(
            self, node
        ):
            return True
        if classes:
            return names_cuda(last) and not names_other_device(last)
        return last.isupper() and (names_cuda(last) or "gpu" in words(last))

    def _comparison_polarity(self, test: cst.Comparison) -> int:
        target = test.comparisons[0]
        operator = target.operator
        positive = isinstance(operator, (cst.Equal, cst.In, cst.Is))
        negative = isinstance(operator, (cst.NotEqual, cst.NotIn, cst.IsNot))
        if (
            isinstance(target.comparator, cst.Name)
            and target.comparator.value == "None"
            and (
                dotted_name(test.left) in VERSION_ATTRIBUTES
                or qualified_names(self, test.left) & VERSION_ATTRIBUTES
            )
        ):  # `torch.version.hip is not None`: a ROCm (or CUDA) build
            return {cst.IsNot: 1, cst.Is: -1}.get(type(operator), 0)
        if (
            isinstance(target.comparator, cst.Name)
            and target.comparator.value == "None"
            and self.holds_cuda_only(dotted_name(test.left))
        ):  # `self.alt_stream is not None`, where it is a CUDA stream or None
            return {cst.IsNot: 1, cst.Is: -1}.get(type(operator), 0)
        counted = self._count_polarity(test.left, operator, target.comparator)
        if counted:
            return counted
        values = string_values(target.comparator) or string_values(test.left)
        if values:
            if not all(string_says_cuda(v) for v in values):
                return 0
        elif not any(
            self._names_cuda_constant(side) for side in (test.left, target.comparator)
        ) and not (  # `family in (DEVICE.CUDA, DEVICE.ROCM)`
            isinstance(target.comparator, (cst.Tuple, cst.List, cst.Set))
            and target.comparator.elements
            and all(self._names_cuda_constant(e.value) for e in target.comparator.elements)
        ):
            return 0
        return 1 if positive else -1 if negative else 0

    def _count_polarity(
        self, left: cst.BaseExpression, operator: cst.CSTNode, right: cst.BaseExpression
    ) -> int:
        """``torch.cuda.device_count() >= 2`` (+1), ``torch.cuda.device_count() < 2`` (-1)."""
        symbol = _OPERATORS.get(type(operator))
        if symbol is None:
            return 0
        if isinstance(left, cst.Integer):
            left, right, symbol = right, left, SWAPPED[symbol]
        if not (isinstance(right, cst.Integer) and self._is_count(left)):
            return 0
        return count_says_cuda(symbol, int(right.evaluated_value))

    def _is_count(self, node: cst.BaseExpression) -> bool:
        """``torch.cuda.device_count()``, or the length of a sequence of torch's CUDA module,
        which has an entry per CUDA device (``len(torch.cuda.default_generators)``), or a name
        bound to one of them."""
        if isinstance(node, (cst.Name, cst.Attribute)):  # (`num_gpus = torch.cuda.device_count()`)
            held = dotted_name(node)
            if any(held in scope for scope in self.count_names):
                self.count_reads[node] = held or ""  # (for the checks, once scopes are gone)
                return True
            return False
        if not isinstance(node, cst.Call):
            return False
        dotted = dotted_name(node.func) or ""
        if dotted == "len" and len(node.args) == 1:
            return (dotted_name(node.args[0].value) or "").startswith("torch.cuda.")
        return dotted.endswith("cuda.device_count") or (
            self._may_resolve_to_torch_cuda(node.func, dotted or None)
            and "torch.cuda.device_count" in qualified_names(self, node.func)
        )

    def other_device(self, test: cst.BaseExpression, cpu: bool = True, apple: bool = True) -> bool:
        """Whether ``test`` asks about a device other than CUDA (``is_xpu()``,
        ``torch.xpu.is_available()``, ``device.type == "npu"``; with ``cpu``, the CPU too; without
        ``apple``, not Apple's devices, ``mps``)."""
        if isinstance(test, cst.UnaryOperation):
            return self.other_device(test.expression, cpu, apple)
        if isinstance(test, cst.BooleanOperation):
            return self.other_device(test.left, cpu, apple) or self.other_device(
                test.right, cpu, apple
            )
        devices = (OTHER_DEVICES if apple else OTHER_DEVICES - APPLE_DEVICES) | (
            {"cpu"} if cpu else set()
        )
        if isinstance(test, cst.Comparison):
            values = [
                v
                for side in (test.left, *(c.comparator for c in test.comparisons))
                for v in (string_values(side) or [])
            ]
            return bool(values) and all(v in devices for v in values)
        name = dotted_name(test.func if isinstance(test, cst.Call) else test)
        if name is None:
            return False
        last = name.rsplit(".", 1)[-1]
        if not isinstance(test, cst.Call) and any(w in devices - {"cpu"} for w in words(last)):
            return True  # a flag about another device: `if fa_xpu:`
        if not (is_predicate(last) or last == "is_available"):
            return False
        return any(w in devices for w in words(name))

    def _asks_torch_version(self, test: cst.BaseExpression) -> bool:
        """A test of the torch release (or of a torch attribute's presence) that names no CUDA:
        ``is_torch_greater_or_equal("2.7")``, ``hasattr(torch, "accelerator")``, ``TORCH_2_4``,
        ``compare_version("torch", operator.ge, "2.4.0")`` (the package named by a string)."""
        name = dotted_name(test)
        if name in self.version_names or RELEASE_FLAG.fullmatch((name or "").rpartition(".")[2]):
            return True
        if not self.may_ask_versions:
            return False
        strings: set[str] = set()
        found = words_in(test, strings=strings)
        if "torch" in strings:
            found.add("torch")
        # (Not a test of a device: `getattr(torch.version, "hip", None)`, `hasattr(torch, "xpu")`,
        # `hasattr(torch._C, "_cuda_getCurrentRawStream")`.)
        if any(names_other_device(s) for s in strings) or self.other_device(test):
            return False
        if "torch" not in found or any(names_cuda(word) for word in {*found, *strings}):
            return False
        return bool(VERSION_WORDS & found) or "hasattr" in found
