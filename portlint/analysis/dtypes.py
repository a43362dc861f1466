"""Dtype flow within a function: which tensors are known to be int64, and since where.

``Int64Provider`` walks each scope (module, class body, function) in source order, keeping the
names and attribute chains bound to an int64 tensor. It marks the receiver and the argument
expressions of every call whose value is then known to be int64, so a rule reads the fact off the
node without redoing the flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import BatchableMetadataProvider, PositionProvider, QualifiedNameProvider

from portlint.analysis.names import dotted_name, keyword, method_name, positional, qualified_names

INT64 = {"torch.int64", "torch.long"}
NEW_METHODS = {"new_empty", "new_zeros", "new_ones", "new_full"}
LIKE_FACTORIES = {f"torch.{kind}_like" for kind in ("empty", "zeros", "ones", "full")}
INT64_BY_DEFAULT = {"torch.randint", "torch.argmax", "torch.argmin"}
INT64_METHODS = {"long", "argmax", "argmin"}


@dataclass(frozen=True)
class Int64Origin:
    """How a tensor came to be int64: ``name`` got it at ``line`` by ``how``, maybe from ``parent``."""

    name: str
    line: int
    how: str
    parent: Int64Origin | None = None

    @property
    def root(self) -> Int64Origin:
        return self.parent.root if self.parent else self


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


class Int64Provider(BatchableMetadataProvider["Int64Origin"]):
    """Marks expressions (call receivers and arguments) known to hold an int64 tensor."""

    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self) -> None:
        super().__init__()
        self.scopes: list[dict[str, Int64Origin]] = [{}]

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
    def facts(self) -> dict[str, Int64Origin]:
        return self.scopes[-1]

    def known(self, node: cst.BaseExpression) -> Int64Origin | None:
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

    # Bindings, seen after their right-hand side was visited.
    def leave_Assign(self, original_node: cst.Assign) -> None:
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
        origin = self.int64_origin(key, value) if value is not None else None
        if origin:
            self.facts[key] = origin
        else:
            self.facts.pop(key, None)

    def int64_origin(self, name: str, value: cst.BaseExpression) -> Int64Origin | None:
        """Why ``value`` is an int64 tensor, or None when that is not known."""
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.known(value)
        if not isinstance(value, cst.Call):
            return None
        line = self.get_metadata(PositionProvider, value).start.line
        dtype = keyword(value, "dtype")
        if dtype is not None:
            if qualified_names(self, dtype.value) & INT64:
                return Int64Origin(
                    name, line, f"`dtype={cst.Module([]).code_for_node(dtype.value)}`"
                )
            return None
        callee = qualified_names(self, value.func)
        method = method_name(value)
        receiver = value.func.value if isinstance(value.func, cst.Attribute) else None
        if "torch.arange" in callee and not _has_float_literal(value):
            return Int64Origin(name, line, "`torch.arange` of integers")
        if "torch.tensor" in callee and value.args and _is_int_literal_tree(value.args[0].value):
            return Int64Origin(name, line, "`torch.tensor` of integers")
        if callee & INT64_BY_DEFAULT:
            return Int64Origin(name, line, f"`{min(callee & INT64_BY_DEFAULT)}`")
        if receiver is not None and method in INT64_METHODS:
            return Int64Origin(name, line, f"`.{method}()`")
        if method == "to":
            target = positional(value, 0)
            if target is not None and qualified_names(self, target.value) & INT64:
                return Int64Origin(name, line, "`.to(torch.int64)`")
            return None
        if method in NEW_METHODS and receiver is not None:
            parent = self.known(receiver)
            return Int64Origin(name, line, f"`.{method}()`", parent) if parent else None
        if callee & LIKE_FACTORIES and value.args:
            parent = self.known(value.args[0].value)
            like = min(callee & LIKE_FACTORIES)
            return Int64Origin(name, line, f"`{like}`", parent) if parent else None
        return None
