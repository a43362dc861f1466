"""The reference implementation: the seed harness, the samplers against theory, the kernels.

Tests marked ``gpu`` need a CUDA device and skip, with the reason, where there is none.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

from reference_impl import eagle, graphs, validate
from reference_impl.sampling import (
    probabilistic_launches,
    probabilistic_rejection_sample,
    sampling_noise,
    strict_launch,
    strict_rejection_sample,
)
from reference_impl.triton_support import triton_available
from tests.helpers import REPO, run_cli

CUDA = torch.cuda.is_available()
needs_cuda = [pytest.mark.gpu, pytest.mark.skipif(not CUDA, reason="needs a CUDA device")]
needs_triton = pytest.mark.skipif(not triton_available(), reason="needs triton")


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.name, marks=needs_cuda if c.gpu else []) for c in validate.cases()],
)
def test_seed_case_behaves_as_expected(case):
    """Each buggy form fails with its expected error; each fixed form passes with right results."""
    isolate = case.isolated or CUDA  # a buggy form may leave the CUDA context broken
    row = validate.observe_in_subprocess(case) if isolate else validate.observe(case)
    if row.ok is None:
        pytest.skip(row.observed)
    assert row.ok, f"expected {row.expected!r}, observed {row.observed!r}"


def test_portlint_flags_each_buggy_seed_at_its_line():
    rows = validate.lint_rows()
    assert len(rows) == 4
    assert all(row.ok for row in rows), rows


def test_reference_implementation_lints_clean():
    result = run_cli("check", "reference_impl", "--output-format", "json", cwd=REPO)
    assert (result.returncode, result.stdout.strip()) == (0, "[]")


def test_strict_rejection_accepts_drafts_while_they_match_the_target():
    draft = torch.tensor([[1, 2, 3], [1, 9, 3], [5, 2, 3]], dtype=torch.int32)
    target_argmax = torch.tensor([[1, 2, 3, 4]] * 3)
    sampled, num_sampled = strict_rejection_sample(draft, target_argmax, backend="torch")
    assert sampled.tolist() == [[1, 2, 3, 4], [1, 2, -1, -1], [1, -1, -1, -1]]
    assert num_sampled.tolist() == [4, 2, 1]
    assert (sampled.dtype, num_sampled.dtype) == (torch.int64, torch.int32)


def test_eagle_inputs_shift_tokens_and_pad_the_rejected_tail():
    batch = eagle.EagleBatch(
        target_input_ids=torch.tensor([10, 11, 12, 13, 20, 21, 22, 23], dtype=torch.int32),
        target_positions=torch.tensor([0, 1, 2, 3, 5, 6, 7, 8], dtype=torch.int32),
        query_start_loc=torch.tensor([0, 4, 8], dtype=torch.int32),
        next_prefill_tokens=torch.tensor([0, 0], dtype=torch.int32),
    )
    sampled = torch.tensor([[11, 12, 13, 14], [21, 99, -1, -1]])
    num_sampled = torch.tensor([4, 2], dtype=torch.int32)
    out = eagle.prepare_eagle_inputs(batch, sampled, num_sampled, 4 - num_sampled, backend="torch")
    assert out.input_ids.tolist() == [11, 12, 13, 14, 21, 99, 0, 0]
    assert out.positions.tolist() == [0, 1, 2, 3, 5, 6, 0, 0]
    assert out.last_token_indices.tolist() == [3, 5]


def chi_square_critical(df: int, z: float = 3.0902) -> float:
    """Upper critical value of chi-square (Wilson–Hilferty); z = 3.0902 is a 0.001 level."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi_square(tokens: torch.Tensor, p: torch.Tensor) -> float:
    observed = torch.bincount(tokens, minlength=p.numel()).double()
    expected = tokens.numel() * p.double()
    return float(((observed - expected) ** 2 / expected).sum())


def distributions(kind: str, vocab: int, rows: int, generator: torch.Generator):
    p = torch.rand(rows, vocab, generator=generator).add(0.05).div_(1.05)
    p /= p.sum(-1, keepdim=True)
    if kind == "q-equals-p":
        return p, p[:-1].clone()
    if kind == "q-far-from-p":  # q puts its mass where p has least
        q = (1 / p[:-1]) ** 4
    else:
        q = torch.rand(rows - 1, vocab, generator=generator) + 0.05
    return p, q / q.sum(-1, keepdim=True)


