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


# --- Hierarchical configuration ------------------------------------------------------------------
@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """A project whose `sub` folder has a configuration of its own, inheriting the root's."""
    write(tmp_path, "pyproject.toml", '[tool.portlint]\nselect = ["PORT101"]\n')
    write(tmp_path, "a.py", BUGGY)
    write(
        tmp_path,
        "sub/pyproject.toml",
        '[tool.portlint]\nextend = "../pyproject.toml"\nextend-select = ["PORT102"]\n',
    )
    write(tmp_path, "sub/b.py", BUGGY)
    write(tmp_path, "other/pyproject.toml", '[tool.portlint]\nselect = ["PORT102"]\n')
    write(tmp_path, "other/c.py", BUGGY)
    return tmp_path


def test_each_file_gets_its_closest_configuration(nested):
    result = run_cli("check", ".", "--output-format", "json", cwd=nested)
    assert codes(result) == [
        ("a.py", "PORT101"),
        ("c.py", "PORT102"),
        ("b.py", "PORT101"),
        ("b.py", "PORT102"),
    ]
    inside = run_cli("check", "b.py", "--output-format", "json", cwd=nested / "sub")
    assert codes(inside) == [("b.py", "PORT101"), ("b.py", "PORT102")]


def test_a_config_file_on_the_command_line_applies_to_every_file(nested):
    result = run_cli("check", ".", "--config", "other/pyproject.toml", "--output-format", "json",
                     cwd=nested)  # fmt: skip
    assert codes(result) == [("a.py", "PORT102"), ("c.py", "PORT102"), ("b.py", "PORT102")]


def test_show_settings_names_the_configuration_that_applies(nested):
    result = run_cli("check", "--show-settings", "sub/b.py", cwd=nested)
    lines = result.stdout.splitlines()
    assert (result.returncode, lines[:4]) == (0, [
        "Resolved settings for: sub/b.py",
        f"Settings path: {(nested / 'sub' / 'pyproject.toml').resolve()}",
        f"root = {str((nested / 'sub').resolve())!r}",
        "select = ['PORT101', 'PORT102']",
    ])  # fmt: skip
    top = run_cli("check", "--show-settings", "a.py", cwd=nested).stdout.splitlines()
    assert top[1:4] == [
        f"Settings path: {(nested / 'pyproject.toml').resolve()}",
        f"root = {str(nested.resolve())!r}",
        "select = ['PORT101']",
    ]
    none = run_cli("check", "--show-settings", "x.py", cwd=nested.parent).stdout.splitlines()
    assert none[1] == "Settings path: none (the defaults)"


def test_a_nested_configuration_excludes_its_own_files(nested):
    write(nested, "sub/pyproject.toml", '[tool.portlint]\nextend-exclude = ["b.py"]\n')
    result = run_cli("check", ".", "--show-files", cwd=nested)
    assert result.stdout.splitlines() == ["a.py", "other/c.py"]
    named = run_cli("check", "sub/b.py", "--show-files", cwd=nested)
    assert named.stdout.splitlines() == ["sub/b.py"]
    forced = run_cli("check", "sub/b.py", "--show-files", "--force-exclude", cwd=nested)
    assert forced.stdout == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[tool.portlint]\nextend = "pyproject.toml"\n',
            "extend = 'pyproject.toml' extends itself (a cycle)",
        ),
        ('[tool.portlint]\nextend = "../none.toml"\n', "extend = '../none.toml': no such file"),
    ],
)
def test_an_extend_that_cannot_be_followed_is_one_line(tmp_path, text, message):
    write(tmp_path, "sub/pyproject.toml", text)
    write(tmp_path, "sub/a.py", BUGGY)
    result = run_cli("check", "a.py", cwd=tmp_path / "sub")
    assert (result.returncode, result.stderr) == (
        2,
        f"portlint: error: {(tmp_path / 'sub' / 'pyproject.toml').resolve()}: {message}\n",
    )


