"""Where Triton kernels run, and compiling one for a GPU target on a machine without a GPU."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any

import torch

# The accelerators Triton has back ends for (ROCm reports itself as "cuda").
TRITON_DEVICE_TYPES = ("cuda", "xpu")

_TRITON_TYPES = {
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
}


def triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


def interpreting() -> bool:
    """Triton's interpreter runs kernels on CPU tensors (``TRITON_INTERPRET=1`` at import)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def use_triton(device: torch.device) -> bool:
    if not triton_available():
        return False
    if interpreting():
        return device.type == "cpu"
    return device.type in TRITON_DEVICE_TYPES


def signature(kernel: Any, args: dict[str, Any], constexprs: dict[str, Any]) -> dict[str, str]:
    """Triton's signature for a launch with these arguments: what the JIT derives at launch."""
    types: dict[str, str] = {}
    for name in kernel.arg_names:
        if name in constexprs:
            types[name] = "constexpr"
        elif isinstance(args[name], torch.Tensor):
            types[name] = "*" + _TRITON_TYPES[args[name].dtype]
        elif isinstance(args[name], bool):
            types[name] = "i1"
        elif isinstance(args[name], int):
            types[name] = "i32" if -(2**31) <= args[name] < 2**31 else "i64"
        else:
            types[name] = "fp32"
    return types


def compile_for_target(
    kernel: Any, args: dict[str, Any], constexprs: dict[str, Any], target: Any = None
) -> Any:
    """Compile ``kernel`` as a launch with ``args`` would, for a GPU target, with no GPU present.

    Triton's front end type-checks the kernel here, so a dtype that breaks it raises the same
    ``CompilationError`` a launch on the device would. The default target is an sm_90 GPU.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(kernel, signature(kernel, args, constexprs), constexprs=constexprs)
    return triton.compile(source, target=target or GPUTarget("cuda", 90, 32))


@dataclass
class Launch:
    """One kernel launch as data: run it on the device, or compile it for a target instead."""

    kernel: Any
    grid: tuple[int, ...]
    args: dict[str, Any]
    constexprs: dict[str, Any]

    def run(self) -> None:
        self.kernel[self.grid](**self.args, **self.constexprs)

    def compile(self, target: Any = None) -> Any:
        return compile_for_target(self.kernel, self.args, self.constexprs, target)
