"""What portlint knows of torch and Triton, in one place: read by the text gate and the cut (as
words and patterns) and by the analyses (as qualified names) alike. Nothing here imports LibCST.

Each fact is written once; the forms each reader needs are derived from it below.
"""

from __future__ import annotations

# --- Integer dtypes -----------------------------------------------------------------------
INT64_DTYPES = frozenset({"torch.int64", "torch.long"})
INT32_DTYPES = frozenset({"torch.int32", "torch.int"})
OTHER_INTEGER_DTYPES = frozenset(
    f"torch.{name}" for name in ("int32", "int", "int16", "short", "int8", "uint8", "bool")
)

# --- What makes a tensor int64 without `dtype=` -------------------------------------------------
# torch functions whose result is int64 by default, whatever their arguments.
INT64_FUNCTIONS = (
    "randint", "randperm", "argmax", "argmin", "argsort", "nonzero", "multinomial",
    "searchsorted", "bucketize",
)  # fmt: skip
# int64 only for some arguments: `arange` of integers, `tensor` of integers, `full` with one.
INT64_FROM_INTEGER_ARGUMENTS = ("arange", "tensor", "full")
# int64 when reducing an integer or bool tensor (as `torch.sum(x)` or `x.sum()`).
INT64_REDUCTIONS = ("sum", "cumsum", "prod", "cumprod")
# Tensor methods whose result is int64 whatever the tensor's dtype.
INT64_METHODS = frozenset({"argmax", "argmin", "argsort", "nonzero"})
# Every call that can make int64: the names the gate and the cut look for.
INT64_CALLS = (*INT64_FROM_INTEGER_ARGUMENTS, *INT64_FUNCTIONS, *INT64_REDUCTIONS)
# The int64 makers that make int64 only as torch's (`torch.arange`, `torch.int64`) or on an
# integer tensor (`x.sum()`): after Triton's `tl.`, which is neither, they make no int64. Not
# `argmax`, `argmin`, `argsort`, `nonzero` or `long`, which make int64 whatever they are called on.
INT64_ONLY_AS_TORCH_OR_ON_INTEGERS = (*(c for c in INT64_CALLS if c not in INT64_METHODS), "int64")

# --- New tensors that inherit their source's dtype -----------------------------------------
NEW_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full"})
LIKE_FACTORIES = frozenset(f"torch.{kind}_like" for kind in ("empty", "zeros", "ones", "full"))
# Tensor methods that keep the dtype of the tensor they are called on.
DTYPE_PRESERVING_METHODS = frozenset({
    "clone", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "expand",
    "expand_as", "view_as", "t", "transpose", "permute", "narrow", "repeat", "flip", "roll",
    "detach", "cpu", "index_select", "masked_fill", "clamp", "clamp_min", "clamp_max", "abs",
    "neg", "pin_memory",
})  # fmt: skip

# --- Triton -------------------------------------------------------------------------------
TRITON_KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})

# --- Graph capture and streams ------------------------------------------------------------
CAPTURE_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
# The method that starts a capture on a graph object (`g.capture_begin()`), and the one that ends it.
CAPTURE_BEGIN, CAPTURE_END = "capture_begin", "capture_end"
STREAM_CONTEXTS = frozenset({
    "torch.cuda.stream", "torch.cuda.StreamContext", "torch.cuda.streams.StreamContext",
})  # fmt: skip
SET_STREAM_FUNCTIONS = frozenset({"torch.cuda.set_stream", "torch.accelerator.set_stream"})
AMBIENT_STREAM_FUNCTIONS = frozenset(
    {"torch.cuda.current_stream", "torch.accelerator.current_stream"}
)
OTHER_STREAM_FUNCTIONS = frozenset({
    "torch.cuda.Stream", "torch.cuda.streams.Stream", "torch.Stream", "torch.cuda.default_stream",
    "torch.cuda.ExternalStream",
})  # fmt: skip
# Calls that allocate or wait but run no library kernel: repeating one before a capture warms
# nothing up.
NOT_WARMUPS = frozenset(
    f"torch.{name}"
    for name in (
        "empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor",
        "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
        "cuda.synchronize", "accelerator.synchronize", "cuda.CUDAGraph",
    )
)  # fmt: skip

# --- Control flow -------------------------------------------------------------------------
# Calls that never return: they raise (a test's skip) or end the process.
EXIT_CALLS = frozenset({
    "pytest.skip", "pytest.fail", "pytest.exit", "self.skipTest", "sys.exit", "os._exit", "exit",
    "quit",
})  # fmt: skip

# Calls that only show their arguments: print, the logging methods, warnings.warn, and a
# project's own `print_rank_0` or `log_dist`.
MESSAGE_METHODS = frozenset({
    "print", "debug", "info", "warning", "warn", "error", "exception", "critical", "fatal",
})  # fmt: skip
MESSAGE_PREFIXES = ("print_", "log_rank", "log_dist", "warn_")

