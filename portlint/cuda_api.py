"""The CUDA-only torch APIs with a portable equivalent, and the torch version that added it.

This table is the one place the PORT4xx rules take their facts from. Each entry says what to use
instead, from which torch release on, and whether a fix can make the change:

- ``fix=SAFE``: the replacement does the same on a CUDA machine (and works elsewhere);
- ``fix=UNSAFE``: it does something different somewhere (another return type, another scope,
  true on other accelerators too): the fix is offered behind ``--unsafe-fixes``;
- ``fix=None``: no mechanical rewrite is right; the message names the replacement.

Versions were checked against the torch documentation and the installed torch 2.13. Where the
release that added an API is uncertain, the later candidate is given, so a finding never names an
API the target torch lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

from portlint.findings import SAFE, UNSAFE

Version = tuple[int, int]

# Families, one rule each; the code is the rule's.
DEVICE, STREAMS, MEMORY, RNG, AUTOCAST, DISTRIBUTED, GRAPHS, PROFILING, OTHER = (
    "device", "streams", "memory", "rng", "autocast", "distributed", "graphs", "profiling",
    "other",
)  # fmt: skip

NEWEST_KNOWN: Version = (2, 13)


@dataclass(frozen=True)
class CudaApi:
    """One CUDA-only API and its portable replacement.

    ``keywords``: the old API's positional parameters, in order, where the replacement takes them
    at other positions (the fix passes them by keyword). ``device_first``: the replacement takes
    the device type as its first argument. ``device_positional``: the replacement takes the device
    positional-only (the fix turns ``device=x`` into ``x``). ``argument_is_context``: the
    replacement of ``with api(x):`` is ``with x:``. ``alias``: the old name is the same object as
    the replacement, so every reference (not only a call) can be renamed.
    """

    name: str
    family: str
    replacement: str
    since: Version
    fix: str | None = None
    note: str = ""
    keywords: tuple[str, ...] = ()
    device_first: bool = False
    device_positional: bool = False
    argument_is_context: bool = False
    alias: bool = False


def _memory(name: str, replacement: str, since: Version = (2, 9)) -> CudaApi:
    return CudaApi(
        f"torch.cuda.{name}",
        MEMORY,
        f"torch.accelerator.memory.{replacement}",
        since,
        SAFE,
        device_positional=True,
    )


APIS: tuple[CudaApi, ...] = (
    # Device management.
    CudaApi("torch.cuda.synchronize", DEVICE, "torch.accelerator.synchronize", (2, 6), SAFE,
            device_positional=True),
    CudaApi("torch.cuda.device_count", DEVICE, "torch.accelerator.device_count", (2, 6), UNSAFE,
            note="it counts the devices of whatever accelerator is present, not only CUDA ones"),
    CudaApi("torch.cuda.is_available", DEVICE, "torch.accelerator.is_available", (2, 6), UNSAFE,
            note="it is true on XPU, NPU and MPS too: code behind it must be portable as well"),
    CudaApi("torch.cuda.current_device", DEVICE, "torch.accelerator.current_device_index",
            (2, 7), SAFE),
    CudaApi("torch.cuda.set_device", DEVICE, "torch.accelerator.set_device_index", (2, 7), SAFE,
            device_positional=True),
    CudaApi("torch.cuda.device", DEVICE, "torch.accelerator.device_index", (2, 8), UNSAFE,
            note="it takes a device index only, not a `torch.device` or a string",
            device_positional=True),
    CudaApi("torch.cuda.get_device_capability", DEVICE, "torch.get_device_module(device)",
            (2, 4), note="`torch.accelerator.get_device_capability` is not the same: it returns "
            "the supported dtypes, not a (major, minor) pair"),
    # Streams and events.
    CudaApi("torch.cuda.current_stream", STREAMS, "torch.accelerator.current_stream", (2, 6),
            UNSAFE, note="it returns a `torch.Stream`, which has no `.cuda_stream`",
            device_positional=True),
    CudaApi("torch.cuda.set_stream", STREAMS, "torch.accelerator.set_stream", (2, 6), UNSAFE,
            note="it takes a `torch.Stream` and, unlike `torch.cuda.set_stream`, not `None`"),
    CudaApi("torch.cuda.stream", STREAMS, "`with stream:` on a `torch.Stream`",
            (2, 7), UNSAFE, note="`torch.cuda.stream(None)` does nothing; `with None:` raises",
            argument_is_context=True),
    CudaApi("torch.cuda.Stream", STREAMS, "torch.Stream", (2, 4), UNSAFE,
            note="a `torch.Stream` has no `.cuda_stream`"),
    CudaApi("torch.cuda.Event", STREAMS, "torch.Event", (2, 4), UNSAFE,
            note="`torch.Event` takes its flags by keyword and has no `.ipc_handle()`",
            keywords=("enable_timing", "blocking", "interprocess")),
    # Memory.
    _memory("empty_cache", "empty_cache"),
    _memory("memory_allocated", "memory_allocated"),
    _memory("max_memory_allocated", "max_memory_allocated"),
    _memory("memory_reserved", "memory_reserved"),
    _memory("max_memory_reserved", "max_memory_reserved"),
    _memory("memory_stats", "memory_stats"),
    _memory("reset_peak_memory_stats", "reset_peak_memory_stats"),
    _memory("reset_accumulated_memory_stats", "reset_accumulated_memory_stats"),
    _memory("mem_get_info", "get_memory_info", since=(2, 10)),
    CudaApi("torch.cuda.OutOfMemoryError", MEMORY, "torch.OutOfMemoryError", (2, 5), SAFE,
            alias=True),
    # Random numbers.
    CudaApi("torch.cuda.manual_seed", RNG, "torch.manual_seed", (2, 0), UNSAFE,
            note="it seeds the CPU and every device, not only the current CUDA device"),
    CudaApi("torch.cuda.manual_seed_all", RNG, "torch.manual_seed", (2, 0), UNSAFE,
            note="it seeds the CPU generator as well"),
    CudaApi("torch.cuda.get_rng_state", RNG, "torch.get_device_module(device).get_rng_state",
            (2, 4)),
    CudaApi("torch.cuda.set_rng_state", RNG, "torch.get_device_module(device).set_rng_state",
            (2, 4)),
    # Autocast and gradient scaling.
    CudaApi("torch.cuda.amp.autocast", AUTOCAST, "torch.autocast", (2, 0), UNSAFE,
            note="it takes the device type first; its default dtype depends on the device",
            keywords=("enabled", "dtype", "cache_enabled"), device_first=True),
    CudaApi("torch.cuda.amp.GradScaler", AUTOCAST, "torch.amp.GradScaler", (2, 3), UNSAFE,
            note="it takes the device type first",
            keywords=("init_scale", "growth_factor", "backoff_factor", "growth_interval",
                      "enabled"), device_first=True),
    # Distributed backend: `backend="nccl"`, handled by name in the reference analysis.
    CudaApi("backend=nccl", DISTRIBUTED, "torch.distributed.get_default_backend_for_device",
            (2, 6), UNSAFE, note="it picks NCCL on CUDA, XCCL on XPU, HCCL on NPU, Gloo on CPU"),
    # Graphs.
    CudaApi("torch.cuda.CUDAGraph", GRAPHS, "torch.accelerator.Graph", (2, 13)),
    CudaApi("torch.cuda.graph", GRAPHS, "torch.accelerator.Graph", (2, 13),
            note="capture with `torch.accelerator.Graph`'s `capture_begin()`/`capture_end()` or "
            "`with graph:`"),
    # Profiling ranges.
    CudaApi("torch.cuda.nvtx", PROFILING, "torch.profiler.record_function", (2, 0),
            note="NVTX ranges exist on CUDA only; `record_function` marks a range on any device"),
)  # fmt: skip

BY_NAME: dict[str, CudaApi] = {api.name: api for api in APIS}

# Anything else under torch.cuda: looked up on the device's own module.
OTHER_API = CudaApi(
    "torch.cuda", OTHER, "torch.get_device_module(device)", (2, 4),
    note="where the accelerator's module has the same function",
)  # fmt: skip
IS_CUDA = CudaApi(
    "Tensor.is_cuda", OTHER, "x.device.type", (2, 0),
    note="`.is_cuda` is false on every other accelerator; compare the device type with the one in use",
)  # fmt: skip

# torch.cuda's submodules whose public names torch.cuda re-exports.
REEXPORTING_SUBMODULES = ("memory", "streams", "graphs", "random", "amp.autocast_mode",
                          "amp.grad_scaler")  # fmt: skip


def lookup(qualified: str) -> CudaApi | None:
    """The entry for a qualified name under ``torch.cuda`` (its longest mapped prefix)."""
    if qualified != "torch.cuda" and not qualified.startswith("torch.cuda."):
        return None
    for submodule in REEXPORTING_SUBMODULES:
        prefix = f"torch.cuda.{submodule}."
        if qualified.startswith(prefix):
            head = "torch.cuda.amp." if submodule.startswith("amp.") else "torch.cuda."
            qualified = head + qualified[len(prefix) :]
    parts = qualified.split(".")
    for end in range(len(parts), 2, -1):
        api = BY_NAME.get(".".join(parts[:end]))
        if api is not None:
            return api
    return OTHER_API


def parse_version(text: str) -> Version:
    """``"2.9"``, ``"2.9.1"`` or ``"2.10.0+cu128"`` as ``(2, 9)``; ValueError otherwise."""
    parts = text.strip().split("+")[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(text)
    return int(parts[0]), int(parts[1])


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"
