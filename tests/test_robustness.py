"""Hostile input and faults: every file gets a diagnostic or its findings, never a crash, a hang,
a disagreement with Python on whether it is valid, or a file lost on disk (issue #22)."""

from __future__ import annotations

import dataclasses
import faulthandler
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from portlint import job
from portlint.bounds import MAX_DEPTH, TOO_DEEP, TOO_LARGE
from portlint.catalog import CATALOG
from portlint.discovery import discover
from portlint.engine import lint_source
from portlint.fix_rounds import fix_source
from portlint.run import lint_files
from portlint.settings import Settings
from tests.helpers import BUGGY, run_cli, settings_for, tree

EVERY_RULE = Settings(select=frozenset(CATALOG))


def diagnostics(source: str, whole: bool = False) -> list[tuple[int, str]]:
    """The file's diagnostics, as `portlint check` finds them, or with whole files parsed and
    fixes made (``whole``)."""
    settings = dataclasses.replace(EVERY_RULE, partial_parse=not whole)
    found = lint_source("m.py", source, settings, fix_edits=whole)
    return [(v.line, v.message) for v in found if v.code is None]


# Code nested past what LibCST and the rules can recurse through, in every shape that nests.
DEEP = {
    "attribute chain": "y = x" + ".a" * 50_000,
    "call chain": "y = f" + "()" * 5_000,
    "subscripts": "y = x" + "[0]" * 400,
    "sum": "y = " + "+".join(["a"] * 50_000),
    "sum next to the finding": "y = torch.device('cuda') + " + "+".join(["a"] * 300),
    "boolean chain": "y = " + " and ".join(["a"] * 5_000),
    "power": "y = " + "**".join(["a"] * 300),
    "negations": "y = " + "-" * 300 + "a",
    "conditional chain": "y = " + "a if b else " * 300 + "c",
    "lambdas": "y = " + "lambda: " * 150 + "0",
    "lists": "y = " + "[" * 150 + "]" * 150,
    "tuples": "y = " + "(a, " * 150 + ")" * 150,
}


@pytest.mark.parametrize("shape", DEEP)
def test_deep_code_gets_one_diagnostic_at_its_line(shape):
    source = BUGGY + DEEP[shape] + "\n"
    for whole in (False, True):
        (found,) = diagnostics(source, whole)
        assert found[0] == 3
        assert found[1].startswith(TOO_DEEP)


def test_a_nest_pythons_tree_does_not_show_is_analysed_and_not_written_again():
    """LibCST nests each part of ``"a" "b" "c"``; Python's tree holds one string: the findings
    are reported, but a fix that would write the nest again is not offered."""
    source = BUGGY + "y = f(" + '"a" ' * 400 + ").cuda()\n"
    for whole in (False, True):
        settings = dataclasses.replace(EVERY_RULE, partial_parse=not whole)
        found = lint_source("m.py", source, settings, fix_edits=whole)
        assert [(v.line, v.code) for v in found] == [(2, "PORT101"), (3, "PORT102")]
        assert found[0].fix is not None and (found[1].fix is None) == whole


def test_code_as_deep_as_real_code_gets_nests_is_analysed():
    """The deepest of 14,000 real files nests 53 levels; the bound leaves room above that."""
    source = BUGGY + "y = " + "[" * (MAX_DEPTH // 2 - 2) + "]" * (MAX_DEPTH // 2 - 2) + "\n"
    found = lint_source("m.py", source, EVERY_RULE, fix_edits=True)
    assert [(v.code, v.line) for v in found] == [("PORT101", 2)]


def test_nesting_python_refuses_gets_pythons_syntax_error():
    source = BUGGY + "y = " + "[" * 5_000 + "]" * 5_000 + "\n"
    assert diagnostics(source) == [(3, "SyntaxError: too many nested parentheses")]


def test_a_huge_line_or_tree_gets_one_diagnostic():
    ten_megabytes = BUGGY + "y = [" + "1, " * 3_400_000 + "]  # cuda\n"
    (found,) = diagnostics(ten_megabytes)
    assert found == (1, f"{TOO_LARGE} ({len(ten_megabytes):,} characters)")
    many_nodes = BUGGY + "y = [\n" + "1,\n" * 300_000 + "]\n"
    ((line, message),) = diagnostics(many_nodes)
    assert line == 1 and message.startswith(TOO_LARGE)
    assert message.endswith(" syntax nodes)")


def test_a_long_table_is_fixed_without_a_quadratic_diff():
    """A fix's edits are the lines that differ: a 30,000-line table around them costs no more
    than reading it (the diff of two files that share most lines took minutes)."""
    source = BUGGY + "y = [\n" + "1,\n" * 30_000 + "]\n"
    result = fix_source("m.py", source, EVERY_RULE, unsafe=True)
    assert result.applied["PORT101"] == 1
    assert result.source.splitlines()[1] != BUGGY.splitlines()[1]
    assert result.source.splitlines()[2:] == source.splitlines()[2:]


def _segfault_on_a(real):
    def crashing(path, source, settings, **options):
        if Path(path).name == "a.py":
            faulthandler.disable()  # (pytest's would print the worker's stack)
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, source, settings, **options)

    return crashing


