"""Where portlint's command line behaves as ruff's (issue #51): the command line's selection over
the configuration's, `--add-noqa` over stale codes, an empty tree, `--since` from anywhere, and
`--statistics` with its total."""

from __future__ import annotations

import subprocess

from tests.helpers import run_cli, tree

NCCL = 'import torch.distributed as dist\n\n\ndef init():\n    dist.init_process_group("nccl")\n'
SYNC = "import torch\n\n\ndef step():\n    torch.cuda.synchronize()\n"


def _codes(result) -> list[str]:
    return [line.split(" ")[1] for line in result.stdout.splitlines() if ": PORT" in line]


def test_extend_select_on_the_command_line_wins_over_a_configured_ignore(tmp_path):
    tree(tmp_path, {"pyproject.toml": '[tool.portlint]\nignore = ["PORT406"]\n', "a.py": NCCL})
    assert _codes(run_cli("check", "a.py", "--no-cache", cwd=tmp_path)) == []
    found = run_cli("check", "a.py", "--no-cache", "--extend-select", "PORT406", cwd=tmp_path)
    assert _codes(found) == ["PORT406"]
    # `--select` starts afresh: the configuration's `ignore` is a layer below it.
    found = run_cli("check", "a.py", "--no-cache", "--select", "PORT4", cwd=tmp_path)
    assert _codes(found) == ["PORT406"]
    # and the command line's own `--ignore` still applies on top
    found = run_cli(
        "check", "a.py", "--no-cache", "--extend-select", "PORT406", "--ignore", "PORT406",
        cwd=tmp_path,
    )  # fmt: skip
    assert _codes(found) == []


def test_add_noqa_replaces_the_codes_that_suppress_nothing_and_never_adds_port001(tmp_path):
    source = (
        "import torch\n"
        "torch.cuda.synchronize()  # noqa: PORT101\n"
        'x = torch.device("cuda")  # noqa: E501\n'
    )
    tree(tmp_path, {"a.py": source})
    result = run_cli("check", "a.py", "--no-cache", "--add-noqa", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.py").read_text() == (
        "import torch\n"
        "torch.cuda.synchronize()  # noqa: PORT401\n"
        'x = torch.device("cuda")  # noqa: E501, PORT101\n'
    )
    assert run_cli("check", "a.py", "--no-cache", cwd=tmp_path).returncode == 0


def test_a_tree_with_no_python_file_is_a_warning(tmp_path):
    tree(tmp_path, {"notes.txt": "nothing here\n"})
    result = run_cli("check", ".", "--no-cache", cwd=tmp_path, subprocess_=True)
    assert result.returncode == 0
    assert "portlint: warning: no Python files found under the given paths" in result.stderr
    tree(tmp_path, {"a.py": "x = 1\n"})
    assert (
        "warning" not in run_cli("check", ".", "--no-cache", cwd=tmp_path, subprocess_=True).stderr
    )


def test_since_uses_the_repository_of_the_files_wherever_portlint_runs(tmp_path):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    tree(repo, {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    elsewhere.mkdir()
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t",
                                                "commit", "-qm", "start"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "a.py").write_text("x = 1\n" + SYNC)
    (repo / "b.py").write_text("y = 1\n" + SYNC)
    result = run_cli(
        "check", "--since", "HEAD", "--no-cache", str(repo / "a.py"), cwd=elsewhere
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines() if ": PORT" in line] == [
        str(repo / "a.py")
    ]


def test_statistics_end_with_the_total_and_what_fix_can_do(tmp_path):
    tree(
        tmp_path,
        {"a.py": SYNC + NCCL.replace("import torch.distributed", "\nimport torch.distributed")},
    )
    result = run_cli("check", "a.py", "--no-cache", "--statistics", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[-2] == "Found 2 errors."
    assert (
        lines[-1]
        == "[*] 1 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`)."
    )
    assert [line.split()[1] for line in lines[:-2]] == ["PORT401", "PORT406"]
