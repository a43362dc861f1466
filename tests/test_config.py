"""Configuration: read defensively (each hostile pyproject.toml is one line and exit 2, never a
traceback), hierarchical (the closest [tool.portlint] for each file, `extend` to inherit), and
overridden from the command line as ruff's options do."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.helpers import run_cli

BUGGY = 'import torch\nd = torch.device("cuda")\ny = x.cuda()\n'


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def codes(result) -> list[tuple[str, str]]:
    return [(Path(i["filename"]).name, i["code"]) for i in json.loads(result.stdout)]


# --- Hostile configuration: one line, exit 2 -----------------------------------------------------
HOSTILE = {
    "tool-string": ('tool = "portlint"\n', "`tool` must be a table, not a string"),
    "tool-array": ('tool = ["portlint"]\n', "`tool` must be a table, not an array"),
    "portlint-integer": (
        "[tool]\nportlint = 1\n",
        "`tool.portlint` must be a table, not an integer",
    ),
    "portlint-array": (
        '[tool]\nportlint = ["PORT101"]\n',
        "`tool.portlint` must be a table, not an array",
    ),
    "portlint-array-of-tables": (
        '[[tool.portlint]]\nselect = ["PORT1"]\n',
        "`tool.portlint` must be a table, not an array of tables",
    ),
    "project-string": (
        'project = "x"\n[tool.portlint]\n',
        "`project` must be a table, not a string",
    ),
    "optional-dependencies-list": (
        '[project]\nname = "x"\noptional-dependencies = ["torch>=2.6"]\n[tool.portlint]\n',
        "`project.optional-dependencies` must be a table, not an array",
    ),
    "optional-dependencies-group-string": (
        '[project.optional-dependencies]\ngpu = "torch"\n[tool.portlint]\n',
        "`project.optional-dependencies.gpu` must be an array of strings",
    ),
    "dependencies-string": (
        '[project]\ndependencies = "torch"\n[tool.portlint]\n',
        "`project.dependencies` must be an array of strings",
    ),
    "build-system-string": (
        'build-system = "x"\n[tool.portlint]\n',
        "`build-system` must be a table, not a string",
    ),
    "requires-table": (
        "[build-system.requires]\ntorch = 1\n[tool.portlint]\n",
        "`build-system.requires` must be an array of strings",
    ),
    "extend-integer": (
        "[tool.portlint]\nextend = 1\n",
        "[tool.portlint] extend must be the path of a pyproject.toml",
    ),
    "target-float": (
        "[tool.portlint]\ntarget-torch-version = 2.10\n",
        '[tool.portlint] target-torch-version must look like "2.9"',
    ),
    "device-expression-deep": (
        f'[tool.portlint]\ndevice-expression = "{"(" * 5000}x{")" * 5000}"\n',
        None,  # the message quotes the expression
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_configuration_is_one_line_and_exit_2(tmp_path, case):
    text, message = HOSTILE[case]
    write(tmp_path, "pyproject.toml", text)
    write(tmp_path, "a.py", BUGGY)
    result = run_cli("check", "a.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert len(result.stderr.splitlines()) == 1
    prefix = f"portlint: error: {tmp_path / 'pyproject.toml'}: "
    assert result.stderr.startswith(prefix)
    if message is not None:
        assert result.stderr == prefix + message + "\n"


def test_a_pyproject_that_is_not_utf8_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.portlint]\nselect = ["PORT1"]  # \xff\xfe\n')
    write(tmp_path, "a.py", BUGGY)
    result = run_cli("check", "a.py", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        f"portlint: error: cannot read {tmp_path / 'pyproject.toml'}: not UTF-8 (byte 38)\n",
    )


def test_a_deeply_nested_value_is_one_line_and_exit_2(tmp_path):
    """(In a process of its own: the interpreter's real recursion limit.)"""
    write(tmp_path, "pyproject.toml", "[tool.portlint]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    write(tmp_path, "a.py", BUGGY)
    result = run_cli("check", "a.py", cwd=tmp_path, subprocess_=True)
    assert (result.returncode, result.stderr) == (
        2,
        f"portlint: error: cannot read {tmp_path / 'pyproject.toml'}: a value is nested too deeply\n",
    )


def test_a_broken_pyproject_without_portlint_above_the_project_is_not_read(tmp_path):
    """The search for the closest configuration stops at the first [tool.portlint]."""
    write(tmp_path, "pyproject.toml", 'tool = "portlint"\n')
    write(tmp_path, "sub/pyproject.toml", '[tool.portlint]\nselect = ["PORT101"]\n')
    write(tmp_path, "sub/a.py", BUGGY)
    result = run_cli("check", "a.py", "--output-format", "json", cwd=tmp_path / "sub")
    assert (result.returncode, codes(result)) == (1, [("a.py", "PORT101")])
