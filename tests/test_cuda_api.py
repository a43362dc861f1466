"""The PORT4xx family: the versioned mapping, and portlint against the regex scripts it replaces."""

from __future__ import annotations

import io
import re
import textwrap
import tokenize

import pytest

from portlint.cuda_api import APIS, DEVICE_MODULE, parse_version
from portlint.registry import all_rules
from tests.helpers import REPO, lint, run_cli
from tests.test_fix_meaning import needed, resolves

FIXTURE = REPO / "tests" / "fixtures" / "torch_api_scripts.py"
PORT4 = {code for code in all_rules() if code.startswith("PORT4")}

# vLLM's tools/pre_commit/check_torch_cuda.py, restated: these patterns over the file's text, path
# prefixes that are allowed to use torch.cuda, and only the first hit of a file reported.
VLLM_PATTERNS = [
    re.compile(
        r"torch\.cuda\.(empty_cache|synchronize|device_count|current_device|memory_\w+"
        r"|max_memory_\w+|reset_peak_memory_stats|memory_stats|mem_get_info|set_device|device\()"
    ),
    re.compile(r"torch\.cuda\.(manual_seed|manual_seed_all)\b"),
    re.compile(r"with\s+torch\.cuda\.device\b"),
]
VLLM_ALLOWED_PREFIXES = ("vllm/platforms/",)

# DeepSpeed's scripts/check-torchcuda.py, restated: `torch.cuda` on any line without
# `#ignore-cuda`, then `.cuda(`, then `.is_cuda`.
DEEPSPEED_PATTERNS = [re.compile(r"torch\.cuda"), re.compile(r"\.cuda\("), re.compile(r"\.is_cuda")]


def vllm_hits(text: str) -> list[tuple[int, int]]:
    return [
        (number, match.start())
        for number, line in enumerate(text.splitlines(), 1)
        for pattern in VLLM_PATTERNS
        for match in pattern.finditer(line)
    ]


def vllm_script_report(path: str, text: str) -> int | None:
    """The line vLLM's script reports for a file: its first hit, unless the path is allowed."""
    if path.startswith(VLLM_ALLOWED_PREFIXES):
        return None
    hits = sorted(vllm_hits(text))
    return hits[0][0] if hits else None


def deepspeed_hits(text: str) -> list[tuple[int, int]]:
    return [
        (number, match.start())
        for number, line in enumerate(text.splitlines(), 1)
        if "#ignore-cuda" not in line
        for pattern in DEEPSPEED_PATTERNS
        for match in pattern.finditer(line)
    ]


