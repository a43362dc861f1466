"""The CUDA-only torch APIs with a portable equivalent, and the torch version that added it.

This table is the one place the PORT4xx rules take their facts from. Each entry says what to use
instead, from which torch release on, and whether a fix can make the change:

- ``fix=SAFE``: the replacement does the same on a CUDA machine (and works elsewhere);
- ``fix=UNSAFE``: it does something different somewhere (another return type, another scope,
  true on other accelerators too): the fix is offered behind ``--unsafe-fixes``;
- ``fix=None``: no mechanical rewrite is right; the message names the replacement.

Versions were checked against each torch release from 2.6 to ``NEWEST_KNOWN`` (the CUDA wheels,
imported; ``scripts/torch_members.py``): from 2.6 on, ``since`` is the release that added the
API. Before 2.6 they come from the torch documentation; where the release that added an API is
uncertain, the later candidate is given, so a finding never names an API the target torch lacks.
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

NEWEST_KNOWN: Version = (2, 15)
# The module of the device in use: `torch.get_device_module(device)` (`torch.cpu`, `torch.xpu`,
# `torch.mps`, `torch.mtia`, or an out-of-tree one such as torch_npu's `torch.npu`).
DEVICE_MODULE = "torch.get_device_module(device)"


@dataclass(frozen=True)
class CudaApi:
    """One CUDA-only API and its portable replacement.

    ``keywords``: the old API's positional parameters, in order, where the replacement takes them
    at other positions (the fix passes them by keyword). ``device_first``: the replacement takes
    the device type as its first argument. ``device_positional``: the replacement takes the device
    positional-only (the fix turns ``device=x`` into ``x``). ``argument_is_context``: the
    replacement of ``with api(x):`` is ``with x:``. ``alias``: the old name is the same object as
    the replacement, portable itself, so no reference to it is a finding (one is held back).
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
    usage: str = ""  # how the message words the replacement, where it is not a name to call
    # The portable type the replacement returns: a fix is offered where each use of the value is
    # a member of it (MEMBERS) or goes to a stream API.
    returns: str = ""
    takes_stream: bool = False  # the fix needs its argument to be a stream, never None
    guard: bool = False  # code may be guarded by it: no fix in a condition
    takes_index: bool = False  # the replacement takes an index only: fixed where one is given


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
            note="it counts the devices of whatever accelerator is present, not only CUDA ones",
            guard=True),
    # No fix: the code behind the check is what must become portable first; rewritten alone, the
    # check would let CUDA-only code run on XPU, NPU and MPS.
    CudaApi("torch.cuda.is_available", DEVICE, "torch.accelerator.is_available", (2, 6),
            note="it is true on XPU, NPU and MPS too: code behind it must be portable as well"),
    CudaApi("torch.cuda.current_device", DEVICE, "torch.accelerator.current_device_index",
            (2, 6), SAFE),
    CudaApi("torch.cuda.set_device", DEVICE, "torch.accelerator.set_device_index", (2, 6), SAFE,
            device_positional=True),
    CudaApi("torch.cuda.device", DEVICE, "torch.accelerator.device_index", (2, 8), UNSAFE,
            note="it takes a device index only, not a `torch.device` or a string",
            device_positional=True, takes_index=True),
    CudaApi("torch.cuda.get_device_capability", DEVICE,
            f"{DEVICE_MODULE}.get_device_capability", (2, 4), note="`torch.accelerator.get_device_capability` is not the same: it returns "
            "the supported dtypes, not a (major, minor) pair"),
    # Streams and events.
    CudaApi("torch.cuda.current_stream", STREAMS, "torch.accelerator.current_stream", (2, 6),
            UNSAFE, note="it returns a `torch.Stream`, which has no `.cuda_stream`",
            device_positional=True, returns="torch.Stream"),
    CudaApi("torch.cuda.set_stream", STREAMS, "torch.accelerator.set_stream", (2, 6), UNSAFE,
            note="it takes a `torch.Stream` and, unlike `torch.cuda.set_stream`, not `None`",
            takes_stream=True),
    CudaApi("torch.cuda.stream", STREAMS, "torch.Stream", (2, 7), UNSAFE,
            note="`torch.cuda.stream(None)` does nothing; `with None:` raises",
            argument_is_context=True, usage="`with stream:` on a `torch.Stream`",
            takes_stream=True),
    CudaApi("torch.cuda.Stream", STREAMS, "torch.Stream", (2, 4), UNSAFE,
            note="a `torch.Stream` has no `.cuda_stream`", returns="torch.Stream"),
    CudaApi("torch.cuda.Event", STREAMS, "torch.Event", (2, 4), UNSAFE,
            note="`torch.Event` takes its flags by keyword and has no `.cuda_event`",
            keywords=("enable_timing", "blocking", "interprocess"), returns="torch.Event"),
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
    # The deprecated names of two of the above: the same functions.
    _memory("memory_cached", "memory_reserved"),
    _memory("max_memory_cached", "max_memory_reserved"),
    CudaApi("torch.cuda.reset_max_memory_allocated", MEMORY,
            "torch.accelerator.memory.reset_peak_memory_stats", (2, 9),
            note="it resets every peak, not only the allocated memory's"),
    CudaApi("torch.cuda.OutOfMemoryError", MEMORY, "torch.OutOfMemoryError", (2, 5), SAFE,
            alias=True),
    # Random numbers.
    # The device module's own functions: on CUDA they are torch.cuda's (`torch.manual_seed` would
    # reseed the CPU generator too, and every device).
    CudaApi("torch.cuda.manual_seed", RNG, f"{DEVICE_MODULE}.manual_seed", (2, 4), UNSAFE,
            note="the device module of a CPU-only build has no `manual_seed`"),
    CudaApi("torch.cuda.manual_seed_all", RNG, f"{DEVICE_MODULE}.manual_seed_all", (2, 4),
            UNSAFE, note="`torch.mps` has no `manual_seed_all`; `torch.manual_seed` seeds every "
            "device and the CPU"),
    CudaApi("torch.cuda.get_rng_state", RNG, f"{DEVICE_MODULE}.get_rng_state", (2, 4), UNSAFE),
    CudaApi("torch.cuda.set_rng_state", RNG, f"{DEVICE_MODULE}.set_rng_state", (2, 4), UNSAFE),
    # Autocast and gradient scaling.
    CudaApi("torch.cuda.amp.autocast", AUTOCAST, "torch.autocast", (2, 0), UNSAFE,
            note="it takes the device type first; its default dtype depends on the device",
            keywords=("enabled", "dtype", "cache_enabled"), device_first=True),
    CudaApi("torch.cuda.amp.GradScaler", AUTOCAST, "torch.amp.GradScaler", (2, 3), UNSAFE,
            note="it takes the device type first",
            keywords=("init_scale", "growth_factor", "backoff_factor", "growth_interval",
                      "enabled"), device_first=True),
    CudaApi("torch.cuda.amp.custom_fwd", AUTOCAST, "torch.amp.custom_fwd", (2, 4),
            note="it takes the device type by keyword: `@torch.amp.custom_fwd(device_type=...)`"),
    CudaApi("torch.cuda.amp.custom_bwd", AUTOCAST, "torch.amp.custom_bwd", (2, 4),
            note="it takes the device type by keyword: `@torch.amp.custom_bwd(device_type=...)`"),
    # Distributed backend: `backend="nccl"`, handled by name in the reference analysis.
    CudaApi("backend=nccl", DISTRIBUTED, "torch.distributed.get_default_backend_for_device",
            (2, 6), UNSAFE, note="it picks NCCL on CUDA, XCCL on XPU, HCCL on NPU, Gloo on CPU"),
    # Graphs.
    CudaApi("torch.cuda.CUDAGraph", GRAPHS, "torch.accelerator.Graph", (2, 12)),
    CudaApi("torch.cuda.graph", GRAPHS, "torch.accelerator.Graph", (2, 12),
            note="capture with `torch.accelerator.Graph`'s `capture_begin()`/`capture_end()` or "
            "`with graph:`"),
    # Profiling ranges.
    CudaApi("torch.cuda.nvtx", PROFILING, "torch.profiler.record_function", (2, 0),
            note="NVTX ranges exist on CUDA only; `record_function` marks a range on any device"),
)  # fmt: skip

