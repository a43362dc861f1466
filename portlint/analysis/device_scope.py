"""Which device the code around a node already has: what a device fix should use."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import libcst as cst

from portlint.analysis.names import dotted_name
from portlint.analysis.parents import ParentProvider
from portlint.analysis.walk import children

DEFAULT_DEVICE_EXPRESSION = "torch.accelerator.current_accelerator()"

_Node = TypeVar("_Node", bound=cst.CSTNode)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in children(node):
        yield from walk(child)


def _enclosing(rule, node: cst.CSTNode, kind: type[_Node]) -> _Node | None:
    current = rule.get_metadata(ParentProvider, node, None)
    while current is not None and not isinstance(current, kind):
        current = rule.get_metadata(ParentProvider, current, None)
    return current


def _assigns_self_device(class_def: cst.ClassDef) -> bool:
    for node in walk(class_def):
        targets = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, cst.AnnAssign):
            targets = [node.target]
        if any(dotted_name(t) == "self.device" for t in targets):
            return True
    return False


def device_in_scope(rule, node: cst.CSTNode) -> str:
    """The device in use where ``node`` is, as an expression.

    In order: a ``device`` parameter, ``worker.device`` for a ``worker`` parameter, ``self.device``
    in a method of a class that sets it, ``x.device`` for a parameter annotated as a tensor, and
    otherwise the configured ``device-expression`` (default: the build's accelerator).
    """
    function = _enclosing(rule, node, cst.FunctionDef)
    if function is not None:
        params = [
            *function.params.posonly_params,
            *function.params.params,
            *function.params.kwonly_params,
        ]
        names = [p.name.value for p in params]
        if "device" in names:
            return "device"
        if "worker" in names:
            return "worker.device"
        class_def = _enclosing(rule, function, cst.ClassDef)
        if names[:1] == ["self"] and class_def is not None and _assigns_self_device(class_def):
            return "self.device"
        for param in params:
            annotation = param.annotation
            if annotation is not None and (dotted_name(annotation.annotation) or "").endswith(
                "Tensor"
            ):
                return f"{param.name.value}.device"
    return rule.settings.device_expression or DEFAULT_DEVICE_EXPRESSION
