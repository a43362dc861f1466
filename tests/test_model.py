"""The platform model (portlint.model): each form of condition and each recogniser row, with the
code it keeps silent and the code it does not; the flow pass's shapes; a name alone is never
evidence; the check is not the finding unless the code falls back to the CPU."""

from __future__ import annotations

import ast

import pytest

from portlint.catalog import CATALOG
from portlint.engine import lint_source
from portlint.facts import CUDA_ONLY_LIBRARIES
from portlint.findings import Silenced
from portlint.model import PlatformModel
from portlint.model.conditions import FORMS
from portlint.model.rows import ROWS
from portlint.settings import Settings

FLOW = Settings(select=frozenset(CATALOG))
PROBE = "torch.cuda.synchronize()"


def lint(source: str, path: str = "m.py") -> tuple[list[tuple[int, int, str]], list[Silenced]]:
    """The findings (line, column, code) and the silenced findings of ``source`` with the
    model."""
    silenced: list[Silenced] = []
    found = lint_source(path, source, FLOW, silenced=silenced)
    return [(v.line, v.col, v.code or "") for v in found], silenced


def probe(source: str) -> tuple[int, int]:
    """Where ``PROBE`` is (its last occurrence), as findings count."""
    return next(
        (n, line.index(PROBE) + 1)
        for n, line in reversed(list(enumerate(source.splitlines(), 1)))
        if PROBE in line
    )


def silenced_at(silenced: list[Silenced], at: tuple[int, int]) -> set[str]:
    return {s.kind for s in silenced if (s.violation.line, s.violation.col) == at}


def reported(found: list[tuple[int, int, str]], at: tuple[int, int]) -> bool:
    return (*at, "PORT401") in found


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f.kind}:{f.cuda}")
def test_each_form_confines_what_it_decides(form):
    cuda = f"import torch\n\ndef f(x, self):\n    if {form.cuda}:\n        {PROBE}\n"
    found, silenced = lint(cuda)
    assert not reported(found, (5, 9))
    assert silenced_at(silenced, (5, 9)) == {form.kind}
    anywhere = cuda.replace(form.cuda, form.anywhere)
    found, _ = lint(anywhere)
    assert reported(found, (5, 9))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.kind)
def test_each_recogniser_row(row):
    silent = f"import pytest\nimport torch\n{row.silent}"
    found, silenced = lint(silent)
    assert not reported(found, probe(silent))
    assert silenced_at(silenced, probe(silent)) == {row.kind}
    flagged = f"import pytest\nimport torch\n{row.flagged}"
    found, _ = lint(flagged)
    assert reported(found, probe(flagged))


@pytest.mark.parametrize(
    "marker",
    [
        "requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n",
        "def requires_cuda(test):\n"
        "    return unittest.skipUnless(torch.cuda.is_available(), 'CUDA')(test)\n",
    ],
)
def test_a_skip_marker_of_the_module_by_its_name(marker):
    source = f"import torch\n{marker}\n@requires_cuda\ndef test_x():\n    {PROBE}\n"
    found, silenced = lint(source)
    assert not reported(found, probe(source))
    assert silenced_at(silenced, probe(source)) == {"skip-marker"}


ENOUGH_GPUS = f"""\
import pytest
import torch


def _enough_gpus():
    if not torch.cuda.is_available():
        return False
    return torch.cuda.device_count() >= 2


pytestmark = pytest.mark.skipif(not _enough_gpus(), reason="two CUDA devices")


def test_x():
    {PROBE}
"""


def test_a_function_that_decides_the_modules_skip_is_not_confined_by_it():
    """The predicate that ``pytestmark`` calls runs at collection, wherever the module is
    imported: its checks are the skip's, and the test it skips runs only on CUDA. (Walked as
    confined by the skip it decides, the predicate was a predicate every other pass, and the
    model never settled: an internal error on fastvideo 0.2.1.)"""
    found, silenced = lint(ENOUGH_GPUS)
    assert found == []
    assert silenced_at(silenced, probe(ENOUGH_GPUS)) == {"skip-marker"}
    assert silenced_at(silenced, (6, 12)) | silenced_at(silenced, (8, 12))  # the checks


def test_a_model_that_has_not_settled_within_its_passes_still_answers(monkeypatch):
    """A chain of summaries longer than the passes allowed: the last pass's answer stands."""
    import portlint.model

    monkeypatch.setattr(portlint.model, "MAX_PASSES", 1)
    found, _ = lint(ENOUGH_GPUS)  # (a second pass would learn the skip's predicate)
    assert (*probe(ENOUGH_GPUS), "PORT401") in found


def test_a_long_chain_of_functions_that_need_cuda_is_followed_to_its_end():
    """Each pass learns one more link (the functions are defined callers first): the model walks
    until its summaries settle, not a fixed number of times."""
    links = [f"def need_{n}():\n    need_{n + 1}()\n\n\n" for n in range(8)]
    last = "def need_8():\n    assert torch.cuda.is_available()\n\n\n"
    source = f"import torch\n\n\n{''.join(links)}{last}def run():\n    need_0()\n    {PROBE}\n"
    found, silenced = lint(source)
    assert not reported(found, probe(source))
    assert silenced_at(silenced, probe(source)) == {"requires"}