def _stuck_on_a(real):
    def looping(path, source, settings, **options):
        while Path(path).name == "a.py":
            pass  # (Python code that never ends: only the process can be stopped)
        return real(path, source, settings, **options)

    return looping


@pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork", reason="the fault is planted in forked workers"
)
@pytest.mark.parametrize("others, jobs", [(40, 2), (2, 1)], ids=["a pool", "one forked worker"])
@pytest.mark.parametrize(
    "plant, diagnostic",
    [
        (_segfault_on_a, None),
        (_stuck_on_a, "1:1: too slow to analyse (stopped after 1.5 s)"),
    ],
    ids=["a segfault", "no end"],
)
def test_a_file_that_kills_its_process_or_never_ends_is_that_files_diagnostic(
    tmp_path, monkeypatch, others, jobs, plant, diagnostic
):
    """The run goes on with every other file's findings, in a pool and in a run of a few files
    (one worker forked for them, where they once ran in this process, unguarded)."""
    tree(tmp_path, {"a.py": BUGGY, **{f"m{i}.py": BUGGY for i in range(others)}})
    monkeypatch.setattr(job, "lint_source", plant(job.lint_source))
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    result = lint_files(files, settings, jobs=jobs, time_limit=1.5)
    found = sorted(f"{Path(v.path).name}:{v.line}:{v.col}: {v.message}" for v in result.violations)
    expected = [f"m{i}.py" for i in range(others)]
    assert [line.split(":")[0] for line in found if not line.startswith("a.py")] == sorted(expected)
    if diagnostic is None:
        assert result.internal_errors == [
            f"{tmp_path / 'a.py'}: internal error: the process analysing it died (signal SIGSEGV)"
        ]
    else:
        assert result.internal_errors == []
        assert [line for line in found if line.startswith("a.py")] == [f"a.py:{diagnostic}"]


def test_a_file_out_of_time_is_not_cached(tmp_path, monkeypatch):
    """A stopped file is not cached as analysed: the next run tries it again."""
    from portlint.cache import Cache

    tree(tmp_path, {"a.py": BUGGY, "b.py": BUGGY})
    monkeypatch.setattr(job, "lint_source", _stuck_on_a(job.lint_source))
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    cache = Cache(tmp_path, settings, fix_edits=True)
    lint_files(files, settings, jobs=1, cache=cache, time_limit=0.5)
    assert cache.lookup(str(tmp_path / "a.py")) is None
    assert cache.lookup(str(tmp_path / "b.py")) is not None
    monkeypatch.undo()
    again = lint_files(files, settings, jobs=1, cache=cache, time_limit=0.5)
    assert sorted(Path(v.path).name for v in again.violations) == ["a.py", "b.py"]


def test_a_file_past_the_bounds_is_a_diagnostic_among_every_other_files_findings(tmp_path):
    """The command line, in a real process with a pool, on 41 files of which one nests past
    Python's own bound (a 50,000-deep attribute chain, once a segfault of the whole run)."""
    tree(tmp_path, {"deep.py": BUGGY + DEEP["attribute chain"] + "\n"})
    tree(tmp_path, {f"m{i:02}.py": BUGGY for i in range(40)})
    result = run_cli("check", ".", "-j", "2", "--no-cache", cwd=tmp_path, subprocess_=True)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"deep.py:3:1: {TOO_DEEP}"
    assert [line.split(" ")[:2] for line in lines[1:41]] == [
        [f"m{i:02}.py:2:5:", "PORT101"] for i in range(40)
    ]


def test_where_libcst_refuses_a_cut_python_accepted_the_whole_file_is_parsed(monkeypatch):
    from portlint import visit
    from portlint.speed.cut import Slice

    refused = Slice("y = (\n", [], [1])
    monkeypatch.setattr(visit, "slice_source", lambda *args: refused)
    source = "import torch\n\n\ndef f():\n    return torch.device('cuda')\n"
    assert [(v.code, v.line) for v in lint_source("m.py", source, EVERY_RULE)] == [("PORT101", 5)]


