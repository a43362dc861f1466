"""Seed 3 in its earlier form (before vLLM #53818): the capture runs on PyTorch's private side
stream, which the warm-up never ran on."""

import torch


def setup_topk_graphs(step, weight, sizes):
    graphs = {}
    for size in sizes:
        static_input = torch.randn(size, weight.shape[1], dtype=weight.dtype, device=weight.device)
        for _ in range(3):
            step(static_input, weight)
        torch.accelerator.synchronize()

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):  # error: PORT301
            static_output = step(static_input, weight)
        graphs[size] = (g, static_input, static_output)
    return graphs