def test_every_row_is_documented_once():
    kinds = [row.kind for row in ROWS]
    assert len(kinds) == len(set(kinds))
    assert all(row.doc and row.silent != row.flagged for row in ROWS)


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        # an early exit, in each way a block can leave
        (f"def f():\n    if not torch.cuda.is_available():\n        return\n    {PROBE}\n", "exit"),
        (
            f"def f():\n    if not torch.cuda.is_available():\n        raise RuntimeError\n    {PROBE}\n",
            "exit",
        ),
        (
            f"def f():\n    if torch.cuda.device_count() < 1:\n        pytest.skip('no')\n    {PROBE}\n",
            "exit",
        ),
        (f"for x in y:\n    if not x.is_cuda:\n        continue\n    {PROBE}\n", "exit"),
        (
            f"def f():\n    if torch.cuda.is_available():\n        pass\n    else:\n        raise E\n    {PROBE}\n",
            "exit",
        ),
        # the arms of a branch
        (
            f"if torch.version.hip:\n    pass\nelif torch.cuda.is_available():\n    {PROBE}\n",
            "torch-query",
        ),
        (f"if not torch.cuda.is_available():\n    pass\nelse:\n    {PROBE}\n", "torch-query"),
        (f"while torch.cuda.is_available():\n    {PROBE}\n", "torch-query"),
        (f"def f():\n    assert torch.cuda.is_available()\n    {PROBE}\n", "torch-query"),
        (f"x = {PROBE} if torch.cuda.is_available() else None\n", "torch-query"),
        (f"torch.cuda.is_available() and {PROBE}\n", "torch-query"),
        (f"not torch.cuda.is_available() or {PROBE}\n", "torch-query"),
        (f"xs = [{PROBE} for d in ds if d.is_cuda]\n", "torch-query"),
        (f"for i in range(torch.cuda.device_count()):\n    {PROBE}\n", "torch-query"),
        (
            f"@pytest.mark.skipif(not torch.cuda.is_available(), reason='')\ndef test_x():\n"
            f"    def work():\n        {PROBE}\n    run(work)\n",
            "skip-marker",
        ),
        (
            f"def test_x():\n    def work():\n        {PROBE}\n"
            "    if torch.cuda.is_available():\n        run(work)\n",
            "callers",
        ),
        # a use inside the part of an expression that a test decides
        (
            f"def _sync(x):\n    {PROBE}\n\ndef ok(x):\n    return x.is_cuda and (x.ndim or _sync(x))\n",
            "callers",
        ),
        (f"def _sync():\n    {PROBE}\n\nys = [_sync() for d in ds if d.is_cuda]\n", "callers"),
        (
            "def requires_cuda(fn):\n    @functools.wraps(fn)\n    def run(*args):\n"
            "        if not torch.cuda.is_available():\n            pytest.skip('CUDA')\n"
            f"        return fn(*args)\n\n    return run\n\n@requires_cuda\ndef test_x():\n    {PROBE}\n",
            "skip-marker",
        ),
        (
            "HAS_CUDA = torch.cuda.is_available()\n\n@pytest.mark.skipif(not HAS_CUDA, reason='')\n"
            f"def test_x():\n    {PROBE}\n",
            "skip-marker",
        ),
        (
            "pytestmark = [pytest.mark.slow, pytest.mark.skipif(not torch.cuda.is_available(), reason='')]\n"
            f"def test_x():\n    {PROBE}\n",
            "skip-marker",
        ),
        (
            "@unittest.skipUnless(condition=torch.cuda.is_available(), reason='CUDA')\n"
            f"def test_x():\n    {PROBE}\n",
            "skip-marker",
        ),
        (
            "class Accelerator(Base):\n    def __init__(self):\n        self._name = 'cuda'\n\n"
            f"class Cuda(Accelerator):\n    def sync(self):\n        {PROBE}\n",
            "platform-class",
        ),
        (
            f"class Data:\n    def npu(self):\n        return self\n\n    def cuda(self):\n        {PROBE}\n",
            "dispatch-method",
        ),
        (
            "@Registry.register(platform='nvidia')\nclass Cuda(Base):\n"
            f"    def sync(self):\n        {PROBE}\n",
            "registered-kernel",
        ),
        (
            "@Registry.register(name='x')\nclass Cuda(Base):\n    device_type = 'cuda'\n\n"
            f"    def sync(self):\n        {PROBE}\n",
            "platform-class",
        ),
        (
            "class FwOp(AttentionFwOpBase):\n    SUPPORTED_DEVICES = {'cuda'}\n\n"
            f"    def apply(self):\n        {PROBE}\n",
            "platform-class",
        ),
        (
            "class CudaPlatform(Platform):\n    @property\n    def device_name(self):\n"
            f"        return 'cuda'\n\n    def sync(self):\n        {PROBE}\n",
            "platform-class",
        ),
        (
            "@torch.library.custom_op('m::op', mutates_args=(), device_types='cuda')\n"
            f"def op(x):\n    {PROBE}\n",
            "registered-kernel",
        ),
        # names bound to a test, values made only on CUDA, predicates of the module
        (f"USE = torch.cuda.is_available()\nif USE:\n    {PROBE}\n", "torch-query"),
        # an arm of a dispatch on a device parameter, whatever its default (the default is
        # reported on its own)
        (
            "def load(device='cuda'):\n    if device == 'cpu':\n        pass\n"
            f"    elif device == 'cuda':\n        {PROBE}\n",
            "device-type",
        ),
        (
            f"s = None\nif torch.cuda.is_available():\n    s = make()\nif s is not None:\n    {PROBE}\n",
            "none-test",
        ),
        (
            f"def is_gpu():\n    return torch.cuda.is_available()\n\nif is_gpu():\n    {PROBE}\n",
            "predicate",
        ),
        (
            "def fp8():\n    if not torch.cuda.is_available():\n        return False\n"
            f"    return torch.cuda.get_device_capability() >= (8, 9)\n\nif fp8():\n    {PROBE}\n",
            "predicate",
        ),
        (f"s = make() if torch.cuda.is_available() else None\nif s:\n    {PROBE}\n", "none-test"),
        (
            "if torch.cuda.is_available():\n    from kernels import fused\nelse:\n    fused = None\n"
            f"if fused is not None:\n    {PROBE}\n",
            "none-test",
        ),
        (
            "class Layer:\n    def __init__(self):\n"
            "        self.alt = torch.cuda.Stream() if torch.version.hip else None\n\n"
            f"    def forward(self):\n        if self.alt is not None:\n            {PROBE}\n",
            "none-test",
        ),
        (
            "class Layer:\n    def __init__(self):\n        self.on_gpu = x.is_cuda\n\n"
            f"    def forward(self):\n        if self.on_gpu:\n            {PROBE}\n",
            "torch-query",
        ),
        (
            "class Layer:\n    def _sync(self):\n        assert torch.cuda.is_available()\n\n"
            f"    def forward(self):\n        self._sync()\n        {PROBE}\n",
            "requires",
        ),
        (
            f"try:\n    import flashinfer\nexcept ImportError:\n    pass\nelse:\n    {PROBE}\n",
            "library-import",
        ),
        (f"def f():\n    lib = ctypes.CDLL('libcudart.so')\n    {PROBE}\n", "library-import"),
        (
            f"def f():\n    mod = load_jit('k', cuda_files=['k.cuh'])\n    {PROBE}\n",
            "extension-build",
        ),
    ],
)
def test_flow_shapes(source, kind):
    source = f"import pytest\nimport torch\n{source}"
    found, silenced = lint(source)
    assert not reported(found, probe(source))
    assert silenced_at(silenced, probe(source)) == {kind}
    assert not any(code == "PORT401" for *_, code in found)  # (the test: a check)


