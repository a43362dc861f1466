"""The platform inference with no configuration, and the configuration that extends it or turns
it off; `--show-silenced`, which explains every silence."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from portlint.model import PlatformModel
from portlint.platform import names_cuda, words
from portlint.speed.cut import parse_ast
from tests.helpers import run_cli, tree

SYNC = "import torch\n\n\ndef step():\n    torch.cuda.synchronize()\n"


@pytest.mark.parametrize(
    ("name", "cuda"),
    [
        ("forward_cuda", True), ("CUDAOpBuilder", True), ("CUDA_Accelerator", True),
        ("fmha_sm100", True), ("deep_gemm", True), ("pynccl", True), ("HIPPlatform", True),
        ("rocm_aiter_fusion", True), ("nvfp4", True), ("gfx942", True),
        # a CUDA graph is how torch captures on any accelerator
        ("cuda_graph_runner", False), ("CudaGraphRunner", False), ("_create_cuda_graph", False),
        # words that merely contain a platform's letters
        ("command", False), ("relationship", False), ("execute", False), ("XPUModelRunner", False),
    ],
)  # fmt: skip
def test_names_for_cuda_are_read_by_their_words(name, cuda):
    assert names_cuda(name) is cuda, words(name)


def _whole(source: str, libraries: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """Why the platform model says the whole module runs only on CUDA: (kind, line)."""
    found = PlatformModel(parse_ast(source), source, libraries).whole()
    return (found[0], found[2]) if found is not None else None


def test_a_module_is_cuda_only_by_its_imports_not_its_path():
    libraries = ("flashinfer",)
    assert _whole("import torch\n", libraries) is None  # (`pkg/nvidia/model.py`: a name)
    found = _whole('"""Doc."""\nimport torch\nfrom flashinfer import norm\n', libraries)
    assert found == ("library-import", 3)
    # The body of a `with` always runs (an import under a patch of what it reads).
    found = _whole("with patch('x', return_value=[]):\n    import flashinfer\n", libraries)
    assert found == ("library-import", 2)
    for optional in (
        "try:\n    import flashinfer\nexcept ImportError:\n    pass\n",
        "if HAVE:\n    import flashinfer\n",
        "def f():\n    import flashinfer\n",
        "from .flashinfer import norm\n",
        "with contextlib.suppress(ImportError):\n    import flashinfer\n",
        "with suppress(ImportError):\n    import flashinfer\n",
    ):
        assert _whole(optional, libraries) is None, optional


BUILDER = "from torch.utils.cpp_extension import load\n"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        # exllamav2's shape: a flag set when the prebuilt extension is missing, then a build
        # under it (in a `try` that only cleans up), its sources named in a list before it.
        (
            BUILDER + "try:\n    import ext_c\nexcept ModuleNotFoundError:\n    jit = True\n"
            "if jit:\n    srcs = ['a.cpp', 'cuda/q_gemm.cu']\n    try:\n"
            "        ext_c = load(name='e', sources=srcs)\n    finally:\n        done()\n",
            9,
        ),
        ("import torch.utils.cpp_extension as ce\n_ext = ce.load('e', [f'{d}/k.cu'])\n", 2),
        ("import torch\nm = torch.utils.cpp_extension.load_inline('m', '', cuda_sources=[K])\n", 2),
        (
            "from torch.utils import cpp_extension\nm = cpp_extension.load('m', S, with_cuda=True)\n",
            2,
        ),
        # A `try` whose every handler raises again lets no failure pass.
        (
            BUILDER
            + "try:\n    m = load('m', ['k.cu'])\nexcept OSError as e:\n    raise Err() from e\n",
            3,
        ),
    ],
)
def test_a_module_that_builds_its_own_cuda_extension_as_it_is_imported_is_cuda_only(source, line):
    assert _whole(source) == ("extension-build", line)


@pytest.mark.parametrize(
    "source",
    [
        BUILDER + "def build():\n    return load('m', ['k.cu'])\n",  # built when first needed
        BUILDER + "class Ops:\n    ext = load('m', ['k.cu'])\n",
        BUILDER + "if torch.cuda.is_available():\n    m = load('m', ['k.cu'])\n",
        BUILDER + "if CUDA_HOME is None:\n    m = None\nelse:\n    m = load('m', ['k.cu'])\n",
        BUILDER + "try:\n    m = load('m', ['k.cu'])\nexcept Exception:\n    m = None\n",
        BUILDER + "with suppress(Exception):\n    m = load('m', ['k.cu'])\n",
        BUILDER + "m = load('m', ['ops.cpp'])\n",  # C++ only: builds on any machine
        BUILDER + "m = load_inline('m', cpp_sources=[S], cuda_sources=None)\n",
        "from mylib import load\nm = load('m', ['k.cu'])\n",  # not torch's builder
    ],
)
def test_a_build_that_may_not_run_or_builds_no_cuda_does_not_make_the_module_cuda_only(source):
    assert _whole(source) is None


def _write(root: Path, config: str = "") -> None:
    tree(
        root,
        {
            "pyproject.toml": "[project]\nname = 'x'\n" + textwrap.dedent(config),
            "pkg/fast.py": "import flashinfer\n" + SYNC,
            "pkg/mine.py": "import vendor_kernels\n" + SYNC,
            "pkg/waived.py": "import torch\ntorch.cuda.synchronize()  # vendor-sanctioned\n",
            "pkg/commented.py": "import torch\ntorch.cuda.synchronize()  #ignore-cuda\n",
            "pkg/named.py": SYNC.replace("def step", "def step_cuda"),
        },
    )


def _reported(root: Path) -> list[str]:
    result = run_cli("check", "pkg", "--no-cache", "--output-format", "json", cwd=root)
    return sorted(Path(item["filename"]).name for item in json.loads(result.stdout))


def test_with_no_configuration_the_conventions_silence_and_a_configuration_extends_them(tmp_path):
    _write(tmp_path)
    assert _reported(tmp_path) == ["mine.py", "named.py", "waived.py"]  # (a name is no evidence)
    _write(
        tmp_path,
        """
        [tool.portlint]
        extend-cuda-only-imports = ["vendor_kernels"]
        extend-noqa-markers = ["# vendor-sanctioned"]
        """,
    )
    assert _reported(tmp_path) == ["named.py"]


def test_waivers_and_the_whole_model_can_be_switched_off(tmp_path):
    """With the platform model, ``platform-inferences`` keeps the waiving comments where it
    names ``waivers``; ``[]`` reports every finding as the rules find it."""
    _write(tmp_path, '[tool.portlint]\nplatform-inferences = ["names"]\n')
    assert _reported(tmp_path) == ["commented.py", "mine.py", "named.py", "waived.py"]
    _write(tmp_path, "[tool.portlint]\nplatform-inferences = []\ncuda-only-imports = []\n")
    assert _reported(tmp_path) == ["commented.py", "fast.py", "mine.py", "named.py", "waived.py"]


@pytest.mark.parametrize(
    ("comment", "waived"),
    [
        ("#ignore-cuda", True), ("# ignore-cuda", True), ("# allow_cuda", True),
        ("# cuda-ok", True), ("# CUDA only", True), ("# cuda-only: the NVLink path", True),
        # a comment about the code, not a waiver of it
        ("# CUDA only supports fp16 here", False), ("# ignore cudagraphs", False),
        ("# TODO: make this cuda-only path portable", False),
    ],
)  # fmt: skip
def test_a_comment_that_waives_cuda_by_name_silences_its_line(tmp_path, comment, waived):
    tree(tmp_path, {"pkg/m.py": f"import torch\ntorch.cuda.synchronize()  {comment}\n"})
    result = run_cli("check", "pkg", "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert (json.loads(result.stdout) == []) is waived, result.stdout


def test_an_unknown_inference_is_a_configuration_error(tmp_path):
    _write(tmp_path, '[tool.portlint]\nplatform-inferences = ["imports", "vibes"]\n')
    result = run_cli("check", "pkg", cwd=tmp_path)
    assert result.returncode == 2
    assert "platform-inferences: unknown vibes" in result.stderr


def test_show_silenced_gives_each_silenced_finding_its_reason_and_line(tmp_path):
    _write(tmp_path, '[tool.portlint]\nextend-noqa-markers = ["# vendor-sanctioned"]\n')
    result = run_cli("check", "pkg", "--show-silenced", cwd=tmp_path)
    assert result.returncode == 1  # mine.py still has its finding
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pkg/mine.py:6:5: PORT401")
    assert lines[1].startswith("pkg/named.py:5:5: PORT401")  # (a name is no evidence)
    assert lines[2] == "Silenced (3), with the reason and the line that gives it:"
    assert lines[3].startswith("pkg/commented.py:2:1: PORT401") and lines[4] == (
        "    waiver: the line's comment `#ignore-cuda` waives CUDA (line 2)"
    )
    assert lines[5].startswith("pkg/fast.py:6:5: PORT401") and lines[6] == (
        "    library-import: `flashinfer` is imported, which exists only for NVIDIA or AMD GPUs "
        "(line 1)"
    )
    assert lines[7].startswith("pkg/waived.py:2:1: PORT401") and lines[8] == (
        "    waiver: the line is marked `# vendor-sanctioned` (extend-noqa-markers) (line 2)"
    )
    assert lines[9] == "By kind: waiver 2, library-import 1"
    as_json = run_cli("check", "pkg", "--show-silenced", "--output-format", "json", cwd=tmp_path)
    items = json.loads(as_json.stdout)
    assert [i.get("silenced", {}).get("kind") for i in items] == [
        None,
        None,
        "waiver",
        "library-import",
        "waiver",
    ]
    refused = run_cli("check", "pkg", "--show-silenced", "--output-format", "junit", cwd=tmp_path)
    assert refused.returncode == 2 and "--show-silenced works with" in refused.stderr


def test_show_silenced_gives_what_a_rule_holds_back_its_reason_too(tmp_path):
    source = (
        "import torch\nfrom unittest import mock\n\n\ndef seed_all(seed):\n"
        "    torch.manual_seed(seed)\n    torch.cuda.manual_seed_all(seed)\n\n\n"
        "def test_x():\n"
        '    m = mock.MagicMock(return_value=torch.zeros(1, device="cuda"))\n'  # 11
        '    with mock.patch("a.b", torch.device("cuda")):\n        pass\n'  # 12
        '    m.return_value = torch.ones(2, device="cuda")\n'  # 14
        '    torch.zeros(3, device="cuda")\n'  # 15: no test double: a finding
        "    try:\n        pass\n    except torch.cuda.OutOfMemoryError:\n        pass\n"  # 18
    )
    tree(tmp_path, {"pkg/t.py": source})
    result = run_cli("check", "pkg", "--no-cache", "--output-format", "concise", cwd=tmp_path)
    assert [line.split(" ")[0] for line in result.stdout.splitlines() if " PORT" in line] == [
        "pkg/t.py:15:27:"
    ]
    shown = run_cli(
        "check", "pkg", "--no-cache", "--show-silenced", "--output-format", "json", cwd=tmp_path
    )
    held = [(i["location"]["row"], i["code"], i["silenced"]) for i in json.loads(shown.stdout)[1:]]
    double = "the device is data for a test double ({})"
    assert held == [
        (7, "PORT404", {
            "kind": "rule",
            "why": "the same block seeds every device with `torch.manual_seed(seed)`",
            "line": 6,
        }),
        (11, "PORT101", {"kind": "rule", "why": double.format("`return_value=`"), "line": 11}),
        (12, "PORT101", {"kind": "rule", "why": double.format("`mock.patch(...)`"), "line": 12}),
        (14, "PORT101", {
            "kind": "rule", "why": double.format("`.return_value = ...`"), "line": 14
        }),
        (18, "PORT403", {
            "kind": "rule",
            "why": "`torch.cuda.OutOfMemoryError` is `torch.OutOfMemoryError` by another name, "
            "on every device",
            "line": 18,
        }),
    ]  # fmt: skip


def test_what_follows_a_use_of_a_cuda_only_library_in_its_block_runs_only_there(tmp_path):
    source = (
        "import torch\n\nif HAVE_SMP:\n    import smdistributed.modelparallel.torch as smp\n\n\n"
        "def setup(self):\n    if self.use_cpu:\n        self.n_gpu = 0\n"
        "    elif self.smp:\n"
        '        device = torch.device("cuda", smp.local_rank())\n'  # 11
        "        torch.cuda.set_device(device)\n"  # 12
        "    torch.cuda.synchronize()\n"  # 13: after the block: a finding
    )
    tree(tmp_path, {"pkg/args.py": source})
    result = run_cli(
        "check", "pkg", "--no-cache", "--show-silenced", "--output-format", "json", cwd=tmp_path
    )
    found = [(i["location"]["row"], i.get("silenced")) for i in json.loads(result.stdout)]
    why = {
        "kind": "library-use",
        "why": "`smp` of `smdistributed` is used, which exists only for NVIDIA or AMD GPUs",
        "line": 11,
    }
    assert found == [(13, None), (11, why), (12, why)]


def test_a_guard_on_a_value_made_only_on_cuda_says_which_value(tmp_path):
    source = (
        "import torch\nfrom pkg.platform import is_cuda\n\n\nclass Block:\n"
        "    def __init__(self):\n        self.side = torch.cuda.Stream() if is_cuda() else None\n\n"
        "    def forward(self):\n        if self.side is not None:\n"
        "            torch.cuda.synchronize()\n"
    )
    tree(tmp_path, {"pkg/block.py": source})
    result = run_cli("check", "pkg", "--no-cache", "--show-silenced", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[lines.index(next(x for x in lines if x.startswith("pkg/block.py:11:13"))) + 1] == (
        "    none-test: `self.side` is made only under `is_cuda()` (line 7)"
    )
