"""Run the three seed bugs, buggy and fixed, and record what each one does on this machine.

For each seed: (1) portlint flags the buggy form with the expected code at the expected line;
(2) the buggy form fails with the expected error; (3) the fixed form (this package's own code)
passes with correct results; and (4) the buggy form after portlint's own fix
(``--fix --unsafe-fixes``) passes too. ``python -m reference_impl.validate --out DIR`` writes
``evidence.json`` and ``evidence.md`` there: the device, torch and triton versions, the date, and
one row per case with the observed outcome and error text. Cases that need a CUDA device are
skipped, with the reason, where there is none.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from reference_impl import eagle, graphs, warmup
from reference_impl.triton_support import triton_available
from reference_impl.worker import Worker

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "tests" / "seeds"
TRITON_INT64_ERROR = (
    "initial value for `i` is of type int64[], but the then block redefines it as int32[]"
)


@dataclass
class Row:
    case: str
    seed: str
    form: str  # "buggy", "fixed", or "portlint-fixed" (the buggy form after portlint's fix)
    expected: str  # "fails: <text>" or "passes"
    observed: str  # "failed: <error>", "passed: <detail>" or "skipped: <reason>"
    ok: bool | None  # did the observation match the expectation (None: skipped)


class Skip(Exception):
    """A case that cannot run on this machine; the message says why."""


def load_seed(name: str):
    spec = importlib.util.spec_from_file_location(f"seed_{name}", SEEDS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_portlint_fixed_seed(name: str):
    """Step (4): the buggy seed after ``portlint check --fix --unsafe-fixes``, as a module."""
    from portlint.fix_rounds import fix_source
    from portlint.registry import all_rules
    from portlint.settings import Settings

    path = SEEDS / f"{name}.py"
    outcome = fix_source(
        str(path), path.read_text(), Settings(select=frozenset(all_rules())), unsafe=True
    )
    if not outcome.applied:
        raise AssertionError(f"portlint applied no fix to {name}")
    module = importlib.util.module_from_spec(
        importlib.util.spec_from_loader(f"fixed_{name}", loader=None)
    )
    exec(compile(outcome.source, f"<portlint-fixed {name}>", "exec"), module.__dict__)
    return module


def need_cuda() -> torch.device:
    if not torch.cuda.is_available():
        raise Skip("needs a CUDA device")
    return torch.accelerator.current_accelerator()


def need_triton() -> None:
    if not triton_available():
        raise Skip("needs triton")


# --- Seed 1: the warmup's device -----------------------------------------------------------


def warmup_case(form: str, device: str) -> Callable[[], str]:
    def run() -> str:
        if device == "cuda":
            need_cuda()
        worker = Worker(torch.device(device))
        function = {
            "buggy": lambda: load_seed("warmup_buggy").spec_decode_rejection_warmup,
            "portlint-fixed": lambda: (
                load_portlint_fixed_seed("warmup_buggy").spec_decode_rejection_warmup
            ),
            "fixed": lambda: warmup.spec_decode_rejection_warmup,
        }[form]()
        function(worker)
        return f"warmup ran for a {device} worker"

    return run


def warmup_without_visible_gpu(form: str) -> Callable[[], str]:
    """A CPU worker in a process that sees no GPU (``CUDA_VISIBLE_DEVICES=""``)."""

    def run() -> str:
        need_cuda()
        target = (
            "load_seed('warmup_buggy').spec_decode_rejection_warmup"
            if form == "buggy"
            else ("warmup.spec_decode_rejection_warmup")
        )
        code = (
            "import torch\nfrom reference_impl import warmup\n"
            "from reference_impl.validate import load_seed\nfrom reference_impl.worker import Worker\n"
            f"{target}(Worker(torch.device('cpu')))\n"
        )
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1])
        return "warmup ran for a cpu worker with no visible GPU"

    return run


# --- Seed 2: int64 counts into the eagle kernel -------------------------------------------


def _verification_batch(
    device: torch.device, num_reqs: int = 6, num_spec: int = 3, vocab: int = 64
):
    """A verification step whose drafts are accepted for a varying number of positions."""
    generator = torch.Generator().manual_seed(7)
    target_argmax = torch.randint(0, vocab, (num_reqs, num_spec + 1), generator=generator)
    draft = target_argmax[:, :num_spec].clone().to(torch.int32)
    for req in range(num_reqs):
        if req % (num_spec + 1) < num_spec:
            draft[req, req % (num_spec + 1)] = (draft[req, req % (num_spec + 1)] + 1) % vocab
    lengths = [num_spec + 1] * num_reqs
    starts = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    num_tokens = int(starts[-1])
    batch = eagle.EagleBatch(
        target_input_ids=torch.randint(
            0, vocab, (num_tokens,), generator=generator, dtype=torch.int32
        ).to(device),
        target_positions=torch.arange(num_tokens, dtype=torch.int32).to(device),
        query_start_loc=starts.to(device),
        next_prefill_tokens=torch.full((num_reqs,), 5, dtype=torch.int32).to(device),
    )
    return draft.to(device), target_argmax.to(device), batch


@contextlib.contextmanager
def compile_instead_of_launch(module):
    """Within, ``module.prepare_eagle_inputs`` compiles the kernel for an sm_90 target instead."""
    original = module.prepare_eagle_inputs
    module.prepare_eagle_inputs = eagle.compile_prepare_eagle_inputs
    try:
        yield
    finally:
        module.prepare_eagle_inputs = original


def _sampler_module(form: str):
    if form == "buggy":
        return load_seed("sampler_buggy")
    return load_portlint_fixed_seed("sampler_buggy") if form == "portlint-fixed" else eagle


def sampler_compile_case(form: str) -> Callable[[], str]:
    """Triton's front end on the CPU, for the tensors the code really produces."""

    def run() -> str:
        need_triton()
        draft, target_argmax, batch = _verification_batch(torch.device("cpu"))
        module = _sampler_module(form)
        with compile_instead_of_launch(module):
            _, compiled = module.sample_and_prepare_eagle_inputs(draft, target_argmax, batch)
        return f"compiled for sm_90: {', '.join(sorted(compiled.asm))}"

    return run


