"""Seed 2 as it was (vLLM #39951): `num_sampled` inherits int64 from `sampled`, and
`num_rejected` inherits it again, into the eagle-input preparation kernel."""

import torch

from reference_impl.eagle import prepare_eagle_inputs
from reference_impl.sampling import launch_strict_rejection


def sample_and_prepare_eagle_inputs(draft_token_ids, target_argmax, batch):
    num_reqs, num_spec = draft_token_ids.shape
    sampled = torch.empty(num_reqs, num_spec + 1, dtype=torch.int64, device=draft_token_ids.device)
    num_sampled = sampled.new_empty(num_reqs)  # error: PORT201
    launch_strict_rejection(draft_token_ids, target_argmax, sampled, num_sampled)
    num_rejected = torch.empty_like(num_sampled)
    torch.sub(num_spec + 1, num_sampled, out=num_rejected)
    return sampled, prepare_eagle_inputs(batch, sampled, num_sampled, num_rejected)