@pytest.mark.parametrize("kind", ["random", "q-far-from-p", "q-equals-p"])
def test_emitted_tokens_follow_the_target_distribution(kind):
    """Speculative sampling is exact: every emitted token is distributed as p (Leviathan et al.
    2023, Theorem 1; Chen et al. 2023). Chi-square goodness of fit at the 0.001 level, fixed seed;
    and the acceptance rate is sum(min(p, q)) within four standard errors."""
    vocab, num_spec, n = 8, 2, 200_000
    generator = torch.Generator().manual_seed(2023)
    p, q = distributions(kind, vocab, num_spec + 1, generator)
    draft = torch.stack(
        [
            torch.multinomial(q[j], n, replacement=True, generator=generator)
            for j in range(num_spec)
        ],
        1,
    )
    uniform, exp_noise = sampling_noise(n, num_spec, vocab, torch.device("cpu"), generator)
    sampled, num_sampled = probabilistic_rejection_sample(
        draft.to(torch.int32),
        q.expand(n, -1, -1),
        p.expand(n, -1, -1),
        uniform,
        exp_noise,
        backend="torch",
    )
    critical = chi_square_critical(vocab - 1)
    for position in range(num_spec + 1):
        emitted = sampled[num_sampled > position, position]
        assert emitted.numel() > 1000
        assert chi_square(emitted, p[position]) < critical, f"position {position}"
    accept_rate = (num_sampled >= 2).double().mean().item()
    expected_rate = torch.minimum(p[0], q[0]).sum().item()
    assert abs(accept_rate - expected_rate) < 4 * math.sqrt(
        expected_rate * (1 - expected_rate) / n + 1e-12
    )


def test_the_goodness_of_fit_test_rejects_a_sampler_without_rejection():
    """The same statistic has power: draft tokens accepted unconditionally follow q, not p."""
    generator = torch.Generator().manual_seed(2023)
    p, q = distributions("q-far-from-p", 8, 2, generator)
    drafts = torch.multinomial(q[0], 200_000, replacement=True, generator=generator)
    assert chi_square(drafts, p[0]) > chi_square_critical(7)


def test_topk_runner_runs_eagerly_without_graphs_on_cpu():
    weight = torch.randn(64, 16)
    runner = graphs.TopKRunner(weight, sizes=[4, 8])
    hidden = torch.randn(3, 16)
    assert runner.graphs == {}
    values, indices = runner(hidden)
    expected_values, expected_indices = graphs.topk_step(hidden, weight)
    assert torch.equal(values, expected_values) and torch.equal(indices, expected_indices)


def _cpu_launches():
    num_reqs, num_spec, vocab = 4, 4, 10_000
    draft = torch.zeros(num_reqs, num_spec, dtype=torch.int32)
    sampled = torch.empty(num_reqs, num_spec + 1, dtype=torch.int64)
    num_sampled = torch.empty(num_reqs, dtype=torch.int32)
    probs = torch.full((num_reqs, num_spec + 1, vocab), 1 / vocab)
    uniform, exp_noise = sampling_noise(
        num_reqs, num_spec, vocab, torch.device("cpu"), torch.Generator()
    )
    d, t, batch = validate._verification_batch(torch.device("cpu"))
    s, n = strict_rejection_sample(d, t, backend="torch")
    return {
        "strict": strict_launch(draft, probs.argmax(-1), sampled, num_sampled),
        "probabilistic-blocks": probabilistic_launches(
            draft, probs[:, :num_spec], probs, uniform, exp_noise, sampled, num_sampled
        )[0],
        "probabilistic-finalize": probabilistic_launches(
            draft, probs[:, :num_spec], probs, uniform, exp_noise, sampled, num_sampled
        )[1],
        "eagle": eagle.eagle_launch(batch, s, n, d.shape[1] + 1 - n, eagle._empty_outputs(batch)),
    }


@needs_triton
@pytest.mark.parametrize(
    "name", ["strict", "probabilistic-blocks", "probabilistic-finalize", "eagle"]
)
def test_kernel_compiles_for_sm90_without_a_gpu(name):
    compiled = _cpu_launches()[name].compile()
    assert "cubin" in compiled.asm


INTERPRETER_SKIP = pytest.mark.skipif(
    CUDA,
    reason="the native test covers this on a GPU (and Triton 3.6's interpreter cannot take a "
    "loaded scalar as a range bound under NumPy 2.5: 'only 0-dimensional arrays can be converted')",
)


@needs_triton
@pytest.mark.parametrize(
    ("device", "env"),
    [
        pytest.param("cpu", {"TRITON_INTERPRET": "1"}, id="interpreter", marks=INTERPRETER_SKIP),
        pytest.param("cuda", {}, id="native", marks=needs_cuda),
    ],
)
def test_triton_kernels_agree_with_the_torch_path(device, env):
    done = subprocess.run(
        [sys.executable, "-m", "tests.reference_agreement", device],
        cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("strict", "probabilistic", "eagle"):
        assert f"{name}: equal" in done.stdout


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_topk_graph_replays_match_eager():
    device = torch.accelerator.current_accelerator()
    weight = torch.randn(4096, 512, device=device, dtype=torch.float16)
    runner = graphs.TopKRunner(weight, sizes=[8, 32])
    assert sorted(runner.graphs) == [8, 32]
    for rows in (3, 8, 20):
        hidden = torch.randn(rows, 512, device=device, dtype=torch.float16)
        values, _ = runner(hidden)
        expected, _ = graphs.topk_step(hidden, weight)
        assert torch.allclose(values, expected)