BY_NAME: dict[str, CudaApi] = {api.name: api for api in APIS}

# Anything else under torch.cuda: looked up on the device's own module, where it has the name.
OTHER_API = CudaApi("torch.cuda", OTHER, DEVICE_MODULE, (2, 4))

# What the portable replacements have, at NEWEST_KNOWN (tests/test_fix_meaning.py checks each
# set against the installed torch, .ci/run against the oldest and the newest): a suggestion `<replacement>.<name>` names one of these, or none
# is given. The device module's are the functions and classes torch.cuda shares with torch.xpu,
# the fullest of the other device modules torch ships (torch.mps, torch.mtia and torch.cpu have
# fewer of them; out-of-tree modules copy torch.cuda's API as torch.xpu does).
MEMBERS: dict[str, frozenset[str]] = {
    DEVICE_MODULE: frozenset({
        "Event", "MemPool", "Stream", "StreamContext", "can_device_access_peer",
        "change_current_allocator", "clock_rate", "current_device", "current_stream", "device",
        "device_count", "device_memory_used", "device_of", "empty_cache", "get_arch_list",
        "get_device_capability", "get_device_name", "get_device_properties", "get_gencode_flags",
        "get_per_process_memory_fraction", "get_rng_state", "get_rng_state_all",
        "get_stream_from_external", "graph", "graph_pool_handle", "init", "initial_seed",
        "is_available", "is_bf16_supported", "is_current_stream_capturing", "is_initialized",
        "is_tf32_supported", "make_graphed_callables", "manual_seed", "manual_seed_all",
        "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
        "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict",
        "memory_usage", "power_draw", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
        "seed", "seed_all", "set_device", "set_per_process_memory_fraction", "set_rng_state",
        "set_rng_state_all", "set_stream", "stream", "synchronize", "temperature", "use_mem_pool",
        "utilization", "list_gpu_processes",
    }),
    "torch.Stream": frozenset({
        "device", "device_index", "device_type", "is_capturing", "native_handle", "query",
        "record_event", "stream_id", "synchronize", "wait_event", "wait_stream",
    }),
    "torch.Event": frozenset({
        "device", "elapsed_time", "event_id", "from_ipc_handle", "ipc_handle", "query", "record",
        "synchronize", "wait",
    }),
    "torch.accelerator.Graph": frozenset({
        "capture_begin", "capture_end", "debug_dump", "enable_debug_mode", "instantiate", "pool",
        "replay", "reset",
    }),
}  # fmt: skip
# The members above that a torch release after the replacement's own first one added (to
# torch.xpu, for the device module), by release, as each release from 2.6 on has them
# (scripts/torch_members.py): a suggestion of one names that release, and none is given for a
# project that targets an older torch.
MEMBERS_SINCE: dict[str, Version] = {
    f"{replacement}.{member}": release
    for replacement, release, members in (
        (DEVICE_MODULE, (2, 7), ("get_stream_from_external",)),
        (DEVICE_MODULE, (2, 10), ("can_device_access_peer", "change_current_allocator",
                                  "get_per_process_memory_fraction", "is_tf32_supported",
                                  "set_per_process_memory_fraction")),
        (DEVICE_MODULE, (2, 11), ("MemPool", "graph", "graph_pool_handle",
                                  "is_current_stream_capturing", "make_graphed_callables",
                                  "memory_snapshot", "use_mem_pool")),
        (DEVICE_MODULE, (2, 13), ("clock_rate", "device_memory_used", "memory_usage",
                                  "power_draw", "temperature", "utilization")),
        (DEVICE_MODULE, (2, 14), ("list_gpu_processes",)),
        ("torch.Stream", (2, 11), ("native_handle",)),
        ("torch.Stream", (2, 12), ("is_capturing",)),
    )
    for member in members
}  # fmt: skip


