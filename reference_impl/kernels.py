"""Triton kernels of the speculative-decoding core. Imported only where Triton is used."""

import triton
import triton.language as tl

PLACEHOLDER = tl.constexpr(-1)  # token id of the slots after the last sampled token


@triton.jit
def strict_rejection_kernel(
    sampled_ptr,  # [num_reqs, NUM_SPEC + 1]
    sampled_stride,
    num_sampled_ptr,  # [num_reqs]
    draft_ptr,  # [num_reqs, NUM_SPEC]
    target_argmax_ptr,  # [num_reqs, NUM_SPEC + 1]
    NUM_SPEC: tl.constexpr,
):
    """Accept draft tokens while they equal the target's argmax; then emit the target's token."""
    req = tl.program_id(0)
    active = 1
    count = 0
    for j in tl.static_range(NUM_SPEC + 1):
        target = tl.load(target_argmax_ptr + req * (NUM_SPEC + 1) + j)
        tl.store(sampled_ptr + req * sampled_stride + j, tl.where(active != 0, target, PLACEHOLDER))
        count += active
        if j < NUM_SPEC:
            draft = tl.load(draft_ptr + req * NUM_SPEC + j)
            active = tl.where(draft == target, active, 0)
    tl.store(num_sampled_ptr + req, count)


@triton.jit
def _first_rejection(
    draft_ptr, draft_probs_ptr, target_probs_ptr, uniform_ptr, req, V, NUM_SPEC: tl.constexpr
):
    """The position of the first rejected draft token of request ``req`` (NUM_SPEC if none)."""
    stop = NUM_SPEC
    for j in tl.static_range(NUM_SPEC):
        token = tl.load(draft_ptr + req * NUM_SPEC + j).to(tl.int64)
        p = tl.load(target_probs_ptr + (req * (NUM_SPEC + 1) + j).to(tl.int64) * V + token)
        q = tl.load(draft_probs_ptr + (req * NUM_SPEC + j).to(tl.int64) * V + token)
        u = tl.load(uniform_ptr + req * NUM_SPEC + j)
        rejected = (stop == NUM_SPEC) & (u * q >= p)  # accept with probability min(1, p/q)
        stop = tl.where(rejected, j, stop)
    return stop