@pytest.mark.parametrize(
    "source",
    [
        f"if torch.cuda.is_available():\n    pass\n{PROBE}\n",  # after the branch, not in it
        f"if torch.cuda.is_available() or torch.xpu.is_available():\n    {PROBE}\n",
        f"if not torch.cuda.is_available():\n    print('no')\n{PROBE}\n",  # no exit
        f"s = None\nif torch.cuda.is_available():\n    s = make()\nelse:\n    s = other()\nif s:\n    {PROBE}\n",
        f"USE = torch.cuda.is_available()\nUSE = True\nif USE:\n    {PROBE}\n",  # rebound
        # a parameter made on CUDA only where the caller passed none: the caller's may be any
        "def f(device_id=None):\n    if device_id is None and torch.cuda.is_available():\n"
        f"        device_id = 0\n    if device_id is not None:\n        {PROBE}\n",
        f"def is_gpu():\n    return True\n\nif is_gpu():\n    {PROBE}\n",
        "def dev():\n    if torch.cuda.is_available():\n        return 'cuda'\n    return 'cpu'\n\n"
        f"if dev():\n    {PROBE}\n",
        # (the exit is not the function's first statement)
        "def ok():\n    x = 1\n    if not torch.cuda.is_available():\n        return False\n"
        f"    return True\n\nif ok():\n    {PROBE}\n",
        "def logged(fn):\n    def run(*args):\n        if not torch.cuda.is_available():\n"
        f"            print('no CUDA')\n        return fn(*args)\n\n    return run\n\n@logged\n"
        f"def test_x():\n    {PROBE}\n",
        "@torch.library.custom_op('m::op', mutates_args=(), device_types=('cuda', 'cpu'))\n"
        f"def op(x):\n    {PROBE}\n",
        # the device a decorator picks, not the one a function is made for
        f"@torch.autocast(device_type='cuda')\ndef forward(x):\n    {PROBE}\n",
        # the other arm of a test that names the devices it supports
        f"s = make(d) if d.type in ('cuda', 'mtia') else {PROBE}\n",
        # an override with no sibling for another device
        f"class Data:\n    def to(self, d):\n        return self\n\n    def cuda(self):\n        {PROBE}\n",
        # a default, not a platform's declaration
        f"@dataclass\nclass Args(Base):\n    device_type: str = 'cuda'\n\n    def run(self):\n        {PROBE}\n",
        f"class Args:\n    device_type = 'cuda'\n\n    def run(self):\n        {PROBE}\n",
        # NVIDIA's NVTX bindings import (and run, as no-ops) where there is no CUDA
        f"try:\n    import nvtx\nexcept ImportError:\n    pass\nelse:\n    {PROBE}\n",
    ],
)
def test_what_does_not_confine(source):
    source = f"import torch\n{source}"
    found, _ = lint(source)
    assert reported(found, probe(source))


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("vllm/platforms/cuda.py", f"import torch\n{PROBE}\n"),
        ("nccl_utils.py", f"import torch\n{PROBE}\n"),
        ("m.py", f"import torch\n\nclass CudaRunner:\n    def run(self):\n        {PROBE}\n"),
        ("m.py", f"import torch\n\ndef forward_cuda(x):\n    {PROBE}\n"),
        ("m.py", f"import torch\n\n@requires_cuda\ndef test_x():\n    {PROBE}\n"),
    ],
)
def test_a_name_alone_is_never_evidence(path, source):
    found, _ = lint(source, path)
    assert reported(found, probe(source))


def test_the_check_is_not_the_finding():
    source = (
        "import torch\n\ndef f():\n    if torch.cuda.is_available():\n"
        f"        {PROBE}\n    else:\n        run_elsewhere()\n"
    )
    found, silenced = lint(source)
    assert found == []
    assert silenced_at(silenced, (4, 8)) == {"check"}
    assert silenced_at(silenced, (5, 9)) == {"torch-query"}


@pytest.mark.parametrize(
    "source",
    [
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
        'if torch.cuda.is_available():\n    device = "cuda"\nelse:\n    device = "cpu"\n',
        "if torch.cuda.is_available():\n    model.cuda()\n",
        'USE = torch.cuda.is_available()\ndevice = "cuda" if USE else "cpu"\n',
        # CUDA, Apple's MPS, else the CPU: XPU and NPU run on the CPU
        'if torch.cuda.is_available():\n    acc = "cuda"\nelif torch.backends.mps.is_available():\n'
        '    acc = "mps"\nelse:\n    acc = "cpu"\n',
        "device = DeviceGPU() if torch.cuda.is_available() else DeviceCPU()\n",
        # CUDA, then MPS in an `if` of its own, else the CPU
        "def dev():\n    if torch.cuda.is_available():\n        return 'cuda'\n"
        "    if torch.backends.mps.is_available():\n        return 'mps'\n    return 'cpu'\n",
        # an early exit for a device named by the caller is no arm of the automatic choice
        "def pick(d):\n    if str(d).startswith(('tpu', 'intel')):\n        return d\n"
        "    if torch.cuda.is_available():\n        return 'cuda'\n    return 'cpu'\n",
        # CUDA either way
        "def load(w):\n    return w if w.is_cuda else w.cuda()\n",
    ],
)
def test_cuda_or_else_the_cpu_is_a_finding_at_the_check(source):
    """On any other accelerator the code runs on the CPU: the check is what to change."""
    source = f"import torch\n{source}"
    found, silenced = lint(source)
    query = "torch.cuda.is_available" if "is_available" in source else "w.is_cuda"
    line = next(n for n, text in enumerate(source.splitlines(), 1) if query in text)
    check = (line, source.splitlines()[line - 1].index(query) + 1)
    assert any((n, c) == check and k in ("PORT401", "PORT409") for n, c, k in found)
    assert silenced_at(silenced, check) == set()


@pytest.mark.parametrize(
    ("source", "silent"),
    [
        # off CUDA the function raises UnboundLocalError: the check is where to handle the rest
        (
            "def size():\n    if torch.cuda.is_available():\n        n = torch.cuda.mem_get_info()[0]\n    return n\n",
            False,
        ),
        # bound before, or in an other arm, or not read after: the check decides CUDA-only code
        (
            "def size():\n    n = 1\n    if torch.cuda.is_available():\n        n = torch.cuda.mem_get_info()[0]\n"
            "    return n\n",
            True,
        ),
        (
            "def size():\n    if torch.cuda.is_available():\n        n = torch.cuda.mem_get_info()[0]\n    else:\n"
            "        n = 1\n    return n\n",
            True,
        ),
        (
            "def size():\n    if torch.cuda.is_available():\n        n = torch.cuda.mem_get_info()[0]\n    return 1\n",
            True,
        ),
        # read again only under the same question, bound again first, or the arm returns
        (
            "def size():\n    if torch.cuda.is_available():\n"
            "        n = torch.cuda.mem_get_info()[0]\n"
            "    if torch.cuda.is_available():\n        print(n)\n",
            True,
        ),
        (
            "def size():\n    if torch.cuda.is_available():\n"
            "        n = torch.cuda.mem_get_info()[0]\n        return n\n    n = 1\n    return n\n",
            True,
        ),
        (
            "def size():\n    if torch.cuda.is_available():\n"
            "        n = torch.cuda.mem_get_info()[0]\n    n = 1\n    return n\n",
            True,
        ),
    ],
)
def test_a_name_only_the_cuda_arm_binds_read_after_it(source, silent):
    found, _ = lint(f"import torch\n\n{source}")
    check = next(n for n, line in enumerate(source.splitlines(), 3) if "is_available" in line)
    assert any(line == check and code == "PORT401" for line, _, code in found) is not silent