# Members that a torch release after their type's first one dropped, with the last release that
# has each: such a member stays in MEMBERS (which then holds more than NEWEST_KNOWN has) and is
# dated here. None so far: from 2.6 to NEWEST_KNOWN, no member of a type went away.
MEMBERS_UNTIL: dict[str, Version] = {}


def members_at(replacement: str, version: Version) -> frozenset[str]:
    """The members of ``replacement`` that torch ``version`` has (``version`` no older than the
    first release that has ``replacement``)."""
    return frozenset(
        m
        for m in MEMBERS.get(replacement, frozenset())
        if MEMBERS_SINCE.get(f"{replacement}.{m}", (0, 0))
        <= version
        <= MEMBERS_UNTIL.get(f"{replacement}.{m}", (99, 99))
    )


IS_CUDA = CudaApi(  # (the message names the tensor's own `.device.type`)
    "Tensor.is_cuda", OTHER, "x.device.type", (2, 0),
    note="`.is_cuda` is false on every other accelerator; compare the device type with the one in use",
)  # fmt: skip

# torch.cuda's submodules whose public names torch.cuda re-exports.
REEXPORTING_SUBMODULES = ("memory", "streams", "graphs", "random", "amp.autocast_mode",
                          "amp.grad_scaler")  # fmt: skip


