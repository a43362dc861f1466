"""Seed 2 (vLLM #39951) compiled for a GPU target on the CPU, before and after portlint's fix.

The host code runs on CPU tensors with every Triton launch intercepted: ``JITFunction.run``
records the launch (kernel, arguments, constexprs) instead of launching (there is no GPU driver
here), and each recorded launch is compiled with ``triton.compile(ASTSource(...))`` for an sm_90
target (``reference_impl.triton_support``), with the signature the JIT would derive from the
arguments' dtypes. The buggy code fails with the seed's exact error; the code as fixed by hand
(``dtype=torch.int32``) and the code as fixed by ``portlint check --fix --unsafe-fixes`` compile.
Two projects: the seed itself beside a copy of the reference implementation, and a small
self-contained project of three modules where the int64 tensor is returned by one module's
function and reaches the kernel of another.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from reference_impl import eagle, sampling  # noqa: E402
from reference_impl.triton_support import Launch, signature  # noqa: E402
from reference_impl.validate import TRITON_INT64_ERROR, _verification_batch  # noqa: E402
from tests.helpers import REPO  # noqa: E402

SEED = REPO / "tests" / "seeds" / "sampler_buggy.py"
BUGGY_LINE = "num_sampled = sampled.new_empty(num_reqs)"
HAND_FIXED_LINE = "num_sampled = sampled.new_empty(num_reqs, dtype=torch.int32)"
# The reference implementation's modules the seed's host code reaches.
NEEDED = ("__init__.py", "eagle.py", "sampling.py", "kernels.py", "triton_support.py")


@pytest.fixture
def launches(monkeypatch) -> list[Launch]:
    """The launches the host code makes, recorded instead of run; the reference implementation
    takes its Triton path on the CPU."""
    from triton.runtime.jit import JITFunction

    recorded: list[Launch] = []

    def record(self, *args, grid, warmup, **kwargs):
        names = set(self.arg_names)
        bound = inspect.signature(self.fn).bind(
            *args, **{k: v for k, v in kwargs.items() if k in names}
        )
        bound.apply_defaults()
        constexpr_names = {self.arg_names[i] for i in self.constexprs}
        values = dict(bound.arguments)
        recorded.append(
            Launch(
                self,
                grid,
                {k: v for k, v in values.items() if k not in constexpr_names},
                {k: v for k, v in values.items() if k in constexpr_names},
            )
        )

    monkeypatch.setattr(JITFunction, "run", record)
    monkeypatch.setattr(sampling, "use_triton", lambda device: True)
    monkeypatch.setattr(eagle, "use_triton", lambda device: True)
    return recorded


def compile_each(launches: list[Launch]) -> dict[str, str | None]:
    """Per launched kernel, None where it compiles for sm_90, else Triton's error."""
    from triton.compiler.errors import CompilationError

    results: dict[str, str | None] = {}
    for launch in launches:
        try:
            compiled = launch.compile()
            assert "cubin" in compiled.asm
            results[launch.kernel.__name__] = None
        except CompilationError as error:
            results[launch.kernel.__name__] = str(error)
    return results