def sampler_native_case(form: str) -> Callable[[], str]:
    """The real launch on the GPU, checked against the torch path on the same inputs."""

    def run() -> str:
        device = need_cuda()
        need_triton()
        draft, target_argmax, batch = _verification_batch(device)
        module = _sampler_module(form)
        sampled, out = module.sample_and_prepare_eagle_inputs(draft, target_argmax, batch)
        reference = _eagle_reference(draft.cpu(), target_argmax.cpu(), batch)
        for name in ("input_ids", "positions", "last_token_indices"):
            if not torch.equal(getattr(out, name).cpu(), getattr(reference, name)):
                raise AssertionError(f"{name} differs from the torch path")
        return "eagle inputs equal the torch path's"

    return run


def _eagle_reference(draft, target_argmax, batch) -> eagle.EagleInputs:
    cpu_batch = eagle.EagleBatch(*(t.cpu() for t in asdict(batch).values()))
    from reference_impl.sampling import strict_rejection_sample

    sampled, num_sampled = strict_rejection_sample(draft, target_argmax, backend="torch")
    num_rejected = draft.shape[1] + 1 - num_sampled
    return eagle.prepare_eagle_inputs(
        cpu_batch, sampled, num_sampled, num_rejected, backend="torch"
    )


# --- Seed 3: the capture stream -----------------------------------------------------------

MIB = 1 << 20


class _MeasuredGraph(torch.cuda.graph):
    """``torch.cuda.graph`` that records the memory allocated while it captures."""

    allocated: list[int] = []

    def __enter__(self):
        result = super().__enter__()
        self._before = torch.cuda.memory_allocated()
        return result

    def __exit__(self, *exc):
        super().__exit__(*exc)
        _MeasuredGraph.allocated.append(torch.cuda.memory_allocated() - self._before)


def _capture(form: str, torch_current_stream: bool = False) -> tuple[dict, list[int]]:
    device = need_cuda()
    module = {
        "buggy": lambda: load_seed("capture_buggy"),
        "legacy": lambda: load_seed("capture_legacy_buggy"),
        "portlint-fixed": lambda: load_portlint_fixed_seed("capture_buggy"),
        "portlint-fixed-legacy": lambda: load_portlint_fixed_seed("capture_legacy_buggy"),
        "fixed": lambda: graphs,
    }[form]()
    if torch_current_stream:
        module.current_stream = torch.cuda.current_stream
    weight = torch.randn(4096, 1024, dtype=torch.float16, device=device)
    original = torch.cuda.graph
    _MeasuredGraph.allocated = []
    torch.cuda.graph = _MeasuredGraph
    try:
        captured = module.setup_topk_graphs(graphs.topk_step, weight, [8, 64])
    finally:
        torch.cuda.graph = original
    for size, (graph, static_input, (values, _)) in captured.items():
        static_input.copy_(torch.randn_like(static_input))
        graph.replay()
        torch.accelerator.synchronize()
        expected_values, _ = graphs.topk_step(static_input, weight)
        if not torch.allclose(values, expected_values):
            raise AssertionError(f"replay of size {size} differs from eager")
    return captured, list(_MeasuredGraph.allocated)


