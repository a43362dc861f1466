"""The same findings whatever the cache, the output format or the order of runs (issue #52).

A differential test: a project whose findings cross modules (an int64 tensor reaching another
module's Triton kernel, a function whose every caller is guarded, a module that needs a CUDA-only
library through another) is linted with every output format, warm, after each kind of edit of
each module a finding depends on, after a change of settings, after a file is touched, and after
each kind of damage to each file of the cache, one process and a pool; each answer must be the
cold (``--no-cache``) answer of that state, finding for finding (file, line, code; and with JSON,
the message, detail and confidence too).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from tests.helpers import run_cli, tree
from tests.test_project import GUARDED_CALL, KERNELS, NEEDS_FLASHINFER, SAMPLER, SYNC

FORMATS = ["concise", "json", "full", "github", "sarif", "junit", "json-lines", "text"]
HEADER = re.compile(r"^(\S[^:\n]*):(\d+):\d+: (PORT\d{3}) ", re.MULTILINE)
PROJECT = {
    "pyproject.toml": "[tool.portlint]\n",
    "pkg/__init__.py": "",
    "pkg/kernels.py": KERNELS,
    "pkg/sampler.py": SAMPLER.format(
        import_line="pkg.kernels import prepare_kernel", kernel="prepare_kernel"
    ),
    "pkg/steps.py": SYNC,
    "pkg/main.py": GUARDED_CALL,
    "pkg/fi/__init__.py": "",
    "pkg/fi/ops.py": NEEDS_FLASHINFER,
    "pkg/direct.py": "import torch\n\nfrom pkg.fi.ops import run\n\n\n"
    "def step(x):\n    torch.cuda.synchronize()\n",
    # Enough files for a pool of workers to start (workers.MIN_FILES_PER_WORKER).
    **{f"pkg/more/m{i}.py": f"import torch\n\n\ndef f{i}():\n    return torch.device('cuda')\n"
       for i in range(20)},
}  # fmt: skip


def _relative(root: Path, path: str) -> str:
    return os.path.relpath(path, root) if os.path.isabs(path) else path


def found(root: Path, output: str, *args: str) -> set[tuple]:
    """The findings of ``portlint check pkg`` in ``output`` format, as (file, line, code) (with
    JSON, the message, the detail and the confidence too)."""
    result = run_cli("check", "pkg", "--output-format", output, "-q", *args, cwd=root)
    assert result.returncode in (0, 1), (output, args, result.stdout + result.stderr)
    text = result.stdout
    if output in ("concise", "text", "full"):
        return {(path, int(line), code) for path, line, code in HEADER.findall(text)}
    if output in ("json", "json-lines"):
        items = json.loads(text) if output == "json" else [json.loads(x) for x in text.splitlines()]
        return {
            (_relative(root, i["filename"]), i["location"]["row"], i["code"])
            + ((i["message"], i["detail"], i["confidence"]) if output == "json" else ())
            for i in items
        }
    if output == "github":
        fields = re.findall(r"title=portlint \((PORT\d+)\),file=([^,]+),line=(\d+)", text)
        return {(path, int(line), code) for code, path, line in fields}
    if output == "junit":
        cases = ElementTree.fromstring(text).iter("testcase")
        return {(c.get("file"), int(c.get("line")), c.get("name").split(".")[-1]) for c in cases}
    results = json.loads(text)["runs"][0]["results"]
    places = [(r["ruleId"], r["locations"][0]["physicalLocation"]) for r in results]
    return {(p["artifactLocation"]["uri"], p["region"]["startLine"], c) for c, p in places}


def assert_every_format_answers_as_cold(root: Path, *args: str, first: str = "concise") -> None:
    """Every format, ``first`` first (the one that finds the state as it was left), equals the
    cold run of the same state."""
    cold_json = found(root, "json", "--no-cache", *args)
    cold = {item[:3] for item in cold_json}
    assert cold, "the project has findings"
    for output in [first, *(f for f in FORMATS if f != first)]:
        answer = found(root, output, *args)
        expected = cold_json if output == "json" else cold
        assert answer == expected, (output, args, expected ^ answer)


@pytest.fixture
def project(tmp_path) -> Path:
    tree(tmp_path, PROJECT)
    return tmp_path


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_warm_runs_of_every_format_in_any_order_answer_as_a_cold_run(project, jobs):
    cold = found(project, "json", "--no-cache", "-j", jobs)
    assert {(c[0], c[1], c[2]) for c in cold} >= {
        ("pkg/sampler.py", 8, "PORT201"), ("pkg/sampler.py", 10, "PORT202")
    }  # fmt: skip
    for first in FORMATS:  # (each format the first after another's run)
        assert_every_format_answers_as_cold(project, "-j", jobs, first=first)


EDITS = [
    # The kernel's module: it stops needing int32, then needs it again.
    ("pkg/kernels.py", KERNELS.replace("    if pid == 0:\n        i = pid\n", "")),
    ("pkg/kernels.py", KERNELS),
    # The module of the finding: the fixed form, then the buggy one moved down a line.
    ("pkg/sampler.py", PROJECT["pkg/sampler.py"].replace("new_empty(num_reqs)", "new_empty(num_reqs, dtype=torch.int32)")),
    ("pkg/sampler.py", "\n" + PROJECT["pkg/sampler.py"]),
    # A caller's module: the guard goes, then comes back.
    ("pkg/main.py", "from pkg.steps import sync\n\n\ndef run():\n    sync()\n"),
    ("pkg/main.py", GUARDED_CALL),
    # The library a module needs through another: gone, then back.
    ("pkg/fi/ops.py", "def run(x):\n    return x\n"),
    ("pkg/fi/ops.py", NEEDS_FLASHINFER),
]  # fmt: skip


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_after_each_edit_of_a_module_a_finding_depends_on_every_format_answers_as_cold(
    project, jobs
):
    found(project, "concise", "-j", jobs)
    for number, (path, text) in enumerate(EDITS):
        (project / path).write_text(text)
        first = FORMATS[number % len(FORMATS)]
        assert_every_format_answers_as_cold(project, "-j", jobs, first=first)


def test_after_a_change_of_settings_and_a_touch_every_format_answers_as_cold(project):
    found(project, "concise")
    assert_every_format_answers_as_cold(project, "--target-torch-version", "2.1", first="json")
    (project / "pyproject.toml").write_text('[tool.portlint]\ntarget-torch-version = "2.4"\n')
    assert_every_format_answers_as_cold(project, first="full")
    for path in ("pkg/kernels.py", "pkg/sampler.py"):
        os.utime(project / path, ns=(os.stat(project / path).st_mtime_ns + 10**9,) * 2)
        assert_every_format_answers_as_cold(project, first="github")


DAMAGES = {
    "deleted": lambda file: file.unlink(),
    "truncated": lambda file: file.write_bytes(file.read_bytes()[: file.stat().st_size // 2]),
    "corrupted": lambda file: file.write_bytes(
        file.read_bytes()[:10] + b"\x00garbage}]" + file.read_bytes()[20:]
    ),
    "emptied": lambda file: file.write_bytes(b""),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_after_each_damage_to_each_cache_file_every_format_answers_as_cold(project, damage):
    """Each file of a warm cache (both families of tables, the whole-run records, the index's
    table, its facts pack and its verdicts) damaged in turn, then a module touched without a
    change (its cached content, a newer time), in one process and in a pool."""
    for output in ("concise", "json"):  # (the two tables: with and without fix edits)
        found(project, output)
    cache = project / ".portlint_cache"
    kept = project / "kept-cache"
    shutil.copytree(cache, kept)
    files = sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file())
    assert len(files) >= 7
    for number, name in enumerate(files):
        if name.name == ".gitignore":
            continue
        shutil.rmtree(cache)
        shutil.copytree(kept, cache)
        DAMAGES[damage](cache / name)
        touched = project / ("pkg/kernels.py", "pkg/sampler.py")[number % 2]
        os.utime(touched, ns=(os.stat(touched).st_mtime_ns + 10**9,) * 2)
        jobs = ("1", "2")[number // 2 % 2]
        first = FORMATS[number % len(FORMATS)]
        assert_every_format_answers_as_cold(project, "-j", jobs, first=first)


@pytest.mark.corpus
def test_a_real_release_answers_as_cold_in_every_format_warm_and_after_damage(tmp_path):
    """xformers 0.35 (70 files; findings silenced through callers in other modules)."""
    corpus = os.environ.get("PORTLINT_CORPUS")
    if not corpus:
        pytest.skip("PORTLINT_CORPUS names no folder of fetched releases")
    shutil.copytree(Path(corpus) / "xformers-0.0.35" / "xformers", tmp_path / "pkg")
    assert_every_format_answers_as_cold(tmp_path)
    for pack in (tmp_path / ".portlint_cache").rglob("*.pack"):
        DAMAGES["corrupted"](pack)
    touched = next((tmp_path / "pkg").rglob("*.py"))
    os.utime(touched, ns=(os.stat(touched).st_mtime_ns + 10**9,) * 2)
    assert_every_format_answers_as_cold(tmp_path, first="json")


def test_each_file_linted_alone_answers_as_the_whole_tree(tmp_path):
    """``portlint check FILE`` judges the file with the rest of its project, as a run over the
    whole tree does (CI's known-real check relies on it: ``scripts/snapshot.py --known-real``):
    finding for finding, silenced ones too, also in a folder with no ``__init__.py`` inside the
    package."""
    tree(tmp_path, {**PROJECT, "pkg/srt/utils/__init__.py": "", "pkg/srt/utils/steps.py": SYNC,
                    "pkg/srt/main.py": GUARDED_CALL.replace("pkg.steps", "pkg.srt.utils.steps")})  # fmt: skip

    def findings(*paths: str) -> list[dict]:
        result = run_cli(
            "check", *paths, "--no-cache", "--show-silenced", "--output-format", "json",
            cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode in (0, 1), result.stderr
        return json.loads(result.stdout)

    whole = findings("pkg")
    assert any("silenced" in item for item in whole) and any("silenced" not in i for i in whole)
    files = sorted({_relative(tmp_path, item["filename"]) for item in whole})
    for file in files:
        alone = findings(file)
        assert alone == [i for i in whole if _relative(tmp_path, i["filename"]) == file], file
