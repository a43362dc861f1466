"""Graph capture of a top-k step on one explicit capture stream.

The capture stream is fetched once, the warm-up runs on it, and the capture runs on it: any
per-stream state a library creates lazily (cuBLAS's workspace, hipBLASLt's handles) is created
during the warm-up, never during the capture.
"""

from __future__ import annotations

import torch

_capture_streams: dict[torch.device, torch.Stream] = {}


def current_stream(device: torch.device | None = None) -> torch.Stream:
    """The process's dedicated stream on ``device``, made current on first use.

    This is the shape of vLLM's ``current_stream()``: the default stream cannot be captured on,
    so the first call creates a stream, orders it after the current one and makes it current.
    """
    device = torch.device(device or torch.accelerator.current_accelerator())
    stream = _capture_streams.get(device)
    if stream is None:
        module = torch.get_device_module(device)
        stream = module.Stream(device=device)
        stream.wait_stream(module.current_stream(device))
        module.set_stream(stream)
        _capture_streams[device] = stream
    return stream


def topk_step(
    hidden: torch.Tensor, weight: torch.Tensor, k: int = 8
) -> tuple[torch.Tensor, torch.Tensor]:
    """The drafter's greedy head: logits by a matmul, then the top k."""
    return torch.topk(hidden @ weight.t(), k, dim=-1)


def setup_topk_graphs(step, weight, sizes):
    graphs = {}
    capture_stream = current_stream()
    for size in sizes:
        static_input = torch.randn(size, weight.shape[1], dtype=weight.dtype, device=weight.device)
        for _ in range(3):
            step(static_input, weight)
        torch.accelerator.synchronize()

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=capture_stream):
            static_output = step(static_input, weight)
        graphs[size] = (g, static_input, static_output)
    return graphs


class TopKRunner:
    """Runs ``topk_step`` by replaying captured graphs where the device has them, eagerly elsewhere."""

    def __init__(self, weight: torch.Tensor, sizes: list[int], k: int = 8) -> None:
        self.weight = weight
        self.k = k
        self.graphs = {}
        if weight.device.type == "cuda":
            self.graphs = setup_topk_graphs(self._step, weight, sorted(sizes))

    def _step(self, hidden: torch.Tensor, weight: torch.Tensor):
        return topk_step(hidden, weight, self.k)

    def __call__(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = hidden.shape[0]
        size = next((s for s in sorted(self.graphs) if s >= rows), None)
        if size is None:
            return self._step(hidden, self.weight)
        graph, static_input, (values, indices) = self.graphs[size]
        static_input[:rows].copy_(hidden)
        graph.replay()
        return values[:rows].clone(), indices[:rows].clone()
