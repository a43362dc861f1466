"""The table of recognisers of the platform model: what the flow pass
(:mod:`portlint.model.flow`) cannot see in a condition, each a row with a line of
documentation, code it keeps silent and code that it does not (``tests/test_model.py`` runs
both; ``docs/platform-model.md`` lists them). :mod:`portlint.model.recognisers` applies them.

A row says that a definition (a function or a class), a statement's sequel or the whole module
runs only on CUDA, on evidence in the code: never on a name alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    kind: str
    doc: str
    silent: str  # code where `torch.cuda.synchronize()` runs only on CUDA by this row
    flagged: str  # code like it where it may run elsewhere


ROWS = (
    Row(
        "skip-marker",
        "a test, or a class of tests, skipped unless CUDA by `pytest.mark.skipif`, "
        "`unittest.skipIf` or `unittest.skipUnless` (a decorator, `pytestmark`, or a name or "
        "function of the module that is or returns one: `requires_cuda = "
        "pytest.mark.skipif(...)`), or by a decorator whose wrapper first skips or raises "
        "unless on CUDA (a function the module's `pytestmark` calls to decide runs wherever "
        "the module is imported: not confined by the skip)",
        """\
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")
def test_sync():
    torch.cuda.synchronize()
""",
        """\
@pytest.mark.skipif(sys.platform == "win32", reason="posix")
def test_sync():
    torch.cuda.synchronize()
""",
    ),
    Row(
        "library-import",
        "after an import of a library that exists only for NVIDIA or AMD GPUs (the "
        "`cuda-only-imports` table) or `pytest.importorskip` of one: the rest of its block, or "
        "the whole module where the import is unconditional at its top level; the same after "
        "`ctypes.CDLL(\"libcudart.so\")`, a library of NVIDIA's or AMD's driver",
        """\
import flashinfer


def run():
    torch.cuda.synchronize()
""",
        """\
try:
    import flashinfer
except ImportError:
    flashinfer = None


def run():
    torch.cuda.synchronize()
""",
    ),
    Row(
        "library-use",
        "after a statement that uses a module of such a library, imported optionally "
        "(`flashinfer.sampling.top_k(...)`, where `import flashinfer` is in a `try`): the use "
        "fails wherever the library is not",
        """\
try:
    import flashinfer
except ImportError:
    flashinfer = None


def run(x):
    y = flashinfer.norm(x)
    torch.cuda.synchronize()
""",
        """\
try:
    import flashinfer
except ImportError:
    flashinfer = None


def run(x):
    if flashinfer is None:
        torch.cuda.synchronize()
""",
    ),
    Row(
        "extension-build",
        "a module that builds its own CUDA extension from `.cu` sources as it is imported; "
        "the rest of a block after a call that builds CUDA sources (`load_inline(cuda_sources="
        "...)`, `load_jit(cuda_files=[...])`)",
        """\
from torch.utils.cpp_extension import load

ext = load("k", sources=["k.cu"])
torch.cuda.synchronize()
""",
        """\
from torch.utils.cpp_extension import load

ext = load("k", sources=["k.cpp"])
torch.cuda.synchronize()
""",
    ),
    Row(
        "enabled-argument",
        "a call made disabled unless on CUDA: its `enabled=` argument holds only on CUDA "
        '(`torch.amp.GradScaler(enabled=use_amp)`, `use_amp = x.device.type == "cuda"`)',
        """\
def step(x):
    use_amp = x.device.type == "cuda"
    scaler = Scaler(torch.cuda.synchronize(), enabled=use_amp)
""",
        """\
def step(x):
    use_amp = x.dtype == torch.float16
    scaler = Scaler(torch.cuda.synchronize(), enabled=use_amp)
""",
    ),
    Row(
        "device-table",
        "an entry for CUDA of a table keyed by device type "
        '(`{"cuda": torch.cuda.synchronize, "xpu": torch.xpu.synchronize}`)',
        """\
SYNC = {"cuda": lambda: torch.cuda.synchronize(), "cpu": lambda: None}
""",
        """\
SYNC = {"cuda": lambda: torch.cuda.synchronize(), "fast": lambda: None}
""",
    ),
    Row(
        "registered-kernel",
        "a function registered as an operator's CUDA kernel (`@torch.library.impl(..., "
        "'CUDA')`, `@torch.library.register_kernel(..., 'cuda')`), or made for CUDA's device "
        "type only by a decorator's argument (`@torch.library.custom_op(..., "
        "device_types='cuda')`, a test's `@instantiate(devicetypes=(DeviceType.CUDA,))`, "
        "`only_for='cuda'`, a registry's `@register(platform='nvidia')`)",
        """\
@torch.library.register_kernel("mylib::op", "cuda")
def op_cuda(x):
    torch.cuda.synchronize()
