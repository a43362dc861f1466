"""The package as the index gets it: `python -m build` without a warning, `twine check` passing,
the linter alone in the wheel, no tests in the sdist, the license and the project's metadata."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from portlint.docs import REPOSITORY_URL
from tests.helpers import REPO


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built from a copy of the checkout (setuptools writes into it)."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    checkout = tmp_path_factory.mktemp("checkout") / "portlint"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(
        ".git", ".venv*", ".ci-venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
        ".ci-corpus",
    ))  # fmt: skip
    # (No build isolation: the setuptools of this environment, no download. Byte-compiling off is
    # the environment's choice, not the package's, and setuptools warns about it.)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(checkout)]
    built = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "warning" not in (built.stdout + built.stderr).lower(), built.stdout + built.stderr
    return out


def test_the_wheel_holds_the_linter_its_license_and_metadata(dist):
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(info).decode())
    assert {name.split("/")[0] for name in names} == {"portlint", info.split("/")[0]}
    assert f"{info.split('/')[0]}/licenses/LICENSE" in names
    assert metadata["License-Expression"] == "Apache-2.0"
    assert f"Homepage, {REPOSITORY_URL}" in metadata.get_all("Project-URL")
    assert "Programming Language :: Python :: 3.10" in metadata.get_all("Classifier")
    required = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert sorted(required) == [
        "click>=8.1",
        "libcst<1.10,>=1.8",
        'tomli>=2.0; python_version < "3.11"',
    ]


def test_the_sdist_holds_no_tests_and_no_reference_implementation(dist):
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        tops = {Path(name).parts[1] for name in archive.getnames() if len(Path(name).parts) > 1}
    assert "LICENSE" in tops and "portlint" in tops
    assert not tops & {"tests", "reference_impl", "bench", "scripts"}


def test_twine_check_passes(dist):
    pytest.importorskip("twine")
    files = [str(p) for p in sorted(dist.iterdir())]
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_the_license_file_is_the_one_the_metadata_declares():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text


MAX_MODULE_LINES = 450  # the brief's bound: a module longer than this is split


def test_no_module_of_the_package_is_over_its_bound():
    long = {
        str(path.relative_to(REPO)): lines
        for path in (REPO / "portlint").rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