def test_where_libcst_refuses_what_python_accepts_the_file_is_not_analysed_and_no_syntax_error(
    monkeypatch,
):
    import libcst as cst

    def refuse(source):
        raise cst.ParserSyntaxError("tokenizer error", lines=["x\n"] * 3, raw_line=2, raw_column=4)

    monkeypatch.setattr(cst, "parse_module", refuse)
    assert diagnostics(BUGGY) == [
        (2, "not analysed: Python accepts this file but LibCST cannot parse it (tokenizer error)")
    ]


def test_what_is_not_a_readable_file_gets_a_diagnostic_and_no_hang(tmp_path, monkeypatch):
    """A FIFO (which a plain read would wait on forever), a symbolic link loop, a file that
    cannot be read; a folder named like a module is a folder: walked."""
    tree(tmp_path, {"good.py": BUGGY, "x.py/inner.py": BUGGY, "secret.py": BUGGY})
    os.mkfifo(tmp_path / "y.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    real_open = os.open

    def refusing(path, *args, **kwargs):  # (a chmod 000 does not stop root)
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    result = run_cli("check", ".", "y.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line for line in lines if "IOError" in line] == [
        "loop_a.py:1:1: IOError: Too many levels of symbolic links",
        "loop_b.py:1:1: IOError: Too many levels of symbolic links",
        "secret.py:1:1: IOError: Permission denied",
        "y.py:1:1: IOError: not a regular file",
    ]
    assert [line.split(" ")[:2] for line in lines if "PORT101" in line] == [
        ["good.py:2:5:", "PORT101"],
        [f"x.py{os.sep}inner.py:2:5:", "PORT101"],
    ]


def test_a_read_only_file_under_fix_is_reported_and_left_as_it_was(tmp_path):
    tree(tmp_path, {"ro.py": BUGGY, "rw.py": BUGGY})
    os.chmod(tmp_path / "ro.py", 0o444)
    result = run_cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert result.returncode == 2
    assert "portlint: error: ro.py: file is read-only; not fixed" in result.stderr.splitlines()
    assert (tmp_path / "ro.py").read_text() == BUGGY
    assert (tmp_path / "rw.py").read_text() != BUGGY


def test_fix_never_writes_through_a_link_out_of_the_project(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "elsewhere"
    tree(project, {"pyproject.toml": "", "own.py": BUGGY})
    tree(outside, {"theirs.py": BUGGY})
    (project / "link.py").symlink_to(outside / "theirs.py")
    result = run_cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", cwd=project)
    assert (outside / "theirs.py").read_text() == BUGGY
    assert (project / "own.py").read_text() != BUGGY
    assert (
        f"portlint: warning: fix dropped: link.py: a symbolic link to {outside / 'theirs.py'}, "
        "which is outside the project"
    ) in result.stderr.splitlines()
    assert result.returncode == 1  # (the finding in link.py is still there)


def test_fix_keeps_hard_links_by_refusing_and_keeps_the_owner(tmp_path):
    tree(tmp_path, {"linked.py": BUGGY, "owned.py": BUGGY})
    os.link(tmp_path / "linked.py", tmp_path / "other_name")
    if os.geteuid() == 0:
        os.chown(tmp_path / "owned.py", 65534, 65534)
    result = run_cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert "portlint: error: linked.py: file has 2 hard links; not fixed" in result.stderr
    assert (tmp_path / "linked.py").read_text() == BUGGY
    assert (tmp_path / "other_name").stat().st_ino == (tmp_path / "linked.py").stat().st_ino
    owned = (tmp_path / "owned.py").stat()
    assert (tmp_path / "owned.py").read_text() != BUGGY
    expected = (65534, 65534) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    assert (owned.st_uid, owned.st_gid) == expected


def test_a_baseline_in_a_missing_folder_or_on_a_full_disk_is_one_line_and_nothing_lost(
    tmp_path, monkeypatch
):
    tree(tmp_path, {"a.py": BUGGY})
    result = run_cli("check", ".", "--write-baseline", "missing/b.json", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "portlint: error: cannot write baseline missing/b.json: No such file or directory\n"
    )
    baseline = tmp_path / "b.json"
    baseline.write_text("the baseline as it was\n")
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            self.stream.close()

        def write(self, data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda *args: FullDisk(real_fdopen(*args)))
    result = run_cli("check", ".", "--write-baseline", "b.json", cwd=tmp_path)
    assert result.returncode == 2
    assert (
        result.stderr == "portlint: error: cannot write baseline b.json: No space left on device\n"
    )
    assert baseline.read_text() == "the baseline as it was\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".portlint_cache", "a.py", "b.json"]


# The cache: whatever is in it, and whatever happens while it is written, a run finds what a run
# without it finds.

CACHED_TREE = {
    "pyproject.toml": "[tool.portlint]\n",
    **{f"src/m{i:02}.py": BUGGY for i in range(20)},
    "src/clean.py": "x = 1\n",
    "src/fixable.py": "import torch\nx = y.cuda()\n",
}


def _json_findings(root: Path, *args: str) -> list[dict]:
    import json

    result = run_cli("check", "src", "--output-format", "json", *args, cwd=root)
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def _tables(root: Path) -> list[Path]:
    """The findings' tables (not the last run's record, not the project index's facts)."""
    found = (root / ".portlint_cache").glob("*.json")
    return sorted(
        p for p in found if not p.name.startswith("index-") and not p.stem.endswith("-run")
    )


@pytest.mark.parametrize(
    "entry",
    [5, None, "x", [], [1, 2, 3], [[1, 2, 3], "digest", 7], [[1, 2, 3], 5, []],
     [[], "d", [["x"]]], [[], "d", [[1, 1, None, "m", 1, 1, "high", [1, 2]]]],
     [[], "d", [["one", 1, None, "m", 1, 1, "high", None]]]],
)  # fmt: skip
def test_a_malformed_entry_in_a_valid_table_is_ignored(tmp_path, entry):
    tree(tmp_path, CACHED_TREE)
    uncached = _json_findings(tmp_path, "--no-cache")
    _json_findings(tmp_path)
    (table,) = _tables(tmp_path)
    import json

    entries = json.loads(table.read_text())
    for key in entries:
        entries[key] = entry
    table.write_text(json.dumps(entries))
    assert _json_findings(tmp_path) == uncached
    for key in entries:  # and the content check (a touched file) meets the same entries
        os.utime(key, ns=(1, 1))
    table.write_text(json.dumps(entries))
    assert _json_findings(tmp_path) == uncached == _json_findings(tmp_path)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "not a table", "empty"])