""",
        """\
@torch.library.register_kernel("mylib::op", "cpu")
def op_cpu(x):
    torch.cuda.synchronize()
""",
    ),
    Row(
        "dispatch-method",
        "a method `<name>_cuda` (or `_hip`, `_rocm`) of a class that also defines "
        "`<name>_native` or `<name>_<another device>`, or a method `cuda` beside `npu`, `xpu` "
        "or `cpu` (a `Module.cuda` override among its siblings; not one the class's own code "
        "calls with a device, `self.cuda(self.device)`: its move to any device): one arm of a "
        "dispatch by platform",
        """\
class Op:
    def forward_native(self, x):
        return x

    def forward_cuda(self, x):
        torch.cuda.synchronize()
""",
        """\
class Op:
    def forward_cuda(self, x):
        torch.cuda.synchronize()
""",
    ),
    Row(
        "platform-class",
        "a class of a platform layer declared for CUDA or ROCm: it implements a base class and "
        "binds an attribute to an enum member named CUDA or ROCm (`_enum = PlatformEnum.CUDA`), "
        "or gives its device's name or type (`device_name`, `device_type`, `dispatch_key`, "
        '`_name`) as "cuda" or "rocm", as a class attribute, a property or in `__init__`, or '
        'names only CUDA as the devices it supports (`SUPPORTED_DEVICES = {"cuda"}`); or it '
        "derives from such a class of its module",
        """\
class CudaPlatform(Platform):
    _enum = PlatformEnum.CUDA

    def synchronize(self):
        torch.cuda.synchronize()
""",
        """\
class CudaPlatform(Platform):
    _enum = PlatformEnum.XPU

    def synchronize(self):
        torch.cuda.synchronize()
""",
    ),
    Row(
        "world-size",
        "a test case of torch's distributed harness (`MultiProcessTestCase`, `FSDPTest`, "
        "`DTensorTestBase`) whose `world_size` is the number of CUDA devices "
        "(`torch.cuda.device_count()`, `min(torch.cuda.device_count(), 4)`): with none, the "
        "harness starts no process and skips every test",
        """\
class TestSync(FSDPTest):
    @property
    def world_size(self):
        return min(torch.cuda.device_count(), 4)

    def test_sync(self):
        torch.cuda.synchronize()
""",
        """\
class TestSync(FSDPTest):
    @property
    def world_size(self):
        return max(1, min(torch.cuda.device_count(), 4))

    def test_sync(self):
        torch.cuda.synchronize()
""",
    ),
    Row(
        "constructor",
        "the methods of a class whose `__init__` (or `setUp`, `setUpClass`, `setup_method`, "
        "`setup_class`) cannot return unless on CUDA",
        """\
class Runner:
    def __init__(self):
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA")

    def run(self):
        torch.cuda.synchronize()
""",
        """\
class Runner:
    def __init__(self):
        self.n = 0

    def run(self):
        torch.cuda.synchronize()
""",
    ),
    Row(
        "fixture",
        "a test that takes a fixture of its module that cannot return unless on CUDA (it skips "
        "or fails elsewhere)",
        """\
@pytest.fixture
def gpu():
    if not torch.cuda.is_available():
        pytest.skip("CUDA")
    return 0


def test_sync(gpu):
    torch.cuda.synchronize()
""",
        """\
@pytest.fixture
def gpu():
    return 0


def test_sync(gpu):
    torch.cuda.synchronize()
""",
    ),
    Row(
        "worker-entry",
        'the `if __name__ == "__main__":` block of a module that names `__file__` only in code '
        "that runs only on CUDA: a test that requires CUDA launches the module as its worker",
        """\
def test_two_gpus():
    if not torch.cuda.is_available():
        pytest.skip("CUDA")
    subprocess.run([sys.executable, __file__, "--worker"])


if __name__ == "__main__":
    torch.cuda.synchronize()
""",
        """\
def test_two_gpus():
    subprocess.run([sys.executable, __file__, "--worker"])


if __name__ == "__main__":
    torch.cuda.synchronize()
""",
    ),
    Row(
        "callers",
        "a private function of the module (`_name`, or one defined in a function) whose every "
        "use is in code that runs only on CUDA",
        """\
def _sync():
    torch.cuda.synchronize()


def step():
    if torch.cuda.is_available():
        _sync()
""",
        """\
def _sync():
    torch.cuda.synchronize()


def step():
    _sync()
""",
    ),
    Row(
        "requires",
        "after a call of a function of the module that cannot return unless on CUDA",
        """\
def need_cuda():
    assert torch.cuda.is_available()


def step():
    need_cuda()
    torch.cuda.synchronize()
""",
        """\
def need_cuda():
    return torch.cuda.is_available()


def step():
    need_cuda()
    torch.cuda.synchronize()
""",
    ),
)