@pytest.mark.parametrize(
    "source",
    [
        "def pad(img):\n    if img.is_cuda:\n        warnings.warn('moving to the CPU')\n"
        "    return img.cpu()\n",
        "def load(self):\n    if not torch.cuda.is_available():\n        logger.warning('slow')\n"
        "        return\n    self.validate()\n",
        "def free(locs, stream):\n    if locs.is_cuda:\n        locs.record_stream(stream)\n",
        # a count read as data too ("Num GPUs" reads 0 on XPU), not only by the loop it bounds
        "def info(out):\n    n = torch.cuda.device_count()\n    out['gpus'] = n\n"
        "    for i in range(n):\n        out[i] = torch.cuda.get_device_name(i)\n",
        # what the test confines picks CUDA by name only
        "def probe():\n    if not torch.cuda.is_available():\n        return\n"
        "    return torch.zeros(2, device='cuda')\n",
        "def mean(loss, log_probs):\n    return (loss.cuda() if log_probs.is_cuda else loss).mean()\n",
        # a predicate's answer for a Triton kernel, read by code that is not all checks
        "def can_fuse(x):\n    return x.is_cuda and x.dim() == 2\n",
        # a requirement of CUDA before a Triton kernel, which XPU and AMD's GPUs run too
        "@triton.jit\ndef _k(x_ptr):\n    pass\n\ndef f(x):\n    assert x.is_cuda\n    _k[(1,)](x)\n",
        "@triton.jit\ndef _k(x_ptr):\n    pass\n\ndef can(x):\n    return x.is_cuda and x.dim() == 4\n\n"
        "def f(x):\n    if not can(x):\n        raise ValueError('CUDA')\n    _k[(1,)](x)\n",
        # ... launched through an alias of the kernel, or a function of the module that launches it
        "@triton.jit\ndef k(x_ptr):\n    pass\n\n_k = k\n\ndef f(x):\n    assert x.is_cuda\n    _k[(1,)](x)\n",
        "@triton.jit\ndef _k(x_ptr):\n    pass\n\ndef _launch(x):\n    _k[(1,)](x)\n\n"
        "def _run(x):\n    _launch(x)\n\ndef f(x):\n    if not x.is_cuda:\n        raise ValueError\n"
        "    _run(x)\n",
        # a body that does not leave: the rest of the block is no other path
        "def f(x):\n    if x.is_cuda:\n        x = fused(x)\n    return finish(x)\n",
    ],
)
def test_a_check_that_skips_portable_code_is_the_finding(source):
    """What the test decides would run elsewhere too: skipping it there is the bug."""
    source = f"import torch\n{source}"
    found, _ = lint(source)
    line = next(
        n for n, text in enumerate(source.splitlines(), 1) if "is_" in text or "count" in text
    )
    assert [code for n, _, code in found if n == line] in (["PORT401"], ["PORT409"])


@pytest.mark.parametrize(
    "source",
    [
        # another implementation, a requirement, a skip, the devices it supports
        "def f(x):\n    if not x.is_cuda:\n        return reference(x)\n    return kernel(x)\n",
        "def f():\n    if not torch.cuda.is_available():\n        raise ValueError('needs CUDA')\n"
        "    return run()\n",
        "def test_f():\n    if torch.cuda.device_count() < 2:\n        pytest.skip('two GPUs')\n"
        "    run()\n",
        "ok = torch.cuda.is_available() or torch.xpu.is_available()\n",
        "if device.type == 'cuda':\n    run_cuda()\nelif device.type == 'cpu':\n    run_cpu()\n"
        "else:\n    run_other()\n",
        "if torch.cuda.is_available():\n    dev = 'cuda'\nelif torch.xpu.is_available():\n"
        "    dev = 'xpu'\nelse:\n    dev = 'cpu'\n",
        "dev = 'cuda' if torch.cuda.is_available() else 'npu' if is_npu() else 'cpu'\n",
        "def states(rng):\n    if torch.cuda.is_available():\n        rng['cuda'] = 1\n"
        "    if is_torch_npu_available():\n        rng['npu'] = 2\n",
        "@pytest.mark.skipif(not (torch.cuda.is_available() or torch.xpu.is_available()), reason='')\n"
        "def test_f():\n    run()\n",
        # a choice of kernel by the tensor's device: the rest of the block is the other path
        "def f(x):\n    if x.is_cuda and x.dim() == 2:\n        return fused(x)\n    return ref(x)\n",
        "def f(x):\n    if x.is_cuda:\n        try:\n            return fused(x)\n"
        "        except RuntimeError:\n            pass\n    return ref(x)\n",
        # a requirement stated by `assert`, by a marker the module names
        "def f(x):\n    assert x.is_cuda\n    kernel[(1,)](x)\n",
        "needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n"
        "@needs_cuda\ndef test_f():\n    run()\n",
        # an arm of a chain after a test of another device; beside a test of any device but the CPU
        "def count():\n    if torch.xpu.is_available():\n        return torch.xpu.device_count()\n"
        "    elif torch.cuda.is_available():\n        return count_cuda()\n    return 0\n",
        "def to_numpy(x):\n    if x.is_cuda:\n        x = x.cpu()\n    if x.device.type != 'cpu':\n"
        "        x = x.to('cpu')\n    return x.numpy()\n",
        # a predicate that asks for NVIDIA's GPU, not AMD's
        "def can_fuse(q):\n    return q.is_cuda and torch.version.hip is None\n",
        # a marker the module defines for other modules' tests
        "def require_single_gpu(test_case):\n"
        "    return unittest.skipUnless(torch.cuda.device_count() == 1, 'one')(test_case)\n",
        # a flag read only by a skip marker of a class
        "_HAS_GPU = torch.cuda.is_available()\n\n@unittest.skipUnless(_HAS_GPU, 'CUDA')\n"
        "class TestKernel(unittest.TestCase):\n    def test_it(self):\n        run()\n",
        # where a checkpoint's CUDA storages restore: CUDA's own question
        "def load(path):\n"
        "    return torch.load(path, map_location='cuda:0' if torch.cuda.is_available() else 'cpu')\n",
        # one vendor's code: the test tells NVIDIA's build from AMD's
        "def f():\n    if torch.cuda.is_available() and torch.version.hip is None:\n"
        "        x = 1\n",
        # ... also where it is a requirement before a Triton kernel: NVIDIA-only on purpose
        "@triton.jit\ndef _k(x_ptr):\n    pass\n\ndef f(x):\n"
        "    if not x.is_cuda or torch.version.hip is not None:\n        raise ValueError\n"
        "    _k[(1,)](x)\n",
    ],
)
def test_a_check_with_another_way_elsewhere_is_no_finding(source):
    found, silenced = lint(f"import pytest\nimport torch\n{source}")
    assert [code for *_, code in found if code.startswith("PORT4")] == []
    assert {s.kind for s in silenced if s.violation.code.startswith("PORT4")} <= {"check"}


