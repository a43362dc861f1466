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
    keyword,
    positional,
)
from portlint.analysis.parents import ParentProvider
from portlint.analysis.passed import unused_default
from portlint.findings import UNSAFE, Fix
from portlint.fix import Rewrite
from portlint.platform import words
from portlint.rule import Quiet

# Why a device named CUDA is a finding: the detail of each.
OFF_CUDA = (
    "Off NVIDIA and AMD GPUs (on XPU, NPU, MPS or the CPU) it fails, or puts tensors where the"
    " rest of the program is not."
)
# The message of a device named CUDA with an index: the index is kept, the type replaced.
FLOAT32 = frozenset({"torch.float32", "torch.float"})
INDEX_KEPT = "hardcodes CUDA; keep the index, use the device type in use"
# Why a value that is a device by its name only is `likely`.
BY_NAME = (
    "It is a device by its name: where it is used only on CUDA, or not as a device, it is none."
)


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


def report_device_string(
    rule, literal: cst.BaseExpression, what: str, quiet: Quiet, by_name: bool = False
) -> None:
    """A CUDA device string given as a device: ``device="cuda"``, ``.to("cuda:1")``. With
    ``by_name``, a value that is a device by the name it is bound to or looked up by: `likely`
    (it may never be used as one off CUDA), and no fix (other code may read it as text)."""
    indexed = _indexed(rule, literal)
    if indexed is not None:
        fix = None if by_name else _fix(rule, literal, indexed)
        message, detail = f"{what} {INDEX_KEPT}", f"{OFF_CUDA} {_index_kept(indexed)}"
    else:
        device = cst.parse_expression(fix_device(rule, literal).expression)
        fix = None if by_name else _fix(rule, literal, device)
        suggested = message_device(rule, literal).expression
        message = f"{what} hardcodes CUDA; use `{suggested}`"
        detail = f"{OFF_CUDA} {_in_scope(rule, literal, suggested)}"
    if by_name:
        detail = f"{detail} {BY_NAME}"
    confidence = "likely" if by_name else "certain"
    rule.report(literal, message, fix=fix, quiet=quiet, detail=detail, confidence=confidence)


def report_named_devices(
    rule, targets: list[cst.BaseExpression], value: cst.BaseExpression
) -> None:
    """A CUDA device string bound to a name that names a device (``device = "cuda"``,
    ``self._device = f"cuda:{rank}"``, ``DEVICE = "cuda"``): a device, as a parameter so
    named that defaults to one is. No fix: code may read the name as text."""
    names = [name for t in targets if (name := _last_name(t)) and "device" in words(name)]
    for literal in cuda_device_literals(value) if names else ():
        report_device_string(rule, literal, f"`{names[0]}`", None, by_name=True)


def report_device_default(rule, node: cst.Call) -> None:
    """A CUDA device string given as the default of a device setting: ``getattr(args,
    "device", "cuda")``, ``kwargs.get("device", "cuda")``, ``add_argument("--device",
    default="cuda")``."""
    if isinstance(node.func, cst.Name) and node.func.value == "getattr":
        key, default = argument(node, "name", 1), argument(node, "default", 2)
    elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("get", "pop"):
        key, default = argument(node, "key", 0), argument(node, "default", 1)
    elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
        key, default = positional(node, 0), keyword(node, "default")  # (`--device`)
    else:
        return
    if key is None or default is None or not isinstance(key.value, cst.SimpleString):
        return
    if "device" in words(key.value.evaluated_value or ""):
        for literal in cuda_device_literals(default.value):
            what = f"the default of {code_of(key.value)}"
            report_device_string(rule, literal, what, None, by_name=True)


def report_device_parameter(rule, node: cst.Param) -> None:
    """A parameter named for a device that defaults to CUDA (``device="cuda"``): latent, for
    every caller that leaves it out; silent where the default is never used."""
    default = node.default
    if default is None or "device" not in words(node.name.value):
        return
    if not is_cuda_device_literal(default):
        return
    parameters = rule.get_metadata(ParentProvider, node, None)
    owner = rule.get_metadata(ParentProvider, parameters, None) if parameters else None
    unused = unused_default(rule.module, owner, node)
    rule.report(
        default,
        f"parameter `{node.name.value}` defaults to CUDA; default to None and take the device in use",
        confidence="likely",
        quiet=(unused, node) if unused else None,
        detail="Every caller that leaves it out runs on CUDA.",
    )


def _last_name(target: cst.BaseExpression) -> str | None:
    """``device`` of ``device``, ``self.device`` or ``args.device``."""
    if isinstance(target, cst.Name):
        return target.value
    return target.attr.value if isinstance(target, cst.Attribute) else None


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
