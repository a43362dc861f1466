"""Whether captured code can run a matrix multiply: the work that needs the BLAS handle's
per-stream state (cuBLAS's workspace, hipBLASLt's handles), which CUDA and ROCm create lazily, on
a stream's first matrix multiply. Used by PORT301: a capture whose code can run none is at most
``likely`` to fail for want of a warm-up on its stream.

The lists are small on purpose, and closed: a call that is in none of them (``model(x)``,
``self.layer(x)``, any project function) can run a matrix multiply. ``@`` and ``@=`` are matrix
multiplies; the other operators are elementwise. A method is known by its name on any receiver.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from portlint.analysis.device_scope import walk
from portlint.analysis.names import method_name, qualified_names
from portlint.analysis.streams import makes_stream
from portlint.facts import CAPTURE_END, NOT_WARMUPS, STREAM_CONTEXTS

# torch functions and tensor methods that run a matrix multiply.
BLAS_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "einsum",
        "tensordot", "linalg.matmul", "nn.functional.linear", "_scaled_mm",
    )
)  # fmt: skip
BLAS_METHODS = frozenset({"matmul", "mm", "bmm", "addmm", "baddbmm", "mv", "dot"})
# torch functions known to run none: convolutions (cuDNN's and MIOpen's own handles, not the BLAS
# handle), activations and elementwise arithmetic; and what runs no library kernel at all:
# allocations and synchronisations (``NOT_WARMUPS``), ``with torch.cuda.stream(s):``.
NON_BLAS_FUNCTIONS = NOT_WARMUPS | STREAM_CONTEXTS | frozenset(
    f"torch.{name}"
    for name in (
        "relu", "sigmoid", "tanh", "exp", "add", "sub", "mul", "div", "clamp", "where", "cat",
        "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
        "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu",
    )
)  # fmt: skip
# Methods of streams and events: they order work, they run none.
STREAM_METHODS = frozenset(
    {"wait_stream", "wait_event", "record_event", "record", "synchronize", "query", "record_stream"}
)
# Tensor methods known to run none (in-place copies and elementwise arithmetic), the methods of
# streams and the end of a capture.
NON_BLAS_METHODS = STREAM_METHODS | {CAPTURE_END} | {
    "copy_", "fill_", "zero_", "add_", "sub_", "mul_", "div_",
}  # fmt: skip


def runs_no_blas(rule, call: cst.Call) -> bool:
    """Whether ``call`` is known to run no matrix multiply (``rule`` resolves its names; fetching
    or making a stream runs none)."""
    names = qualified_names(rule, call.func)
    if names & BLAS_FUNCTIONS or method_name(call) in BLAS_METHODS:
        return False
    return bool(
        names & NON_BLAS_FUNCTIONS
        or method_name(call) in NON_BLAS_METHODS
        or makes_stream(rule, call)
    )


def may_multiply(rule, nodes: Iterable[cst.CSTNode]) -> bool:
    """Whether the code of ``nodes`` can run a matrix multiply: an ``@``, or a call not known to
    run none."""
    return any(
        isinstance(getattr(node, "operator", None), (cst.MatrixMultiply, cst.MatrixMultiplyAssign))
        or (isinstance(node, cst.Call) and not runs_no_blas(rule, node))
        for statement in nodes
        for node in walk(statement)
    )
