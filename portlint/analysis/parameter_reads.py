"""Whether a function may use the value its parameter came with (PORT101 reports a parameter's
CUDA default only where it may): a read before the name is bound again, other than a comparison
that places nothing or code a test has fixed the name to another constant for."""

from __future__ import annotations

import libcst as cst

from portlint.analysis.names import is_cuda_device_literal


def reads_value(body: cst.CSTNode, name: str) -> bool:
    """Whether a function's ``body`` may use the value its parameter ``name`` came with: a
    read before a statement that binds the name again, other than a comparison with no CUDA
    device (which places nothing) and other than code a test has fixed the name to another
    constant for (``if device_map == "auto": self.device_map = device_map``)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for statement in statements:
        if _rebinds(statement, name):
            return False
        if _reads_in(statement, name):
            return True
    return False


def _reads_in(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` (functions in it too) may read ``name`` as :func:`reads_value` counts: a use
    of it, or a call of ``locals()`` or ``vars()``, which read every name."""
    pending: list[cst.CSTNode] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name) and current.value in (name, "locals", "vars"):
            return True
        if isinstance(current, cst.Attribute):
            pending.append(current.value)  # (`x.device` reads `x`, not `device`)
        elif isinstance(current, cst.Arg):
            pending.append(current.value)  # (`f(device="cuda")` names a keyword)
        elif isinstance(current, cst.Comparison):
            parts = [current.left, *(c.comparator for c in current.comparisons)]
            if not any(is_cuda_device_literal(part) for part in parts):  # (`== "cuda"` picks)
                parts = [p for p in parts if not (isinstance(p, cst.Name) and p.value == name)]
            pending.extend(parts)
        elif isinstance(current, cst.If) and _fixed(current.test, name):
            pending.extend(n for n in (current.test, current.orelse) if n is not None)
        else:
            pending.extend(current.children)
    return False


def _fixed(test: cst.BaseExpression, name: str) -> bool:
    """Whether ``test`` holds only where ``name`` equals a constant other than a CUDA device
    (``device_map == "auto"``, alone or as a part of an ``and``)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _fixed(test.left, name) or _fixed(test.right, name)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    (target,) = test.comparisons
    sides = (test.left, target.comparator)
    return (
        isinstance(target.operator, (cst.Equal, cst.Is))
        and any(isinstance(side, cst.Name) and side.value == name for side in sides)
        and any(
            isinstance(side, cst.SimpleString) and not is_cuda_device_literal(side)
            for side in sides
        )
    )


def _rebinds(statement: cst.CSTNode, name: str) -> bool:
    """Whether ``statement`` binds ``name`` again to a value that does not read it."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(small, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
        and not _reads_in(small.value, name)
        for small in statement.body
    )
