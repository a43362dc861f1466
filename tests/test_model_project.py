"""The platform model across the modules of a project: a function, a class or a module whose
every use (import) in the project is in code the model places on CUDA only runs only there, to
a fixpoint over the project (a use inside such a function is such a use)."""

from __future__ import annotations

import pytest

from tests.helpers import run_cli

PROBE = "torch.cuda.synchronize()"
OPS = f"""\
import torch


def sync():
    {PROBE}


class Runner:
    def run(self):
        {PROBE}
"""


def check(tmp_path, files: dict[str, str]) -> tuple[str, str]:
    """The findings and the silenced findings (``--show-silenced``) of the package ``pkg`` made
    of ``files``."""
    (tmp_path / "pyproject.toml").write_text("")  # (the project: the files below it)
    package = tmp_path / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    for name, text in files.items():
        (package / name).write_text(text)
    result = run_cli(
        "check", "pkg", "--no-cache", "--show-silenced", "--output-format", "concise",
        cwd=tmp_path,
    )  # fmt: skip
    found, _, silenced = result.stdout.partition("Silenced")
    return found, silenced


@pytest.mark.parametrize(
    "user",
    [
        # under a check of CUDA in another module
        "import torch\nfrom .ops import sync, Runner\n\n\ndef step():\n"
        "    if torch.cuda.is_available():\n        sync()\n        Runner().run()\n",
        # in a private function of that module whose every use is so (the module's own fixpoint)
        "import torch\nfrom . import ops\n\n\ndef _go():\n    ops.sync()\n    ops.Runner().run()\n\n\n"
        "def step(x):\n    return x.is_cuda and _go()\n",
        # in a function of a third module whose every use is so (the project's fixpoint)
        "import torch\nfrom .relay import go\n\n\ndef step():\n    if torch.version.hip:\n        go()\n",
    ],
)
def test_every_use_on_cuda_only(tmp_path, user):
    files = {"ops.py": OPS, "user.py": user}
    if ".relay" in user:
        files["relay.py"] = (
            "from .ops import sync, Runner\n\n\ndef go():\n    sync()\n    Runner().run()\n"
        )
    found, silenced = check(tmp_path, files)
    assert "pkg/ops.py" not in found
    assert "pkg/ops.py:5:5: PORT401" in silenced and "pkg/ops.py:10:9: PORT401" in silenced
    assert "callers: every use of `sync` in the project runs only on CUDA" in silenced
    # one use that may run anywhere: each stays a finding
    anywhere = user.replace("import torch\n", "import torch\nfrom .ops import sync as s\ns()\n", 1)
    found, _ = check(tmp_path, {**files, "user.py": anywhere})
    assert "pkg/ops.py:5:5: PORT401" in found


def test_every_import_of_a_module_on_cuda_only(tmp_path):
    user = (
        "import torch\n\n\ndef step():\n    if torch.cuda.is_available():\n"
        "        from .ops import sync\n\n        sync()\n"
    )
    found, silenced = check(tmp_path, {"ops.py": OPS, "user.py": user})
    assert "pkg/ops.py" not in found
    assert "callers: every import of the module runs only on CUDA: pkg/user.py:6" in silenced
    found, _ = check(tmp_path, {"ops.py": OPS, "user.py": user.replace("torch.cuda", "torch.xpu")})
    assert "pkg/ops.py:5:5: PORT401" in found


def test_the_places_are_kept_with_the_facts(tmp_path):
    """The index's facts with the model's places are kept apart per setting the model reads
    (`guard-functions`): a run with either after a run with the other, and a warm run, answer
    as a cold one."""
    user = (
        "import torch\nfrom .ops import sync\n\n\ndef step():\n"
        "    if torch.cuda.is_available():\n        sync()\n"
    )
    check(tmp_path, {"ops.py": OPS, "user.py": user})  # (writes the files)

    def findings(*mode: str) -> str:
        args = ("check", "pkg", "--output-format", "concise", "--cache-dir", "cache", *mode)
        return run_cli(*args, cwd=tmp_path).stdout

    named = ("--config", 'guard-functions = ["step"]')
    cold, cold_named = findings(), findings(*named)
    assert "pkg/ops.py:5:5" not in cold
    assert findings() == cold and findings(*named) == cold_named


def test_a_use_under_another_module_s_marker(tmp_path):
    """A private function whose only use is in a test that a marker of another module skips
    unless on CUDA: the project tells the marker, then the use's place."""
    utils = (
        "import pytest\nimport torch\n\nrequires_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason='')\n"
        "\n\ndef prepare():\n    return 1\n"
    )
    test = (
        f"import torch\nfrom .utils import prepare, requires_gpu\n\n\ndef _worker():\n    {PROBE}\n\n\n"
        "@requires_gpu\ndef test_x():\n    prepare()  # (another module's call: what follows waits too)\n"
        "    spawn(_worker)\n"
    )
    found, silenced = check(tmp_path, {"utils.py": utils, "test_x.py": test})
    assert "pkg/test_x.py:6:5" not in found
    assert "callers: every use of `_worker` in the project runs only on CUDA" in silenced
    found, _ = check(tmp_path, {"utils.py": utils.replace("not torch", "torch"), "test_x.py": test})
    assert "pkg/test_x.py:6:5: PORT401" in found
