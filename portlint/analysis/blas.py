"""What runs a matrix multiply: the work that needs the BLAS handle's per-stream state (cuBLAS's
workspace, hipBLASLt's handles), which CUDA and ROCm create lazily, on a stream's first matrix
multiply. PORT301 does not report a capture whose code runs none
(:mod:`portlint.index.matmul` follows the code into the project's own functions).

The lists are small on purpose, and closed: a call that is in none of them (``model(x)``,
another library's function, a parameter called) can run a matrix multiply. ``@`` and ``@=`` are
matrix multiplies; the other operators are elementwise. A method is known by its name on any
receiver.
"""

from __future__ import annotations

from portlint.facts import CAPTURE_END, NOT_WARMUPS, STREAM_CONTEXTS

# torch functions and tensor methods that run a matrix multiply.
BLAS_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "einsum",
        "tensordot", "linalg.matmul", "nn.functional.linear", "nn.functional.bilinear",
        "_scaled_mm", "nn.functional.scaled_dot_product_attention",
    )
)  # fmt: skip
BLAS_METHODS = frozenset({"matmul", "mm", "bmm", "addmm", "baddbmm", "mv", "dot"})
# torch functions known to run none: convolutions (cuDNN's and MIOpen's own handles, not the BLAS
# handle), normalisations, activations, elementwise arithmetic, reductions, views and
# allocations; synchronisations and stream contexts run no library kernel at all.
NON_BLAS_FUNCTIONS = NOT_WARMUPS | STREAM_CONTEXTS | frozenset(
    f"torch.{name}"
    for name in (
        "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "pow", "abs", "neg", "add", "concatenate",
        "sub", "mul", "div", "clamp", "where", "cat", "stack", "split", "chunk", "narrow",
        "broadcast_to", "flatten", "reshape", "transpose", "permute", "squeeze", "unsqueeze",
        "gather", "index_select", "masked_fill", "sum", "mean", "amax", "amin", "max", "min",
        "cumsum", "argmax", "softmax", "log_softmax", "topk", "sort", "equal", "allclose",
        "isclose", "minimum", "maximum", "sin", "cos", "erf", "sign", "round", "floor", "ceil",
        "roll", "flip", "repeat_interleave", "nonzero", "searchsorted", "bucketize", "linspace",
        "randperm", "empty_strided", "is_grad_enabled", "is_tensor", "no_grad", "inference_mode",
        "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
        "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu",
        "nn.functional.softmax", "nn.functional.layer_norm", "nn.functional.rms_norm",
        "nn.functional.group_norm", "nn.functional.pad", "nn.functional.dropout",
        "nn.functional.embedding", "nn.functional.interpolate",
    )
)  # fmt: skip
# torch.nn modules whose forward runs none (their functional forms above).
NON_BLAS_MODULES = frozenset(
    f"torch.nn.{name}"
    for name in (
        "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
        "Conv1d", "Conv2d", "Conv3d", "Dropout", "Identity", "Embedding", "ReLU", "GELU",
        "SiLU", "Sigmoid", "Tanh", "Softmax", "Upsample", "ZeroPad2d", "ConstantPad3d",
    )
)  # fmt: skip
# Methods of streams and events: they order work, they run none.
STREAM_METHODS = frozenset(
    {"wait_stream", "wait_event", "record_event", "record", "synchronize", "query", "record_stream"}
)
# Tensor methods that give the tensor's own data again, converted, viewed or reduced: they run
# no matrix multiply, and `f(x).float()` is `f(x)`'s work, not a getter's.
VALUE_METHODS = frozenset({
    "view", "reshape", "flatten", "unflatten", "transpose", "permute", "contiguous", "expand",
    "squeeze", "unsqueeze", "narrow", "split", "chunk", "clone", "detach", "to", "float",
    "half", "bfloat16", "int", "long", "bool", "sum", "mean", "amax", "max", "min", "pow",
    "rsqrt", "sqrt", "exp", "neg", "abs", "softmax", "index_select", "gather", "repeat",
})  # fmt: skip
# Methods known to run none: the tensor methods above, in-place copies and arithmetic, sizes,
# the stream methods, the end of a capture, the `nn.Module` methods that return the module, and
# those of Python's lists, dicts and strings.
NON_BLAS_METHODS = VALUE_METHODS | STREAM_METHODS | {CAPTURE_END} | {
    "copy_", "fill_", "zero_", "add_", "sub_", "mul_", "div_", "clamp_", "masked_fill_",
    "scatter_", "size", "dim", "numel", "stride", "is_contiguous", "data_ptr", "element_size",
    "new_empty", "new_zeros", "new_ones", "new_full", "item", "tolist", "cuda", "cpu", "eval",
    "train", "append", "extend", "insert", "pop", "get", "setdefault", "items", "keys",
    "values", "format", "join",
}  # fmt: skip
# `nn.Module` methods that return the module itself: `Cls(...).cuda().eval()` is a `Cls`.
SELF_RETURNING_METHODS = frozenset(
    {"cuda", "cpu", "to", "eval", "train", "half", "float", "bfloat16", "requires_grad_"}
)
