import torch


def step(worker, x):
    torch.cuda.synchronize()
    y = torch.zeros(2, device="cuda")
    return x + y  # noqa: PORT102
