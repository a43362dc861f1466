"""The cache: same findings as without it, invalidated by edits, safe under concurrent runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, run_cli

SOURCES = {
    "src/a.py": 'import torch\ndevice = torch.device("cuda")\n',
    "src/b.py": "import torch\ntorch.cuda.synchronize()\ny = x.cuda()\n",
    "src/c.py": "x = 1\n",
    "src/d.py": "import torch\ns = torch.arange(3)\nn = s.new_empty(3)\nconsume(n)\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.portlint]\n")
    for name, text in SOURCES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def findings(tree: Path, *args: str) -> list[dict]:
    result = run_cli("check", "src", "--output-format", "json", *args, cwd=tree)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_findings_are_the_same_with_and_without_the_cache(tree):
    uncached = findings(tree, "--no-cache")
    assert not (tree / ".portlint_cache").exists()
    first = findings(tree)
    assert (tree / ".portlint_cache" / ".gitignore").read_text().endswith("*\n")
    second = findings(tree)  # every file from the cache
    assert uncached == first == second
    assert [f["code"] for f in second] == ["PORT101", "PORT401", "PORT102", "PORT201"]


def test_an_edited_file_is_linted_again_and_a_touched_one_is_not(tree, monkeypatch):
    findings(tree)
    (tree / "src/c.py").write_text("y = x.cuda()\n")
    assert [f["code"] for f in findings(tree) if f["filename"].endswith("c.py")] == ["PORT102"]
    os.utime(tree / "src/a.py", ns=(1, 1))  # same content, other mtime: hit after one read
    assert [f["code"] for f in findings(tree) if f["filename"].endswith("a.py")] == ["PORT101"]


def test_the_cache_is_kept_apart_per_settings(tree):
    assert len(findings(tree)) == 4
    assert [f["code"] for f in findings(tree, "--select", "PORT1")] == ["PORT101", "PORT102"]
    assert len(findings(tree)) == 4


def test_a_corrupt_cache_is_ignored(tree):
    findings(tree)
    for table in (tree / ".portlint_cache").glob("*.json"):
        table.write_text("{not json")
    assert len(findings(tree)) == 4


def test_concurrent_runs_share_the_cache_safely(tree):
    command = [sys.executable, "-m", "portlint", "check", "src", "--output-format", "json"]
    runs = [
        subprocess.Popen(command, cwd=tree, stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    outputs = [json.loads(run.communicate()[0]) for run in runs]
    assert all(len(out) == 4 for out in outputs)
    assert len(findings(tree)) == 4
    assert not list((tree / ".portlint_cache").glob("*.tmp"))


def test_clean_removes_the_cache(tree):
    findings(tree)
    result = run_cli("clean", cwd=tree)
    assert (result.returncode, result.stdout) == (0, "Removed .portlint_cache/\n")
    assert not (tree / ".portlint_cache").exists()
    assert run_cli("clean", cwd=tree).stdout == "No .portlint_cache/ here.\n"


def test_one_process_and_several_find_the_same_on_the_fixtures(tmp_path):
    shutil.copytree(REPO / "tests" / "fixtures", tmp_path / "fixtures")
    shutil.copytree(REPO / "tests" / "seeds", tmp_path / "seeds")
    for copies in range(3):  # enough files for the process pool to start
        shutil.copytree(REPO / "tests" / "fixtures", tmp_path / f"more{copies}")
    args = ("check", ".", "--no-cache", "--output-format", "json")
    serial = json.loads(run_cli(*args, "-j", "1", cwd=tmp_path).stdout)
    parallel = json.loads(run_cli(*args, "-j", "2", cwd=tmp_path).stdout)
    assert serial == parallel and len(serial) > 100