def test_a_corrupted_table_gives_what_no_cache_gives(tmp_path, damage):
    tree(tmp_path, CACHED_TREE)
    uncached = _json_findings(tmp_path, "--no-cache")
    _json_findings(tmp_path)
    (table,) = _tables(tmp_path)
    text = table.read_bytes()
    table.write_bytes(
        {"truncated": text[: len(text) // 2], "garbage": os.urandom(300), "not a table": b"[1]",
         "empty": b""}[damage]
    )  # fmt: skip
    assert _json_findings(tmp_path) == uncached == _json_findings(tmp_path)


def test_a_file_edited_during_a_run_is_linted_again_by_the_next(tmp_path, monkeypatch):
    """The file is edited after it was read (while it is being linted): what is cached is the
    content that was read, with the status it had then, so the next run reads it again."""
    tree(tmp_path, CACHED_TREE)
    real = job.lint_source
    edited = tmp_path / "src" / "clean.py"

    def edit_while_linting(path, source, settings, **options):
        if path.endswith("fixable.py"):
            edited.write_text("x = 1\ny = z.cuda()\n")
            os.utime(edited, ns=(2_000_000_000, 2_000_000_000))
        return real(path, source, settings, **options)

    monkeypatch.setattr(job, "lint_source", edit_while_linting)
    first = _json_findings(tmp_path, "-j", "1")
    assert not [f for f in first if f["filename"].endswith("clean.py")]
    monkeypatch.setattr(job, "lint_source", real)
    found = [f["code"] for f in _json_findings(tmp_path) if f["filename"].endswith("clean.py")]
    assert found == ["PORT102"]


def test_a_cache_folder_that_is_a_link_is_never_written_through(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    tree(project, CACHED_TREE)
    outside.mkdir()
    (project / ".portlint_cache").symlink_to(outside, target_is_directory=True)
    uncached = _json_findings(project, "--no-cache")
    assert _json_findings(project) == uncached
    assert list(outside.iterdir()) == []
    assert run_cli("clean", cwd=project).stdout == "Removed .portlint_cache/\n"
    assert not os.path.lexists(project / ".portlint_cache") and outside.is_dir()


def test_a_dangling_gitignore_link_in_the_cache_is_not_followed(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    tree(project, CACHED_TREE)
    outside.mkdir()
    (project / ".portlint_cache").mkdir()
    (project / ".portlint_cache" / ".gitignore").symlink_to(outside / "planted")
    assert _json_findings(project) == _json_findings(project, "--no-cache")
    assert list(outside.iterdir()) == []
    assert len(_tables(project)) == 1


def test_concurrent_runs_sharing_a_cache_give_what_no_cache_gives(tmp_path):
    import json
    import subprocess
    import sys

    tree(tmp_path, CACHED_TREE)
    uncached = _json_findings(tmp_path, "--no-cache")
    command = [sys.executable, "-m", "portlint", "check", "src", "--output-format", "json"]
    for _ in range(2):  # cold, then warm
        runs = [
            subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        assert [json.loads(run.communicate()[0]) for run in runs] == [uncached] * 4
    assert _json_findings(tmp_path) == uncached
    assert [p.name for p in (tmp_path / ".portlint_cache").iterdir() if p.suffix == ".tmp"] == []


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
def test_an_empty_select_is_an_error_not_an_empty_selection(tmp_path, value):
    tree(tmp_path, {"a.py": BUGGY})
    result = run_cli("check", "a.py", "--select", value, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"portlint: error: --select {value!r} names no code or prefix\n"


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="simulates a machine with no CUDA device"
)
@pytest.mark.parametrize(
    "no_cuda",
    [
        "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
        "No CUDA GPUs are available",
        "Torch not compiled with CUDA enabled",
    ],
)
def test_the_seed_harness_accepts_every_way_no_cuda_shows_itself(monkeypatch, no_cuda):
    """What a CUDA build of torch says at its first CUDA allocation on a machine with no NVIDIA
    driver (a plain `pip install` on a CPU machine), simulated on any build: the hardcoded-device
    seed fails with it, which is the bug, and the harness says so; the fixed form passes."""
    import torch

    from reference_impl import validate

    def no_device():
        raise (AssertionError if "compiled" in no_cuda else RuntimeError)(no_cuda)

    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "_lazy_init", no_device)
    by_name = {case.name: case for case in validate.cases()}
    for name in ("warmup-buggy-cpu-worker", "warmup-buggy-meta-worker"):
        row = validate.observe(by_name[name])
        assert row.ok, row
        assert row.observed.startswith("failed: ") and no_cuda in row.observed
    assert validate.observe(by_name["warmup-fixed-cpu-worker"]).ok
    unrelated = validate.Case("x", "1", "buggy", validate.NO_CUDA, lambda: 1 / 0)
    assert validate.observe(unrelated).ok is False


def test_portlint_never_imports_or_runs_the_code_it_lints(tmp_path):
    """Files that would write a marker if imported or run, and a coding declaration naming a
    codec that a `.pth`-free tree could only provide by running code: nothing is written."""
    marker = tmp_path / "MARKER"
    plant = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    tree(tmp_path, {
        "conftest.py": plant + BUGGY,
        "setup.py": plant + "import setuptools\nsetuptools.setup()\n" + BUGGY,
        "pkg/__init__.py": plant + BUGGY,
        "pkg/__main__.py": plant + BUGGY,
        "sitecustomize.py": plant,
        "usercustomize.py": plant,
        "evil_codec.py": plant + "import codecs\ncodecs.register(lambda name: None)\n",
    })  # fmt: skip
    (tmp_path / "declared.py").write_bytes(b"# -*- coding: evil_codec -*-\n" + BUGGY.encode())
    for fix in ([], ["--fix", "--unsafe-fixes"]):
        result = run_cli("check", ".", "--no-cache", *fix, cwd=tmp_path, subprocess_=True)
        assert "Traceback" not in result.stderr
        assert "declared.py:1:1: SyntaxError: unknown encoding: evil_codec" in result.stdout
        assert not marker.exists()
    assert (tmp_path / "pkg" / "__init__.py").read_text() != plant + BUGGY  # (it was fixed)


def test_sigkill_in_the_middle_of_fix_on_a_big_tree_leaves_no_file_half_written(tmp_path):
    """Each file is either as it was or wholly fixed, wherever the kill lands: fixes are written
    to a temporary file that is renamed over the file."""
    import subprocess
    import sys

    padding = "".join(f"value_{i} = {i}\n" for i in range(200))
    original = BUGGY + padding
    tree(tmp_path, {f"pkg{i // 100}/m{i:03}.py": original for i in range(600)})
    fixed = fix_source("m.py", original, EVERY_RULE, unsafe=True).source
    assert fixed != original
    command = [sys.executable, "-m", "portlint", "check", ".", "--fix", "--unsafe-fixes"]
    run = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL)
    files = sorted(tmp_path.glob("pkg*/m*.py"))
    while run.poll() is None and all(f.stat().st_size == len(original) for f in files[:50]):
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    assert run.wait() == -signal.SIGKILL  # (it was killed during the fixes, not after)
    contents = {f.read_text() for f in files}
    assert fixed in contents and original in contents
    assert contents == {original, fixed}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_kill_between_writing_and_renaming_leaves_the_file_as_it_was(tmp_path):
    from portlint.atomic import write_atomically

    target = tmp_path / "m.py"
    target.write_text(BUGGY)
    child = os.fork()
    if child == 0:  # the writer, killed once the new text is on disk but not yet in place
        os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
        write_atomically(str(target), b"the new text\n" * 1000)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert target.read_text() == BUGGY


def test_what_only_the_compiler_refuses_is_a_syntax_error_too():
    """(The other cases of agreement with CPython are the reproducers of tests/test_fuzz.py.)"""
    source = BUGGY + "return d\n"
    assert diagnostics(source) == [(3, "SyntaxError: 'return' outside function")]


def test_pythons_warnings_about_the_code_are_not_printed_nor_errors(recwarn):
    source = BUGGY + 'x = d is "cuda"\ny = "a" (1)\n'
    assert diagnostics(source) == []
    assert [str(w.message) for w in recwarn] == []


def test_bytes_python_never_decodes_are_analysed_and_never_rewritten(tmp_path):
    """Python's compile() accepts bytes that are not UTF-8 in a comment: portlint analyses the
    file as well, but does not fix it (the text it read has those bytes replaced)."""
    data = b'import torch  # caf\xb6\nd = torch.device("cuda")\n'
    (tmp_path / "m.py").write_bytes(data)
    result = run_cli("check", "m.py", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.startswith("m.py:2:5: PORT101 ")
    assert "portlint: error: m.py: not valid utf-8; not fixed\n" in result.stderr
    assert (tmp_path / "m.py").read_bytes() == data


def test_a_long_run_of_parentheses_in_a_string_is_searched_once():
    """The evidence of a CUDA device argument (`(` then `"cuda"`, with parentheses between) was
    sought from each parenthesis of a run: 50,000 of them in a string took minutes."""
    source = BUGGY + 'y = "' + "(" * 200_000 + '"\nz = torch.device((("cuda")))\n'
    found = lint_source("m.py", source, EVERY_RULE)
    assert [(v.code, v.line) for v in found] == [("PORT101", 2), ("PORT101", 4)]


@pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork", reason="the fault is planted in forked workers"
)
def test_the_command_line_sets_the_time_limit_and_refuses_one_of_zero(tmp_path, monkeypatch):
    tree(tmp_path, {"a.py": BUGGY, "b.py": BUGGY})
    monkeypatch.setattr(job, "lint_source", _stuck_on_a(job.lint_source))
    result = run_cli("check", ".", "--no-cache", "--file-time-limit", "0.5", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert "a.py:1:1: too slow to analyse (stopped after 0.5 s)" in lines
    assert any(line.startswith("b.py:2:") for line in lines), lines
    refused = run_cli("check", ".", "--file-time-limit", "0", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--file-time-limit" in refused.stderr


def test_a_lint_leaves_no_reference_cycle_that_holds_its_trees():
    """A lint's trees are freed when it returns: a reference cycle that reached them (a recursive
    closure over the positions, a visitor holding the walk that holds it) kept both whole trees
    until the cycle collector looked at every node of them, 20 ms of each lint in the editor."""
    import ast
    import gc

    import libcst as cst

    from portlint.analysis.walk import Walk

    source = (
        "import torch\n\n\ndef f(x):\n    torch.cuda.synchronize()\n    return x.cuda()\n\n\n"
        "def g(y):\n    return f(y)\n"
    )
    gc.collect()
    gc.disable()
    try:
        found = lint_source("m.py", source, EVERY_RULE, fix_edits=False, speedups=True, facts={})
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        held = [
            type(o).__name__ for o in gc.garbage if isinstance(o, (cst.Module, ast.Module, Walk))
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert {v.code for v in found} >= {"PORT102", "PORT401"}
    assert held == []
