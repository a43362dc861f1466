"""On a CUDA machine: do the forms portlint's fixes write do what the CUDA forms did? (run as it
is, on an H200 with torch 2.11: docs/fixes.md). The members torch.cuda.Stream/Event have beyond
torch.Stream/Event (what a stream fix must not see used); `with` on both stream types; the devices
the fixes write; the legacy-capture seed as PORT301's fix leaves it, replayed against eager."""

import json

import torch


def P(o):
    return {n for n in dir(o) if not n.startswith("_")}


def step(x, w):
    return torch.relu(x @ w)


w = torch.randn(256, 256, device="cuda")
x = torch.randn(64, 256, device="cuda")
cs = torch.Stream()
cs.wait_stream(torch.accelerator.current_stream())
with cs:
    for _ in range(3):
        step(x, w)
torch.accelerator.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g, stream=cs):
    y = step(x, w)
x.copy_(torch.randn(64, 256, device="cuda"))
g.replay()
torch.accelerator.synchronize()
with torch.cuda.Stream() as c:
    a = torch.cuda.current_stream() == c
s = torch.Stream()
with s:
    b = torch.accelerator.current_stream() == s
ca = torch.accelerator.current_accelerator()
print(
    json.dumps(
        {
            "torch": torch.__version__,
            "Stream-only": sorted(P(torch.cuda.Stream) - P(torch.Stream)),
            "Event-only": sorted(P(torch.cuda.Event) - P(torch.Event)),
            "cuda.Stream<Stream": issubclass(torch.cuda.Stream, torch.Stream),
            "with cuda.Stream": a,
            "with Stream": b,
            "ca==cuda": ca == torch.device("cuda"),
            "dev(type,0)": str(torch.device(ca.type, 0)),
            "to(0)": str(torch.zeros(1).to(0).device),
            "cuda(0)": str(torch.zeros(1).cuda(0).device),
            "gdm()": torch.get_device_module().__name__,
            "seed max|replay-eager|": (y - step(x, w)).abs().max().item(),
        },
        indent=1,
    )
)
