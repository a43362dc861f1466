"""The project index: what the modules of a tree say of each other's findings (callers that are
all guarded, importers that all run only on CUDA, a shim that rebinds `torch.cuda` attributes),
how it keeps up with edits through the cache, and how `--fix` follows it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from portlint.index.reading import read_module
from tests.helpers import run_cli, tree
from tests.test_model import DEVICE_TYPE_MODULE

SYNC = "import torch\n\n\ndef sync():\n    torch.cuda.synchronize()\n"
GUARDED_CALL = (  # (a requirement: a check whose other arm does something of its own)
    "import torch\n\nfrom pkg.steps import sync\n\n\ndef run():\n"
    "    if not torch.cuda.is_available():\n        raise RuntimeError('CUDA only')\n"
    "    sync()\n"
)
UNGUARDED_CALL = "from pkg.steps import sync\n\n\ndef run():\n    sync()\n"


def _project(tmp_path, files: dict[str, str], config: str = "") -> None:
    tree(tmp_path, {"pyproject.toml": f"[tool.portlint]\n{config}", "pkg/__init__.py": "", **files})


def _findings(tmp_path, *args: str) -> list[str]:
    result = run_cli("check", "pkg", "--output-format", "concise", "-q", *args, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return [line for line in result.stdout.splitlines() if ": PORT" in line]


def _silenced(tmp_path) -> list[dict]:
    result = run_cli(
        "check", "pkg", "--show-silenced", "--output-format", "json", "--no-cache", cwd=tmp_path
    )
    return [i for i in json.loads(result.stdout) if "silenced" in i]


def test_a_function_whose_every_caller_is_guarded_runs_only_on_cuda(tmp_path):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    assert _findings(tmp_path, "--no-cache") == []
    check, use = _silenced(tmp_path)  # (by path)
    assert use["filename"].endswith("pkg/steps.py") and use["location"]["row"] == 5
    assert use["silenced"] == {
        "kind": "callers",
        "why": "every use of `sync` in the project runs only on CUDA: pkg/main.py:9",
        "line": 4,
    }
    # The requirement that confines the call states what the function needs: no finding.
    assert check["filename"].endswith("pkg/main.py") and check["location"]["row"] == 7
    assert check["silenced"]["kind"] == "check"


@pytest.mark.parametrize(
    "caller",
    [
        UNGUARDED_CALL,
        # a use that is not a call (a callback) may run anywhere
        "from pkg.steps import sync\n\nHOOKS = [sync]\n",
        # guarded here, unguarded there
        GUARDED_CALL + "\n\ndef other():\n    sync()\n",
    ],
)
def test_one_unguarded_use_keeps_the_finding(tmp_path, caller):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": caller})
    found = [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")]
    assert ["pkg/steps.py:5:5:", "PORT401"] in found


def test_a_function_nobody_in_the_project_calls_is_its_users_to_call(tmp_path):
    _project(tmp_path, {"pkg/steps.py": SYNC})
    assert [line.split(" ")[0] for line in _findings(tmp_path, "--no-cache")] == [
        "pkg/steps.py:5:5:"
    ]


def test_functions_that_only_call_each_other_prove_nothing(tmp_path):
    steps = SYNC + "\n\ndef again():\n    sync()\n    again()\n"
    caller = "from pkg.steps import again\n\n\ndef run():\n    again()\n"
    _project(tmp_path, {"pkg/steps.py": steps, "pkg/main.py": caller})
    assert len(_findings(tmp_path, "--no-cache")) == 1


def test_guards_are_followed_through_callers_of_callers_aliases_and_reexports(tmp_path):
    middle = "from pkg import sync as do_sync\n\n\ndef middle():\n    do_sync()\n"
    top = (
        "import torch\n\nimport pkg.middle as m\n\n\ndef top():\n"
        "    if not torch.cuda.is_available():\n        raise RuntimeError('CUDA only')\n"
        "    m.middle()\n"
    )
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "from .steps import sync\n",
            "pkg/steps.py": SYNC,
            "pkg/middle.py": middle,
            "pkg/top.py": top,
        },
    )
    assert _findings(tmp_path, "--no-cache") == []
    use, check = _silenced(tmp_path)  # (by path: steps.py, top.py)
    assert use["silenced"]["why"] == (
        "every use of `sync` in the project runs only on CUDA: pkg/middle.py:5"
    )
    assert check["filename"].endswith("pkg/top.py") and check["silenced"]["kind"] == "check"


def test_a_class_built_only_under_a_guard_confines_its_methods(tmp_path):
    engine = (
        "import torch\n\n\nclass Engine:\n    def step(self):\n        torch.cuda.synchronize()\n"
    )
    factory = (
        "from pkg.platforms import current_platform\nfrom pkg.engine import Engine\n\n\n"
        "def make():\n    if current_platform.is_cuda_alike():\n        return Engine()\n"
        "    return None\n"
    )
    _project(tmp_path, {"pkg/engine.py": engine, "pkg/factory.py": factory})
    assert _findings(tmp_path, "--no-cache") == []


CONFTEST_SKIP = (
    "import pytest\nimport torch\n\n\n@pytest.fixture\ndef kernels():\n"
    "    if not torch.cuda.is_available():\n        pytest.skip('needs CUDA')\n    return {}\n"
)
REQUESTS_KERNELS = "import torch\n\n\ndef test_sync(kernels):\n    torch.cuda.synchronize()\n"


def test_a_test_requesting_a_conftest_fixture_that_skips_unless_cuda_runs_only_on_cuda(tmp_path):
    """pytest gives a test the fixture of its name from the nearest ``conftest.py`` above it
    (unless the module defines its own): a test under a folder whose ``conftest.py`` has a
    fixture that skips off CUDA runs only on CUDA, also when only the test file is linted."""
    files = {"pkg/conftest.py": CONFTEST_SKIP, "pkg/ops/__init__.py": ""}
    _project(tmp_path, {**files, "pkg/ops/test_sync.py": REQUESTS_KERNELS})
    assert _findings(tmp_path, "--no-cache") == []
    check, item = _silenced(tmp_path)  # (by path: the fixture's own check, the test)
    assert check["filename"].endswith("pkg/conftest.py") and check["location"]["row"] == 7
    assert item["filename"].endswith("pkg/ops/test_sync.py") and item["location"]["row"] == 5
    assert item["silenced"]["kind"] == "tests"
    assert (
        "requests `kernels`, a fixture that skips unless on CUDA (pkg/conftest.py:7)"
        in (item["silenced"]["why"])
    )
    result = run_cli("check", "pkg/ops/test_sync.py", "--no-cache", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stdout

    # The module's own fixture of that name is the one its tests get; a conftest.py in a folder
    # beside the test's is not above it.
    shadowing = "import pytest\n\n\n@pytest.fixture\ndef kernels():\n    return {}\n\n\n"
    _project(tmp_path, {"pkg/ops/test_sync.py": shadowing + REQUESTS_KERNELS})
    assert [f.partition(":")[0] for f in _findings(tmp_path, "--no-cache")] == [
        "pkg/ops/test_sync.py"
    ]
    (tmp_path / "pkg/ops/test_sync.py").unlink()
    _project(
        tmp_path, {"pkg/other/conftest.py": CONFTEST_SKIP, "pkg/ops/test_sync.py": REQUESTS_KERNELS}
    )
    (tmp_path / "pkg/conftest.py").unlink()
    assert len(_findings(tmp_path, "--no-cache")) == 1


NITRO_IMPL = (
    "import torch\n\n\nclass Model:\n    def run(self):\n        torch.cuda.synchronize()\n"
)


@pytest.mark.parametrize(
    ("top", "package"),
    [("fairchem", "fairchem.core"), ("src", "core")],
    ids=["namespace package", "src layout"],
)
def test_modules_of_a_namespace_package_are_named_as_their_project_imports_them(
    tmp_path, top, package
):
    """``fairchem/`` with no ``__init__.py`` above ``fairchem/core/`` is a namespace package
    (PEP 420): its modules import each other as ``fairchem.core...``, and the index must name
    them so to follow those imports; a ``src/`` folder that nothing imports by name is not
    one. Here the one import of a CUDA-only model package follows a check that raises off
    CUDA."""
    files = {
        "pyproject.toml": "[tool.portlint]\n",
        f"{top}/core/__init__.py": "",
        f"{top}/core/nitro/__init__.py": f"from {package}.nitro._impl import Model\n",
        f"{top}/core/nitro/_impl.py": NITRO_IMPL,
        f"{top}/core/predict.py": (
            "import torch\n\n\ndef load(dev):\n    if torch.device(dev).type != 'cuda':\n"
            f"        raise RuntimeError('needs CUDA')\n    from {package}.nitro import Model\n"
            "    return Model()\n"
        ),
    }
    tree(tmp_path, files)
    for cache in ("--no-cache", "--cache-dir=.cache", "--cache-dir=.cache"):  # (cold, warm)
        result = run_cli("check", top, cache, "--show-silenced", cwd=tmp_path)
        assert result.returncode == 0, result.stdout
        assert (
            f"every import of the module runs only on CUDA: {top}/core/nitro/__init__.py:1"
            in result.stdout
        )


def test_a_top_level_module_of_the_namespace_s_name_is_not_the_namespace_s(tmp_path):
    """``f5_tts/model/`` of the namespace ``f5_tts`` is ``f5_tts.model``; a ``model.py`` in a
    folder that is no package (a server's model repository) is ``model``, and what it needs
    says nothing of ``f5_tts.model``."""
    files = {
        "pyproject.toml": "[tool.portlint]\n",
        "f5_tts/model/__init__.py": "def make():\n    return 1\n",
        "f5_tts/runtime/repo/f5_tts/1/model.py": "import tensorrt\n",
        "f5_tts/infer/__init__.py": "",
        "f5_tts/infer/utils.py": (
            "import torch\n\nfrom f5_tts.model import make\n\ntorch.cuda.empty_cache()\n"
        ),
    }
    tree(tmp_path, files)
    result = run_cli("check", "f5_tts", "--no-cache", "--output-format=concise", cwd=tmp_path)
    assert "f5_tts/infer/utils.py:5:1: PORT403" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("caller", "reported"),
    [(UNGUARDED_CALL.replace("pkg.steps", "pkg.srt.utils.steps"), True),
     (GUARDED_CALL.replace("pkg.steps", "pkg.srt.utils.steps"), False)],
    ids=["an unguarded use", "a guarded use"],
)  # fmt: skip
def test_a_folder_without_init_inside_a_package_is_part_of_it(tmp_path, caller, reported):
    """``pkg/srt/`` with no ``__init__.py`` inside the package ``pkg`` is ``pkg.srt`` (a
    namespace portion, as SGLang's ``sglang/srt/``): ``from pkg.srt.utils.steps import sync``
    in another module is a use of ``sync``, which decides whether it runs only on CUDA."""
    _project(tmp_path, {"pkg/srt/utils/__init__.py": "", "pkg/srt/utils/steps.py": SYNC,
                        "pkg/srt/main.py": caller})  # fmt: skip
    found = [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")]
    assert (["pkg/srt/utils/steps.py:5:5:", "PORT401"] in found) is reported


def test_a_folder_without_init_put_on_sys_path_is_followed_by_its_own_names(tmp_path):
    """A vendored folder with no ``__init__.py`` (vLLM's ``fmha_sm100/cute/``) that a module
    puts on ``sys.path`` to import ``from interface import ...``: the import is followed to
    ``cute/interface.py``, which cannot be imported without CUTLASS."""
    _project(tmp_path, {
        "pkg/third/__init__.py": "",
        "pkg/third/cute/interface.py": "import cutlass\n\n\ndef attend():\n    return 1\n",
        "pkg/third/adapter.py": (
            "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), "
            "'cute'))\nfrom interface import attend  # noqa: E402\n"
        ),
        "pkg/third/api.py": "import torch\n\nfrom pkg.third.adapter import attend\n\n"
                            "torch.cuda.synchronize()\n",
    })  # fmt: skip
    assert _findings(tmp_path, "--no-cache") == []
    (why,) = [item["silenced"]["why"] for item in _silenced(tmp_path)]
    assert "`pkg.third.adapter`, which cannot be imported without `cutlass`" in why


def test_module_names_do_not_depend_on_the_order_the_facts_come_in(tmp_path):
    """Two files of one dotted name (folders that no package holds): the index names the
    same one in every run, whatever order the files were read in."""
    from portlint.index.modules import ModuleNames

    tree(tmp_path, {"a/utils/__init__.py": "", "a/utils/common.py": "", "b/utils/__init__.py": "",
                    "b/utils/common.py": ""})  # fmt: skip
    paths = [str(tmp_path / f"{top}/utils/common.py") for top in "ab"]
    named = [
        ModuleNames({p: {"imports": []} for p in order}, None, frozenset(), {}).path_of
        for order in (paths, paths[::-1])
    ]
    assert named[0] == named[1] == {"utils.common": paths[1]}


def test_a_module_imported_only_by_modules_that_run_only_on_cuda_runs_only_on_cuda(tmp_path):
    dispatch = (
        "from pkg.platforms import current_platform\n\n"
        "if current_platform.is_rocm():\n    from .amd.model import Model\n"
        "elif current_platform.is_cuda():\n    from .nvidia.model import Model\n"
    )  # (a plain `else` would be every platform but ROCm's: XPU too)
    files = {
        "pkg/models/__init__.py": dispatch,
        "pkg/models/amd/__init__.py": "",
        "pkg/models/amd/model.py": "from ..common import sync\n\nModel = 1\n",
        "pkg/models/nvidia/__init__.py": "",
        "pkg/models/nvidia/model.py": "from pkg.models.common import sync\n\nModel = 2\n",
        "pkg/models/common.py": SYNC,
    }
    _project(tmp_path, files)
    assert _findings(tmp_path, "--no-cache") == []
    (item,) = _silenced(tmp_path)
    assert item["silenced"]["kind"] == "callers" and item["silenced"]["why"] == (
        "every import of the module runs only on CUDA: pkg/models/amd/model.py:1, "
        "pkg/models/nvidia/model.py:1"
    )
    # A test that imports the shared module runs anywhere.
    _project(tmp_path, {**files, "pkg/test_common.py": "from pkg.models import common\n"})
    assert len(_findings(tmp_path, "--no-cache")) == 1


NEEDS_FLASHINFER = "import flashinfer\n\n\ndef run(x):\n    return flashinfer.op(x)\n"


def test_a_module_that_imports_a_module_needing_a_cuda_only_library_needs_it_too(tmp_path):
    importer = (
        "import torch\n\nfrom {} import run\n\n\ndef step(x):\n    torch.cuda.synchronize()\n"
    )
    files = {
        "pkg/fi/__init__.py": "",
        "pkg/fi/ops.py": NEEDS_FLASHINFER,
        "pkg/direct.py": importer.format("pkg.fi.ops"),
        "pkg/relative.py": importer.format(".fi.ops"),
        "pkg/second.py": importer.format("pkg.direct"),  # (two hops)
        # the package's `__init__` needs it: every module in the package does
        "pkg/trt/__init__.py": "import tensorrt\n",
        "pkg/trt/engine.py": "import torch\n\n\ndef f():\n    torch.cuda.synchronize()\n",
        "pkg/trt/sub/__init__.py": "",
        "pkg/trt/sub/deep.py": "import torch\n\n\ndef f():\n    torch.cuda.synchronize()\n",
    }
    _project(tmp_path, files)
    assert _findings(tmp_path, "--no-cache") == []
    why = {i["filename"].rpartition("pkg/")[2]: i["silenced"] for i in _silenced(tmp_path)}
    needs = "cannot be imported without `{}` (a library only for NVIDIA or AMD GPUs)"
    assert why["direct.py"] == {
        "kind": "library-import",
        "why": "the module imports `pkg.fi.ops`, which " + needs.format("flashinfer"),
        "line": 3,
    }
    assert why["relative.py"]["why"] == why["direct.py"]["why"]
    assert why["second.py"]["why"] == (
        "the module imports `pkg.direct`, which " + needs.format("flashinfer")
    )
    assert why["trt/engine.py"] == {
        "kind": "library-import",
        "why": "its package `pkg.trt` " + needs.format("tensorrt"),
        "line": 0,
    }
    assert why["trt/sub/deep.py"]["why"] == "its package `pkg.trt.sub` " + needs.format("tensorrt")


def test_a_module_that_imports_a_module_building_a_cuda_extension_runs_only_on_cuda(tmp_path):
    """exllamav2's shape: `ext.py` builds the project's kernels from `.cu` sources as it is
    imported; every module that imports it, and every module of a package whose `__init__`
    does, runs only where that builds. A build left to a function does not count."""
    step = "\n\ndef step(x):\n    torch.cuda.synchronize()\n"
    files = {
        "pkg/__init__.py": "",
        "pkg/ext.py": "from torch.utils.cpp_extension import load\n\n"
        "ext_c = load(name='e', sources=['cuda/q_gemm.cu'])\n",
        "pkg/model.py": "import torch\n\nfrom pkg.ext import ext_c" + step,
        "pkg/lazy.py": "from torch.utils.cpp_extension import load\n\n\ndef build():\n"
        "    return load(name='e', sources=['cuda/q_gemm.cu'])\n",
        "pkg/portable.py": "import torch\n\nfrom pkg.lazy import build" + step,
    }
    _project(tmp_path, files)
    assert [f.partition(": ")[0] for f in _findings(tmp_path, "--no-cache")] == [
        "pkg/portable.py:6:5"
    ]
    why = {i["filename"].rpartition("pkg/")[2]: i["silenced"] for i in _silenced(tmp_path)}
    assert why["model.py"] == {
        "kind": "library-import",
        "why": "the module imports `pkg.ext`, which cannot be imported without building a CUDA "
        "extension from `.cu` sources",
        "line": 3,
    }


def test_a_project_that_is_a_library_of_the_table_imports_its_own_modules(tmp_path):
    """Megatron Core is `megatron` of the table: linted itself, its `import megatron.core...`
    are its own modules; a project that uses it imports a CUDA-only library."""
    uses = "import torch\n\nfrom megatron.core import parallel\n\n\ndef f():\n    torch.cuda.synchronize()\n"
    files = {
        "pyproject.toml": "",
        "megatron/core/__init__.py": "",
        "megatron/core/parallel.py": "",
        "megatron/core/utils.py": uses,
    }
    tree(tmp_path, files)
    result = run_cli("check", "megatron", "--no-cache", "--output-format", "concise", cwd=tmp_path)
    assert [line.split(" ")[0] for line in result.stdout.splitlines() if " PORT" in line] == [
        "megatron/core/utils.py:7:5:"
    ]
    # Another project's module; a copy vendored deeper, whose absolute import is the library.
    vendored = "import torch\nimport megatron\n\n\ndef f():\n    torch.cuda.synchronize()\n"
    files = {"pkg/train.py": uses, "pkg/third_party/megatron/ops.py": vendored}
    _project(tmp_path, {**files, "pkg/third_party/__init__.py": ""})
    assert _findings(tmp_path, "--no-cache") == []


@pytest.mark.parametrize(
    "importer",
    [
        "try:\n    from pkg.fi.ops import run\nexcept ImportError:\n    run = None\n",
        "if HAVE:\n    from pkg.fi.ops import run\n",
        "def lazy():\n    from pkg.fi.ops import run\n    return run\n",
        "import contextlib\n\nwith contextlib.suppress(ImportError):\n    import pkg.fi.ops\n",
    ],
)
def test_an_import_that_may_fail_or_not_run_needs_nothing(tmp_path, importer):
    files = {"pkg/fi/__init__.py": "", "pkg/fi/ops.py": NEEDS_FLASHINFER}
    source = (
        f"import torch\n\nHAVE = False\n{importer}\n\ndef step():\n    torch.cuda.synchronize()\n"
    )
    _project(tmp_path, {**files, "pkg/main.py": source})
    assert [line.split(" ")[1] for line in _findings(tmp_path, "--no-cache")] == ["PORT401"]


def test_code_after_an_import_of_a_module_needing_a_cuda_only_library_in_its_block(tmp_path):
    source = (
        "import torch\n\n\nclass Runner:\n    def step(self, x):\n"
        "        torch.cuda.synchronize()\n"  # 6: before the import: reported
        "        from .fi.ops import run\n"  # 7
        "        if x:\n            torch.cuda.synchronize()\n"  # 9: after it: silent
        "        def inner():\n            torch.cuda.synchronize()\n"  # 11: silent
        "        return run(x), inner\n\n"
        "    def other(self):\n        torch.cuda.synchronize()\n"  # 15: another method
        "\n\ndef branch(fa4):\n    if fa4:\n        from pkg.fi import ops\n"  # 20
        "        torch.cuda.synchronize()\n"  # 21: the same branch: silent
        "    else:\n        torch.cuda.synchronize()\n"  # 23: the other branch
        "    try:\n        import pkg.fi.ops\n        torch.cuda.synchronize()\n"  # 26: silent
        "    except ImportError:\n        pass\n"
        "    torch.cuda.synchronize()\n"  # 29: after the `try`: it may have failed
    )
    files = {"pkg/fi/__init__.py": "", "pkg/fi/ops.py": NEEDS_FLASHINFER, "pkg/main.py": source}
    _project(tmp_path, files)
    assert [line.split(" ")[0] for line in _findings(tmp_path, "--no-cache")] == [
        "pkg/main.py:6:9:",
        "pkg/main.py:15:9:",
        "pkg/main.py:23:9:",
        "pkg/main.py:29:5:",
    ]
    silenced = _silenced(tmp_path)
    assert [i["location"]["row"] for i in silenced] == [9, 11, 21, 26]
    assert silenced[0]["silenced"] == {
        "kind": "library-import",
        "why": "it follows an import of `pkg.fi.ops`, which cannot be imported "
        "without `flashinfer` (a library only for NVIDIA or AMD GPUs)",
        "line": 7,
    }
    assert silenced[2]["silenced"]["line"] == 20
    # The inference is the `imports` one: switched off with it.
    _project(tmp_path, files, 'platform-inferences = ["names", "callers"]\n')
    assert len(_findings(tmp_path, "--no-cache")) == 8


SHIM = (
    "import torch\n\n\ndef use_xpu():\n    torch.cuda.Event = torch.xpu.Event\n"
    "    if supports_xpu_graph():\n        torch.cuda.graph = torch.xpu.graph\n"
)
USES = "import torch\n\n\ndef timing():\n    return torch.cuda.Event(), torch.cuda.graph\n"


def test_an_attribute_the_project_rebinds_unconditionally_is_its_own(tmp_path):
    """A device shim's rebinding holds wherever the shim applies. One made only under a test,
    even a test of the device it rebinds to (vLLM's `if supports_xpu_graph():`), does not: where
    the test fails the name is CUDA's, and a capture that looks at no graph setting raises
    there (vLLM's Gemma 4 centroids, read real by the vLLM index audit)."""
    _project(tmp_path, {"pkg/shim.py": SHIM, "pkg/timing.py": USES})
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/timing.py:5:32:", "PORT407"]
    ]
    (item,) = _silenced(tmp_path)
    assert (item["location"]["row"], item["location"]["column"]) == (5, 12)
    assert item["silenced"]["why"] == (
        "the project rebinds `torch.cuda.Event` to its own (pkg/shim.py:5)"
    )


def test_platform_inferences_switch_the_project_inferences_off(tmp_path):
    files = {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL, "pkg/shim.py": SHIM}
    _project(tmp_path, {**files, "pkg/timing.py": USES}, "platform-inferences = []\n")
    # sync, the check of its call, Event and graph
    assert len(_findings(tmp_path, "--no-cache")) == 4


def test_a_warm_run_sees_an_edit_of_another_module(tmp_path):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    assert _findings(tmp_path) == []
    assert _findings(tmp_path) == []  # warm: both files from the cache
    (tmp_path / "pkg" / "main.py").write_text(UNGUARDED_CALL)
    assert [line.split(" ")[0] for line in _findings(tmp_path)] == ["pkg/steps.py:5:5:"]
    (tmp_path / "pkg" / "main.py").write_text(GUARDED_CALL)
    assert _findings(tmp_path) == []


def _verdicts(tmp_path) -> Path:
    (found,) = (tmp_path / ".portlint_cache").glob("index-*/verdicts.json")
    return found


def _moved(text: str) -> str:
    return "# a comment\n\n\n" + text.replace("\n\n\ndef", "\n\n\n# here\ndef", 1)


def test_an_edit_that_only_moves_lines_keeps_the_verdicts_where_things_are_now(tmp_path):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    assert _findings(tmp_path) == []
    kept = _verdicts(tmp_path).stat().st_mtime_ns
    # The check that confines `sync` moves to line 10: the verdicts name its row, not its line.
    (tmp_path / "pkg" / "main.py").write_text(_moved(GUARDED_CALL))
    (tmp_path / "pkg" / "steps.py").write_text(_moved(SYNC))
    assert _findings(tmp_path) == [] == _findings(tmp_path, "--no-cache")
    assert _verdicts(tmp_path).stat().st_mtime_ns == kept  # (not joined again)
    # A new use of `sync` that nothing guards changes the shape: joined again, and neither
    # `sync` nor the check of its other call is confined any more.
    (tmp_path / "pkg" / "other.py").write_text(UNGUARDED_CALL)
    found = [line.split(" ")[0] for line in _findings(tmp_path)]
    assert found == ["pkg/steps.py:9:5:"]  # (the requirement stays no finding)
    assert _verdicts(tmp_path).stat().st_mtime_ns != kept


@pytest.mark.parametrize("damage", ["removed", "torn", "rewritten"])
def test_facts_not_where_the_table_says_are_read_again_from_the_source(tmp_path, damage):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    assert _findings(tmp_path) == []
    (pack,) = _verdicts(tmp_path).parent.glob("facts-*.pack")
    data = pack.read_bytes()
    if damage == "removed":
        pack.unlink()
    elif damage == "torn":
        pack.write_bytes(data[: len(data) // 2])
    else:  # (another run's pack of the same name, another order)
        pack.write_bytes(data[len(data) // 2 :] + data[: len(data) // 2])
    (tmp_path / "pkg" / "main.py").write_text(_moved(GUARDED_CALL))
    assert _findings(tmp_path) == []
    (tmp_path / "pkg" / "main.py").write_text(_moved(UNGUARDED_CALL))
    assert [line.split(" ")[0] for line in _findings(tmp_path)] == ["pkg/steps.py:5:5:"]


def test_a_pack_mostly_of_facts_no_entry_names_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setattr("portlint.index.store.SLACK", 0)
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    for text in (UNGUARDED_CALL, GUARDED_CALL) * 3:  # (dead facts: soon twice the live ones)
        (tmp_path / "pkg" / "main.py").write_text(text)
        _findings(tmp_path)
    packs = sorted(p.name for p in _verdicts(tmp_path).parent.glob("facts-*.pack"))
    assert packs[-1] != "facts-0.pack"  # (the first is removed once no run can be reading it)
    (tmp_path / "pkg" / "main.py").write_text(_moved(UNGUARDED_CALL))
    assert [line.split(" ")[0] for line in _findings(tmp_path)] == ["pkg/steps.py:5:5:"]


def test_the_store_reads_back_what_it_stored_after_its_pack_is_rewritten(tmp_path, monkeypatch):
    from portlint.index.store import IndexStore

    monkeypatch.setattr("portlint.index.store.SLACK", 0)
    facts = {}
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.py").write_text(f"def {name}():\n    pass\n")
        facts[str(tmp_path / f"{name}.py")] = read_module(ast.parse(f"def {name}(): pass"), set())
    store = IndexStore(tmp_path / "cache", frozenset())
    for path, found in facts.items():
        store.store(path, "digest", found)
    for round_ in range(
        4
    ):  # (the same file's facts again and again: the pack fills with dead ones)
        facts[str(tmp_path / "a.py")] = {**facts[str(tmp_path / "a.py")], "round": round_}
        store.update(str(tmp_path / "a.py"), facts[str(tmp_path / "a.py")])
    store.save()
    again = IndexStore(tmp_path / "cache", frozenset())
    assert again.generation == 1
    assert {path: again.read(again.entry(path)) for path in facts} == facts
    # (the old pack stays until no run can still be reading it)
    assert sorted(p.name for p in again.facts_folder.glob("*.pack")) == [
        "facts-0.pack",
        "facts-1.pack",
    ]


EDITS = [
    ("pkg/main.py", UNGUARDED_CALL),
    ("pkg/main.py", _moved(GUARDED_CALL)),
    ("pkg/steps.py", _moved(SYNC)),
    ("pkg/shim.py", _moved(SHIM)),
    ("pkg/fi/ops.py", "import torch\n\n\ndef run(x):\n    return x\n"),
    ("pkg/fi/ops.py", _moved(NEEDS_FLASHINFER)),
    ("pkg/direct.py", "import torch\n\n\ndef step(x):\n    torch.cuda.synchronize()\n"),
    ("pkg/timing.py", _moved(USES)),
    ("pkg/shim.py", "x = 1\n"),
]


def test_a_warm_run_after_each_edit_finds_what_a_cold_run_finds(tmp_path):
    _project(
        tmp_path,
        {
            "pkg/steps.py": SYNC,
            "pkg/main.py": GUARDED_CALL,
            "pkg/shim.py": SHIM,
            "pkg/timing.py": USES,
            "pkg/fi/__init__.py": "",
            "pkg/fi/ops.py": NEEDS_FLASHINFER,
            "pkg/direct.py": "import torch\n\nfrom pkg.fi.ops import run\n\n\n"
            "def step(x):\n    torch.cuda.synchronize()\n",
        },
    )
    _findings(tmp_path)
    for path, text in EDITS:
        (tmp_path / path).write_text(text)
        assert _findings(tmp_path) == _findings(tmp_path, "--no-cache"), path


def test_fix_leaves_alone_what_the_project_silences(tmp_path):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    result = run_cli("check", "pkg", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "pkg" / "steps.py").read_text() == SYNC
    (tmp_path / "pkg" / "main.py").write_text(UNGUARDED_CALL)
    run_cli("check", "pkg", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert "torch.accelerator.synchronize()" in (tmp_path / "pkg" / "steps.py").read_text()


def test_the_index_keeps_only_uses_that_can_name_the_project(tmp_path):
    source = (
        "import os\nimport torch\nfrom pkg.a import f\nfrom . import b\n\n\n"
        "def g():\n    os.getcwd()\n    torch.zeros(1)\n    f()\n    b.h()\n    g()\n"
    )
    facts = read_module(ast.parse(source), frozenset({"pkg"}))
    assert [use[0] for use in facts["uses"]] == ["f", "b.h", "g"]
    assert facts["units"] == [["g", 7, 12]]


# --- int64 findings across modules, judged by the kernel's contract ----------------------------
KERNELS = (
    "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
    "def prepare_kernel(query_len_ptr, num_rejected_ptr, out_ptr):\n"
    "    pid = tl.program_id(0)\n"
    "    query_len = tl.load(query_len_ptr + pid).to(tl.int32)\n"
    "    i = query_len - tl.load(num_rejected_ptr + pid)\n"
    "    if pid == 0:\n"
    "        i = pid\n"
    "    tl.store(out_ptr + pid, i)\n"
)
SAMPLER = (
    "import torch\n\nfrom {import_line}\n\n\n"
    "def sample(query_lens, num_reqs, out):\n"
    "    sampled = torch.empty(num_reqs, 4, dtype=torch.int64)\n"
    "    num_sampled = sampled.new_empty(num_reqs)\n"
    "    num_rejected = torch.empty_like(num_sampled)\n"
    "    {kernel}[(num_reqs,)](query_lens, num_rejected, out)\n"
)


@pytest.mark.parametrize(
    ("files", "import_line", "kernel"),
    [
        ({}, "pkg.kernels import prepare_kernel", "prepare_kernel"),
        ({}, "pkg.kernels import prepare_kernel as prepare", "prepare"),
        ({}, "pkg import kernels", "kernels.prepare_kernel"),
        ({"pkg/__init__.py": "from .kernels import prepare_kernel\n"}, "pkg import prepare_kernel",
         "prepare_kernel"),
    ],
)  # fmt: skip
def test_the_seed_across_two_modules_is_flagged_at_the_new_tensor_and_at_the_launch(
    tmp_path, files, import_line, kernel
):
    sampler = SAMPLER.format(import_line=import_line, kernel=kernel)
    _project(tmp_path, {**files, "pkg/kernels.py": KERNELS, "pkg/sampler.py": sampler})
    result = run_cli("check", "pkg", "--output-format", "json", "--no-cache", cwd=tmp_path)
    found = {(item["code"], item["location"]["row"]): item for item in json.loads(result.stdout)}
    assert sorted(found) == [("PORT201", 8), ("PORT202", 10)]
    launch = found["PORT202", 10]
    assert launch["message"] == (
        "Triton kernel `prepare_kernel` needs int32 for `num_rejected_ptr`; give this tensor "
        "`dtype=torch.int32`"
    )
    assert "`i` meets an int32 value at pkg/kernels.py:11" in launch["detail"]
    assert launch["location"]["column"] == len(f"    {kernel}[(num_reqs,)](query_lens, ") + 1
    assert found["PORT201", 8]["detail"].startswith(
        "It reaches Triton kernel `prepare_kernel` (pkg/kernels.py:11), which needs int32 for "
        "`num_rejected_ptr`."
    )
    # The fixed form is silent.
    fixed = sampler.replace("new_empty(num_reqs)", "new_empty(num_reqs, dtype=torch.int32)")
    (tmp_path / "pkg" / "sampler.py").write_text(fixed)
    assert _findings(tmp_path, "--no-cache") == []


def test_a_kernel_that_takes_any_width_gets_int64_silently(tmp_path):
    kernels = KERNELS.replace("    if pid == 0:\n        i = pid\n", "")
    sampler = SAMPLER.format(
        import_line="pkg.kernels import prepare_kernel", kernel="prepare_kernel"
    )
    _project(tmp_path, {"pkg/kernels.py": kernels, "pkg/sampler.py": sampler})
    assert _findings(tmp_path, "--no-cache") == []


def test_a_new_tensor_given_to_a_wrapper_that_launches_the_kernel_reaches_it(tmp_path):
    wrapper = (
        "from pkg.kernels import prepare_kernel\n\n\n"
        "def prepare(query_lens, num_rejected, out):\n"
        "    prepare_kernel[(1,)](query_lens, num_rejected, out)\n\n\n"
        "def record(stats, num_rejected):\n    stats.append(num_rejected.sum())\n"
    )
    caller = (
        "import torch\n\nfrom pkg.wrapper import prepare, record\n\n\n"
        "def sample(query_lens, out, stats):\n"
        "    sampled = torch.empty(4, dtype=torch.int64)\n"
        "    num_rejected = sampled.new_empty(4)\n"
        "    prepare(query_lens, num_rejected, out)\n"
        "    kept = sampled.new_zeros(4)\n"
        "    record(stats, kept)\n"
    )
    files = {"pkg/kernels.py": KERNELS, "pkg/wrapper.py": wrapper, "pkg/sampler.py": caller}
    _project(tmp_path, files)
    found = _findings(tmp_path, "--no-cache")
    # `num_rejected` reaches the kernel through `prepare`; `kept` goes only to torch's `sum`.
    assert [line.split(" ")[:2] for line in found] == [["pkg/sampler.py:8:20:", "PORT201"]]
    result = run_cli("check", "pkg", "--output-format", "json", "--no-cache", cwd=tmp_path)
    (finding,) = json.loads(result.stdout)
    assert finding["detail"].startswith(
        "It is given to `prepare`, and Triton kernel `prepare_kernel` (pkg/kernels.py:11) needs "
        "int32 for `num_rejected_ptr`."
    )


STREAMS = "import torch\n\n\ndef capture_stream():\n    return torch.cuda.current_stream()\n"
CAPTURE = (
    "import torch\n\nfrom pkg.streams import capture_stream\n\n\n"
    "def capture(model, x, g):\n    model(x)\n"
    "    with torch.cuda.graph(g, stream=capture_stream()):\n        model(x)\n"
)


def test_a_project_function_that_returns_the_ambient_stream_is_found_not_listed(tmp_path):
    _project(tmp_path, {"pkg/streams.py": STREAMS, "pkg/capture.py": CAPTURE})
    args = ("--select", "PORT301")
    # As `stream-functions = ["pkg.streams.capture_stream"]` would say; the cache keeps up.
    for cache in ("--no-cache", "--cache-dir=.cache", "--cache-dir=.cache"):
        assert [line.split(" ")[:2] for line in _findings(tmp_path, cache, *args)] == [
            ["pkg/capture.py:8:10:", "PORT301"]
        ]
    (tmp_path / "pkg" / "streams.py").write_text(STREAMS.replace("current_stream()", "Stream()"))
    assert _findings(tmp_path, "--cache-dir=.cache", *args) == []


def test_a_stream_helper_of_a_namespace_package_is_found_by_the_name_it_is_imported_by(
    tmp_path,
):
    files = {
        "pyproject.toml": "[tool.portlint]\n",
        "ns/pkg/__init__.py": "",
        "ns/pkg/streams.py": STREAMS,
        "ns/pkg/capture.py": CAPTURE.replace("from pkg.streams", "from ns.pkg.streams"),
    }
    tree(tmp_path, files)
    result = run_cli("check", "ns", "--select", "PORT301", "--no-cache", "-q", cwd=tmp_path)
    assert [line.split(" ")[:2] for line in result.stdout.splitlines() if "PORT" in line] == [
        ["ns/pkg/capture.py:8:10:", "PORT301"]
    ]


def test_a_new_tensor_stored_in_a_project_class_is_the_projects_to_judge(tmp_path):
    source = (
        "import torch\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Result:\n"
        "    output_ids: torch.Tensor\n\n\n"
        "def pack(tokens):\n    tokens = tokens.to(dtype=torch.int64)\n"
        "    output_ids = tokens.new_zeros((4, 2))\n    return Result(output_ids=output_ids)\n"
    )
    _project(tmp_path, {"pkg/pack.py": source})
    assert _findings(tmp_path, "--no-cache") == []
    # The same tensor given to another library's function: portlint cannot see what it needs.
    elsewhere = source.replace("return Result(", "return other_library.pack(").replace(
        "import torch\n", "import other_library\nimport torch\n", 1
    )
    (tmp_path / "pkg" / "pack.py").write_text(elsewhere)
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/pack.py:13:18:", "PORT201"]
    ]


def test_a_run_on_one_file_sees_the_rest_of_the_project(tmp_path):
    """As a pre-commit hook runs it: only the changed file is reported on, but its callers in
    the rest of the project (the folder of its pyproject.toml) are read for the index."""
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": GUARDED_CALL})
    for cache in ("--no-cache", "--cache-dir=.cache", "--cache-dir=.cache"):
        result = run_cli("check", "pkg/steps.py", cache, cwd=tmp_path)
        assert (result.returncode, result.stdout.strip()) == (0, "All checks passed!"), cache
    (tmp_path / "pkg" / "main.py").write_text(UNGUARDED_CALL)  # not in the run, yet seen
    result = run_cli("check", "pkg/steps.py", "--cache-dir=.cache", "-q", cwd=tmp_path)
    assert result.stdout.startswith("pkg/steps.py:5:5: PORT401")


def test_a_patch_that_its_function_undoes_is_no_rebinding(tmp_path):
    patch = (
        "import torch\n\n\ndef build(model):\n    saved = torch.cuda.Stream\n"
        "    torch.cuda.Stream = torch.xpu.Stream\n    try:\n        return model()\n"
        "    finally:\n        torch.cuda.Stream = saved\n"
    )
    uses = "import torch\n\n\ndef side():\n    return torch.cuda.Stream()\n"
    _project(tmp_path, {"pkg/patch.py": patch, "pkg/uses.py": uses})
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/uses.py:5:12:", "PORT402"]
    ]


def test_a_run_where_nothing_changed_is_the_last_runs_answer(tmp_path):
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": UNGUARDED_CALL})
    first = _findings(tmp_path)
    (run,) = (tmp_path / ".portlint_cache").glob("*-run.json")
    assert [row[0] for row in json.loads(run.read_text())["violations"]] == ["pkg/steps.py"]
    assert _findings(tmp_path) == first  # (from the run's record)
    # --fix needs the project index, so it never takes the shortcut: the guarded caller counts.
    (tmp_path / "pkg" / "main.py").write_text(GUARDED_CALL)
    run_cli("check", "pkg", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert (tmp_path / "pkg" / "steps.py").read_text() == SYNC
    assert _findings(tmp_path) == []


def test_a_call_guarded_by_a_function_that_returns_a_cuda_test_confines_its_callee(tmp_path):
    """``if can_run(x): sync()``, where ``can_run`` returns ``x.is_cuda and ...``: a guard in the
    index's reading of the caller, as in the guard analysis of its own module."""
    caller = (
        "import torch\n\nfrom pkg.steps import sync\n\n\n"
        "def can_run(x):\n    return x.is_cuda and x.dim() == 4\n\n\n"
        "def run(x):\n    if can_run(x):\n        sync()\n"
    )
    plain = caller.replace("return x.is_cuda and", "return x.numel() > 4 and")
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": caller})
    # (The check itself is judged where it is: `.is_cuda` choosing a path.)
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/main.py:7:12:", "PORT409"]
    ]
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": plain})
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/steps.py:5:5:", "PORT401"]
    ]


def test_a_call_after_a_function_that_raises_unless_on_cuda_is_confined(tmp_path):
    """``assert_supported(t)`` then ``sync()``, where ``assert_supported`` raises unless the
    tensor is on CUDA: the index reads the rest of the block as running only on CUDA."""
    caller = (
        "from pkg.steps import sync\n\n\n"
        "def assert_supported(t):\n    if t.device.type != 'cuda':\n"
        "        raise RuntimeError('needs CUDA')\n\n\n"
        "def run(t):\n    assert_supported(t)\n    sync()\n"
    )
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": caller})
    assert _findings(tmp_path, "--no-cache") == []
    swapped = caller.replace(
        "    assert_supported(t)\n    sync()\n", "    sync()\n    assert_supported(t)\n"
    )
    _project(tmp_path, {"pkg/steps.py": SYNC, "pkg/main.py": swapped})
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/steps.py:5:5:", "PORT401"]
    ]


def test_a_worker_spawned_only_by_a_test_skipped_below_two_gpus_runs_only_on_cuda(tmp_path):
    """``mp.spawn(_worker)`` in a helper that only a test marked ``skipif(torch.cuda.device_count()
    < 2)`` calls: the worker's CUDA code is the test's."""
    worker = (Path(__file__).parent / "fixtures" / "platform_device_counts.py").read_text()
    _project(tmp_path, {"pkg/test_spawn.py": worker})
    assert [line.split(" ")[:2] for line in _findings(tmp_path, "--no-cache")] == [
        ["pkg/test_spawn.py:46:35:", "PORT401"],
        ["pkg/test_spawn.py:50:8:", "PORT401"],
        ["pkg/test_spawn.py:51:9:", "PORT401"],
    ]


CHECKS_MODULE = (
    "import torch\n\n"
    "_SUPPORTS_FLEX = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (7, 5)\n"
    "\n\ndef has_fast_gpu():\n"
    "    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)\n"
    "\n\ndef require_cuda(t):\n    if not t.is_cuda:\n        raise ValueError('needs CUDA')\n"
)
USES_OF_CHECKS = """\
import unittest

import torch

from pkg.checks import _SUPPORTS_FLEX, has_fast_gpu, require_cuda
from pkg import checks


def mask(x):
    if _SUPPORTS_FLEX:
        return x.to("cuda")
    return x


def fast(x):
    if has_fast_gpu() and x.numel() > 4:
        torch.cuda.synchronize()
    if not checks._SUPPORTS_FLEX:
        return x
    return x.cuda()


def needs(t):
    require_cuda(t)
    torch.cuda.synchronize()


@unittest.skipUnless(_SUPPORTS_FLEX, "needs flex attention")
def test_flex():
    torch.cuda.synchronize()
"""


def test_a_name_another_module_defines_as_a_check_of_cuda_is_a_guard_where_it_is_tested(
    tmp_path,
):
    """A flag assigned a check of CUDA at the top of one module (``_SUPPORTS_FLEX =
    torch.cuda.is_available() and ...``), a function that answers "is this CUDA?" and one that
    raises unless on CUDA, used in another: the code each confines is not reported there."""
    _project(tmp_path, {"pkg/checks.py": CHECKS_MODULE, "pkg/models.py": USES_OF_CHECKS})
    # (Not yet followed: a flag read only by other modules keeps its own check reported, and one
    # read as an attribute of its module, `checks._SUPPORTS_FLEX`, confines nothing.)
    assert [f.split(" ")[0] for f in _findings(tmp_path, "--no-cache")] == [
        "pkg/checks.py:3:18:", "pkg/models.py:20:14:",
    ]  # fmt: skip
    quiet = {
        (i["location"]["row"], i["silenced"]["kind"], i["silenced"]["why"].split(":")[0])
        for i in _silenced(tmp_path)
        if i["filename"].endswith("models.py")
    }
    assert quiet == {
        (11, "imported", "`_SUPPORTS_FLEX` of `pkg/checks.py`"),
        (17, "imported", "`has_fast_gpu` of `pkg/checks.py`"),
        (25, "imported", "`require_cuda` of `pkg/checks.py`"),
        (30, "imported", "`_SUPPORTS_FLEX` of `pkg/checks.py`"),
    }


@pytest.mark.parametrize(
    ("checks", "uses", "kept"),
    [
        # a flag that also holds elsewhere: assigned something else too
        (CHECKS_MODULE + "\nif torch.backends.mps.is_available():\n    _SUPPORTS_FLEX = True\n",
         USES_OF_CHECKS, ["11:21", "20:14", "30:5"]),
        # a flag made `global` and rebound by a function
        (CHECKS_MODULE + "\n\ndef enable():\n    global _SUPPORTS_FLEX\n    _SUPPORTS_FLEX = True\n",
         USES_OF_CHECKS, ["11:21", "20:14", "30:5"]),
        # the other path picks the CPU: the test chooses the device (a finding, as in a module)
        (CHECKS_MODULE,
         USES_OF_CHECKS.replace("    return x\n\n\ndef fast", "    else:\n        return x.to('cpu')\n\n\ndef fast"),
         ["21:14"]),  # (11:21 stands for the check in checks.py; 21:14: `checks._SUPPORTS_FLEX`)
        # a call before the requirement is not after it
        (CHECKS_MODULE,
         USES_OF_CHECKS.replace("    require_cuda(t)\n    torch.cuda.synchronize()\n",
                                "    torch.cuda.synchronize()\n    require_cuda(t)\n"),
         ["20:14", "24:5"]),
        # a function that answers nothing about CUDA
        (CHECKS_MODULE.replace("return torch.cuda.is_available() and", "return 2 > 1 and"),
         USES_OF_CHECKS, ["17:9", "20:14"]),
    ],
)  # fmt: skip
def test_a_name_that_may_hold_off_cuda_guards_nothing(tmp_path, checks, uses, kept):
    _project(tmp_path, {"pkg/checks.py": checks, "pkg/models.py": uses})
    found = [line.split(" ")[0] for line in _findings(tmp_path, "--no-cache")]
    assert [f.removeprefix("pkg/models.py:").rstrip(":") for f in found if "models" in f] == kept


def test_a_check_of_cuda_is_followed_through_a_package_reexport(tmp_path):
    uses = "from pkg import HAS_FLEX\n\n\ndef mask(x):\n    if HAS_FLEX:\n        return x.to('cuda')\n"
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.checks import _SUPPORTS_FLEX as HAS_FLEX\n",
            "pkg/checks.py": CHECKS_MODULE,
            "pkg/models.py": uses,
        },
    )
    assert [f for f in _findings(tmp_path, "--no-cache") if "models.py" in f] == []
    _project(tmp_path, {"pkg/__init__.py": "HAS_FLEX = True\n", "pkg/checks.py": CHECKS_MODULE,
                        "pkg/models.py": uses})  # fmt: skip
    assert [f.split(" ")[:2] for f in _findings(tmp_path, "--no-cache") if "models.py" in f] == [
        ["pkg/models.py:6:21:", "PORT101"]
    ]


DEVICE_TYPE_USES = """\
import torch

from pkg.device_type import DEVICE_TYPE


def sync():
    if DEVICE_TYPE == "xpu":
        torch.xpu.synchronize()
    else:
        torch.cuda.synchronize()


def stream():
    if DEVICE_TYPE != "xpu":
        return torch.cuda.current_stream()
    return torch.xpu.current_stream()


def other():
    if DEVICE_TYPE != "npu":  # (XPU too)
        return torch.cuda.current_stream()
    return torch.npu.current_stream()
"""


@pytest.mark.parametrize(
    ("device_type", "kept"),
    [
        # `DEVICE_TYPE` is CUDA, ROCm or XPU, or the import fails: both arms are CUDA's
        (DEVICE_TYPE_MODULE, ["21:16"]),
        # it may be the CPU too: neither is
        (DEVICE_TYPE_MODULE.replace("    raise NotImplementedError", '    return "cpu"  #'),
         ["10:9", "15:16", "21:16"]),
    ],
)  # fmt: skip
def test_a_name_of_another_module_that_can_only_be_cuda_or_another_device(
    tmp_path, device_type, kept
):
    _project(tmp_path, {"pkg/device_type.py": device_type, "pkg/ops.py": DEVICE_TYPE_USES})
    found = [line.split(" ")[0] for line in _findings(tmp_path, "--no-cache")]
    assert [f.removeprefix("pkg/ops.py:").rstrip(":") for f in found if "ops.py" in f] == kept
    if len(kept) == 1:
        why = {
            i["silenced"]["why"] for i in _silenced(tmp_path) if i["filename"].endswith("ops.py")
        }
        assert why == {"`DEVICE_TYPE` of `pkg/device_type.py`: `DEVICE_TYPE` is one of cuda, hip, "
                       "xpu (what it is bound to returns)"}  # fmt: skip


def test_a_choice_on_a_name_of_another_module_waits_for_it_as_a_branch_does(tmp_path):
    """`a if DEVICE_TYPE == "xpu" else b`: the `else` is CUDA's as a branch's is."""
    uses = (
        "import torch\n\nfrom pkg.device_type import DEVICE_TYPE\n\n"
        'stream = torch.xpu.current_stream if DEVICE_TYPE == "xpu" else torch.cuda.current_stream\n'
        'other = torch.npu.current_stream if DEVICE_TYPE == "npu" else torch.cuda.current_stream\n'
    )
    _project(tmp_path, {"pkg/device_type.py": DEVICE_TYPE_MODULE, "pkg/ops.py": uses})
    found = [line.split(" ")[0] for line in _findings(tmp_path, "--no-cache")]
    assert [f for f in found if "ops.py" in f] == ["pkg/ops.py:6:63:"]


def test_a_dispatch_over_devices_on_an_imported_name_needs_no_answer_from_its_module(tmp_path):
    """`if DEVICE_TYPE == "npu": ... elif DEVICE_TYPE == "xpu": ... else:` is CUDA's `else` by
    the dispatch itself, whatever the module of `DEVICE_TYPE` says (here: nothing, as it may
    be the CPU): what waits for another module does not stand in its way."""
    device_type = DEVICE_TYPE_MODULE.replace("    raise NotImplementedError", '    return "cpu"  #')
    uses = (
        "import torch\n\nfrom pkg.device_type import DEVICE_TYPE\n\n\ndef free():\n"
        '    if DEVICE_TYPE == "npu":\n        torch.npu.empty_cache()\n'
        '    elif DEVICE_TYPE == "xpu":\n        torch.xpu.empty_cache()\n'
        "    else:\n        torch.cuda.empty_cache()\n"
    )
    _project(tmp_path, {"pkg/device_type.py": device_type, "pkg/ops.py": uses})
    assert [f for f in _findings(tmp_path, "--no-cache") if "ops.py" in f] == []
    kinds = {i["silenced"]["kind"] for i in _silenced(tmp_path) if i["filename"].endswith("ops.py")}
    assert kinds == {"dispatch"}
