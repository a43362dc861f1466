"""The command line, run as a user runs it: a subprocess, exit codes, outputs, configuration."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest

from portlint.docs import rule_url
from tests.helpers import run_cli

BUGGY = 'import torch\ndevice = torch.device("cuda")\ny = x.cuda()\n'


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path, "src/pkg/buggy.py", BUGGY)
    write(tmp_path, "src/pkg/clean.py", "import torch\ny = torch.zeros(3)\n")
    return tmp_path


def test_the_program_ends_with_all_of_its_output_written(tmp_path):
    """The program ends without freeing what it built (`os._exit`), once its output is out: all of
    a long report reaches a pipe and an output file, with the exit status."""
    write(tmp_path, "many.py", "import torch\n" + "torch.cuda.synchronize()\n" * 3000)
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    piped = subprocess.run(
        [sys.executable, "-m", "portlint", "check", "many.py", "--output-format", "json"],
        cwd=tmp_path, capture_output=True, text=True, env=buffered, timeout=300,
    )  # fmt: skip
    assert piped.returncode == 1, piped.stderr
    assert [item["location"]["row"] for item in json.loads(piped.stdout)] == list(range(2, 3002))
    to_file = run_cli(
        "check", "many.py", "--output-format", "concise", "--output-file", "out.txt", "-q",
        cwd=tmp_path, subprocess_=True,
    )  # fmt: skip
    assert to_file.returncode == 1 and to_file.stdout == ""
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert len(lines) == 3000 and lines[-1].startswith("many.py:3001:1: PORT")


def test_a_reader_that_stops_reading_ends_the_run_quietly(tmp_path):
    """`portlint check | head -1`: the pipe closes under a long report; the run ends with status 2
    and nothing on stderr (no traceback, no error about the pipe)."""
    write(tmp_path, "many.py", "import torch\n" + "torch.cuda.synchronize()\n" * 3000)
    process = subprocess.Popen(
        [sys.executable, "-m", "portlint", "check", "many.py", "--no-cache"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    errors = process.stderr.read()
    assert process.wait(timeout=300) == 2
    assert first.startswith(b"many.py:2:1: PORT401") and errors == b""


def test_findings_exit_1_in_sorted_text_with_summary(project):
    """As a user runs it: `python -m portlint` in a process of its own."""
    result = run_cli("check", "src", cwd=project, subprocess_=True)
    assert result.returncode == 1, result.stderr
    path = str(Path("src/pkg/buggy.py"))
    assert result.stdout.splitlines() == [
        f"{path}:2:10: PORT101 `torch.device` hardcodes CUDA; use `torch.accelerator.current_accelerator()`",
        f"{path}:3:7: PORT102 `.cuda()` moves to CUDA by name; use `.to(torch.accelerator.current_accelerator())`",
        "Found 2 errors.",
        "2 unsafe fixes available with `--fix --unsafe-fixes`.",
    ]
    assert result.stderr == ""


def test_clean_tree_exits_0(project):
    result = run_cli("check", "src/pkg/clean.py", cwd=project)
    assert (result.returncode, result.stdout) == (0, "All checks passed!\n")


def test_default_path_is_the_current_folder(project):
    assert run_cli("check", cwd=project / "src").returncode == 1


def test_json_output_uses_ruff_field_names(project):
    result = run_cli("check", "src", "--output-format", "json", cwd=project)
    assert result.returncode == 1
    items = json.loads(result.stdout)
    assert [item["code"] for item in items] == ["PORT101", "PORT102"]
    first = items[0]
    assert set(first) == {
        "cell",
        "code",
        "confidence",
        "detail",
        "end_location",
        "filename",
        "fix",
        "location",
        "message",
        "name",
        "noqa_row",
        "severity",
        "url",
    }
    assert first["location"] == {"row": 2, "column": 10}
    assert first["end_location"] == {"row": 2, "column": 30}
    assert first["filename"] == str((project / "src/pkg/buggy.py").resolve())
    assert first["noqa_row"] == 2 and first["fix"]["applicability"] == "unsafe"
    assert first["confidence"] == "certain"
    assert (first["name"], first["severity"]) == ("hardcoded-cuda-device", "error")
    assert first["url"] == rule_url("hardcoded-cuda-device")


def test_json_has_every_field_ruff_has_and_syntax_errors_are_invalid_syntax(tmp_path):
    """ruff 0.17's JSON objects (as `ruff check --output-format json` prints them) have these
    keys; a file that does not parse is code `invalid-syntax`, as in ruff."""
    ruff_fields = {"cell", "code", "end_location", "filename", "fix", "location", "message",
                   "name", "noqa_row", "severity", "url"}  # fmt: skip
    write(tmp_path, "broken.py", "import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    write(
        tmp_path,
        "warm.py",
        'import torch\n\n\ndef run(x, device="cuda"):\n    return x.to(device)\n',
    )
    result = run_cli("check", ".", "--output-format", "json", cwd=tmp_path)
    items = json.loads(result.stdout)
    assert all(ruff_fields <= set(item) for item in items)
    assert [
        (i["code"], i["name"], i["severity"], i["noqa_row"], i["url"], i["location"]["row"])
        for i in items
    ] == [
        ("invalid-syntax", "invalid-syntax", "error", None, None, 2),
        ("PORT101", "hardcoded-cuda-device", "warning", 4, rule_url("hardcoded-cuda-device"), 4),
    ]


def test_likely_findings_are_marked_in_text_and_json(tmp_path):
    write(tmp_path, "a.py", "import torch\ns = torch.arange(4)\nn = s.new_empty(4)\nconsume(n)\n")
    text = run_cli("check", "a.py", cwd=tmp_path)
    assert text.stdout.splitlines()[0].endswith("[likely]")
    (item,) = json.loads(run_cli("check", "a.py", "--output-format", "json", cwd=tmp_path).stdout)
    assert (item["code"], item["confidence"]) == ("PORT201", "likely")


def test_json_output_of_clean_tree_is_empty_list(project):
    result = run_cli("check", "src/pkg/clean.py", "--output-format", "json", cwd=project)
    assert (result.returncode, json.loads(result.stdout)) == (0, [])


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        (["--select", "PORT101"], ["PORT101"]),
        (["--select", "PORT1"], ["PORT101", "PORT102"]),
        (["--ignore", "PORT101"], ["PORT102"]),
        (["--select", "PORT2", "--extend-select", "PORT102"], ["PORT102"]),
        (["--select", "ALL", "--ignore", "PORT1"], []),
    ],
)
def test_select_and_ignore_on_the_command_line(project, args, codes):
    result = run_cli("check", "src", "--output-format", "json", *args, cwd=project)
    assert [item["code"] for item in json.loads(result.stdout)] == codes
    assert result.returncode == (1 if codes else 0)


def test_exit_zero_and_statistics(project):
    result = run_cli("check", "src", "--exit-zero", "--statistics", cwd=project)
    assert result.returncode == 0
    assert result.stdout.splitlines()[:2] == [
        "     1  PORT101      hardcoded-cuda-device",
        "     1  PORT102      cuda-method-call",
    ]
    assert result.stdout.splitlines()[2] == "Found 2 errors."


def test_quiet_prints_findings_only(project):
    result = run_cli("check", "src", "-q", cwd=project)
    assert result.returncode == 1 and len(result.stdout.splitlines()) == 2


def test_config_select_ignore_and_per_file_ignores(project):
    write(
        project,
        "pyproject.toml",
        """
        [tool.portlint]
        select = ["PORT1", "PORT3"]
        ignore = ["PORT102"]
        per-file-ignores = {"src/pkg/other.py" = ["PORT101"]}
    """,
    )
    write(project, "src/pkg/other.py", BUGGY)
    result = run_cli("check", "src", "--output-format", "json", cwd=project)
    found = [(Path(i["filename"]).name, i["code"]) for i in json.loads(result.stdout)]
    assert found == [("buggy.py", "PORT101")]


def test_command_line_select_overrides_config(project):
    write(project, "pyproject.toml", '[tool.portlint]\nselect = ["PORT101"]\n')
    result = run_cli("check", "src", "--select", "PORT102", "--output-format", "json", cwd=project)
    assert [i["code"] for i in json.loads(result.stdout)] == ["PORT102"]


def test_config_is_found_from_a_subfolder(project):
    write(project, "pyproject.toml", '[tool.portlint]\nignore = ["PORT1"]\n')
    assert run_cli("check", ".", cwd=project / "src" / "pkg").returncode == 0


def test_config_exclude_and_extend_exclude(project):
    write(project, "pyproject.toml", '[tool.portlint]\nextend-exclude = ["src/pkg/buggy.py"]\n')
    assert run_cli("check", "src", cwd=project).returncode == 0
    # A file named explicitly is linted even when excluded.
    assert run_cli("check", "src/pkg/buggy.py", cwd=project).returncode == 1


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('[tool.portlint]\nselekt = ["PORT1"]\n', "unknown key(s) in [tool.portlint]: selekt"),
        ('[tool.portlint]\nselect = ["PORT999"]\n', "unknown rule selector 'PORT999'"),
        ('[tool.portlint]\nignore = ["E501"]\n', "unknown rule selector 'E501'"),
        ('[tool.portlint]\nselect = "PORT1"\n', "select must be a list of strings"),
        (
            '[tool.portlint]\nper-file-ignores = {"a.py" = ["NOPE1"]}\n',
            "unknown rule selector 'NOPE1'",
        ),
        ("[tool.portlint\n", "cannot read"),
        (
            '[tool.portlint]\ndevice-expression = "x +"\n',
            "device-expression is not a Python expression",
        ),
    ],
)
def test_bad_config_is_a_clear_error_with_exit_2(project, config, message):
    (project / "pyproject.toml").write_text(config)
    result = run_cli("check", "src", cwd=project)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_unknown_code_on_command_line_exits_2(project):
    result = run_cli("check", "src", "--select", "PORT9", cwd=project)
    assert result.returncode == 2 and "unknown rule selector 'PORT9'" in result.stderr


def test_explicit_config_file(project):
    config = write(project, "conf/custom.toml", '[tool.portlint]\nselect = ["PORT102"]\n')
    result = run_cli(
        "check", "src", "--config", str(config), "--output-format", "json", cwd=project
    )
    assert [i["code"] for i in json.loads(result.stdout)] == ["PORT102"]
    missing = run_cli("check", "src", "--config", "nope.toml", cwd=project)
    assert missing.returncode == 2 and "config file not found" in missing.stderr


def test_configured_stream_function_is_a_stream_fetch(project):
    write(
        project,
        "src/pkg/capture.py",
        """
        import torch
        from mylib.streams import get_capture_stream

        def capture(model, x, g):
            model(x)
            with torch.cuda.graph(g, stream=get_capture_stream()):
                model(x)
    """,
    )
    args = ("check", "src/pkg/capture.py", "--select", "PORT3", "--output-format", "json")
    assert json.loads(run_cli(*args, cwd=project).stdout) == []
    write(
        project,
        "pyproject.toml",
        '[tool.portlint]\nstream-functions = ["mylib.streams.get_capture_stream"]\n',
    )
    found = json.loads(run_cli(*args, cwd=project).stdout)
    assert [(i["code"], i["location"]["row"]) for i in found] == [("PORT301", 7)]


@pytest.mark.parametrize(
    ("line", "suppressed"),
    [
        ('d = torch.device("cuda")  # noqa: PORT101', True),
        ('d = torch.device("cuda")  # noqa', True),
        ('d = torch.device("cuda")  # NOQA:PORT102,PORT101', True),
        ('d = torch.device("cuda")  # noqa: PORT102', False),
        ('d = torch.device("cuda", "# noqa")', False),
    ],
)
def test_line_suppressions(tmp_path, line, suppressed):
    write(tmp_path, "a.py", f"import torch\n{line}\n")
    result = run_cli("check", "a.py", "--select", "PORT101", cwd=tmp_path)
    assert result.returncode == (0 if suppressed else 1)


def test_file_level_suppression(tmp_path):
    write(tmp_path, "a.py", "# portlint: noqa\n" + BUGGY)
    write(tmp_path, "b.py", "# portlint: noqa: PORT102\n" + BUGGY)
    result = run_cli("check", ".", "--output-format", "json", cwd=tmp_path)
    assert [(Path(i["filename"]).name, i["code"]) for i in json.loads(result.stdout)] == [
        ("b.py", "PORT101")
    ]


def test_bad_files_are_diagnosed_and_the_run_goes_on(tmp_path):
    write(tmp_path, "good.py", BUGGY)
    write(tmp_path, "syntax.py", 'import torch\nx = torch.device("cuda"\n')
    (tmp_path / "nulls.py").write_bytes(b'x = ".cuda("\x00\n')
    (tmp_path / "latin.py").write_bytes(b'import torch\nx = "\xe9"\ny = z.cuda()\n')
    (tmp_path / "declared.py").write_bytes(b'# -*- coding: latin-1 -*-\nx = "\xe9"\ny = z.cuda()\n')
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing-target.py")
    result = run_cli("check", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stdout.splitlines()
    assert "dangling.py:1:1: IOError: No such file or directory" in lines
    assert any(line.startswith("declared.py:3:7: PORT102") for line in lines)
    assert any(line.startswith("good.py:2:10: PORT101") for line in lines)
    assert "latin.py:2:6: SyntaxError: source is not valid utf-8 (byte 0xe9)" in lines
    assert "nulls.py:1:13: SyntaxError: source contains a null byte" in lines
    assert "syntax.py:2:17: SyntaxError: '(' was never closed" in lines
    assert lines[-2:] == [
        "Found 7 errors.",
        "3 unsafe fixes available with `--fix --unsafe-fixes`.",
    ]


def test_missing_path_exits_2(tmp_path):
    result = run_cli("check", "nowhere", cwd=tmp_path)
    assert result.returncode == 2 and "nowhere: no such file or folder" in result.stderr


def test_rules_and_rule_docs(tmp_path):
    listing = run_cli("rules", cwd=tmp_path)
    assert listing.returncode == 0
    from portlint.catalog import CATALOG

    # Every rule, in code order, each with its name from its own declaration.
    rows = [line.split()[:2] for line in listing.stdout.splitlines()]
    assert rows == [
        ["CODE", "NAME"],
        *([code, entry.name] for code, entry in sorted(CATALOG.items())),
    ]
    docs = run_cli("rule", "port201", cwd=tmp_path)
    assert docs.returncode == 0 and docs.stdout.startswith("# PORT201 (new-tensor-inherits-int64)")
    assert "## Why is this bad?" in docs.stdout
    unknown = run_cli("rule", "PORT999", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown rule 'PORT999'" in unknown.stderr


def test_guard_functions_and_cuda_only_paths_config(project):
    """What no convention says (a guard named for what it checks, not for CUDA; a folder named
    for a vendor's product), the configuration says."""
    write(
        project,
        "src/pkg/guarded.py",
        """
        import torch
        from myproj.platform import fast_kernels_ok

        def f(x):
            if fast_kernels_ok():
                return x.cuda()
            return x
    """,
    )
    write(project, "src/pkg/vendor_x/kernels.py", BUGGY)
    args = ("check", "src", "--output-format", "json")
    before = [
        (Path(i["filename"]).name, i["code"])
        for i in json.loads(run_cli(*args, cwd=project).stdout)
    ]
    assert ("guarded.py", "PORT102") in before and ("kernels.py", "PORT101") in before
    write(
        project,
        "pyproject.toml",
        """
        [tool.portlint]
        guard-functions = ["myproj.platform.fast_kernels_ok"]
        cuda-only-paths = ["src/pkg/vendor_x/*"]
    """,
    )
    after = [
        (Path(i["filename"]).name, i["code"])
        for i in json.loads(run_cli(*args, cwd=project).stdout)
    ]
    assert after == [("buggy.py", "PORT101"), ("buggy.py", "PORT102")]


# --- ruff's options ------------------------------------------------------------------------------
FIXABLE = "import torch\ntorch.cuda.synchronize()\nd = torch.device('cuda')\n"


def test_output_file_holds_the_report_and_stdout_nothing(project):
    result = run_cli("check", "src", "-o", "report.json", "--output-format", "json", cwd=project)
    assert (result.returncode, result.stdout) == (1, "")
    items = json.loads((project / "report.json").read_text())
    assert [item["code"] for item in items] == ["PORT101", "PORT102"]
    text = run_cli("check", "src", "--output-file", "report.txt", cwd=project)
    assert text.stdout == ""
    assert (project / "report.txt").read_text().splitlines()[2] == "Found 2 errors."
    missing = run_cli("check", "src", "-o", "no/such/dir/r.txt", cwd=project)
    assert (missing.returncode, missing.stderr) == (
        2, "portlint: error: no/such/dir/r.txt: No such file or directory\n"
    )  # fmt: skip


def test_show_files_lists_what_would_be_linted_and_lints_nothing(project):
    write(project, "src/pkg/notes.txt", "not python\n")
    result = run_cli("check", "--show-files", "src", cwd=project)
    assert (result.returncode, result.stdout) == (0, "src/pkg/buggy.py\nsrc/pkg/clean.py\n")
    assert not (project / ".portlint_cache").exists()


def test_fix_only_fixes_and_reports_nothing_left(tmp_path):
    write(tmp_path, "a.py", FIXABLE)
    result = run_cli("check", "a.py", "--fix-only", "--no-cache", cwd=tmp_path)
    hidden = " (1 fix available with `--unsafe-fixes`).\n"  # the unsafe fix of line 3
    assert (result.returncode, result.stdout) == (0, "Fixed 1 error" + hidden)
    assert "torch.accelerator.synchronize()" in (tmp_path / "a.py").read_text()
    again = run_cli("check", "a.py", "--fix-only", "--no-cache", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "No errors fixed" + hidden)


def test_exit_non_zero_on_fix_fails_where_a_fix_changed_a_file(tmp_path):
    write(tmp_path, "a.py", "import torch\ntorch.cuda.synchronize()\n")
    fixed = run_cli("check", "a.py", "--fix", "--exit-non-zero-on-fix", "--no-cache", cwd=tmp_path)
    assert fixed.returncode == 1
    assert fixed.stdout == "Found 1 error (1 fixed, 0 remaining).\n"
    clean = run_cli("check", "a.py", "--fix", "--exit-non-zero-on-fix", "--no-cache", cwd=tmp_path)
    assert clean.returncode == 0
    stdin = run_cli("check", "-", "--fix-only", "--exit-non-zero-on-fix", cwd=tmp_path,
                    stdin="import torch\ntorch.cuda.synchronize()\n")  # fmt: skip
    assert (stdin.returncode, stdin.stdout) == (
        1,
        "import torch\ntorch.accelerator.synchronize()\n",
    )


def test_cache_dir_holds_the_cache(project, monkeypatch):
    result = run_cli("check", "src", "--cache-dir", "elsewhere/cache", cwd=project)
    assert result.returncode == 1
    assert not (project / ".portlint_cache").exists()

    # the findings' table, the last run's findings, and the project index's facts
    def tables(folder: Path) -> list[str]:
        return sorted(
            "index"
            if p.name.startswith("index-")
            else "run"
            if p.stem.endswith("-run")
            else "table"
            for p in folder.glob("*.json")
        )

    assert tables(project / "elsewhere" / "cache") == ["index", "run", "table"]
    monkeypatch.setenv("PORTLINT_CACHE_DIR", str(project / "from-env"))
    run_cli("check", "src", cwd=project)
    assert tables(project / "from-env") == ["index", "run", "table"]


def test_ignore_noqa_reports_suppressed_findings(tmp_path):
    write(tmp_path, "a.py", 'import torch\nd = torch.device("cuda")  # noqa: PORT101\n')
    assert run_cli("check", "a.py", "--no-cache", cwd=tmp_path).returncode == 0
    result = run_cli("check", "a.py", "--ignore-noqa", "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["PORT101"]


def test_verbose_says_which_configuration_each_file_got(project):
    result = run_cli("check", "src", "-v", "--no-cache", cwd=project)
    assert result.stderr.splitlines() == [
        "portlint: the defaults: 2 file(s)",
        "portlint: checked 2 files, parsed 1",  # (clean.py has no trigger of any rule)
    ]
    write(project, "pyproject.toml", "[tool.portlint]\n")
    configured = run_cli("check", "src", "-v", "--no-cache", cwd=project)
    assert configured.stderr.splitlines()[0] == f"portlint: {project / 'pyproject.toml'}: 2 file(s)"


@pytest.mark.parametrize(
    ("args", "env", "colored"),
    [
        (["--color", "always"], {}, True),
        (["--color", "always"], {"NO_COLOR": "1"}, True),
        (["--color", "never"], {}, False),
        ([], {}, False),  # auto, and the output is not a terminal
    ],
)
def test_color_always_never_and_auto(project, monkeypatch, args, env, colored):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run_cli("check", "src", *args, cwd=project)
    first = result.stdout.splitlines()[0]
    assert ("\x1b[" in first) is colored
    assert click.unstyle(first).startswith("src/pkg/buggy.py:2:10: PORT101 ")
    json_out = run_cli("check", "src", "--output-format", "json", *args, cwd=project).stdout
    assert "\x1b[" not in json_out


def _on_a_terminal(cwd: Path, env: dict[str, str]) -> bytes:
    """What `portlint check src` writes to a pseudo-terminal."""
    master, slave = os.openpty()
    command = [sys.executable, "-m", "portlint", "check", "src"]
    subprocess.run(command, cwd=cwd, stdout=slave, env=env, timeout=300, check=False)
    os.close(slave)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once everything written is read
        while chunk := os.read(master, 65536):
            chunks.append(chunk)
    os.close(master)
    return b"".join(chunks)


def test_color_auto_on_a_terminal_unless_no_color(project):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert b"\x1b[1msrc/pkg/buggy.py\x1b[0m" in _on_a_terminal(project, env)
    assert b"\x1b[" not in _on_a_terminal(project, {**env, "NO_COLOR": "1"})
