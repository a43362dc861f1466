"""Rejection sampling for speculative decoding: Triton kernels, and a torch path for the rest.

Both samplers return ``sampled`` (int64, ``[num_reqs, num_spec + 1]``: the accepted draft tokens,
then one token from the target, then ``PLACEHOLDER``) and ``num_sampled`` (int32, ``[num_reqs]``:
how many tokens each request emitted), int32 because the kernels downstream expect it.
The path is chosen by device: Triton where it has a back end, torch elsewhere (CPU, MPS, meta).
"""

from __future__ import annotations

import torch

from reference_impl.triton_support import Launch, use_triton

PLACEHOLDER = -1
VOCAB_BLOCK = 1024


def _backend(device: torch.device, backend: str | None) -> str:
    if backend is not None:
        return backend
    return "triton" if use_triton(device) else "torch"


def _accepted_prefix_length(accepted: torch.Tensor) -> torch.Tensor:
    """Per row, how many leading entries of a [num_reqs, num_spec] bool tensor are True."""
    return torch.cumprod(accepted.to(torch.int32), dim=1).sum(dim=1)


def _write_outputs(
    draft_token_ids: torch.Tensor,
    stop: torch.Tensor,
    token: torch.Tensor,
    sampled: torch.Tensor,
    num_sampled: torch.Tensor,
) -> None:
    """Accepted drafts before ``stop``, ``token`` at ``stop``, placeholders after."""
    num_spec = draft_token_ids.shape[1]
    positions = torch.arange(num_spec + 1, device=draft_token_ids.device)[None, :]
    padded_drafts = torch.cat(
        [draft_token_ids.to(sampled.dtype), sampled.new_full((sampled.shape[0], 1), PLACEHOLDER)],
        dim=1,
    )
    values = torch.where(positions < stop[:, None], padded_drafts, token[:, None].to(sampled.dtype))
    sampled.copy_(torch.where(positions <= stop[:, None], values, PLACEHOLDER))
    num_sampled.copy_(stop + 1)


def launch_strict_rejection(
    draft_token_ids: torch.Tensor,
    target_argmax: torch.Tensor,
    sampled: torch.Tensor,
    num_sampled: torch.Tensor,
    backend: str | None = None,
) -> None:
    """Strict (greedy) rejection into ``sampled`` and ``num_sampled``."""
    num_spec = draft_token_ids.shape[1]
    if _backend(draft_token_ids.device, backend) == "triton":
        strict_launch(draft_token_ids, target_argmax, sampled, num_sampled).run()
        return
    stop = _accepted_prefix_length(draft_token_ids == target_argmax[:, :num_spec])
    token = target_argmax.gather(1, stop[:, None].to(torch.int64)).squeeze(1)
    _write_outputs(draft_token_ids, stop, token, sampled, num_sampled)


def strict_launch(draft_token_ids, target_argmax, sampled, num_sampled) -> Launch:
    from reference_impl.kernels import strict_rejection_kernel

    num_reqs, num_spec = draft_token_ids.shape
    args = {
        "sampled_ptr": sampled,
        "sampled_stride": sampled.stride(0),
        "num_sampled_ptr": num_sampled,
        "draft_ptr": draft_token_ids,
        "target_argmax_ptr": target_argmax,
    }
    return Launch(strict_rejection_kernel, (num_reqs,), args, {"NUM_SPEC": num_spec})


