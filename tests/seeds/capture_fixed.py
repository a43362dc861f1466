"""Seed 3 fixed (vLLM 0.33): the capture stream is fetched once, before the warm-up; the warm-up
and the capture both run on it."""

import torch
from reference_impl.graphs import current_stream


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