# Names under torch.cuda that run nothing on a device: the pure-Python renderers of a memory
# snapshot, taken on whatever device (`torch.cuda._memory_viz.trace_plot(snapshot)`), but for
# those that count CUDA's devices to build a snapshot from a profile.
DEVICE_FREE = "torch.cuda._memory_viz"
DEVICE_FREE_BUT = frozenset({"profile_plot", "_profile_to_snapshot"})


def lookup(qualified: str) -> CudaApi | None:
    """The entry for a qualified name under ``torch.cuda`` (its longest mapped prefix)."""
    found = _entry(qualified)
    return found[0] if found else None


def suggestion(qualified: str, target: Version | None = None) -> str | None:
    """What to use instead of ``qualified``, a name under ``torch.cuda``: its entry's replacement,
    or the member of the replacement that the rest of the name asks for (``torch.cuda.Event.record``:
    ``torch.Event.record``; ``torch.cuda.get_device_name``: the device module's
    ``get_device_name``). None where the replacement has no such member: torch has no portable
    equivalent (``torch.cuda.profiler.start``, ``torch.cuda.memory._snapshot``), or none in the
    ``target`` release of torch (default: the newest portlint knows)."""
    found = _entry(qualified)
    if found is None:
        return None
    api, rest = found
    if not rest or api.replacement not in MEMBERS:
        return api.replacement
    members = members_at(api.replacement, target or NEWEST_KNOWN)
    return f"{api.replacement}.{rest[0]}" if rest[0] in members else None


def since(api: CudaApi, replacement: str) -> Version:
    """The first torch release that has ``replacement`` (what :func:`suggestion` named for a
    name of ``api``)."""
    return max(api.since, MEMBERS_SINCE.get(replacement, api.since))


def _entry(qualified: str) -> tuple[CudaApi, list[str]] | None:
    """The entry for a qualified name under ``torch.cuda``, and the parts of the name after it."""
    if qualified != "torch.cuda" and not qualified.startswith("torch.cuda."):
        return None
    if qualified == DEVICE_FREE or (
        qualified.startswith(f"{DEVICE_FREE}.") and qualified.split(".")[3] not in DEVICE_FREE_BUT
    ):
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
            return api, parts[end:]
    return OTHER_API, parts[2:]


def parse_version(text: str) -> Version:
    """``"2.9"``, ``"2.9.1"`` or ``"2.10.0+cu128"`` as ``(2, 9)``; ValueError otherwise."""
    parts = text.strip().split("+")[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(text)
    return int(parts[0]), int(parts[1])


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"
