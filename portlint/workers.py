"""The processes that run lint jobs (:mod:`portlint.job`): a pool, or one forked worker, where a
file whose analysis crashes its process or runs out of time is reported as that file's diagnostic
and the run goes on."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from portlint.check_options import FILE_TIME_LIMIT
from portlint.findings import Violation
from portlint.job import Job, Outcome, lint_job

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

# Below this many files to parse, a process pool costs more to start than it saves.
MIN_FILES_PER_WORKER = 8
TOO_SLOW = "too slow to analyse"


class Runner:
    """Runs lint jobs in processes of their own, so that a file whose analysis crashes its
    process or runs past ``time_limit`` seconds is reported as that file's diagnostic and the run
    goes on: a pool of workers started as soon as there are enough jobs to pay for it (it works
    while the rest of the files are still read and gated here), else one forked worker once every
    job is submitted (a fork costs about 10 ms). Where a fork is not safe (no ``fork`` start
    method, or threads in this process) a few files are linted here, unguarded.

    A worker that dies (a segfault in a native parser, the kernel's out-of-memory killer, or this
    process stopping a file that ran out of time) breaks the whole pool: each worker marks the
    job it is running and since when (:func:`_marked_job`), so the jobs that were running then
    are run again each in a process of its own, which tells the one that kills its process
    (reported as that file's internal error) from the ones that died with it; the other
    unfinished jobs go to a new pool."""

    def __init__(self, jobs: int, candidates: int, time_limit: float = FILE_TIME_LIMIT) -> None:
        # No more processes than the files could keep busy (at most ``candidates`` get parsed).
        self.workers = max(1, min(jobs, candidates // MIN_FILES_PER_WORKER))
        self.time_limit = time_limit
        self.jobs: list[Job] = []  # every job submitted, by its number
        self.linted = 0  # jobs for the rules (the others only read a file for the project index)
        self.futures: dict[Future, int] = {}  # a job's number, by its future in the pool
        self.pool: ProcessPoolExecutor | None = None
        self.context: Any = None  # the one forked worker's start method (None: the pool's own)
        self.running: Any = None  # per worker of the pool: its process, job and start (_Running)
        self.stopped: set[int] = set()  # the jobs whose process was stopped for their time

    @property
    def submitted(self) -> int:
        return len(self.jobs)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc_info) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def submit(self, job: Job) -> None:
        self.jobs.append(job)
        self.linted += bool(job.codes)
        if self.pool is not None:
            self._send(len(self.jobs) - 1)
        elif self.workers > 1 and len(self.jobs) >= 2 * MIN_FILES_PER_WORKER:
            import multiprocessing

            if multiprocessing.get_start_method() == "fork":
                # Workers forked from this process: LibCST and the rules imported once, here,
                # not once in each worker.
                import portlint.visit  # noqa: F401

            self._start_pool(range(len(self.jobs)), None)

    def _start_pool(self, numbers: Iterable[int], context: Any) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.context = context
        workers = self.workers if context is None else 1
        self.running = multiprocessing.Array(_Running, [(0, -1, 0.0)] * workers, lock=False)
        taken = multiprocessing.Value("i", 0)
        self.pool = ProcessPoolExecutor(workers, context, _take_slot, (self.running, taken))
        self.futures = {}
        for number in numbers:
            self._send(number)

    def _send(self, number: int) -> None:
        assert self.pool is not None
        self.futures[self.pool.submit(_marked_job, number, self.jobs[number])] = number

    def results(self, progress: Callable[[int, int], None] | None) -> Iterator[Outcome]:
        """Each job's result, as jobs complete (call once every job is submitted)."""
        if self.pool is None and self.jobs:
            fork = _fork_context()
            if fork is not None:
                self._start_pool(range(len(self.jobs)), fork)
        if self.pool is None:
            outcomes: Iterator[Outcome] = (lint_job(job) for job in self.jobs)
        else:
            outcomes = self._pooled()
        for done, outcome in enumerate(outcomes, 1):
            yield outcome
            if progress:
                progress(done, self.submitted)

    def _pooled(self) -> Iterator[Outcome]:
        import queue
        from concurrent.futures.process import BrokenProcessPool

        while self.futures:
            unfinished = []
            # Each future puts itself here when done (``concurrent.futures.wait`` would look at
            # every future of the run again for each one that completes).
            done: queue.SimpleQueue[Future] = queue.SimpleQueue()
            for future in self.futures:
                future.add_done_callback(done.put)
            for _ in range(len(self.futures)):
                while True:
                    try:
                        future = done.get(timeout=_TICK)
                        break
                    except queue.Empty:
                        self._stop_overdue()
                try:
                    yield future.result()
                except BrokenProcessPool:
                    unfinished.append(self.futures[future])
                self._stop_overdue()
            if not unfinished:
                return
            assert self.pool is not None
            self.pool.shutdown()
            running = {worker.job for worker in self.running}.intersection(unfinished)
            running = running or set(unfinished)
            for number in sorted(running):
                if number in self.stopped:
                    yield _out_of_time(self.jobs[number], self.time_limit)
                else:
                    yield _lint_alone(self.jobs[number], self.time_limit)
            self._start_pool((n for n in unfinished if n not in running), self.context)

    def _stop_overdue(self) -> None:
        """Stop each worker whose job has run past the time limit (it breaks the pool)."""
        import time

        now = time.monotonic()
        for worker in self.running:
            overdue = worker.pid > 0 and worker.job >= 0 and now - worker.since > self.time_limit
            if overdue and worker.job not in self.stopped:
                self.stopped.add(worker.job)
                os.kill(worker.pid, signal.SIGKILL)


# How often, in seconds, the pool's runner looks for a job past its time.
_TICK = 0.5


def _fork_context() -> Any:
    """The ``fork`` start method, where it is there and safe: no other thread in this process
    (a fork copies the locks other threads hold)."""
    import multiprocessing
    import threading

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return None
    return multiprocessing.get_context("fork")


class _Running(ctypes.Structure):
    """What one worker of a pool runs: its process, the job's number (-1: none), since when
    (``time.monotonic``, one clock for every process of the machine)."""

    _fields_ = [("pid", ctypes.c_int), ("job", ctypes.c_int), ("since", ctypes.c_double)]


# In a worker of a pool: what every worker runs, and this worker's place in it.
_workers: Any = None
_slot = -1


def _take_slot(running: Any, taken: Any) -> None:
    global _workers, _slot
    gc.enable()  # (a worker's own: each job turns it off while it runs, and on after)
    with taken.get_lock():
        _workers, _slot = running, taken.value
        taken.value += 1
    _workers[_slot].pid, _workers[_slot].job = os.getpid(), -1


def _marked_job(number: int, job: Job) -> Outcome:
    import time

    worker = _workers[_slot]
    worker.since = time.monotonic()
    worker.job = number  # (after its start: a job is never seen with the start of the one before)
    outcome = lint_job(job)
    worker.job = -1
    return outcome


def _lint_alone(job: Job, time_limit: float) -> Outcome:
    """``job`` run in a process of its own: its outcome, or the diagnostic of a process that
    died running it or ran out of time."""
    import multiprocessing

    receiving, sending = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=_send_outcome, args=(job, sending))
    process.start()
    sending.close()
    outcome = None
    if not receiving.poll(time_limit):  # (a process that died is an end of the pipe: no wait)
        process.kill()
        process.join()
        return _out_of_time(job, time_limit)
    with suppress(EOFError):  # (the process died before it sent its outcome)
        outcome = receiving.recv()
    process.join()
    if outcome is not None:
        return outcome
    code = process.exitcode or 0
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    message = f"{job.path}: internal error: the process analysing it died ({how})"
    return Outcome(job.path, [], [], message, complete=False)


def _out_of_time(job: Job, time_limit: float) -> Outcome:
    """The outcome of a job stopped for its time: a diagnostic where the rules were to run."""
    message = f"{TOO_SLOW} (stopped after {time_limit:g} s)"
    found = [Violation(job.path, 1, 1, None, message)] if job.codes else []
    return Outcome(job.path, found, [], None, linted=False, complete=False)


def _send_outcome(job: Job, sending: Any) -> None:
    sending.send(lint_job(job))
