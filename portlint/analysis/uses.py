"""Where a CUDA-only API named in code is not used there, so that no device is asked for it:
the object a patch replaces an attribute of (``monkeypatch.setattr(torch.cuda, "is_available",
...)``, ``mock.patch.object(torch.cuda, ...)``), the object ``hasattr`` probes, and the default
of ``getattr(torch, device_type, torch.cuda)`` (taken only for a device torch has no module
for)."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from portlint.analysis.names import dotted_name

# A call's name -> the index of the argument it does not use as a device's API, the kind and why.
NOT_USED = {
    "setattr": (0, "patch", "the target of a patch, not a use: `{code}`"),
    "patch.object": (0, "patch", "the target of a patch, not a use: `{code}`"),
    "hasattr": (0, "probe", "a probe of what the module has: `{code}`"),
    "getattr": (2, "default", "the default of `{code}`, for a device torch has no module for"),
}


def not_used(
    node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> tuple[str, str, cst.CSTNode] | None:
    """The kind and why (``{code}``: the call's code) where ``node`` is, or is part of, the
    argument of a call that does not use it (:data:`NOT_USED`), and that call; or where it is
    the original that a patch keeps (``saved = torch.cuda.Event`` before ``torch.cuda.Event =
    ...`` in the same block), and that statement."""
    saved = _kept_for_patch(node, parents)
    if saved is not None:
        return "patch", "the original kept by a patch of it: `{code}`", saved
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, (cst.Arg, cst.BaseStatement)):
        child, current = current, parents.get(current)
    call = parents.get(current) if isinstance(current, cst.Arg) else None
    if not isinstance(call, cst.Call) or current.keyword is not None:  # type: ignore[union-attr]
        return None
    callee = dotted_name(call.func) or ""
    name = "patch.object" if callee.endswith("patch.object") else callee.rsplit(".", 1)[-1]
    found = NOT_USED.get(name)
    if found is None or (name in ("hasattr", "getattr") and callee != name):
        return None
    index, kind, why = found
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if name == "getattr" and not (positional and dotted_name(positional[0].value) == "torch"):
        return None  # (`getattr(args, "device", "cuda")`: a default like any other)
    if len(positional) > index and positional[index] is current and child is not None:
        return kind, why, call
    return None


def _kept_for_patch(
    node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> cst.CSTNode | None:
    """The assignment ``saved = torch.cuda.X`` of ``node`` (``torch.cuda.X``) where a statement
    of the same block assigns ``torch.cuda.X`` itself."""
    assign = parents.get(node)
    if not (isinstance(assign, cst.Assign) and assign.value is node):
        return None
    line = parents.get(assign)
    block = parents.get(line) if line is not None else None
    name = dotted_name(node)
    if name is None or not isinstance(block, (cst.Module, cst.IndentedBlock)):
        return None
    for statement in block.body:
        small_statements = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for small in small_statements:
            if isinstance(small, cst.Assign) and any(
                dotted_name(t.target) == name for t in small.targets
            ):
                return line
    return None
