"""A device written as a CUDA string, reported with its fix (PORT101): the device in scope, or,
where it names an index, the type of the device in use with the index kept."""

from __future__ import annotations

from typing import cast

import libcst as cst

from portlint.analysis.device_scope import default_device, device_type, fix_device, message_device
from portlint.analysis.names import (
    argument,
    built_device_string,
    code_of,
    dotted_name,
    is_cuda_device_literal,
)
from portlint.findings import UNSAFE, Fix
from portlint.fix import Rewrite
from portlint.rule import Quiet

# Why a device named CUDA is a finding: the detail of each.
OFF_CUDA = (
    "Off NVIDIA and AMD GPUs (on XPU, NPU, MPS or the CPU) it fails, or puts tensors where the"
    " rest of the program is not."
)
# The message of a device named CUDA with an index: the index is kept, the type replaced.
FLOAT32 = frozenset({"torch.float32", "torch.float"})
INDEX_KEPT = "hardcodes CUDA; keep the index, use the device type in use"


def _indexed(rule, literal: cst.BaseExpression) -> cst.BaseExpression | None:
    """The CUDA device ``literal`` names with its type replaced and its index kept
    (``"cuda:1"``, ``f"cuda:{i}"``, ``"cuda:%d" % i``); None where it names no index."""
    built = built_device_string(literal)
    if built is not None:  # (`"cuda:%d" % i` -> `(<type> + ":%d") % i`)
        rest = f"{built.quote}{str(built.evaluated_value)[len('cuda') :]}{built.quote}"
        typed = cst.parse_expression(f"({device_type(default_device(rule))} + {rest})")
        return cast(cst.BaseExpression, literal.deep_replace(built, typed))
    if isinstance(literal, cst.FormattedString) and len(literal.parts) > 1:
        inner = "'" if '"' in literal.start else '"'  # (the same quote ends it before 3.12)
        kind = device_type(default_device(rule), inner)
        parts = [
            cst.FormattedStringExpression(cst.parse_expression(kind)),
            cst.FormattedStringText(":"),
            *literal.parts[1:],
        ]
        return literal.with_changes(parts=parts)
    text = (
        literal.evaluated_value
        if isinstance(literal, cst.SimpleString)
        else cst.Module([]).code_for_node(literal)[2:-1]
    )
    _, _, index = str(text).partition(":")
    kind = device_type(default_device(rule))
    return cst.parse_expression(f"torch.device({kind}, {index})") if index else None


def _fix(rule, old: cst.CSTNode, new: cst.BaseExpression) -> Fix | None:
    code = code_of(new)  # (on one line: it titles the fix)
    rewrite = Rewrite(replace={id(old): new}, imports={"torch"} if "torch." in code else set())
    return rule.build_fix(rewrite, UNSAFE, f"Use `{code}`")


def report_device_call(rule, node: cst.Call, device_type_arg: cst.Arg, quiet: Quiet) -> None:
    """``torch.device("cuda"...)``: the device in scope, or the type replaced, index kept."""
    literal = device_type_arg.value
    index = argument(node, "index", 1)
    indexed = _indexed(rule, literal)
    if index is not None:
        new_type = cst.parse_expression(device_type(default_device(rule)))
        fix = _fix(rule, literal, new_type)
        message = f"`torch.device` {INDEX_KEPT}"
        detail = f"The type of the device in use: `{code_of(new_type)}`."
    elif indexed is not None:
        old = node if isinstance(literal, cst.SimpleString) else literal
        fix = _fix(rule, old, indexed)
        message, detail = f"`torch.device` {INDEX_KEPT}", _index_kept(indexed)
    else:
        device = fix_device(rule, node)
        fix = _fix(rule, node, cst.parse_expression(device.as_device()))
        suggested = message_device(rule, node).as_device()
        message = f"`torch.device` hardcodes CUDA; use `{suggested}`"
        detail = _in_scope(rule, node, suggested)
    rule.report(node, message, fix=fix, quiet=quiet, detail=f"{OFF_CUDA} {detail}")


def report_device_string(rule, literal: cst.BaseExpression, what: str, quiet: Quiet) -> None:
    """A CUDA device string given as a device: ``device="cuda"``, ``.to("cuda:1")``."""
    indexed = _indexed(rule, literal)
    if indexed is not None:
        fix = _fix(rule, literal, indexed)
        message, detail = f"{what} {INDEX_KEPT}", f"{OFF_CUDA} {_index_kept(indexed)}"
    else:
        fix = _fix(rule, literal, cst.parse_expression(fix_device(rule, literal).expression))
        suggested = message_device(rule, literal).expression
        message = f"{what} hardcodes CUDA; use `{suggested}`"
        detail = f"{OFF_CUDA} {_in_scope(rule, literal, suggested)}"
    rule.report(literal, message, fix=fix, quiet=quiet, detail=detail)


def _in_scope(rule, node: cst.CSTNode, suggested: str) -> str:
    """Where the device suggested at ``node`` comes from, and whether the fix uses it."""
    device = message_device(rule, node)
    if device == default_device(rule):
        return "No device is in scope here."
    if not device.fixable:
        return f"`{suggested}` is a tensor's device, maybe the CPU: the fix does not use it."
    return f"`{suggested}` is the device in scope."


def cuda_device_literals(
    value: cst.BaseExpression, chosen: bool = False
) -> list[cst.BaseExpression]:
    """The CUDA device strings ``value`` gives: itself, or an arm of a choice (``"cuda" if
    args.ngpu > 0 else "cpu"``, at any depth; with ``chosen``, the arms only)."""
    if isinstance(value, cst.IfExp):
        return [*cuda_device_literals(value.body), *cuda_device_literals(value.orelse)]
    return [value] if not chosen and is_cuda_device_literal(value) else []


def _index_kept(indexed: cst.BaseExpression) -> str:
    return f"With the type of the device in use: `{code_of(indexed)}`."


def forces_float32(node: cst.Call) -> bool:
    """``torch.autocast(..., dtype=torch.float32)``: an autocast that forces float32."""
    dtype = argument(node, "dtype", 1)
    return dtype is not None and dotted_name(dtype.value) in FLOAT32
