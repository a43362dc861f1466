"""What code names of devices, as the flow pass (:mod:`portlint.model.flow`) asks it of a test
or an arm: another device than CUDA, the CPU or CUDA picked by name, the torch release, a
requirement."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence, Set

from portlint.facts import APPLE_DEVICES, MESSAGE_METHODS, MESSAGE_PREFIXES, OTHER_DEVICES
from portlint.model.places import walk
from portlint.platform import dotted, words

APPLE_WORDS = frozenset(APPLE_DEVICES)
DEVICE_TEXT = re.compile("|".join(sorted(OTHER_DEVICES)), re.IGNORECASE)  # (before its words)


def picks_cpu(nodes: list[ast.AST]) -> bool:
    """Whether code names the CPU as the device (``"cpu"``, ``torch.device("cpu")``, a call of
    ``DeviceCPU()`` or ``self._cpu_call()``; not a test of it: ``elif device.type == "cpu":``
    handles the CPU, among other devices)."""
    for root in nodes:
        compared = {
            id(side)
            for node in walk(root)
            if isinstance(node, ast.Compare)
            for side in (node.left, *node.comparators)
        }
        for node in walk(root):
            if isinstance(node, ast.Constant) and node.value == "cpu" and id(node) not in compared:
                return True
            if isinstance(node, ast.Call) and "cpu" in words(dotted(node.func) or ""):
                return True
    return False


def picks_cuda(nodes: list[ast.AST]) -> bool:
    """Whether code picks CUDA by name: a ``"cuda"`` device string or a ``.cuda()`` call; not
    a device named to a ``torch.cuda`` call (``torch.cuda.get_device_capability(f"cuda:{i}")``
    asks about a CUDA device: it picks none for code that could run elsewhere)."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Call) and (dotted(node.func) or "").startswith("torch.cuda."):
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.split(":")[0] == "cuda":
                return True
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "cuda"
        ):
            return True
    return False


def names_another_device(nodes: Sequence[ast.AST], apple: bool = True) -> bool:
    """Whether code names a device other than CUDA: ``torch.xpu``, ``is_npu()``, ``"mps"``
    (without ``apple``, one other than Apple's, which exist only on a Mac: a dispatch over
    CUDA, MPS and the CPU leaves XPU and NPU to the CPU)."""
    return bool(devices_named(nodes, apple))


def devices_named(nodes: Sequence[ast.AST], apple: bool = True) -> set[str]:
    """The devices other than CUDA that code names (:func:`names_another_device`)."""
    found: set[str] = set()
    for root in nodes:
        for node in walk(root):
            if isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = node.value.split(":")[0]
            else:
                continue
            found |= _devices_of(name)
    return found if apple else found - APPLE_WORDS


@functools.lru_cache(maxsize=1 << 15)  # (a tree reads the same few thousand names again and again)
def _devices_of(name: str) -> frozenset[str]:
    """The devices other than CUDA that a name or a string names (``has_mps``: the MPS)."""
    return frozenset(words(name)) & OTHER_DEVICES if DEVICE_TEXT.search(name) else frozenset()


# Words of a test of which torch release runs (`is_torch_version(">=", "2.3")`,
# `_is_torch_greater_or_equal_than_2_7`, `version.parse(torch.__version__) < ...`), and a flag
# named for a release (`TORCH_2_4`, `_TORCH_1_13`): true from that release on.
RELEASE_WORDS = frozenset({"version", "greater", "less", "older", "newer", "ge", "gt", "lt", "le"})
VENDOR_BUILDS = ("torch.version.hip", "torch.version.cuda")
RELEASE_FLAG = re.compile(r"_?(?:IS_)?TORCH_?\d+(?:_\d+)+", re.IGNORECASE)


def asks_torch_release(test: ast.expr) -> bool:
    """Whether ``test`` asks which torch release runs, or whether torch has an attribute
    (``hasattr(torch, "accelerator")``), and names no device."""
    found: set[str] = set()
    for node in walk(test):
        if isinstance(node, ast.Name):
            if RELEASE_FLAG.fullmatch(node.id):
                return True
            found.update(words(node.id))
        elif isinstance(node, ast.Attribute):
            if node.attr in ("hip", "cuda") and dotted(node) in VENDOR_BUILDS:
                return False  # (a test of the build's vendor, not of the release)
            found.update(words(node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(words(node.value))
    if "cuda" in found or found & OTHER_DEVICES:
        return False  # (`hasattr(torch, "xpu")`, `torch.version.cuda`: a test of a device)
    return "torch" in found and bool(found & RELEASE_WORDS or "hasattr" in found)


def names_cuda_api(nodes: Sequence[ast.AST]) -> bool:
    """Whether code names CUDA in a name it reads (``torch.cuda.amp.GradScaler``), not in a
    string nor in a name it binds (``torch_cuda_amp_custom_fwd = ...``)."""
    return any(
        "cuda" in words(node.id if isinstance(node, ast.Name) else node.attr)
        for root in nodes
        for node in walk(root)
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Store)
    )


def asks_another_device(test: ast.expr) -> bool:
    """Whether a test asks whether another device (not Apple's) is there: it calls a function
    or method named for one (``is_torch_npu_available()``, ``torch.xpu.is_available()``), or
    asks for any device but the CPU (``x.device.type != "cpu"``)."""
    return any(
        (isinstance(node, ast.Call) and names_another_device([node.func], apple=False))
        or _not_the_cpu(node)
        for node in walk(test)
    )


def _not_the_cpu(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.NotEq)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == "type"
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value == "cpu"
    )


def does_otherwise(nodes: list[ast.AST]) -> bool:
    """Whether the arm taken off CUDA does something of its own there: raises (a requirement:
    ``raise``, a failed ``assert``), calls anything but a message (another implementation, a
    skip), or is another device's."""
    for root in nodes:
        for node in walk(root):
            if isinstance(node, (ast.Raise, ast.Assert)):
                return True
            if isinstance(node, ast.Call):
                callee = node.func
                last = (
                    callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
                )
                shown = last.removesuffix("_once")  # (transformers' `logger.warning_once`)
                if shown not in MESSAGE_METHODS and not last.startswith(MESSAGE_PREFIXES):
                    return True
    return names_another_device(nodes)


def launches(nodes: Sequence[ast.AST], kernels: Set[str]) -> bool:
    """Whether code launches one of the module's Triton ``kernels`` (``kernel[grid](...)``), or
    calls one of its functions that does (named among ``kernels`` too)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(
            callee := node.func.value if isinstance(node.func, ast.Subscript) else node.func,
            ast.Name,
        )
        and callee.id in kernels
        for root in nodes
        for node in walk(root)
    )


def falls_back_to_cpu(cuda_arm: list[ast.AST], other_arm: list[ast.AST]) -> bool:
    """Whether the arm taken off CUDA runs on the CPU (or on CUDA anyway): it names no other
    device but Apple's, and it picks the CPU, or either arm picks CUDA by name (``"cuda" if
    torch.cuda.is_available() else "cpu"``, ``if torch.cuda.is_available(): model.cuda()``,
    ``x.cuda() if x.is_cuda else x``, ``w if w.is_cuda else w.cuda()``)."""
    if names_another_device(other_arm, apple=False):
        return False  # (a dispatch over devices: the CPU is the last resort)
    return picks_cpu(other_arm) or picks_cuda(cuda_arm) or picks_cuda(other_arm)