def not_code(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The spans of comments and strings."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(t.start, t.end) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def in_code(hit: tuple[int, int], spans) -> bool:
    return not any(start <= hit < end for start, end in spans)


@pytest.fixture(scope="module")
def side_by_side():
    text = FIXTURE.read_text()
    spans = not_code(text)
    hits = vllm_hits(text) + deepspeed_hits(text)
    code_lines = {line for line, col in hits if in_code((line, col), spans)}
    other_lines = {line for line, col in hits} - code_lines
    flagged = {v.line: v.code for v in lint(text, *PORT4, "PORT102")}
    return text, code_lines, other_lines, flagged


def test_portlint_catches_everything_the_regexes_catch_in_code(side_by_side):
    """At the same line, except an import: portlint reports the imported names where used."""
    text, code_lines, _, flagged = side_by_side
    lines = text.splitlines()
    imports = {n for n in code_lines if lines[n - 1].startswith(("import ", "from "))}
    assert len(code_lines - imports) == 17
    assert code_lines - imports <= set(flagged)
    assert [lines[n - 1] for n in imports] == [
        "from torch.cuda import synchronize as wait_for_device"
    ]
    assert any(lines[n - 1].strip() == "wait_for_device()  # error: PORT401" for n in flagged)


def test_portlint_ignores_what_the_regexes_catch_in_comments_and_strings(side_by_side):
    _, _, other_lines, flagged = side_by_side
    assert len(other_lines) == 4  # the header comment, one more comment, two strings
    assert other_lines.isdisjoint(flagged)


def test_portlint_catches_the_aliases_the_regexes_miss(side_by_side):
    text, code_lines, other_lines, flagged = side_by_side
    missed = set(flagged) - code_lines - other_lines
    lines = text.splitlines()
    assert sorted(lines[n - 1].strip().split("(")[0] for n in missed) == [
        "cuda.empty_cache",
        "return cuda.memory_allocated",
        "t.cuda.synchronize",
        "wait_for_device",
    ]
    assert {flagged[n] for n in missed} == {"PORT401", "PORT403"}


def test_vllm_allowlist_is_cuda_only_paths_and_ignore_cuda_is_noqa():
    text = FIXTURE.read_text()
    assert vllm_script_report("vllm/worker.py", text) == 10  # the first hit only
    assert vllm_script_report("vllm/platforms/cuda.py", text) is None
    allowed = lint(
        text, *PORT4, path="vllm/platforms/cuda.py", cuda_only_paths=("vllm/platforms/*",)
    )
    assert allowed == []
    source = "import torch\ntorch.cuda.synchronize()  # noqa: PORT401\ntorch.cuda.synchronize()\n"
    assert [(v.line, v.code) for v in lint(source)] == [(3, "PORT401")]


@pytest.mark.parametrize(
    ("source", "code", "added"),
    [
        ("import torch\ntorch.cuda.synchronize()\n", "PORT401", (2, 6)),
        ("import torch\nwith torch.cuda.stream(s):\n    pass\n", "PORT402", (2, 7)),
        ("import torch\nwith torch.cuda.device(0):\n    pass\n", "PORT401", (2, 8)),
        ("import torch\ntorch.cuda.empty_cache()\n", "PORT403", (2, 9)),
        ("import torch\ntorch.cuda.mem_get_info()\n", "PORT403", (2, 10)),
        ("import torch\ng = torch.cuda.CUDAGraph()\n", "PORT407", (2, 12)),
    ],
)
def test_an_api_is_reported_only_when_the_target_torch_has_its_replacement(source, code, added):
    before = (added[0], added[1] - 1)
    assert lint(source, code, target_torch_version=before) == []
    (finding,) = lint(source, code, target_torch_version=added)
    assert f" needs torch ≥ {added[0]}.{added[1]}." in finding.detail


def test_message_names_the_replacement():
    (finding,) = lint("import torch\ntorch.cuda.synchronize()\n", "PORT401")
    assert "`torch.accelerator.synchronize`" in finding.message


def test_guards_and_cuda_only_paths_apply_to_the_family():
    source = textwrap.dedent(
        """
        import torch
        from vllm.platforms import current_platform

        def free():
            if not current_platform.is_cuda():
                return
            torch.cuda.empty_cache()
        """
    )
    assert lint(source, *PORT4) == []
    unguarded = "import torch\ntorch.cuda.empty_cache()\n"
    assert (
        lint(unguarded, *PORT4, path="kernels/nvidia/x.py", cuda_only_paths=("*/nvidia/*",)) == []
    )


@pytest.mark.torch_api
def test_the_mapping_matches_the_installed_torch():
    """Every old API exists; every replacement the table names, the installed torch has from the
    entry's `since` on, and not before it (`with stream:`: `torch.Stream.__enter__`).
    (`python scripts/torch_members.py` says what differs.)"""
    torch = pytest.importorskip("torch")
    installed = parse_version(torch.__version__)
    for api in APIS:
        if api.name.startswith("torch."):
            assert resolves(torch, api.name), api.name
        if re.fullmatch(r"torch(\.\w+)+", api.replacement) or api.replacement.startswith(
            f"{DEVICE_MODULE}."
        ):
            has = resolves(torch, needed(api.name, api.replacement))
            assert has == (api.since <= installed), (api.name, api.since)
    assert resolves(torch, "torch.get_device_module")


def write_project(tmp_path, table: str, dependencies: str = "") -> None:
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'p'\ndependencies = [{dependencies}]\n\n[tool.portlint]\n{table}\n"
    )
    (tmp_path / "m.py").write_text(
        "import torch\ntorch.cuda.synchronize()\nwith torch.cuda.device(0):\n    pass\n"
    )


def reported_lines(tmp_path, *args: str) -> list[int]:
    result = run_cli("check", "m.py", "--select", "PORT4", "-q", *args, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return [int(line.split(":")[1]) for line in result.stdout.splitlines()]


def test_target_torch_version_comes_from_the_cli_the_config_or_the_torch_requirement(tmp_path):
    write_project(tmp_path, "", '"torch>=2.7,<3", "torchvision>=0.30"')
    assert reported_lines(tmp_path) == [2]  # torch.accelerator.device_index came in 2.8
    assert reported_lines(tmp_path, "--target-torch-version", "2.8") == [2, 3]
    write_project(tmp_path, 'target-torch-version = "2.8"', '"torch>=2.7"')
    assert reported_lines(tmp_path) == [2, 3]
    assert reported_lines(tmp_path, "--target-torch-version", "2.5") == []


def test_a_malformed_target_torch_version_is_a_clear_error(tmp_path):
    write_project(tmp_path, 'target-torch-version = "two"')
    result = run_cli("check", "m.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "target-torch-version must look like \"2.9\", not 'two'" in result.stderr
    assert "Traceback" not in result.stderr


def test_fix_applies_the_safe_replacement_only(tmp_path):
    write_project(tmp_path, 'target-torch-version = "2.9"')
    (tmp_path / "m.py").write_text(
        "import torch\ntorch.cuda.synchronize(device=0)\nside = torch.cuda.Stream()\n"
    )
    result = run_cli("check", "m.py", "--select", "PORT4", "--fix", cwd=tmp_path)
    assert result.returncode == 1  # the stream is left: its fix is unsafe
    assert (tmp_path / "m.py").read_text() == (
        "import torch\ntorch.accelerator.synchronize(0)\nside = torch.cuda.Stream()\n"
    )
    run_cli("check", "m.py", "--select", "PORT4", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert (tmp_path / "m.py").read_text() == (
        "import torch\ntorch.accelerator.synchronize(0)\nside = torch.Stream()\n"
    )
