"""The rejection-sampler warmup: run both samplers once on dummy inputs, on the worker's device."""

from __future__ import annotations

import torch

from reference_impl.sampling import (
    probabilistic_rejection_sample,
    sampling_noise,
    strict_rejection_sample,
)


def spec_decode_rejection_warmup(worker) -> None:
    device = worker.device
    num_reqs, num_spec = 4, worker.num_speculative_tokens
    draft_token_ids = torch.zeros(num_reqs, num_spec, dtype=torch.int32, device=device)
    target_logits = worker.dummy_target_logits(num_reqs * (num_spec + 1))
    target_argmax = target_logits.argmax(dim=-1).view(num_reqs, num_spec + 1)
    strict_rejection_sample(draft_token_ids, target_argmax)

    target_probs = target_logits.softmax(dim=-1).view(num_reqs, num_spec + 1, -1)
    draft_probs = target_probs[:, :num_spec].flip(-1).contiguous()
    generator = torch.Generator().manual_seed(worker.seed)
    uniform, exp_noise = sampling_noise(num_reqs, num_spec, worker.vocab_size, device, generator)
    probabilistic_rejection_sample(draft_token_ids, draft_probs, target_probs, uniform, exp_noise)