# --- Options laid over the configuration ---------------------------------------------------------
def test_inline_config_pairs_are_laid_over_the_configuration(nested):
    result = run_cli("check", "a.py", "--config", 'select = ["PORT102"]', "--output-format", "json",
                     cwd=nested)  # fmt: skip
    assert codes(result) == [("a.py", "PORT102")]
    both = run_cli("check", "a.py", "--config", 'select = ["PORT1"]', "--config",
                   'ignore = ["PORT101"]', "--output-format", "json", cwd=nested)  # fmt: skip
    assert codes(both) == [("a.py", "PORT102")]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("selekt = 1", "--config 'selekt = 1': unknown key(s) in [tool.portlint]: selekt"),
        ("select = [", "--config 'select = [': not a TOML `KEY = VALUE` pair"),
        ("select = 1", "--config 'select = 1': [tool.portlint] select must be a list of strings"),
        (
            'extend = "a.toml"',
            "--config 'extend = \"a.toml\"': extend works in a configuration file only",
        ),
    ],
)
def test_a_bad_inline_config_is_one_line(nested, option, message):
    result = run_cli("check", "a.py", "--config", option, cwd=nested)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"portlint: error: {message}")


def test_two_config_files_are_an_error(nested):
    result = run_cli("check", "--config", "pyproject.toml", "--config", "other/pyproject.toml",
                     cwd=nested)  # fmt: skip
    assert (result.returncode, result.stderr) == (
        2,
        "portlint: error: --config: give one configuration file (and any KEY = VALUE pairs)\n",
    )


def test_exclude_options_replace_or_extend_the_configured_patterns(nested):
    write(nested, "pyproject.toml", '[tool.portlint]\nextend-exclude = ["other"]\n')
    assert run_cli("check", "--show-files", cwd=nested).stdout.splitlines() == ["a.py", "sub/b.py"]
    extended = run_cli("check", "--show-files", "--extend-exclude", "a.py", cwd=nested)
    assert extended.stdout.splitlines() == ["sub/b.py"]
    write(nested, "build/d.py", BUGGY)  # excluded by default
    replaced = run_cli("check", "--show-files", "--exclude", "sub", cwd=nested)
    assert replaced.stdout.splitlines() == ["a.py", "build/d.py"]  # (extend-exclude still holds)


def test_per_file_ignores_options_replace_or_extend_the_configured_table(tmp_path):
    write(tmp_path, "pyproject.toml",
          '[tool.portlint]\nper-file-ignores = { "a.py" = ["PORT101"] }\n')  # fmt: skip
    write(tmp_path, "a.py", BUGGY)
    write(tmp_path, "b.py", BUGGY)

    def run(*options: str) -> list[tuple[str, str]]:
        return codes(run_cli("check", ".", "--output-format", "json", *options, cwd=tmp_path))

    assert run() == [("a.py", "PORT102"), ("b.py", "PORT101"), ("b.py", "PORT102")]
    assert run("--extend-per-file-ignores", "b.py:PORT102,b.py:PORT101") == [("a.py", "PORT102")]
    assert run("--per-file-ignores", "b.py:PORT102") == [
        ("a.py", "PORT101"), ("a.py", "PORT102"), ("b.py", "PORT101")
    ]  # fmt: skip
    bad = run_cli("check", ".", "--per-file-ignores", "PORT101", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (
        2,
        "portlint: error: --per-file-ignores: expected PATTERN:CODE, got 'PORT101'\n",
    )


def test_a_linked_folder_takes_the_configuration_above_its_target(tmp_path, monkeypatch):
    """Folders are resolved (links followed) before the nearest pyproject.toml is looked up, each
    relative to the run's folder, whatever folder the process is in."""
    from portlint.config import Configurations, Overrides

    theirs = tmp_path / "theirs"
    (theirs / "pkg" / "sub").mkdir(parents=True)
    (theirs / "pyproject.toml").write_text("[tool.portlint]\nselect = ['PORT101']\n")
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "pyproject.toml").write_text("[tool.portlint]\nselect = ['PORT102']\n")
    (ours / "link").symlink_to(theirs / "pkg", target_is_directory=True)
    (ours / "plain").mkdir()
    monkeypatch.chdir(tmp_path)  # (not the run's folder)
    configurations = Configurations(Overrides(), ours)
    assert configurations.config_for(Path("link/x.py")) == theirs / "pyproject.toml"
    assert configurations.config_for(Path("link/sub/y.py")) == theirs / "pyproject.toml"
    assert configurations.config_for(Path("plain/z.py")) == ours / "pyproject.toml"
    assert configurations.config_for(Path("top.py")) == ours / "pyproject.toml"
    assert configurations.config_for(ours / "link" / "sub") == theirs / "pyproject.toml"
