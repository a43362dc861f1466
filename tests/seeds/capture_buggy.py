"""Seed 3 as it was (vLLM #53399): warm-up on the ambient stream, then a capture on a stream
fetched at the capture site."""

import torch

from reference_impl.graphs import current_stream


def setup_topk_graphs(step, weight, sizes):
    graphs = {}
    for size in sizes:
        static_input = torch.randn(size, weight.shape[1], dtype=weight.dtype, device=weight.device)
        for _ in range(3):
            step(static_input, weight)
        torch.accelerator.synchronize()

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=current_stream()):  # error: PORT301
            static_output = step(static_input, weight)
        graphs[size] = (g, static_input, static_output)
    return graphs
