"""Time the probabilistic sampler's Triton kernels against its torch path on a CUDA device.

Sizes: batch 64-256, 4 speculative tokens, vocabulary 128k-152k, float32 probabilities. Method
(the device tool's METHOD.md): check Triton against torch first on every input set; time with
``triton.testing.do_bench`` (CUDA events, median), rotating among input sets larger than the L2;
count the bytes the kernels must move (per request: the target row p, the draft row q when a
draft token was rejected, the noise row; the rest is a few bytes) and compare the achieved
bandwidth with a measured device-to-device copy. ``python -m reference_impl.bench --out DIR``
writes ``bench.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch
import triton.testing

from reference_impl import sampling
from reference_impl.sampling import probabilistic_rejection_sample, sampling_noise

NUM_SPEC = 4
INPUT_SETS = 4


def median_ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def graph_ms(fn, sets) -> float:
    """Device time of one call: a graph of one call per input set, replayed, per call."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for inputs in sets:
            fn(inputs)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for inputs in sets:
            fn(inputs)
    return median_ms(graph.replay) / len(sets)


def copy_bandwidth(device: torch.device) -> float:
    """Bytes read plus bytes written per second by a 2 GiB device-to-device copy."""
    src = torch.empty(1 << 29, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    return 2 * src.numel() * 4 / (median_ms(lambda: dst.copy_(src)) * 1e-3)


def input_set(num_reqs: int, vocab: int, device: torch.device, generator: torch.Generator):
    target = torch.randn(num_reqs, NUM_SPEC + 1, vocab, device=device).softmax(-1)
    draft_probs = (
        target[:, :NUM_SPEC] + torch.rand(num_reqs, NUM_SPEC, vocab, device=device) / vocab
    ).softmax(-1)
    draft = (
        torch.multinomial(draft_probs.reshape(-1, vocab), 1)
        .view(num_reqs, NUM_SPEC)
        .to(torch.int32)
    )
    uniform, noise = sampling_noise(num_reqs, NUM_SPEC, vocab, device, generator)
    return draft, draft_probs, target, uniform, noise


def run(num_reqs: int, vocab: int, device: torch.device, bandwidth: float) -> dict:
    generator = torch.Generator().manual_seed(num_reqs + vocab)
    torch.manual_seed(num_reqs + vocab)
    sets = [input_set(num_reqs, vocab, device, generator) for _ in range(INPUT_SETS)]
    needed = 0
    for inputs in sets:
        triton_out = probabilistic_rejection_sample(*inputs, backend="triton")
        torch_out = probabilistic_rejection_sample(*inputs, backend="torch")
        if not all(torch.equal(a, b) for a, b in zip(triton_out, torch_out, strict=True)):
            raise AssertionError(f"Triton and torch differ at batch {num_reqs}, vocab {vocab}")
        rejected = int((triton_out[1] <= NUM_SPEC).sum())
        needed += (2 * num_reqs + rejected) * vocab * 4
    bytes_per_call = needed / INPUT_SETS
    times = {}
    for backend in ("triton", "torch"):
        cycle = itertools.cycle(sets)
        times[f"{backend}_eager_ms"] = median_ms(
            lambda b=backend, c=cycle: probabilistic_rejection_sample(*next(c), backend=b)
        )
        times[f"{backend}_graph_ms"] = graph_ms(
            lambda inputs, b=backend: probabilistic_rejection_sample(*inputs, backend=b), sets
        )
    achieved = bytes_per_call / (times["triton_graph_ms"] * 1e-3)
    return {
        "batch": num_reqs,
        "vocab": vocab,
        "num_spec": NUM_SPEC,
        "vocab_block": sampling.VOCAB_BLOCK,
        **{key: round(value, 4) for key, value in times.items()},
        "speedup_graph": round(times["torch_graph_ms"] / times["triton_graph_ms"], 2),
        "speedup_eager": round(times["torch_eager_ms"] / times["triton_eager_ms"], 2),
        "bytes_needed_mb": round(bytes_per_call / 1e6, 1),
        "achieved_gb_s": round(achieved / 1e9),
        "fraction_of_copy_bandwidth": round(achieved / bandwidth, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--blocks", type=int, nargs="+", default=[sampling.VOCAB_BLOCK],
                        help="vocabulary block sizes to try")  # fmt: skip
    args = parser.parse_args()
    device = torch.accelerator.current_accelerator()
    bandwidth = copy_bandwidth(device)
    rows = []
    for block in args.blocks:
        sampling.VOCAB_BLOCK = block
        rows += [run(b, v, device, bandwidth) for b in (64, 128, 256) for v in (128_000, 152_064)]
    result = {
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "copy_bandwidth_gb_s": round(bandwidth / 1e9),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['device']}: copy bandwidth {result['copy_bandwidth_gb_s']} GB/s")
    header = "block batch  vocab  triton_graph  torch_graph  speedup  triton_eager  torch_eager"
    print(header + "     MB   GB/s  of_copy")
    for r in rows:
        print(
            f"{r['vocab_block']:>5} {r['batch']:>5} {r['vocab']:>6}  {r['triton_graph_ms']:>12}  "
            f"{r['torch_graph_ms']:>11}  {r['speedup_graph']:>7}  {r['triton_eager_ms']:>12}  "
            f"{r['torch_eager_ms']:>11}  {r['bytes_needed_mb']:>5}  {r['achieved_gb_s']:>5}  "
            f"{r['fraction_of_copy_bandwidth']:>7}"
        )


if __name__ == "__main__":
    main()
