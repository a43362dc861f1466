"""The Triton kernels against the torch path on the same inputs; exits non-zero on a mismatch.

Run on a GPU (``python tests/reference_agreement.py cuda``) or, with ``TRITON_INTERPRET=1``, on the
CPU (``python tests/reference_agreement.py cpu``): the interpreter must be chosen before Triton
compiles the kernels, so the tests run this file in a process of its own.
"""

import sys

import torch

from reference_impl import eagle
from reference_impl.sampling import (
    probabilistic_rejection_sample,
    sampling_noise,
    strict_rejection_sample,
)
from reference_impl.validate import _verification_batch


def check(name: str, triton_out, torch_out) -> None:
    for a, b in zip(triton_out, torch_out, strict=True):
        if a.dtype != b.dtype or not torch.equal(a.cpu(), b.cpu()):
            raise SystemExit(f"{name}: the Triton and torch paths differ:\n{a}\n{b}")
    print(f"{name}: equal")


def main(device: torch.device, num_reqs: int, vocab: int) -> None:
    generator = torch.Generator().manual_seed(0)
    num_spec = 4
    target_probs = torch.randn(num_reqs, num_spec + 1, vocab, generator=generator).softmax(-1)
    draft_probs = (
        target_probs[:, :num_spec]
        + 0.5 * torch.rand(num_reqs, num_spec, vocab, generator=generator)
    ).softmax(-1)
    draft = torch.multinomial(draft_probs.reshape(-1, vocab), 1, generator=generator).view(
        num_reqs, num_spec
    )
    # Half the requests propose the target's argmax, so strict rejection accepts some of them.
    target_argmax = target_probs.argmax(-1)
    greedy_draft = torch.where(
        torch.arange(num_reqs)[:, None] % 2 == 0, target_argmax[:, :num_spec], draft
    )
    uniform, exp_noise = sampling_noise(num_reqs, num_spec, vocab, device, generator)
    tensors = [
        t.to(device)
        for t in (
            target_probs,
            draft_probs,
            draft.to(torch.int32),
            target_argmax,
            greedy_draft.to(torch.int32),
        )
    ]
    target_probs, draft_probs, draft, target_argmax, greedy_draft = tensors

    check(
        "strict",
        *(
            strict_rejection_sample(greedy_draft, target_argmax, backend=b)
            for b in ("triton", "torch")
        ),
    )
    sampled = [
        probabilistic_rejection_sample(
            draft, draft_probs, target_probs, uniform, exp_noise, backend=b
        )
        for b in ("triton", "torch")
    ]
    check("probabilistic", *sampled)
    accepted = (sampled[1][1] - 1).float().mean().item()
    print(f"probabilistic: mean accepted drafts {accepted:.2f} of {num_spec}")

    d, t, batch = _verification_batch(device)
    sampled_ids, num_sampled = strict_rejection_sample(d, t, backend="torch")
    num_rejected = d.shape[1] + 1 - num_sampled
    outputs = [
        eagle.prepare_eagle_inputs(batch, sampled_ids, num_sampled, num_rejected, backend=b)
        for b in ("triton", "torch")
    ]
    check("eagle", *((o.input_ids, o.positions, o.last_token_indices) for o in outputs))


if __name__ == "__main__":
    device = torch.device(sys.argv[1])
    main(
        device,
        num_reqs=9 if device.type == "cpu" else 256,
        vocab=10_000 if device.type == "cpu" else 152_064,
    )