@pytest.mark.parametrize(
    ("source", "silent"),
    [
        (
            "if torch.xpu.is_available():\n    torch.xpu.synchronize()\n"
            f"elif is_torch_npu_available():\n    torch.npu.synchronize()\nelse:\n    {PROBE}\n",
            True,
        ),
        (
            f"if ready:\n    pass\nelif DEVICE_TYPE == 'npu':\n    run_npu()\n"
            f"elif _is_xpu:\n    run_xpu()\nelse:\n    {PROBE}\n",
            True,
        ),
        (
            f"with torch.xpu.device(d) if HAS_XPU else torch.npu.device(d) if HAS_NPU else {PROBE}:\n"
            "    run()\n",
            True,
        ),
        # tests of other devices that another module defines
        (
            "from project.utils import is_npu, is_xpu\nif is_xpu():\n    a()\nelif is_npu():\n"
            f"    b()\nelse:\n    {PROBE}\n",
            True,
        ),
        # one accelerator alone: a CPU engine, HPU or MPS takes the `else` too
        (f"if _is_xpu:\n    run_xpu()\nelse:\n    {PROBE}\n", False),
        (f"with torch.xpu.device(d) if HAS_XPU else {PROBE}:\n    run()\n", False),
        # a CUDA arm: the `else` is the rest, the CPU among them
        (
            "if torch.cuda.is_available():\n    run()\nelif torch.xpu.is_available():\n"
            f"    run_xpu()\nelse:\n    {PROBE}\n",
            False,
        ),
        (f"if d.type in ('cuda', 'mtia'):\n    run()\nelse:\n    {PROBE}\n", False),
        # only Apple's MPS before it: XPU and NPU take the `else`
        (f"if torch.backends.mps.is_available():\n    run_mps()\nelse:\n    {PROBE}\n", False),
    ],
)
def test_the_else_of_a_dispatch_over_other_devices(source, silent):
    source = f"import torch\n{source}"
    found, silenced = lint(source)
    assert reported(found, probe(source)) is not silent
    assert silenced_at(silenced, probe(source)) == ({"dispatch"} if silent else set())


@pytest.mark.parametrize(
    ("source", "silent"),
    [
        (
            "if is_torch_version('>=', '2.3'):\n    s = torch.amp.GradScaler('cuda')\nelse:\n"
            "    s = torch.cuda.amp.GradScaler()\n",
            True,
        ),
        (
            "TORCH_2_4 = True\n"
            "s = torch.amp.GradScaler('cuda') if TORCH_2_4 else torch.cuda.amp.GradScaler()\n",
            True,
        ),
        (
            "torch_version = version.parse(torch.__version__)\n"
            "if torch_version < version.parse('2.4.0'):\n    s = torch.cuda.amp.GradScaler()\n"
            "else:\n    s = torch.amp.GradScaler('cuda')\n",
            True,
        ),
        (
            "if hasattr(torch, 'accelerator'):\n    torch.accelerator.synchronize()\nelse:\n"
            "    s = torch.cuda.amp.GradScaler()\n",
            True,
        ),
        # both arms bind a name that says CUDA; the rest of the block after the newer torch's return
        (
            "if torch_version < version.parse('2.4.0'):\n    amp_fwd = torch.cuda.amp.GradScaler()\n"
            "else:\n    amp_fwd = torch.amp.GradScaler('cuda')\n",
            True,
        ),
        (
            "def scaler():\n    if compare_version('torch', operator.ge, '2.4.0'):\n"
            "        return torch.amp.GradScaler('cuda')\n    return torch.cuda.amp.GradScaler()\n",
            True,
        ),
        # a skip on some torch releases: the rest is every release's
        (
            "def test_amp():\n    if version_torch >= Version('1.13.0'):\n        pytest.skip('bug')\n"
            "    s = torch.cuda.amp.GradScaler()\n",
            False,
        ),
        # a test of the build's vendor is no test of the release
        (
            "def f():\n    if torch.version.hip is not None and _torch_2_4:\n"
            "        return torch.amp.GradScaler('cuda')\n    return torch.cuda.amp.GradScaler()\n",
            False,
        ),
        # both arms name CUDA: neither is where the code moved on
        (
            "if is_torch_version('>=', '2.3'):\n    s = torch.cuda.amp.GradScaler()\nelse:\n"
            "    s = torch.cuda.amp.GradScaler()\n",
            False,
        ),
        # a test of the device, not of the release
        (
            "if torch.version.cuda >= '12':\n    pass\nelse:\n    s = torch.cuda.amp.GradScaler()\n",
            False,
        ),
    ],
)
def test_the_arm_for_another_torch_release(source, silent):
    """The arm of a torch-release test that names CUDA where the other does not is the
    fallback for old torch: the other arm is where the code moved on (and where a finding, if
    any, is)."""
    source = f"import torch\n{source}"
    found, silenced = lint(source)
    line = max(n for n, text in enumerate(source.splitlines(), 1) if "torch.cuda.amp" in text)
    at = [(n, c) for n, c, code in found if code == "PORT405" and n == line]
    kinds = {s.kind for s in silenced if s.violation.line == line}
    assert (not at and kinds == {"torch-release"}) if silent else (at and not kinds)


def test_an_import_in_a_with_block_of_the_module_is_the_module_s():
    """``with patch(...): import cupy`` at the top level: the module cannot be imported off
    CUDA, as with a plain import."""
    source = (
        "import torch\nfrom unittest.mock import patch\nwith patch('importlib.metadata'):\n"
        f"    import cupy as cp\n\ndef f():\n    {PROBE}\n"
    )
    found, silenced = lint(source)
    assert found == []
    assert silenced_at(silenced, probe(source)) == {"library-import"}
    model = PlatformModel(ast.parse(source), source, tuple(CUDA_ONLY_LIBRARIES))
    assert model.whole() is not None


def test_a_question_in_the_code_decided_needs_no_cuda():
    """``b.is_cuda`` in a helper that only a test of ``x.is_cuda`` calls is silent (callers),
    but asks nothing only CUDA answers: the test of ``x.is_cuda`` does not confine CUDA-only
    code by it (the finding stays at the test)."""
    source = (
        "import torch\ndef _ok(b):\n    return b.is_cuda and b.numel() == 3\n\n"
        "def can(x, b):\n    return x.is_cuda and x.dim() == 4 and _ok(b)\n"
    )
    found, silenced = lint(source)
    assert found == [(6, 12, "PORT409")]
    assert silenced_at(silenced, (3, 12)) == {"callers"}


@pytest.mark.parametrize(
    "source",
    [
        # a use that may not run: an arm of `a if t else b`, the right of `and`
        f"def f(flag):\n    world = mpu.get_world_size() if flag else 1\n    {PROBE}\n",
        f"def f(flag):\n    size = flag and mpu.get_world_size()\n    {PROBE}\n",
        # a parameter that shadows the library's name
        f"def f(get_args):\n    get_args()\n    {PROBE}\n",
        # a call of a generator runs none of its body
        "def _drivers():\n    from cuda.bindings import driver\n\n    yield driver\n\n"
        f"def f():\n    _drivers()\n    {PROBE}\n",
    ],
)
def test_what_may_not_use_a_library_confines_nothing(source):
    source = (
        "import torch\nif is_megatron_available():\n    from megatron.core import mpu\n"
        f"    from megatron.training import get_args\n{source}"
    )
    found, _ = lint(source)
    assert reported(found, probe(source))


def test_a_use_of_a_library_confines_its_own_statement_and_a_requirement_its_defaults():
    source = (
        "import torch\nif is_megatron_available():\n    from megatron.core import mpu\n\n"
        "def to_trt(model, device='cuda'):\n    import torch_tensorrt\n\n"
        "    return torch_tensorrt.compile(model.to(device))\n\n"
        "def setup():\n    torch.cuda.set_device(mpu.get_tensor_model_parallel_rank())\n"
    )
    found, silenced = lint(source)
    assert found == []
    assert {(s.violation.line, s.kind) for s in silenced} == {(5, "requires"), (11, "library-use")}


