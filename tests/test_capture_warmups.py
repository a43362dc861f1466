"""PORT301's confidence and reason where the warm-up question is settled by what is captured:
an earlier capture warms nothing, and a capture of code with no matrix multiply creates no BLAS
state during capture (issue #48)."""

from __future__ import annotations

import json

from portlint.engine import lint_source
from portlint.settings import Settings
from tests.helpers import REPO, lint, run_cli, tree

FIXTURE = (REPO / "tests" / "fixtures" / "capture_warmups.py").read_text()


def _port301() -> dict[int, tuple[str, str]]:
    return {v.line: (v.confidence, v.detail) for v in lint(FIXTURE, "PORT301")}


def test_a_capture_of_code_without_a_matrix_multiply_is_held_back_and_says_why():
    silenced: list = []
    settings = Settings(select=frozenset({"PORT301"}))
    found = {
        v.line: v.confidence
        for v in lint_source("case.py", FIXTURE, settings, fix_edits=False, silenced=silenced)
    }
    lines = FIXTURE.splitlines()
    without = lines.index("def no_matrix_multiply(w, x, out, g):") + 3
    assert without not in found
    (held,) = [s for s in silenced if s.violation.line == without]
    assert (held.kind, held.line) == ("rule", without)
    assert held.why.startswith("the captured code runs no matrix multiply")
    assert found[lines.index("def matrix_multiply(w, x, out, g):") + 3] == "certain"


CALLED = {
    # Only allocations, arithmetic and a builtin: no matrix multiply.
    "pkg/meta.py": "import torch\n\n\ndef build(n, device):\n"
    "    starts = torch.arange(n, dtype=torch.int32, device=device) * 2\n"
    "    return starts + max(n, 3)\n\n\ndef project(x, w):\n    return x @ w\n\n\n"
    "class Norm(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.ln = torch.nn.LayerNorm(8)\n\n    def forward(self, x):\n"
    "        return self.ln(x).float()\n",
    "pkg/caps.py": "import torch\n\nfrom pkg.meta import Norm, build, project\n\n\n"
    "def capture(n, g):\n    side = torch.cuda.Stream()\n    with torch.cuda.stream(side):\n"
    "        build(n, 'cuda')\n    with torch.cuda.graph(g):\n        return build(n, 'cuda')\n\n\n"
    "def capture_norm(x, g):\n    norm = Norm().cuda().eval()\n    side = torch.cuda.Stream()\n"
    "    with torch.cuda.stream(side):\n        norm(x)\n    with torch.cuda.graph(g):\n"
    "        return norm(x)\n\n\n"
    "def capture_project(x, w, g):\n    side = torch.cuda.Stream()\n"
    "    with torch.cuda.stream(side):\n        project(x, w)\n    with torch.cuda.graph(g):\n"
    "        return project(x, w)\n",
}


def test_captured_code_is_followed_into_other_modules(tmp_path):
    tree(tmp_path, {"pyproject.toml": "[tool.portlint]\n", "pkg/__init__.py": "", **CALLED})
    result = run_cli(
        "check", "pkg", "--select", "PORT301", "--show-silenced", "--output-format", "json",
        "--no-cache", cwd=tmp_path,
    )  # fmt: skip
    found = {
        (i["location"]["row"], i.get("silenced", {}).get("why")) for i in json.loads(result.stdout)
    }
    assert found == {
        (10, "the captured code runs no matrix multiply (followed into `build` (pkg/meta.py:4)):"
         " it makes no BLAS state"),
        (19, "the captured code runs no matrix multiply (followed into `Norm.forward`"
         " (pkg/meta.py:18)): it makes no BLAS state"),
        (27, None),  # `project` runs `@`: reported
    }  # fmt: skip
    # `portlint check pkg/caps.py` reads its project too: the same answer.
    alone = run_cli("check", "pkg/caps.py", "--select", "PORT301", "--output-format", "concise",
                    "--no-cache", "-q", cwd=tmp_path)  # fmt: skip
    assert [line.split(":")[1] for line in alone.stdout.splitlines()] == ["27"]


def test_a_capture_after_a_capture_names_the_earlier_one_and_has_no_fix():
    lines = FIXTURE.splitlines()
    start = lines.index("def earlier_capture_is_not_a_warm_up(model, x):") + 1
    second = start + 5
    (violation,) = [v for v in lint(FIXTURE, "PORT301", fix_edits=True) if v.line == second]
    assert violation.message.startswith(
        f"`model` ran earlier only inside the capture at line {start + 3};"
    )
    assert violation.fix is None


def test_a_warm_up_on_a_stream_made_in_its_with_is_another_stream_and_has_no_fix():
    lines = FIXTURE.splitlines()
    capture = lines.index("def warmed_on_a_stream_made_in_its_with(func, x, env, g):") + 4
    (violation,) = [v for v in lint(FIXTURE, "PORT301", fix_edits=True) if v.line == capture]
    assert violation.message == (
        f"captures on `env.stream`, which the warm-up at line {capture - 1} did not run on;"
        " warm up on it"
    )
    assert "torch.cuda.Stream(device=env.device)" in violation.detail
    assert violation.fix is None


def test_a_warm_up_of_an_earlier_call_is_a_warm_up_that_cannot_be_moved():
    lines = FIXTURE.splitlines()
    start = lines.index("class Graphed:")
    found = {
        v.line: v for v in lint(FIXTURE, "PORT301", fix_edits=True) if start < v.line < start + 20
    }
    assert sorted(found) == [start + 4, start + 15]
    assert found[start + 4].message.startswith("captures on PyTorch's side stream, not the")
    assert found[start + 4].message.endswith(f"(line {start + 8}); pass a warmed `stream=`")
    assert all(v.fix is None for v in found.values())


def test_a_warm_up_through_a_function_of_the_module_and_a_capture_through_its_wrapper():
    lines = FIXTURE.splitlines()
    found = {v.line: v for v in lint(FIXTURE, "PORT301", fix_edits=True)}
    helper = lines.index("def warmed_through_a_helper(callables, x, graphs):") + 1
    backward = lines.index("def backward_warmed_through_a_helper(outputs, grads, graph):") + 1
    assert found[helper + 8].message == (
        f"captures on PyTorch's side stream, not the warm-up's (line {helper + 6});"
        " pass a warmed `stream=`"
    )
    assert found[backward + 6].message.endswith(f"(line {backward + 5}); pass a warmed `stream=`")
    # (The warm-ups ran on streams made in their `with`: no name to capture on, so no fix.)
    assert found[helper + 8].fix is None and found[backward + 6].fix is None
    # Not reported: the function that keeps the callable, the one with a model of its own, the
    # context manager with arguments of its own (the rest of the fixture).
    kept = lines.index("def handed_to_a_function_that_keeps_it(callables, x, graphs, registry):")
    assert not [line for line in found if line > kept]
