"""The EAGLE drafter's inputs after a verification step, and the step that produces them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from reference_impl.sampling import launch_strict_rejection
from reference_impl.triton_support import Launch, use_triton

PAD_ID = 0
BLOCK_SIZE = 16


@dataclass
class EagleBatch:
    """The verified batch: every request's tokens laid end to end."""

    target_input_ids: torch.Tensor  # [num_tokens] int32
    target_positions: torch.Tensor  # [num_tokens] int32
    query_start_loc: torch.Tensor  # [num_reqs + 1] int32
    next_prefill_tokens: torch.Tensor  # [num_reqs] int32


@dataclass
class EagleInputs:
    input_ids: torch.Tensor  # [num_tokens] int32
    positions: torch.Tensor  # [num_tokens] int32
    last_token_indices: torch.Tensor  # [num_reqs] int32


def eagle_launch(batch, sampled, num_sampled, num_rejected, out: EagleInputs) -> Launch:
    from reference_impl.kernels import prepare_eagle_inputs_kernel

    args = {
        "eagle_input_ids_ptr": out.input_ids,
        "eagle_positions_ptr": out.positions,
        "last_token_indices_ptr": out.last_token_indices,
        "target_input_ids_ptr": batch.target_input_ids,
        "target_positions_ptr": batch.target_positions,
        "sampled_ptr": sampled,
        "sampled_stride": sampled.stride(0),
        "num_sampled_ptr": num_sampled,
        "num_rejected_ptr": num_rejected,
        "query_start_loc_ptr": batch.query_start_loc,
        "next_prefill_tokens_ptr": batch.next_prefill_tokens,
        "PAD_ID": PAD_ID,
    }
    constexprs = {"NUM_SPEC": sampled.shape[1] - 1, "BLOCK_SIZE": BLOCK_SIZE}
    return Launch(prepare_eagle_inputs_kernel, (num_sampled.shape[0],), args, constexprs)


def _empty_outputs(batch: EagleBatch) -> EagleInputs:
    return EagleInputs(
        input_ids=torch.empty_like(batch.target_input_ids),
        positions=torch.empty_like(batch.target_positions),
        last_token_indices=torch.empty_like(batch.next_prefill_tokens),
    )


def prepare_eagle_inputs(
    batch: EagleBatch,
    sampled: torch.Tensor,
    num_sampled: torch.Tensor,
    num_rejected: torch.Tensor,
    backend: str | None = None,
) -> EagleInputs:
    out = _empty_outputs(batch)
    if (backend or ("triton" if use_triton(sampled.device) else "torch")) == "triton":
        eagle_launch(batch, sampled, num_sampled, num_rejected, out).run()
        return out
    _prepare_eagle_inputs_torch(batch, sampled, num_sampled, num_rejected, out)
    return out


def compile_prepare_eagle_inputs(
    batch: EagleBatch,
    sampled: torch.Tensor,
    num_sampled: torch.Tensor,
    num_rejected: torch.Tensor,
    target: Any = None,
) -> Any:
    """Compile the kernel as a launch with these tensors would, for a GPU target (no GPU needed)."""
    return eagle_launch(batch, sampled, num_sampled, num_rejected, _empty_outputs(batch)).compile(
        target
    )


def _prepare_eagle_inputs_torch(
    batch, sampled, num_sampled, num_rejected, out: EagleInputs
) -> None:
    starts = batch.query_start_loc.tolist()
    for req, (start, end) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        query_len = end - start - int(num_rejected[req])
        count = int(num_sampled[req])
        next_token = sampled[req, count - 1] if count > 0 else batch.next_prefill_tokens[req]
        last = start + query_len - 1
        out.input_ids[start:last] = batch.target_input_ids[start + 1 : start + query_len]
        out.input_ids[last] = next_token
        out.positions[start : start + query_len] = batch.target_positions[start : start + query_len]
        out.last_token_indices[req] = last
        out.input_ids[start + query_len : end] = PAD_ID
        out.positions[start + query_len : end] = 0


def sample_and_prepare_eagle_inputs(
    draft_token_ids: torch.Tensor, target_argmax: torch.Tensor, batch: EagleBatch
) -> tuple[torch.Tensor, EagleInputs]:
    """One verification step: strict rejection, then the drafter's next inputs."""
    num_reqs, num_spec = draft_token_ids.shape
    sampled = torch.empty(num_reqs, num_spec + 1, dtype=torch.int64, device=draft_token_ids.device)
    num_sampled = sampled.new_empty(num_reqs, dtype=torch.int32)
    launch_strict_rejection(draft_token_ids, target_argmax, sampled, num_sampled)
    num_rejected = torch.empty_like(num_sampled)
    torch.sub(num_spec + 1, num_sampled, out=num_rejected)
    return sampled, prepare_eagle_inputs(batch, sampled, num_sampled, num_rejected)