@pytest.mark.parametrize(
    ("test", "silent"),
    [
        ("if HAS_SYMM:", True),
        ("if not HAS_SYMM:\n        return\n    if True:", True),
        ("if HAS_SYMM is not None:", False),
    ],
)
def test_a_flag_false_but_where_a_test_of_cuda_sets_it(test, silent):
    source = (
        "import torch\nHAS_SYMM = False\nif torch.cuda.is_available():\n    HAS_SYMM = True\n\n"
        f"def f():\n    {test}\n        {PROBE}\n"
    )
    found, _ = lint(source)
    assert reported(found, probe(source)) is not silent


@pytest.mark.parametrize(
    ("body", "silent"),
    [
        (f"    n = torch.cuda.device_count()\n    if n > 1:\n        {PROBE}\n", True),
        (f"    n = torch.cuda.device_count()\n    for i in range(n):\n        {PROBE}\n", True),
        # given on as data too: zero devices off CUDA is a number another accelerator has
        (
            f"    n = torch.cuda.device_count()\n    if n > 1:\n        {PROBE}\n    spawn(n)\n",
            False,
        ),
    ],
)
def test_a_count_of_cuda_devices_held_in_a_name(body, silent):
    source = f"import torch\ndef f():\n{body}"
    found, _ = lint(source)
    assert reported(found, probe(source)) is False  # (the count decides it either way)
    assert ((3, 9, "PORT401") in found) is not silent


@pytest.mark.parametrize(
    ("source", "silent"),
    [
        (
            "try:\n    import transformer_engine\n    HAVE_TE = True\nexcept ImportError:\n"
            f"    HAVE_TE = False\n\ndef f():\n    if HAVE_TE:\n        {PROBE}\n",
            True,
        ),
        # a flag lowered to False still holds only where it held
        (
            "AVAILABLE = torch.cuda.is_available()\nif broken():\n    AVAILABLE = False\n\n"
            f"if AVAILABLE:\n    def bench():\n        {PROBE}\n",
            True,
        ),
        # a function that sets it too, wherever it runs
        (
            "try:\n    import cupy\n    HAVE_CUPY = True\nexcept ImportError:\n    HAVE_CUPY = False\n\n"
            "def enable():\n    global HAVE_CUPY\n    HAVE_CUPY = True\n\n"
            f"def f():\n    if HAVE_CUPY:\n        {PROBE}\n",
            False,
        ),
        # a count held by the instance and given on as data too
        (
            "class L:\n    def __init__(self):\n        self.world = torch.cuda.device_count()\n\n"
            f"    def start(self, fn):\n        if self.world > 1:\n            {PROBE}\n"
            "        spawn(fn, nprocs=self.world)\n",
            True,
        ),
    ],
)
def test_a_flag_the_module_sets_where_a_library_imports(source, silent):
    source = f"import torch\n{source}"
    found, _ = lint(source)
    assert reported(found, probe(source)) is not silent
    if "self.world" in source:  # (the count is the finding: a number of devices as data)
        assert (4, 22, "PORT401") in found


def test_the_world_size_itself_stays_a_finding():
    """The harness could count any accelerator's devices: the count is what to change."""
    source = (
        "import torch\nclass TestSync(FSDPTest):\n    @property\n    def world_size(self):\n"
        f"        return min(torch.cuda.device_count(), 4)\n\n    def test_sync(self):\n        {PROBE}\n"
    )
    found, silenced = lint(source)
    assert found == [(5, 20, "PORT401")]
    assert silenced_at(silenced, probe(source)) == {"world-size"}


GPU_FIXTURE = (
    "@pytest.fixture{args}\ndef gpu():\n    if not torch.cuda.is_available():\n"
    "        pytest.skip('CUDA')\n    {give} 0\n\n"
)


@pytest.mark.parametrize(
    ("fixtures", "test", "silent"),
    [
        (GPU_FIXTURE.format(args="(autouse=True)", give="return"), "def test_x():", True),
        (
            GPU_FIXTURE.format(args="", give="return"),
            "@pytest.mark.usefixtures('gpu')\ndef test_x():",
            True,
        ),
        (GPU_FIXTURE.format(args="(name='device')", give="return"), "def test_x(device):", True),
        (GPU_FIXTURE.format(args="", give="yield"), "def test_x(gpu):", True),
        (
            GPU_FIXTURE.format(args="", give="return")
            + "@pytest.fixture\ndef backend(gpu):\n    return gpu\n\n",
            "def test_x(backend):",
            True,
        ),
        # the skip after the fixture's value: the test has run
        (
            "@pytest.fixture\ndef gpu():\n    yield 0\n    if not torch.cuda.is_available():\n"
            "        pytest.skip('late')\n\n",
            "def test_x(gpu):",
            False,
        ),
        (GPU_FIXTURE.format(args="(autouse=True)", give="return"), "def helper():", False),
    ],
)
def test_a_test_that_takes_a_fixture_that_skips_unless_cuda(fixtures, test, silent):
    source = f"import pytest\nimport torch\n{fixtures}{test}\n    {PROBE}\n"
    found, silenced = lint(source)
    assert reported(found, probe(source)) is not silent
    assert silenced_at(silenced, probe(source)) == ({"fixture"} if silent else set())


def test_a_device_named_to_a_cuda_call_picks_no_device():
    """``torch.cuda.get_device_capability(f"cuda:{i}")`` asks about a CUDA device; it is no
    ``"cuda"`` chosen for code that could run elsewhere, so the count is a check."""
    source = (
        "import torch\nfor i in range(torch.cuda.device_count()):\n"
        "    cap = torch.cuda.get_device_capability(f'cuda:{i}')\n"
    )
    found, silenced = lint(source)
    assert found == []
    assert silenced_at(silenced, (2, 16)) == {"check"}
    assert silenced_at(silenced, (3, 11)) == {"torch-query"}


def test_a_flag_read_only_by_checks_is_a_check():
    source = f"import torch\nUSE = torch.cuda.is_available()\nif USE:\n    {PROBE}\n"
    found, silenced = lint(source)
    assert found == []
    assert silenced_at(silenced, (2, 7)) == {"check"}


def test_columns_after_wide_characters():
    """``ast`` counts columns in UTF-8 bytes, findings in characters: the region still holds."""
    source = f"import torch\nx = 'é' if False else (torch.cuda.is_available() and {PROBE})\n"
    _, silenced = lint(source)
    assert silenced_at(silenced, probe(source)) == {"torch-query"}
    model = PlatformModel(ast.parse(source), source, tuple(CUDA_ONLY_LIBRARIES))
    column = source.splitlines()[1].index(PROBE) + 1
    assert [e.kind for e in model.where(2, column)] == ["torch-query"]
    assert model.where(2, 1) == []


UTILS = """\
import pytest
import torch

HAS_CUDA = torch.cuda.is_available()


def is_gpu():
    return torch.version.cuda is not None


def supports_bf16(device):
    \"\"\"Whether the device has bf16 kernels.\"\"\"
    if not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device) >= (8, 0)


requires_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")


def need_gpu():
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA")


def on_gpu(fn):
    def run(*args):
        if not torch.cuda.is_available():
            pytest.skip("CUDA")
        return fn(*args)

    return run
"""