def capture_case(form: str, torch_current_stream: bool = False) -> Callable[[], str]:
    def run() -> str:
        _, allocated = _capture(form, torch_current_stream)
        text = ", ".join(f"{a / MIB:.2f} MiB" for a in allocated)
        if max(allocated) >= 8 * MIB:
            raise RuntimeError(
                f"memory allocated during capture: {text} (per-stream workspace created in capture)"
            )
        return f"replays equal eager; memory allocated during capture: {text}"

    return run


# --- The harness ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    seed: str
    form: str
    # A substring of the error (or of one of several: any of them), or None: the case must pass.
    expect_error: str | tuple[str, ...] | None
    run: Callable[[], str]
    gpu: bool = False  # needs a CUDA device
    isolated: bool = False  # needs a fresh process (per-process stream and workspace state)


# How "no CUDA here" shows itself at a first allocation on a CUDA device, by build of torch: a
# CPU-only build; a CUDA build on a machine with no NVIDIA driver, or with no device visible, or
# whose driver cannot start; a ROCm build with no AMD device.
NO_CUDA = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver on your system",
    "No CUDA GPUs are available",
    "CUDA driver initialization failed",
    "no CUDA-capable device is detected",
    "No HIP GPUs are available",
)


def cases() -> list[Case]:
    # Without a GPU, the hardcoded device fails at its first allocation. With one, the CUDA
    # draft tokens meet the worker's tensors in the Triton kernel: a CPU tensor is refused at
    # launch, a meta tensor (no storage) is read from a null address.
    if torch.cuda.is_available():
        cpu_error = "cannot be accessed from Triton (cpu tensor?)"
        meta_error = "an illegal memory access was encountered"
    else:
        cpu_error = meta_error = NO_CUDA
    return [
        Case("warmup-buggy-cpu-worker", "1", "buggy", cpu_error, warmup_case("buggy", "cpu")),
        Case("warmup-fixed-cpu-worker", "1", "fixed", None, warmup_case("fixed", "cpu")),
        Case("warmup-portlint-fixed-cpu-worker", "1", "portlint-fixed", None,
             warmup_case("portlint-fixed", "cpu")),
        Case("warmup-portlint-fixed-meta-worker", "1", "portlint-fixed", None,
             warmup_case("portlint-fixed", "meta")),
        Case("warmup-portlint-fixed-cuda-worker", "1", "portlint-fixed", None,
             warmup_case("portlint-fixed", "cuda"), gpu=True),
        Case("warmup-buggy-meta-worker", "1", "buggy", meta_error, warmup_case("buggy", "meta")),
        Case("warmup-fixed-meta-worker", "1", "fixed", None, warmup_case("fixed", "meta")),
        Case("warmup-buggy-cuda-worker", "1", "buggy", None, warmup_case("buggy", "cuda"), gpu=True),
        Case("warmup-fixed-cuda-worker", "1", "fixed", None, warmup_case("fixed", "cuda"), gpu=True),
        Case("warmup-buggy-no-visible-gpu", "1", "buggy", "No CUDA GPUs are available",
             warmup_without_visible_gpu("buggy"), gpu=True),
        Case("warmup-fixed-no-visible-gpu", "1", "fixed", None, warmup_without_visible_gpu("fixed"), gpu=True),
        Case("eagle-buggy-compile-sm90-on-cpu", "2", "buggy", TRITON_INT64_ERROR, sampler_compile_case("buggy")),
        Case("eagle-fixed-compile-sm90-on-cpu", "2", "fixed", None, sampler_compile_case("fixed")),
        Case("eagle-buggy-native", "2", "buggy", TRITON_INT64_ERROR, sampler_native_case("buggy"), gpu=True),
        Case("eagle-fixed-native", "2", "fixed", None, sampler_native_case("fixed"), gpu=True),
        Case("eagle-portlint-fixed-compile-sm90-on-cpu", "2", "portlint-fixed", None,
             sampler_compile_case("portlint-fixed")),
        Case("eagle-portlint-fixed-native", "2", "portlint-fixed", None,
             sampler_native_case("portlint-fixed"), gpu=True),
        Case("capture-buggy-default-stream", "3", "buggy", "must be captured on a non-default stream",
             capture_case("buggy", torch_current_stream=True), gpu=True, isolated=True),
        Case("capture-buggy-stream-fetched-at-capture", "3", "buggy", "memory allocated during capture",
             capture_case("buggy"), gpu=True, isolated=True),
        Case("capture-legacy-private-side-stream", "3", "buggy", "memory allocated during capture",
             capture_case("legacy"), gpu=True, isolated=True),
        Case("capture-fixed", "3", "fixed", None, capture_case("fixed"), gpu=True, isolated=True),
        Case("capture-portlint-fixed", "3", "portlint-fixed", None, capture_case("portlint-fixed"),
             gpu=True, isolated=True),
        Case("capture-legacy-portlint-fixed", "3", "portlint-fixed", None,
             capture_case("portlint-fixed-legacy"), gpu=True, isolated=True),
    ]  # fmt: skip


