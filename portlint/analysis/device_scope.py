"""Which device the code around a node already has: what a device fix or message should use.

A fix must keep the program's meaning on CUDA, so a device is taken from the scope only where it
is certain to be bound at the node, and to be a device: a ``device`` parameter of the function
whose body holds the node (not one with a ``None`` default or a ``None`` in its type), a
``worker`` parameter's ``.device``, or ``self.device`` in a method of a class whose
``__init__`` sets it, before the node where the node is in ``__init__`` itself. It is never
the name the node's statement assigns (``self.device = torch.device("cuda")``), one the replaced
code reads (``torch.device(f"cuda:{device}")``), nor a parameter seen from its own default
(``def f(device=torch.device("cuda"))``: the default is evaluated where the ``def`` is). A tensor
parameter's ``.device`` is only suggested, never used by a fix: the tensor may be on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from portlint.analysis.names import dotted_name, is_cuda_device_literal
from portlint.analysis.parents import parent_of
from portlint.analysis.walk import children

DEFAULT_DEVICE_EXPRESSION = "torch.accelerator.current_accelerator()"
# Its type: "cpu" on a build with no accelerator, where ``current_accelerator()`` is None and its
# ``.type`` would raise (a CPU-only test run that passed with "cuda" would fail after the fix).
DEFAULT_DEVICE_TYPE = "getattr(torch.accelerator.current_accelerator(), {q}type{q}, {q}cpu{q})"


# The device a backend is chosen for where none is in scope: the accelerator that is there.
# ``current_accelerator()`` alone is the build's (CUDA on a CUDA build of a machine without a
# GPU, where NCCL then fails) and None on a build without one (``get_default_backend_for_device``
# raises on None); without an available accelerator the backend is the CPU's, Gloo.
AVAILABLE_DEVICE = (
    'torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"'
)


@dataclass(frozen=True)
class ScopeDevice:
    expression: str
    is_device: bool  # certainly a `torch.device` (otherwise it may be a string or an index)
    fixable: bool = True  # a fix may use it (a tensor parameter's device is only suggested)

    def as_device(self) -> str:
        """The expression as a `torch.device`."""
        return self.expression if self.is_device else f"torch.device({self.expression})"


def default_device(rule) -> ScopeDevice:
    """The configured ``device-expression``, or the build's accelerator."""
    configured = rule.settings.device_expression
    return ScopeDevice(configured or DEFAULT_DEVICE_EXPRESSION, not configured)


def device_type(device: ScopeDevice, quote: str = '"') -> str:
    """The device type of a device, as an expression (its strings in ``quote``: the other quote
    where it goes inside an f-string)."""
    if device.expression == DEFAULT_DEVICE_EXPRESSION:
        return DEFAULT_DEVICE_TYPE.format(q=quote)
    return f"{device.as_device()}.type"


def backend_device(device: ScopeDevice, fix: bool) -> str:
    """The device to choose a collective backend for: the device in scope, else the available
    accelerator or the CPU (``AVAILABLE_DEVICE``); ``fix``: as a fix writes it (a
    ``torch.device``), else as a message names it."""
    if device.expression == DEFAULT_DEVICE_EXPRESSION:
        return AVAILABLE_DEVICE
    return device.as_device() if fix else device.expression


def device_module(device: ScopeDevice, fix: bool) -> str:
    """The device's module: ``torch.get_device_module()`` (the accelerator's) for the default;
    ``fix``: as a fix writes it (of a ``torch.device``), else as a message names it."""
    if device.expression == DEFAULT_DEVICE_EXPRESSION:
        return "torch.get_device_module()"
    return f"torch.get_device_module({device.as_device() if fix else device.expression})"


def fix_device(rule, node: cst.CSTNode, replaced: cst.CSTNode | None = None) -> ScopeDevice:
    """The device a fix of ``node`` (replacing ``replaced``) uses: the one in scope, else the
    default."""
    found = device_in_scope(rule, node, replaced or node)
    return found if found is not None and found.fixable else default_device(rule)


def message_device(rule, node: cst.CSTNode) -> ScopeDevice:
    """The device a message at ``node`` suggests: the one in scope, else the default."""
    return device_in_scope(rule, node, node) or default_device(rule)