@pytest.mark.parametrize(
    ("imports", "code"),
    [
        ("from .utils import HAS_CUDA", "def f():\n    if HAS_CUDA:\n        {probe}\n"),
        ("from .utils import HAS_CUDA", "def f(x):\n    if x and HAS_CUDA:\n        {probe}\n"),
        (
            "from .utils import HAS_CUDA",
            "def f():\n    if torch.version.hip or HAS_CUDA:\n        {probe}\n",
        ),
        (
            "from .utils import HAS_CUDA",
            "def f(x):\n    return x and HAS_CUDA and {probe}\n",
        ),
        (
            "from pkg.utils import is_gpu",
            "def f():\n    if not is_gpu():\n        return\n    {probe}\n",
        ),
        ("from .utils import requires_gpu", "@requires_gpu\ndef test_f():\n    {probe}\n"),
        ("from .utils import on_gpu", "@on_gpu\ndef test_f():\n    {probe}\n"),
        ("from .utils import need_gpu", "def f():\n    need_gpu()\n    {probe}\n"),
        (
            "from elsewhere import slow\nfrom .utils import requires_gpu",
            "@slow\n@requires_gpu\ndef test_f():\n    {probe}\n",
        ),
        (
            "from .utils import supports_bf16",
            "def f(d):\n    if supports_bf16(d):\n        {probe}\n",
        ),
        (
            "from . import utils as u\nfrom .again import HAS_CUDA",
            "def f():\n    if HAS_CUDA:\n        {probe}\n",
        ),
    ],
)
def test_what_another_module_says_of_a_name(tmp_path, imports, code):
    """A flag, a predicate or a skip marker of another module: the evidence waits for the
    project's join, which reads that module's exports (re-exported ones too)."""
    from tests.helpers import run_cli

    (tmp_path / "pyproject.toml").write_text("")  # (the project: the files below it)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text(UTILS)
    (package / "again.py").write_text("from .utils import HAS_CUDA\n")
    source = f"import torch\n{imports}\n\n\n{code.format(probe=PROBE)}"
    (package / "mod.py").write_text(source)
    result = run_cli(
        "check", "pkg/mod.py", "--no-cache", "--show-silenced", "--output-format", "concise",
        cwd=tmp_path,
    )  # fmt: skip
    line = probe(source)[0]
    assert f"pkg/mod.py:{line}:" in result.stdout.split("Silenced")[1]
    assert "imported: " in result.stdout
    unknown = source.replace("HAS_CUDA", "ELSEWHERE").replace("is_gpu", "is_big")
    unknown = unknown.replace("supports_bf16", "supports_fp64")
    unknown = unknown.replace("requires_gpu", "parametrize_all").replace("on_gpu", "logged")
    unknown = unknown.replace("need_gpu", "warm_up")
    (package / "mod.py").write_text(unknown)
    result = run_cli(
        "check", "pkg/mod.py", "--no-cache", "--output-format", "concise", cwd=tmp_path,
    )  # fmt: skip
    assert f"pkg/mod.py:{line}:" in result.stdout


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        ('monkeypatch.setattr(torch.cuda, "is_available", lambda: True)', "patch"),
        ('mock.patch.object(torch.cuda, "is_available", return_value=True)', "patch"),
        ('hasattr(torch.cuda, "is_bf16_supported")', "probe"),
        ("getattr(torch, name, torch.cuda)", "default"),
    ],
)
def test_what_is_named_but_not_used(call, kind):
    """A patch's target, a probe, a default for a device torch has no module for: no device is
    asked for the API there."""
    found, silenced = lint(f"import torch\n\ndef f(monkeypatch, mock, name):\n    {call}\n")
    assert found == []
    assert [s.kind for s in silenced] == [kind]
    used = "import torch\n\ndef f(name):\n    run(torch.cuda, name)\n"
    assert [code for *_, code in lint(used)[0]] == ["PORT409"]


@pytest.mark.parametrize(
    "decorator",
    [
        '@custom_op("demo::op", mutates_args=(), device_types="cuda")',
        '@register_kernel("demo::op", "cuda")',
    ],
)
def test_a_kernel_registered_by_an_imported_name_is_cudas(decorator):
    """The registration is read before the decorator is asked as another module's marker."""
    source = (
        "import torch\nfrom torch.library import custom_op, register_kernel\n\n\n"
        f"{decorator}\ndef op(x):\n    {PROBE}\n"
    )
    found, silenced = lint(source)
    assert found == []
    assert silenced_at(silenced, probe(source)) == {"registered-kernel"}
    anywhere = source.replace('"cuda"', '"xpu"')
    assert reported(lint(anywhere)[0], probe(anywhere))


@pytest.mark.parametrize(
    ("declared", "silent"),
    [
        ('SUPPORTED_DEVICES: set[str] = {"cuda"}', True),
        ("SUPPORTS_DEVICES = [DEVICE.CUDA, DEVICE.ROCM]", True),
        ('SUPPORTED_DEVICES = {"cuda", "xpu"}', False),
        ('devices = ["cuda"]', False),  # (a default of a class of no base, not a declaration)
    ],
)
def test_a_class_of_no_base_that_declares_the_devices_it_supports(declared, silent):
    source = (
        f"import torch\n\n\nclass Op:\n    {declared}\n\n    def apply(self):\n        {PROBE}\n"
    )
    found, silenced = lint(source)
    assert reported(found, probe(source)) is not silent
    assert silenced_at(silenced, probe(source)) == ({"platform-class"} if silent else set())


@pytest.mark.parametrize(
    "body",
    [
        "if torch.cuda.is_available():\n        device = torch.device('cuda')\n"
        "    else:\n        raise RuntimeError('GPU is required')\n    return device",
        "if torch.cuda.is_available():\n        return torch.device('cuda')\n"
        "    raise RuntimeError('GPU is required')",
    ],
)
def test_a_requirement_that_picks_cuda_by_name_is_still_a_requirement(body):
    """The other path raises: the check states what the function needs, it chooses nothing."""
    source = f"import torch\n\n\ndef f():\n    {body}\n"
    found, silenced = lint(source)
    assert not any(code == "PORT401" for *_, code in found)
    assert "check" in {s.kind for s in silenced}
    fallback = source.replace("raise RuntimeError('GPU is required')", "return torch.device('cpu')")
    assert (4 + 1, 8, "PORT401") in lint(fallback)[0]


def test_a_value_made_to_be_checked_by_a_requirement_right_after_it():
    source = (
        "import torch\n\n\ndef f(x):\n    buffer = x.to('cuda')\n    assert buffer.is_cuda\n"
        "    return buffer\n\n\ndef g(x):\n    buffer = x.to('cuda')\n    y = 1\n"
        "    assert buffer.is_cuda\n"
    )
    found, silenced = lint(source)
    assert [(line, code) for line, _, code in found] == [(11, "PORT101")]
    assert silenced_at(silenced, (5, 19)) == {"torch-query"}


