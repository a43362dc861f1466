"""Seed 1 fixed: the warmup allocates on the worker's device."""

import torch
from reference_impl.sampling import strict_rejection_sample


def spec_decode_rejection_warmup(worker) -> None:
    device = worker.device
    num_reqs, num_spec = 4, worker.num_speculative_tokens
    draft_token_ids = torch.zeros(num_reqs, num_spec, dtype=torch.int32, device=device)
    target_logits = worker.dummy_target_logits(num_reqs * (num_spec + 1))
    target_argmax = target_logits.argmax(dim=-1).view(num_reqs, num_spec + 1)
    strict_rejection_sample(draft_token_ids, target_argmax)