@triton.jit
def probabilistic_block_kernel(
    partial_max_ptr,  # [num_reqs, NUM_BLOCKS] float32
    partial_idx_ptr,  # [num_reqs, NUM_BLOCKS] int32
    stop_ptr,  # [num_reqs] int32
    draft_ptr,  # [num_reqs, NUM_SPEC]
    draft_probs_ptr,  # [num_reqs, NUM_SPEC, V]
    target_probs_ptr,  # [num_reqs, NUM_SPEC + 1, V]
    uniform_ptr,  # [num_reqs, NUM_SPEC]
    exp_noise_ptr,  # [num_reqs, V]
    V,
    NUM_BLOCKS,
    NUM_SPEC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """One vocabulary block of the token sampled after the accepted prefix.

    After a rejection at position j the token is drawn from norm(max(0, p_j - q_j)); when every
    draft token is accepted, the bonus token is drawn from p_NUM_SPEC. Both draws use the
    exponential-race form of sampling, argmax(weights / E) with E ~ Exp(1), so each program reduces
    its block to one (max, argmax) pair and the finalize kernel picks the winner.
    """
    req = tl.program_id(0)
    block = tl.program_id(1)
    stop = _first_rejection(
        draft_ptr, draft_probs_ptr, target_probs_ptr, uniform_ptr, req, V, NUM_SPEC
    )
    offs = block * BLOCK + tl.arange(0, BLOCK)
    mask = offs < V
    p_row = (req * (NUM_SPEC + 1) + stop).to(tl.int64) * V
    q_row = (req * NUM_SPEC + stop).to(tl.int64) * V
    p = tl.load(target_probs_ptr + p_row + offs, mask=mask, other=0.0)
    has_q = (offs * 0 + stop) < NUM_SPEC  # no q row for the bonus token; broadcast for the mask
    q = tl.load(draft_probs_ptr + q_row + offs, mask=mask & has_q, other=0.0)
    noise = tl.load(exp_noise_ptr + req.to(tl.int64) * V + offs, mask=mask, other=1.0)
    score = tl.where(mask, tl.maximum(p - q, 0.0) / noise, -1.0)
    best = tl.argmax(score, axis=0)
    tl.store(partial_max_ptr + req * NUM_BLOCKS + block, tl.max(score, axis=0))
    tl.store(partial_idx_ptr + req * NUM_BLOCKS + block, block * BLOCK + best)
    if block == 0:
        tl.store(stop_ptr + req, stop)


@triton.jit
def probabilistic_finalize_kernel(
    sampled_ptr,  # [num_reqs, NUM_SPEC + 1]
    sampled_stride,
    num_sampled_ptr,  # [num_reqs]
    draft_ptr,  # [num_reqs, NUM_SPEC]
    partial_max_ptr,
    partial_idx_ptr,
    stop_ptr,
    NUM_BLOCKS,
    NUM_SPEC: tl.constexpr,
    BLOCKS_PADDED: tl.constexpr,
):
    """Reduce the per-block winners and write the accepted prefix and the sampled token."""
    req = tl.program_id(0)
    offs = tl.arange(0, BLOCKS_PADDED)
    maxima = tl.load(partial_max_ptr + req * NUM_BLOCKS + offs, mask=offs < NUM_BLOCKS, other=-2.0)
    winner = tl.argmax(maxima, axis=0)
    token = tl.load(partial_idx_ptr + req * NUM_BLOCKS + winner)
    stop = tl.load(stop_ptr + req)
    for j in tl.static_range(NUM_SPEC + 1):
        if j < NUM_SPEC:
            draft = tl.load(draft_ptr + req * NUM_SPEC + j)
        else:
            draft = PLACEHOLDER
        value = tl.where(j < stop, draft, tl.where(j == stop, token, PLACEHOLDER))
        tl.store(sampled_ptr + req * sampled_stride + j, value)
    tl.store(num_sampled_ptr + req, stop + 1)


@triton.jit
def prepare_eagle_inputs_kernel(
    eagle_input_ids_ptr,  # [num_tokens]
    eagle_positions_ptr,  # [num_tokens]
    last_token_indices_ptr,  # [num_reqs]
    target_input_ids_ptr,  # [num_tokens]
    target_positions_ptr,  # [num_tokens]
    sampled_ptr,  # [num_reqs, NUM_SPEC + 1]
    sampled_stride,
    num_sampled_ptr,  # [num_reqs]
    num_rejected_ptr,  # [num_reqs]
    query_start_loc_ptr,  # [num_reqs + 1]
    next_prefill_tokens_ptr,  # [num_reqs]
    PAD_ID,
    NUM_SPEC: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    """Shift the verified tokens into the drafter's inputs, as vLLM's kernel of this name does.

    The control structure is the one that broke in vLLM #39951: ``query_len -= num_rejected``,
    loops over ``range(1, query_len, BLOCK_SIZE)``, then a padding loop rebinding the same loop
    variable inside an ``if``. With an int64 ``num_rejected`` the loop variable becomes int64 and
    the padding loop's int32 rebinding fails to compile.
    """
    req = tl.program_id(0)
    query_start = tl.load(query_start_loc_ptr + req)
    query_end = tl.load(query_start_loc_ptr + req + 1)
    query_len = query_end - query_start
    num_rejected = tl.load(num_rejected_ptr + req)
    query_len -= num_rejected

    num_sampled = tl.load(num_sampled_ptr + req)
    if num_sampled > 0:
        next_token = tl.load(sampled_ptr + req * sampled_stride + num_sampled - 1).to(tl.int32)
    else:
        next_token = tl.load(next_prefill_tokens_ptr + req)

    # Shift the target's input ids left by one; the next token goes last.
    for i in range(1, query_len, BLOCK_SIZE):
        block = i + tl.arange(0, BLOCK_SIZE)
        mask = block < query_len
        input_ids = tl.load(target_input_ids_ptr + query_start + block, mask=mask)
        tl.store(eagle_input_ids_ptr + query_start + block - 1, input_ids, mask=mask)
    last_token_index = query_start + query_len - 1
    tl.store(last_token_indices_ptr + req, last_token_index)
    tl.store(eagle_input_ids_ptr + last_token_index, next_token)

    for i in range(0, query_len, BLOCK_SIZE):
        block = i + tl.arange(0, BLOCK_SIZE)
        mask = block < query_len
        positions = tl.load(target_positions_ptr + query_start + block, mask=mask)
        tl.store(eagle_positions_ptr + query_start + block, positions, mask=mask)

    # Pad the rejected tail so the drafter never reads a stale token.
    if num_rejected > 0:
        for i in range(0, NUM_SPEC + 1, BLOCK_SIZE):
            block = i + tl.arange(0, BLOCK_SIZE)
            mask = block < num_rejected
            tl.store(eagle_input_ids_ptr + query_start + query_len + block, PAD_ID, mask=mask)
            tl.store(eagle_positions_ptr + query_start + query_len + block, 0, mask=mask)