def _function_holding(rule, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The innermost function whose body holds ``node`` (its parameters, decorators and
    annotations are evaluated where the ``def`` is)."""
    child, current = node, parent_of(rule, node)
    while current is not None:
        if isinstance(current, cst.FunctionDef) and child is current.body:
            return current
        child, current = current, parent_of(rule, current)
    return None


def _statement_in(rule, node: cst.CSTNode, block: cst.CSTNode | None) -> cst.CSTNode | None:
    """The statement holding ``node``: the one in ``block``'s body, or (None) the innermost."""
    child, current = node, parent_of(rule, node)
    while current is not None:
        if current is block if block is not None else isinstance(child, cst.BaseStatement):
            return child
        child, current = current, parent_of(rule, current)
    return None


def _assigned(rule, node: cst.CSTNode) -> set[str]:
    """The names and dotted targets the statement holding ``node`` assigns."""
    statement = _statement_in(rule, node, None)
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    targets: list[cst.BaseExpression] = []
    for small in statement.body:
        if isinstance(small, cst.Assign):
            targets += [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets.append(small.target)
    found: set[str] = set()
    while targets:
        target = targets.pop()
        if isinstance(target, (cst.Tuple, cst.List)):
            targets += [element.value for element in target.elements]
        elif name := dotted_name(target):
            found.add(name)
    return found


def _names(node: cst.CSTNode) -> set[str]:
    """The names and dotted names in ``node`` (``self.device`` and ``self``; not ``device``)."""
    if isinstance(node, (cst.Name, cst.Attribute)) and (name := dotted_name(node)):
        inner = _names(node.value) if isinstance(node, cst.Attribute) else set()
        return {name, *inner}
    if isinstance(node, cst.Attribute):
        return _names(node.value)
    found: set[str] = set()
    for child in children(node):
        found |= _names(child)
    return found


def _admits_none(param: cst.Param) -> bool:
    default = param.default
    if isinstance(default, cst.Name) and default.value == "None":
        return True
    annotation = param.annotation
    if annotation is None:
        return False
    text = cst.Module([]).code_for_node(annotation.annotation)
    return "None" in text or "Optional" in text


def _is_torch_device(annotation: cst.Annotation | None) -> bool:
    return annotation is not None and dotted_name(annotation.annotation) in (
        "torch.device",
        "device",
    )


def _params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def device_in_scope(rule, node: cst.CSTNode, replaced: cst.CSTNode) -> ScopeDevice | None:
    """The device bound where ``node`` is, if one is certain to be (see the module's doc);
    ``replaced``: the code a fix replaces, whose names are not candidates."""
    function = _function_holding(rule, node)
    if function is None:
        return None
    assigned = _assigned(rule, node)
    excluded = assigned | _names(replaced)
    params = {p.name.value: p for p in _params(function)}
    device = params.get("device")
    if device is not None and not _admits_none(device) and "device" not in excluded:
        return ScopeDevice("device", _is_torch_device(device.annotation))
    worker = params.get("worker")
    if (
        worker is not None
        and worker.default is None
        and not ("worker" in assigned or "worker.device" in excluded)
    ):
        return ScopeDevice("worker.device", True)
    found = _self_device(rule, node, function, params)
    if found is not None and "self.device" not in excluded:
        return found
    for param in params.values():
        annotation = param.annotation
        if annotation is not None and (dotted_name(annotation.annotation) or "").endswith("Tensor"):
            return ScopeDevice(f"{param.name.value}.device", True, fixable=False)
    return None


def _self_device(
    rule, node: cst.CSTNode, function: cst.FunctionDef, params: dict[str, cst.Param]
) -> ScopeDevice | None:
    """``self.device`` in a method of a class whose ``__init__`` sets it to a device (or has a
    ``device`` property), if it is set before ``node``."""
    if list(params)[:1] != ["self"]:
        return None
    block = parent_of(rule, function)
    class_def = parent_of(rule, block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(class_def, cst.ClassDef):
        return None
    methods = [s for s in class_def.body.body if isinstance(s, cst.FunctionDef)]
    if any(
        m.name.value == "device"
        and any(dotted_name(d.decorator) == "property" for d in m.decorators)
        for m in methods
    ):
        return ScopeDevice("self.device", False)
    init = next((m for m in methods if m.name.value == "__init__"), None)
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return None
    before = _statement_in(rule, node, init.body) if function is init else None
    for statement in init.body.body:
        if statement is before:
            return None  # set only after the node, or not at all
        value = _assigned_self_device(statement)
        if value is not None:
            return _device_value(value, {p.name.value: p for p in _params(init)})
    return None


def _assigned_self_device(statement: cst.CSTNode) -> cst.BaseExpression | None:
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(
            dotted_name(t.target) == "self.device" for t in small.targets
        ):
            return small.value
        if isinstance(small, cst.AnnAssign) and dotted_name(small.target) == "self.device":
            return small.value
    return None


def _device_value(value: cst.BaseExpression, params: dict[str, cst.Param]) -> ScopeDevice | None:
    """What ``self.device = value`` makes ``self.device``: a device, something that may be a
    string or an index, or (None) not the accelerator at all (``None``, ``"cpu"``)."""
    if isinstance(value, (cst.SimpleString, cst.FormattedString)):
        return ScopeDevice("self.device", False) if is_cuda_device_literal(value) else None
    if isinstance(value, cst.Name):
        if value.value == "None":
            return None
        param = params.get(value.value)
        if param is not None and _admits_none(param):
            return None
        return ScopeDevice("self.device", param is not None and _is_torch_device(param.annotation))
    if isinstance(value, cst.Call) and dotted_name(value.func) in ("torch.device", "device"):
        first = value.args[0].value if value.args else None
        if isinstance(first, cst.SimpleString) and not str(first.evaluated_value).startswith(
            "cuda"
        ):
            return None  # a CPU (or meta) device: not the accelerator
        return ScopeDevice("self.device", True)
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        return ScopeDevice("self.device", True)
    return ScopeDevice("self.device", False)
