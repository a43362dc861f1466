"""What the rules know about streams and graph capture: which calls capture, switch or fetch."""

from __future__ import annotations

import enum

CAPTURE_CONTEXTS = {"torch.cuda.graph", "torch.cuda.graphs.graph"}
STREAM_CONTEXTS = {
    "torch.cuda.stream",
    "torch.cuda.StreamContext",
    "torch.cuda.streams.StreamContext",
}
SET_STREAM_FUNCTIONS = {"torch.cuda.set_stream", "torch.accelerator.set_stream"}
AMBIENT_STREAM_FUNCTIONS = {"torch.cuda.current_stream", "torch.accelerator.current_stream"}
OTHER_STREAM_FUNCTIONS = {
    "torch.cuda.Stream",
    "torch.cuda.streams.Stream",
    "torch.Stream",
    "torch.cuda.default_stream",
    "torch.cuda.ExternalStream",
}

# Calls that allocate or wait but run no library kernel: repeating one before a capture warms
# nothing up.
NOT_WARMUPS = {
    f"torch.{name}"
    for name in (
        "empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor",
        "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
        "cuda.synchronize", "accelerator.synchronize", "cuda.CUDAGraph",
    )
}  # fmt: skip


class StreamSource(enum.Enum):
    AMBIENT = "the ambient stream"  # the stream work is issued on when no other is chosen
    OTHER = "another stream"  # a new, default or external stream


def stream_source(
    names: set[str], imported: set[str], project_functions: tuple[str, ...]
) -> StreamSource | None:
    """What a call to a function with these qualified names returns, if it returns a stream.

    ``imported`` are those of ``names`` that come from an import. Any imported function named
    ``current_stream`` (vLLM's and SGLang's wrappers among them) and the project's configured
    ``stream-functions`` count as fetching the ambient stream.
    """
    if names & AMBIENT_STREAM_FUNCTIONS or names & set(project_functions):
        return StreamSource.AMBIENT
    if any(name.rsplit(".", 1)[-1] == "current_stream" for name in imported):
        return StreamSource.AMBIENT
    if names & OTHER_STREAM_FUNCTIONS:
        return StreamSource.OTHER
    return None