def observe(case: Case) -> Row:
    alternatives = (case.expect_error,) if isinstance(case.expect_error, str) else case.expect_error
    expected = "passes" if alternatives is None else f"fails: {' | '.join(alternatives)}"
    try:
        detail = case.run()
        observed, ok = f"passed: {detail}", case.expect_error is None
    except Skip as skip:
        return Row(case.name, case.seed, case.form, expected, f"skipped: {skip}", None)
    except Exception as error:  # the buggy forms are meant to raise: record what they raise
        # The first line says what failed; the last holds Triton's cause (after the kernel source).
        lines = str(error).strip().splitlines() or [""]
        message = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
        text = " ".join(f"{type(error).__name__}: {message}".split())
        observed = f"failed: {text}"
        ok = alternatives is not None and any(wanted in text for wanted in alternatives)
    return Row(case.name, case.seed, case.form, expected, observed, ok)


def observe_in_subprocess(case: Case) -> Row:
    done = subprocess.run(
        [sys.executable, "-m", "reference_impl.validate", "--case", case.name],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        return Row(
            case.name,
            case.seed,
            case.form,
            "",
            f"failed: harness crashed: {done.stderr[-500:]}",
            False,
        )
    return Row(**json.loads(done.stdout.strip().splitlines()[-1]))


def lint_rows() -> list[Row]:
    """Step (1): portlint flags each buggy seed at its annotated line."""
    from portlint.engine import lint_source
    from portlint.registry import all_rules
    from portlint.settings import Settings

    rows = []
    for path in sorted(SEEDS.glob("*_buggy.py")):
        source = path.read_text()
        expected = [
            (number, line.split("# error:")[1].strip())
            for number, line in enumerate(source.splitlines(), 1)
            if "# error:" in line
        ]
        # The seeded bug's family: the seeds, like vLLM, also call torch.cuda APIs (PORT4xx).
        family = frozenset(c for c in all_rules() if c.startswith(expected[0][1][:5]))
        found = [(v.line, v.code) for v in lint_source(str(path), source, Settings(select=family))]
        rows.append(
            Row(
                f"lint-{path.stem}",
                "",
                "buggy",
                f"flagged at {expected}",
                f"flagged at {found}",
                found == expected,
            )
        )
    return rows


def environment() -> dict[str, str]:
    triton_version = "not installed"
    if triton_available():
        import triton

        triton_version = triton.__version__
    return {
        "device": torch.cuda.get_device_name()
        if torch.cuda.is_available()
        else f"CPU ({platform.processor() or platform.machine()})",
        "torch": torch.__version__,
        "triton": triton_version,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def write_evidence(out: Path, env: dict[str, str], rows: list[Row]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "evidence.json").write_text(
        json.dumps({"environment": env, "rows": [asdict(r) for r in rows]}, indent=2) + "\n"
    )
    lines = [f"# Seed validation on {env['device']}", ""]
    lines += [f"- {key}: {value}" for key, value in env.items()]
    lines += [
        "",
        "| case | seed | form | expected | observed | matches |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        verdict = {True: "yes", False: "**NO**", None: "skipped"}[r.ok]
        observed = r.observed.replace("|", "\\|")
        lines.append(f"| {r.case} | {r.seed} | {r.form} | {r.expected} | {observed} | {verdict} |")
    (out / "evidence.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("."), help="folder for evidence.json and evidence.md"
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)  # run one case, print its row as JSON
    args = parser.parse_args(argv)
    by_name = {case.name: case for case in cases()}
    if args.case:
        print(json.dumps(asdict(observe(by_name[args.case]))))
        return 0
    rows = lint_rows()
    for case in by_name.values():
        # On a GPU every case gets a fresh process: a buggy form may leave the CUDA context broken.
        row = observe_in_subprocess(case) if torch.cuda.is_available() else observe(case)
        rows.append(row)
        print(
            f"{row.case:45} {'ok' if row.ok else 'skipped' if row.ok is None else 'MISMATCH'}  {row.observed[:100]}",
            flush=True,
        )
    write_evidence(args.out, environment(), rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
