"""Running over many files: a pool that finds what a serial run finds, a crash of one file that
does not end the run, and the process-wide shortcuts that only the command line turns on."""

from __future__ import annotations

from pathlib import Path

import pytest

from portlint import job
from portlint.discovery import discover
from portlint.engine import lint_source
from portlint.run import lint_files
from portlint.settings import Settings
from tests.helpers import BUGGY, REPO, run_cli, settings_for, tree


def test_parallel_run_finds_the_same_as_a_serial_one(tmp_path):
    sources = [
        BUGGY,
        "y = x.cuda()\n",
        "import torch\ns = torch.arange(3)\nn = s.new_empty(3)\nconsume(n)\n",
    ]
    tree(tmp_path, {f"m{i}.py": sources[i % 3] for i in range(60)})
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    serial = lint_files(files, settings, jobs=1)
    parallel = lint_files(files, settings, jobs=2)
    assert len(serial.violations) == 60
    assert parallel.violations == serial.violations


def test_a_crash_on_one_file_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    tree(tmp_path, {"a.py": BUGGY, "b.py": BUGGY})
    real = job.lint_source

    def flaky(path, source, settings, **options):
        if path.endswith("a.py"):
            raise RecursionError("too deep")
        return real(path, source, settings, **options)

    monkeypatch.setattr(job, "lint_source", flaky)
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    result = lint_files(files, settings, jobs=1)
    assert [Path(v.path).name for v in result.violations] == ["b.py"]
    assert len(result.internal_errors) == 1
    assert "a.py: internal error: RecursionError: too deep" in result.internal_errors[0]


def test_the_pool_is_no_larger_than_the_files_can_keep_busy():
    from portlint.job import Job
    from portlint.workers import MIN_FILES_PER_WORKER, Runner

    assert Runner(16, 20).workers == 20 // MIN_FILES_PER_WORKER  # 2, not 16, for 20 files
    assert Runner(2, 3000).workers == 2
    with Runner(16, 10) as runner:  # too few files for a pool: one worker, once all are in
        assert runner.workers == 1
        for n in range(10):
            runner.submit(Job(f"m{n}.py", "x = 1\n", Settings(), False, ["PORT101"], False, False))
        assert runner.pool is None
        done = sorted(outcome.path for outcome in runner.results(None))
        assert done == sorted(f"m{n}.py" for n in range(10))


def test_a_parse_without_validation_builds_the_same_tree_and_validates_again_after():
    import libcst as cst

    from portlint.speed.process import parse_unvalidated

    for path in sorted((REPO / "portlint").rglob("*.py"))[:20]:
        source = path.read_text()
        assert parse_unvalidated(source).deep_equals(cst.parse_module(source)), path
    with pytest.raises(cst.ParserSyntaxError):
        parse_unvalidated("def f(:\n")
    # LibCST's checks of hand-made nodes are on again, after a parse that failed too.
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_the_cycle_collector_is_on_again_after_a_file_and_left_off_where_it_was_off(monkeypatch):
    import gc

    from portlint import visit

    select = Settings(select=frozenset({"PORT101"}))
    assert gc.isenabled()
    found = lint_source("m.py", BUGGY, select, fix_edits=False, speedups=True)
    assert [v.code for v in found] == ["PORT101"]
    assert gc.isenabled()

    def crash(*args):
        assert not gc.isenabled()  # off while the file is parsed
        raise RuntimeError("boom")

    monkeypatch.setattr(visit, "parse_unvalidated", crash)
    with pytest.raises(RuntimeError):
        lint_source("m.py", BUGGY, select, fix_edits=False, speedups=True)
    assert gc.isenabled()
    monkeypatch.undo()
    gc.disable()
    try:
        lint_source("m.py", BUGGY, select, fix_edits=False, speedups=True)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_library_caller_gets_no_process_wide_shortcut_unless_it_asks(monkeypatch, tmp_path):
    """``lint_source`` leaves the cycle collector and LibCST's validation alone by default (an
    editor server lints from threads); the command line asks for both."""
    import gc

    import libcst as cst

    from portlint import visit

    log = tmp_path / "parses.txt"  # (the command line parses in a worker process)
    real_parse = cst.parse_module

    def parse(source):
        validating = (
            cst.CSTNode.__post_init__ is not visit.parse_unvalidated.__globals__["_no_validation"]
        )
        with log.open("a") as parses:
            parses.write(f"{gc.isenabled()} {validating}\n")
        return real_parse(source)

    monkeypatch.setattr(visit.cst, "parse_module", parse)  # (LibCST's own: every caller sees it)
    select = Settings(select=frozenset({"PORT101"}))
    assert [v.code for v in lint_source("m.py", BUGGY, select, fix_edits=False)] == ["PORT101"]
    assert log.read_text() == "True True\n"
    log.unlink()
    (tmp_path / "m.py").write_text(BUGGY)
    result = run_cli("check", "m.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert log.read_text() == "False False\n"


def test_a_worker_not_started_yet_is_never_taken_for_one_past_its_time():
    """A pool's workers start as jobs come: the place of one not started runs no job (with
    its place zeroed, job 0 "since" the clock's start would have been overdue, and process 0 to
    stop is this process's whole group)."""
    from portlint.workers import Runner

    with Runner(2, 100, time_limit=0.001) as runner:
        runner._start_pool([], None)
        runner._stop_overdue()
        assert runner.stopped == set()
        assert [(worker.pid, worker.job) for worker in runner.running] == [(0, -1), (0, -1)]