def dtypes(launches: list[Launch], parameter: str) -> dict[str, str]:
    """Per launched kernel that takes ``parameter``, its Triton type (``*i64``, ``*i32``...)."""
    return {
        launch.kernel.__name__: signature(launch.kernel, launch.args, launch.constexprs)[parameter]
        for launch in launches
        if parameter in launch.args
    }


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def portlint_fix(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "portlint", "check", str(folder), "--fix", "--unsafe-fixes",
         "--no-cache"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


# --- The seed beside a copy of the reference implementation ----------------------------------


@pytest.fixture
def seed_copy(tmp_path) -> Path:
    """tmp/sampler_buggy.py and the modules of tmp/reference_impl/ it needs (portlint reads the
    kernels' contracts there). The seed's own imports run the repository's reference_impl."""
    (tmp_path / "reference_impl").mkdir()
    for name in NEEDED:
        shutil.copy(REPO / "reference_impl" / name, tmp_path / "reference_impl" / name)
    shutil.copy(SEED, tmp_path / "sampler_buggy.py")
    return tmp_path / "sampler_buggy.py"


def run_seed(path: Path, launches: list[Launch]) -> dict[str, str | None]:
    launches.clear()
    module = load(path, f"seed_copy_{abs(hash(path.read_text()))}")
    draft, target_argmax, batch = _verification_batch(torch.device("cpu"))
    module.sample_and_prepare_eagle_inputs(draft, target_argmax, batch)
    assert [launch.kernel.__name__ for launch in launches] == [
        "strict_rejection_kernel",
        "prepare_eagle_inputs_kernel",
    ]
    return compile_each(launches)


def test_seed_fails_to_compile_and_the_hand_fix_compiles(seed_copy, launches):
    assert BUGGY_LINE in seed_copy.read_text()
    results = run_seed(seed_copy, launches)
    assert dtypes(launches, "num_sampled_ptr") == {
        "strict_rejection_kernel": "*i64",
        "prepare_eagle_inputs_kernel": "*i64",
    }
    assert dtypes(launches, "num_rejected_ptr") == {"prepare_eagle_inputs_kernel": "*i64"}
    assert results["strict_rejection_kernel"] is None  # it only stores the count: any width
    assert results["prepare_eagle_inputs_kernel"] is not None
    assert TRITON_INT64_ERROR in results["prepare_eagle_inputs_kernel"]

    seed_copy.write_text(seed_copy.read_text().replace(BUGGY_LINE, HAND_FIXED_LINE))
    results = run_seed(seed_copy, launches)
    assert set(dtypes(launches, "num_sampled_ptr").values()) == {"*i32"}
    assert dtypes(launches, "num_rejected_ptr") == {"prepare_eagle_inputs_kernel": "*i32"}
    assert results == {"strict_rejection_kernel": None, "prepare_eagle_inputs_kernel": None}


def test_seed_compiles_after_portlint_fix(seed_copy, launches):
    before = {p: p.read_text() for p in seed_copy.parent.rglob("*.py")}
    done = portlint_fix(seed_copy.parent)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    changed = sorted(p.name for p, text in before.items() if p.read_text() != text)
    assert changed == ["sampler_buggy.py"], done.stdout + done.stderr
    assert HAND_FIXED_LINE in seed_copy.read_text()
    results = run_seed(seed_copy, launches)
    assert set(dtypes(launches, "num_sampled_ptr").values()) == {"*i32"}
    assert results == {"strict_rejection_kernel": None, "prepare_eagle_inputs_kernel": None}


# --- Three modules: the int64 count is returned, and reaches a kernel in another module -------

PACKAGE = "seed2_three_modules"
PROJECT = {
    "__init__.py": "",
    # The rejection kernel only stores the count: any integer width compiles.
    "rejection.py": """
import triton
import triton.language as tl


@triton.jit
def rejection_kernel(sampled_ptr, num_sampled_ptr, draft_ptr, target_ptr, NUM_SPEC: tl.constexpr):
    req = tl.program_id(0)
    active = 1
    count = 0
    for j in tl.static_range(NUM_SPEC + 1):
        target = tl.load(target_ptr + req * (NUM_SPEC + 1) + j)
        tl.store(sampled_ptr + req * (NUM_SPEC + 1) + j, tl.where(active != 0, target, -1))
        count += active
        if j < NUM_SPEC:
            draft = tl.load(draft_ptr + req * NUM_SPEC + j)
            active = tl.where(draft == target, active, 0)
    tl.store(num_sampled_ptr + req, count)
""",
    # `sampled` is int64; `num_sampled` inherits it (no dtype) and is returned.
    "sampler.py": f"""
import torch

from {PACKAGE}.rejection import rejection_kernel


def sample(draft_token_ids, target_argmax):
    num_reqs, num_spec = draft_token_ids.shape
    device = draft_token_ids.device
    sampled = torch.empty(num_reqs, num_spec + 1, dtype=torch.int64, device=device)
    {BUGGY_LINE}
    rejection_kernel[(num_reqs,)](
        sampled, num_sampled, draft_token_ids, target_argmax, NUM_SPEC=num_spec
    )
    return sampled, num_sampled
""",
    # The eagle-input kernel: a length less the rejected count is a loop bound, so the loop
    # variable `i` takes the count's width; an int32 loop in an `if` rebinds it.
    "eagle.py": f"""
import torch
import triton
import triton.language as tl

from {PACKAGE}.sampler import sample

BLOCK = 4


@triton.jit
def eagle_kernel(
    out_ptr, query_start_ptr, num_sampled_ptr, NUM_SPEC: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    req = tl.program_id(0)
    query_start = tl.load(query_start_ptr + req)
    query_len = tl.load(query_start_ptr + req + 1) - query_start
    num_rejected = NUM_SPEC + 1 - tl.load(num_sampled_ptr + req)
    query_len -= num_rejected
    for i in range(0, query_len, BLOCK_SIZE):
        block = i + tl.arange(0, BLOCK_SIZE)
        tl.store(out_ptr + query_start + block, block, mask=block < query_len)
    if num_rejected > 0:
        for i in range(0, NUM_SPEC + 1, BLOCK_SIZE):
            block = i + tl.arange(0, BLOCK_SIZE)
            tl.store(out_ptr + query_start + query_len + block, 0, mask=block < num_rejected)


def step(draft_token_ids, target_argmax, query_start_loc):
    num_reqs, num_spec = draft_token_ids.shape
    sampled, num_sampled = sample(draft_token_ids, target_argmax)
    out = torch.empty(
        int(query_start_loc[-1]), dtype=torch.int32, device=draft_token_ids.device
    )
    eagle_kernel[(num_reqs,)](
        out, query_start_loc, num_sampled, NUM_SPEC=num_spec, BLOCK_SIZE=BLOCK
    )
    return sampled, out
""",
}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    package = tmp_path / PACKAGE
    package.mkdir()
    for name, text in PROJECT.items():
        (package / name).write_text(text.lstrip())
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def run_project(package: Path, launches: list[Launch]) -> dict[str, str | None]:
    launches.clear()
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    module = importlib.import_module(f"{PACKAGE}.eagle")
    draft, target_argmax, batch = _verification_batch(torch.device("cpu"))
    try:
        module.step(draft, target_argmax, batch.query_start_loc)
    finally:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
    assert [launch.kernel.__name__ for launch in launches] == ["rejection_kernel", "eagle_kernel"]
    return compile_each(launches)


def test_three_modules_fail_to_compile_and_the_hand_fix_compiles(project, launches):
    results = run_project(project, launches)
    assert dtypes(launches, "num_sampled_ptr") == {
        "rejection_kernel": "*i64",
        "eagle_kernel": "*i64",
    }
    assert results["rejection_kernel"] is None  # it only stores the count: any width
    assert results["eagle_kernel"] is not None
    assert TRITON_INT64_ERROR in results["eagle_kernel"]

    sampler = project / "sampler.py"
    sampler.write_text(sampler.read_text().replace(BUGGY_LINE, HAND_FIXED_LINE))
    results = run_project(project, launches)
    assert set(dtypes(launches, "num_sampled_ptr").values()) == {"*i32"}
    assert results == {"rejection_kernel": None, "eagle_kernel": None}


def test_three_modules_compile_after_portlint_fix(project, launches):
    done = portlint_fix(project.parent)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert HAND_FIXED_LINE in (project / "sampler.py").read_text(), done.stdout + done.stderr
    results = run_project(project, launches)
    assert set(dtypes(launches, "num_sampled_ptr").values()) == {"*i32"}
    assert results == {"rejection_kernel": None, "eagle_kernel": None}