def test_a_cuda_default_read_before_the_requirement_is_reported():
    source = (
        "import torch\n\n\ndef f(rank, device='cuda'):\n    assert torch.cuda.is_available()\n"
        "    return torch.zeros(rank, device=device)\n\n\n"
        "def g(rank, device='cuda'):\n    x = torch.zeros(rank, device=device)\n"
        "    assert torch.cuda.is_available()\n    return x\n"
    )
    found, _ = lint(source)
    assert [(line, code) for line, _, code in found if code == "PORT101"] == [(9, "PORT101")]


def test_what_follows_or_after_an_accelerator_question_runs_where_there_is_none():
    source = (
        "import torch\n\n\ndef f():\n"
        "    return torch.accelerator.current_accelerator() or torch.device('cuda')\n"
    )
    found, silenced = lint(source)
    assert found == []
    assert [s.kind for s in silenced] == ["no-accelerator"]
    other = source.replace("torch.accelerator.current_accelerator()", "pick()")
    assert [code for *_, code in lint(other)[0]] == ["PORT101"]


def test_the_original_kept_by_a_patch_is_no_use():
    source = "import torch\n\n_original = torch.cuda.Event\ntorch.cuda.Event = wrap(_original)\n"
    found, silenced = lint(source)
    assert found == []
    assert [(s.kind, s.line) for s in silenced] == [("patch", 3)]
    kept = source.replace("torch.cuda.Event = ", "other = ")
    assert [code for *_, code in lint(kept)[0]] == ["PORT402"]


# What the model does not see yet (each was silent under the guard analysis it replaced): kept
# here as the behaviour wanted, so that the day it holds the mark goes.
GAPS = {
    "a value made only on CUDA passed to a constructor's parameter": (
        "import torch\n\n\nclass Layer:\n    def __init__(self, alt_stream=None):\n"
        "        self.alt_stream = alt_stream\n\n    def forward(self):\n"
        "        if self.alt_stream is not None:\n            torch.cuda.synchronize()\n\n\n"
        "class Model:\n    def __init__(self):\n"
        "        stream = torch.cuda.Stream() if torch.cuda.is_available() else None\n"
        "        self.layer = Layer(alt_stream=stream)\n"
    ),
    "a map_location chosen through a name": (
        "import torch\n\n\ndef load(path):\n"
        "    where = 'cpu' if not torch.cuda.is_available() else None\n"
        "    return torch.load(path, map_location=where)\n"
    ),
    "what comes before a use of a name imported only on CUDA": (
        "import torch\n\nif torch.cuda.is_available():\n    from kernels import fused\n\n\n"
        "def f(x):\n    torch.cuda.synchronize()\n    return fused(x)\n"
    ),
    "a method `cuda` that hands on to torch's": (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def cuda(self):\n"
        "        return super().cuda()\n"
    ),
}


@pytest.mark.xfail(strict=True, reason="not yet in the model")
@pytest.mark.parametrize("source", GAPS.values(), ids=GAPS.keys())
def test_what_the_model_does_not_see_yet(source):
    assert lint(source)[0] == []


def test_a_cuda_method_the_class_calls_with_a_device_is_its_move_not_a_dispatch():
    """hqq's ``HQQLinear.cuda(device)`` beside ``cpu()``, which its ``quantize()`` calls with
    whatever device it was given; without that call, ``cuda`` beside ``cpu`` is torch's."""
    moves = (
        "import torch\n\n\nclass Linear:\n    def cpu(self):\n        return self\n\n"
        "    def quantize(self):\n        self.cuda(self.device)\n\n"
        f"    def cuda(self, device):\n        {PROBE}\n        return self\n"
    )
    assert reported(lint(moves)[0], probe(moves))
    dispatch = moves.replace("self.cuda(self.device)", "self.to(self.device)")
    found, silenced = lint(dispatch)
    assert not reported(found, probe(dispatch))
    assert silenced_at(silenced, probe(dispatch)) == {"dispatch-method"}


def test_names_bound_to_each_other_end_the_walk_of_their_values():
    """`limit = size` then `size = limit`: following what a name holds stops at a name already
    followed (it recursed without end: flashinfer 0.7.4 `fmha_decode_bsr_cutile.py`)."""
    source = (
        "import torch\n\ndef f():\n    size = torch.cuda.device_count()\n    limit = size\n"
        f"    size = limit\n    if size > 1:\n        {PROBE}\n"
    )
    found, _ = lint(source)
    assert all(code for _, _, code in found)  # (no diagnostic that the file was not analysed)
    assert reported(found, probe(source))


DEVICE_TYPE_MODULE = """\
import os

import torch


def get_device_type():
    if torch.cuda.is_available():
        if torch.version.hip:
            return "hip"
        return "cuda"
    if torch.xpu.is_available():
        return "xpu"
    raise NotImplementedError("only NVIDIA, AMD and Intel GPUs")


DEVICE_TYPE = get_device_type()
"""
DEVICE_TYPE_USE = f"""

def f():
    if DEVICE_TYPE == "xpu":
        torch.xpu.synchronize()
    else:
        {PROBE}
"""


@pytest.mark.parametrize(
    ("module", "use", "silent"),
    [
        # CUDA, ROCm or XPU, else the import fails: the `else` is CUDA's
        (DEVICE_TYPE_MODULE, DEVICE_TYPE_USE, True),
        # another device may come out of it: its `else` is not CUDA's alone
        (DEVICE_TYPE_MODULE.replace("    raise NotImplementedError", '    return "cpu"  #'),
         DEVICE_TYPE_USE, False),
        # bound again: it may be anything
        (DEVICE_TYPE_MODULE + 'DEVICE_TYPE = os.environ["DEVICE"]\n', DEVICE_TYPE_USE, False),
        # the function binds a name of its own
        (DEVICE_TYPE_MODULE, DEVICE_TYPE_USE.replace("f():", 'f(DEVICE_TYPE="cpu"):'), False),
    ],
)  # fmt: skip
def test_a_name_that_can_only_be_cuda_or_another_device_decides_its_else(module, use, silent):
    """`DEVICE_TYPE = get_device_type()`, whose every return is a device string and which
    raises for any other device: `if DEVICE_TYPE == "xpu": ... else:` is CUDA's `else`."""
    source = module + use
    found, silenced = lint(source)
    assert reported(found, probe(source)) is not silent
    assert silenced_at(silenced, probe(source)) == ({"device-set"} if silent else set())


@pytest.mark.parametrize(("library", "silent"), [("mamba_ssm", True), ("einops", False)])
def test_a_class_that_asserts_a_flag_its_library_import_sets_runs_where_the_library_is(
    library, silent
):
    """mistral-inference's Mamba: ``_installed`` is true only once a library of the NVIDIA/AMD
    table imported (``try``/``except ImportError``), and the constructor asserts it: the
    class's methods run only where that library is; a library found anywhere proves nothing."""
    source = (
        f"import torch\n_installed = False\ntry:\n    from {library}.models import Model\n"
        "    _installed = True\nexcept ImportError:\n    _installed = False\n\n"
        "class Mamba:\n    def __init__(self):\n        assert _installed, 'pip install it'\n\n"
        f"    def run(self):\n        {PROBE}\n"
    )
    found, silenced = lint(source)
    assert (found == []) is silent
    assert silenced_at(silenced, probe(source)) == ({"constructor"} if silent else set())
