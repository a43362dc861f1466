"""Dtype flow within a function: which tensors are known to be int64, since where, and how.

``Int64Provider`` walks each scope (module, class body, function) in source order, keeping the
names and attribute chains bound to an int64 tensor (with the reason) and those bound to some other
integer or bool tensor. It marks the receiver and the argument expressions of every call whose
value is then known to be int64, so a rule reads the fact off the node without redoing the flow.

Known: ``dtype=`` on any call; ``.long()``, ``.int()``, ``.bool()``, ``.to(dtype)``; torch's int64
defaults (``arange`` of integers, ``tensor`` of integers, ``full`` with an integer, ``randint``,
``randperm``, ``argmax``/``argmin``/``argsort``, ``nonzero``, ``multinomial``, ``searchsorted``,
``bucketize``; ``sum``/``cumsum``/``prod``/``cumprod`` of an integer or bool tensor);
inheritance through ``new_*``, ``*_like``, ``.to(device)``, views and copies, indexing and slicing,
and arithmetic with integers; comparisons make bool tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import BatchableMetadataProvider, CodeRange

from portlint.analysis.names import dotted_name, keyword, method_name, positional, qualified_names
from portlint.analysis.positions import PositionProvider
from portlint.analysis.scopes import NameProvider
from portlint.facts import (
    DTYPE_PRESERVING_METHODS,
    INT64_DTYPES,
    INT64_FUNCTIONS,
    INT64_METHODS,
    INT64_REDUCTIONS,
    LIKE_FACTORIES,
    NEW_METHODS,
    OTHER_INTEGER_DTYPES,
)

INT64_BY_DEFAULT = frozenset(f"torch.{name}" for name in INT64_FUNCTIONS)
TORCH_REDUCTIONS = frozenset(f"torch.{name}" for name in INT64_REDUCTIONS)

INTEGER_OPERATORS = (
    cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.BitAnd, cst.BitOr,
    cst.BitXor, cst.LeftShift, cst.RightShift,
)  # fmt: skip
INTEGER = "integer"  # a tensor of some integer or bool dtype other than int64


@dataclass(frozen=True)
class Int64Origin:
    """How a tensor came to be int64: ``name`` got it at ``at`` by ``how``, maybe from ``parent``.

    ``implicit``: nobody asked for int64 on the way (a default, or an inheritance without
    ``dtype=``), as opposed to ``dtype=torch.int64``, ``.long()`` or ``.to(torch.int64)``.
    """

    name: str
    at: cst.CSTNode  # the expression that made it int64
    how: str
    parent: Int64Origin | None = None
    implicit: bool = True
    # Where ``at`` is, asked only when a finding names the line (positions cost where asked).
    positions: Mapping[cst.CSTNode, CodeRange] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def line(self) -> int:
        return self.positions[self.at].start.line

    @property
    def root(self) -> Int64Origin:
        return self.parent.root if self.parent else self


Fact = Int64Origin | str | None  # an origin, INTEGER, or unknown


def _is_int_literal_tree(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _is_int_literal_tree(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(
            isinstance(e, cst.Element) and _is_int_literal_tree(e.value) for e in node.elements
        )
    return False


def _has_float_literal(call: cst.Call) -> bool:
    return any(isinstance(a.value, cst.Float) for a in call.args if a.keyword is None)


def _looks_like_device(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.SimpleString):
        return True
    name = dotted_name(node)
    return name is not None and "device" in name.rsplit(".", 1)[-1]


class Int64Provider(BatchableMetadataProvider["Int64Origin"]):
    """Marks expressions (call receivers and arguments) known to hold an int64 tensor."""

    METADATA_DEPENDENCIES = (PositionProvider, NameProvider)

    def __init__(self) -> None:
        super().__init__()
        self.scopes: list[dict[str, Fact]] = [{}]

    # Scopes: a function or class body starts with no facts; facts do not leak out of it.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append({})

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    @property
    def facts(self) -> dict[str, Fact]:
        return self.scopes[-1]

    def known(self, node: cst.BaseExpression) -> Int64Origin | None:
        fact = self.fact_of(node)
        return fact if isinstance(fact, Int64Origin) else None

    def fact_of(self, node: cst.BaseExpression) -> Fact:
        key = dotted_name(node)
        return self.facts.get(key) if key else None

    def visit_Call(self, node: cst.Call) -> None:
        operands = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute):
            operands.append(node.func.value)
        for operand in operands:
            origin = self.known(operand)
            if origin:
                self.set_metadata(operand, origin)

    def visit_Return(self, node: cst.Return) -> None:
        """A returned value (each element of a returned tuple): where the tensor leaves."""
        value = node.value
        values = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        for returned in values:
            origin = self.known(returned) if returned is not None else None
            if returned is not None and origin:
                self.set_metadata(returned, origin)

    # Bindings, seen after their right-hand side was visited.
    def leave_Assign(self, original_node: cst.Assign) -> None:
        origin = self.known(original_node.value)
        if origin:  # (where it is stored: `self.num_sampled = num_sampled`)
            self.set_metadata(original_node.value, origin)
        for target in original_node.targets:
            self._bind(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            self._bind(original_node.target, original_node.value)

    def visit_For_body(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        self._bind(original_node.target, original_node.value)

    def leave_WithItem(self, original_node: cst.WithItem) -> None:
        if original_node.asname is not None:
            self._bind(original_node.asname.name, None)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
            return
        key = dotted_name(target)
        if key is None:
            return
        fact = self.evaluate(key, value) if value is not None else None
        if fact is None:
            self.facts.pop(key, None)
        else:
            self.facts[key] = fact

    # --- Evaluating an expression ---------------------------------------------------------
    def evaluate(self, name: str, value: cst.BaseExpression) -> Fact:
        """What ``value`` (bound to ``name``) is: an int64 origin, INTEGER, or None (unknown)."""
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.fact_of(value)
        if isinstance(value, cst.Subscript):
            return self._derive(name, value, "indexing", self.evaluate(name, value.value))
        if isinstance(value, cst.UnaryOperation) and isinstance(
            value.operator, (cst.BitInvert, cst.Minus)
        ):
            return self.evaluate(name, value.expression)
        if isinstance(value, cst.BinaryOperation):
            return self._arithmetic(name, value)
        if isinstance(value, cst.Comparison):
            return INTEGER  # a bool tensor (a Python bool has no tensor methods to call later)
        if isinstance(value, cst.Call):
            return self._call(name, value)
        return None

    def _origin(
        self,
        name: str,
        at: cst.BaseExpression,
        how: str,
        parent: Int64Origin | None = None,
        implicit: bool = True,
    ) -> Int64Origin:
        """An int64 origin at ``at``, which can tell its line."""
        # The ignore: LibCST types all metadata as object.
        positions: Mapping[cst.CSTNode, CodeRange] = self.metadata[PositionProvider]  # type: ignore[assignment]
        return Int64Origin(name, at, how, parent, implicit, positions)

    def _derive(self, name: str, at: cst.BaseExpression, how: str, parent: Fact) -> Fact:
        """The same dtype as ``parent``, reached by a dtype-preserving operation."""
        if isinstance(parent, Int64Origin):
            return self._origin(name, at, how, parent, parent.implicit)
        return parent

    def _arithmetic(self, name: str, value: cst.BinaryOperation) -> Fact:
        if not isinstance(value.operator, INTEGER_OPERATORS):
            return None
        sides = [
            INTEGER if isinstance(side, cst.Integer) else self.evaluate(name, side)
            for side in (value.left, value.right)
        ]
        if None in sides:
            return None
        origin = next((s for s in sides if isinstance(s, Int64Origin)), None)
        return self._derive(name, value, "arithmetic", origin) if origin else INTEGER

    def _dtype_fact(
        self, name: str, at: cst.BaseExpression, dtype: cst.BaseExpression, how: str
    ) -> Fact:
        names = qualified_names(self, dtype)
        if names & INT64_DTYPES:
            return self._origin(name, at, how, implicit=False)
        return INTEGER if names & OTHER_INTEGER_DTYPES else None

    def _call(self, name: str, value: cst.Call) -> Fact:
        dtype = keyword(value, "dtype")
        if dtype is not None:
            code = cst.Module([]).code_for_node(dtype.value)
            return self._dtype_fact(name, value, dtype.value, f"`dtype={code}`")
        callee = qualified_names(self, value.func)
        method = method_name(value)
        receiver = value.func.value if isinstance(value.func, cst.Attribute) else None
        receiver_fact = self.evaluate(name, receiver) if receiver is not None else None
        first = value.args[0].value if value.args else None

        if "torch.arange" in callee and not _has_float_literal(value):
            return self._origin(name, value, "`torch.arange` of integers")
        if "torch.tensor" in callee and first is not None and _is_int_literal_tree(first):
            return self._origin(name, value, "`torch.tensor` of integers")
        if "torch.full" in callee:
            fill = keyword(value, "fill_value") or positional(value, 1)
            if fill is not None and _is_int_literal_tree(fill.value):
                return self._origin(name, value, "`torch.full` with an integer")
            return None
        if callee & INT64_BY_DEFAULT:
            return self._origin(name, value, f"`{min(callee & INT64_BY_DEFAULT)}`")
        if callee & TORCH_REDUCTIONS and first is not None:
            if self.evaluate(name, first) is not None:
                return self._origin(name, value, "a sum of an integer tensor")
            return None
        if callee & LIKE_FACTORIES and first is not None:
            like = min(callee & LIKE_FACTORIES)
            parent = self.evaluate(name, first)
            if isinstance(parent, Int64Origin):
                return self._origin(name, value, f"`{like}`", parent)
            return parent
        if receiver is None or callee & {"torch"}:
            return None
        assert method is not None  # it has a receiver: the callee is a method
        return self._method(name, value, method, receiver_fact)

    def _method(self, name: str, value: cst.Call, method: str, receiver: Fact) -> Fact:
        if method == "long":
            return self._origin(name, value, "`.long()`", implicit=False)
        if method in ("int", "bool", "short", "byte"):
            return INTEGER
        if method in INT64_METHODS:
            return self._origin(name, value, f"`.{method}()`")
        if method == "to":
            target = keyword(value, "dtype") or positional(value, 0)
            if target is None:
                return receiver
            fact = self._dtype_fact(name, value, target.value, "`.to(torch.int64)`")
            if fact is not None:
                return fact
            return (
                self._derive(name, value, "`.to(device)`", receiver)
                if _looks_like_device(target.value)
                else None
            )
        if method in INT64_REDUCTIONS:
            return (
                self._origin(name, value, f"`.{method}()` of an integer tensor")
                if receiver
                else None
            )
        if method in NEW_METHODS:
            if isinstance(receiver, Int64Origin):
                return self._origin(name, value, f"`.{method}()`", receiver)
            return receiver
        if method in DTYPE_PRESERVING_METHODS:
            return self._derive(name, value, f"`.{method}()`", receiver)
        return None