def strict_rejection_sample(
    draft_token_ids: torch.Tensor, target_argmax: torch.Tensor, backend: str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    num_reqs, num_spec = draft_token_ids.shape
    sampled = torch.empty(num_reqs, num_spec + 1, dtype=torch.int64, device=draft_token_ids.device)
    num_sampled = sampled.new_empty(num_reqs, dtype=torch.int32)
    launch_strict_rejection(draft_token_ids, target_argmax, sampled, num_sampled, backend)
    return sampled, num_sampled


def sampling_noise(
    num_reqs: int, num_spec: int, vocab_size: int, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """The randomness of one probabilistic step: acceptance uniforms and Exp(1) noise per request.

    Drawn on the CPU from ``generator`` and moved, so every device sees the same numbers.
    """
    uniform = torch.rand(num_reqs, num_spec, generator=generator)
    exp_noise = torch.empty(num_reqs, vocab_size).exponential_(generator=generator)
    return uniform.to(device), exp_noise.to(device)


def probabilistic_rejection_sample(
    draft_token_ids: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    uniform: torch.Tensor,
    exp_noise: torch.Tensor,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Speculative sampling (Leviathan et al. 2023; Chen et al. 2023).

    Draft token x at position j is accepted when ``uniform[j] < p_j(x) / q_j(x)``; at the first
    rejection a token is drawn from norm(max(0, p_j - q_j)), and when every draft token is
    accepted a bonus token is drawn from p_num_spec. Each emitted token is then distributed as p.
    ``draft_probs`` is ``[num_reqs, num_spec, vocab]``, ``target_probs`` is
    ``[num_reqs, num_spec + 1, vocab]``, both float32.
    """
    num_reqs, num_spec = draft_token_ids.shape
    device = draft_token_ids.device
    sampled = torch.empty(num_reqs, num_spec + 1, dtype=torch.int64, device=device)
    num_sampled = sampled.new_empty(num_reqs, dtype=torch.int32)
    if _backend(device, backend) == "triton":
        for launch in probabilistic_launches(
            draft_token_ids, draft_probs, target_probs, uniform, exp_noise, sampled, num_sampled
        ):
            launch.run()
        return sampled, num_sampled

    rows = torch.arange(num_reqs, device=device)
    drafts = draft_token_ids.to(torch.int64)[..., None]
    p_draft = target_probs[:, :num_spec].gather(2, drafts).squeeze(2)
    q_draft = draft_probs.gather(2, drafts).squeeze(2)
    stop = _accepted_prefix_length(uniform * q_draft < p_draft)
    p_row = target_probs[rows, stop]
    q_row = draft_probs[rows, stop.clamp(max=num_spec - 1)] * (stop < num_spec)[:, None]
    token = ((p_row - q_row).clamp_min(0.0) / exp_noise).argmax(dim=1)
    _write_outputs(draft_token_ids, stop, token, sampled, num_sampled)
    return sampled, num_sampled


def probabilistic_launches(
    draft_token_ids, draft_probs, target_probs, uniform, exp_noise, sampled, num_sampled
) -> list[Launch]:
    """The two launches of the Triton path: per-vocabulary-block winners, then the reduction."""
    from reference_impl.kernels import probabilistic_block_kernel, probabilistic_finalize_kernel

    num_reqs, num_spec = draft_token_ids.shape
    vocab_size = target_probs.shape[-1]
    device = draft_token_ids.device
    num_blocks = -(-vocab_size // VOCAB_BLOCK)
    partial_max = torch.empty(num_reqs, num_blocks, dtype=torch.float32, device=device)
    partial_idx = torch.empty(num_reqs, num_blocks, dtype=torch.int32, device=device)
    stop = torch.empty(num_reqs, dtype=torch.int32, device=device)
    shared = {"partial_max_ptr": partial_max, "partial_idx_ptr": partial_idx, "stop_ptr": stop}
    block_args = {
        **shared,
        "draft_ptr": draft_token_ids,
        "draft_probs_ptr": draft_probs,
        "target_probs_ptr": target_probs,
        "uniform_ptr": uniform,
        "exp_noise_ptr": exp_noise,
        "V": vocab_size,
        "NUM_BLOCKS": num_blocks,
    }
    finalize_args = {
        "sampled_ptr": sampled,
        "sampled_stride": sampled.stride(0),
        "num_sampled_ptr": num_sampled,
        "draft_ptr": draft_token_ids,
        **shared,
        "NUM_BLOCKS": num_blocks,
    }
    padded = max(16, 1 << (num_blocks - 1).bit_length())
    return [
        Launch(probabilistic_block_kernel, (num_reqs, num_blocks), block_args,
               {"NUM_SPEC": num_spec, "BLOCK": VOCAB_BLOCK}),
        Launch(probabilistic_finalize_kernel, (num_reqs,), finalize_args,
               {"NUM_SPEC": num_spec, "BLOCKS_PADDED": padded}),
    ]  # fmt: skip