# --- Platforms ----------------------------------------------------------------------------
# Libraries that exist only for NVIDIA GPUs or only for AMD ones (ROCm, whose torch device type is
# "cuda" too), by import name: a module that imports one unconditionally at its top level runs
# only there. `cuda.*` is cuda-python (NVIDIA's own bindings), not any package named `cuda`.
# Not here: libraries that import anywhere and need CUDA only in their calls, which a portable
# project may depend on unconditionally (nerfacc, gsplat, cpm_kernels: nerfstudio imports nerfacc
# in the sampler module every model imports); an import of one says nothing of the module.
CUDA_ONLY_LIBRARIES: dict[str, str] = {
    # NVIDIA (not `nvtx`: NVIDIA's NVTX bindings import, and run as no-ops, where no CUDA is)
    "flashinfer": "FlashInfer", "cutlass": "CUTLASS / the CuTe DSL", "cuda.bindings": "cuda-python",
    "cuda.cudart": "cuda-python", "cuda.cuda": "cuda-python", "cuda.nvrtc": "cuda-python",
    "cuda.core": "cuda-python", "cupy": "CuPy", "cupyx": "CuPy", "pycuda": "PyCUDA",
    "pynvml": "NVML", "tensorrt": "TensorRT", "tensorrt_llm": "TensorRT-LLM",
    "torch_tensorrt": "Torch-TensorRT", "apex": "NVIDIA Apex",
    "transformer_engine": "Transformer Engine", "deep_gemm": "DeepGEMM", "deep_ep": "DeepEP",
    "flash_mla": "FlashMLA", "nvshmem": "NVSHMEM", "quack": "QuACK (CuTe DSL kernels)",
    "flash_attn_interface": "FlashAttention 3", "cudnn": "cuDNN frontend",
    "numba.cuda": "Numba CUDA", "triton.language.extra.cuda": "Triton's CUDA extras",
    "smdistributed": "SageMaker distributed (model and data parallel)",
    "nvdiffrast": "nvdiffrast", "tinycudann": "tiny-cuda-nn", "kvikio": "KvikIO (GPUDirect Storage)",
    "bitblas": "BitBLAS", "marlin": "Marlin (IST-DASLab's kernels)",
    "cuda.tile": "cuTile (NVIDIA's CUDA Tile DSL)", "cuda.cccl": "CCCL Python",
    "cuda.compute": "CCCL Python", "cuda.coop": "CCCL Python",
    # AMD
    "aiter": "AITER", "flydsl": "FlyDSL", "wave_lang": "Wave", "amdsmi": "AMD SMI",
    "pyrsmi": "ROCm SMI", "hip.hip": "hip-python", "triton.language.extra.hip": "Triton's HIP extras",
    "mori": "MoRI (ROCm's RDMA and expert-parallel communication)",
    # Both (the torch device type is "cuda" on each)
    "flash_attn": "FlashAttention", "mscclpp": "MSCCL++", "megatron": "Megatron-LM / Megatron Core",
    "mamba_ssm": "Mamba's selective-scan kernels", "causal_conv1d": "causal-conv1d kernels",
}  # fmt: skip

# torch's gradient scalers whose device defaults to "cuda": made with no device, off CUDA one warns
# that CUDA is not available and disables itself, and float16 gradients go unscaled.
CUDA_DEFAULT_SCALERS = frozenset({
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler",
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
})  # fmt: skip

# torch's builders of a C++/CUDA extension at run time, which compile what they are given and
# import the result: given CUDA sources (`.cu` files, `cuda_sources=`, `with_cuda=True`) they need
# nvcc or hipcc, and what they build runs only on NVIDIA or AMD GPUs.
EXTENSION_BUILDERS = frozenset(
    {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}
)
CUDA_SOURCE_SUFFIXES = (".cu", ".cuh")
CUDA_SOURCE_KEYWORDS = frozenset({"cuda_sources", "cuda_files"})  # (`load_inline`, `load_jit`)

# Words that name CUDA, ROCm, their libraries or their GPUs, in a module, folder, class, function
# or variable name (`forward_cuda`, `CudaPlatform`, `nvidia/`, `fmha_sm100.py`, `_is_hip`); a name
# that joins two words counts (`deepgemm`). Not `cuda` followed by `graph`: a CUDA graph is how
# torch captures on any accelerator (XPU and NPU graph runners subclass CUDA-graph runners).
CUDA_WORDS = frozenset({
    "cuda", "cudnn", "cublas", "cublaslt", "cutlass", "cute", "cutedsl", "nccl", "nvidia",
    "nvshmem", "nvfp4", "nvtx", "nvml", "trtllm", "tensorrt", "flashinfer", "deepgemm", "deepep",
    "flashmla", "hopper", "blackwell", "nvlink", "nsys", "nsight",
    "rocm", "hip", "hipblaslt", "rccl", "amd", "aiter", "mori", "cdna", "mi300", "mi325", "mi355",
})  # fmt: skip
CUDA_ARCHITECTURE = r"(?:sm|gfx)\d{2,4}[a-z]?"  # sm90, sm100a, gfx942
# Devices other than CUDA and ROCm that torch runs on: a check for one is a dispatch over devices.
OTHER_DEVICES = frozenset({
    "xpu", "npu", "hpu", "mps", "mlu", "musa", "xla", "tpu", "neuron", "sdaa", "gaudi", "ascend",
    "habana", "ipu", "mtia", "maia", "privateuseone", "metal", "mlx",
})  # fmt: skip
# Apple's devices: a dispatch that names only these (and the CPU) leaves every other accelerator,
# XPU and NPU among them, to its `else`, which is then not CUDA's arm but everyone's.
APPLE_DEVICES = frozenset({"mps", "metal", "mlx"})
CUDA_DEVICE_TYPES = frozenset({"cuda", "hip", "rocm"})
# Shared libraries of NVIDIA's and AMD's drivers and runtimes: code that loads one with `ctypes`
# runs only there.
CUDA_ONLY_SHARED_LIBRARIES = (
    "libcuda.", "libcudart", "libnvrtc", "libnccl", "libnvidia-ml", "libcublas", "libamdhip64",
    "librccl", "libhsa-runtime", "librocm_smi",
)  # fmt: skip
