"""One file's lint as a worker process runs it: a job in (its text, settings and what the run
wants of it), its outcome out (its findings, the facts the project index reads, its rules' notes)."""

from __future__ import annotations

import ast
from contextlib import nullcontext
from typing import TYPE_CHECKING, NamedTuple

from portlint.bounds import python_verdict
from portlint.engine import lint_source
from portlint.errors import BrokenRules
from portlint.findings import Silenced, Violation
from portlint.index.reading import facts_of
from portlint.settings import Settings
from portlint.speed.cut import parse_ast
from portlint.speed.process import without_cycle_collection

if TYPE_CHECKING:
    from portlint.speed.reuse import Parts


class Job(NamedTuple):
    """One file to lint, as a worker process gets it."""

    path: str
    source: str
    settings: Settings
    fix_edits: bool
    codes: list[str]  # what the text gate said of it (none: it is only read for the index)
    speedups: bool
    show_silenced: bool
    # The top-level packages of the run's tree, where the project index wants the file's facts.
    packages: frozenset[str] | None = None
    # Whether the run judges the findings with its project index: then the worker leaves them
    # as the rules found them and returns the rules' notes (else it judges the file alone).
    project: bool = False


class Outcome(NamedTuple):
    path: str
    violations: list[Violation]
    silenced: list[Silenced]
    error: str | None  # an internal error, where linting it crashed
    facts: dict | None = None  # what the project index reads of it (None: not asked, or no parse)
    linted: bool = True  # whether the rules ran on it (not: it was only read for the index)
    complete: bool = True  # not: its analysis was stopped (its process died or ran out of time)
    notes: dict | None = None  # what its rules noted for the project's judgement (Job.project)


def lint_job(job: Job) -> Outcome:
    with without_cycle_collection() if job.speedups else nullcontext():
        # (On again once the job's trees are freed, as lint_source does it for its lint.)
        return _job_outcome(job)


def _job_outcome(job: Job) -> Outcome:
    silenced: list[Silenced] | None = [] if job.show_silenced else None
    try:
        if job.codes and job.packages is not None:
            found, facts, notes = lint_for_project(
                job.path, job.source, job.settings, job.packages, codes=job.codes,
                fix_edits=job.fix_edits, speedups=job.speedups, silenced=silenced,
            )  # fmt: skip
            return Outcome(job.path, found, silenced or [], None, facts, notes=notes)
        if job.packages is not None:  # (read for the index only: Python's parse alone)
            module = parse_ast(job.source)
            facts = (
                facts_of(module, job.source, job.path, job.packages, job.settings)
                if module is not None
                else None
            )
            return Outcome(job.path, [], [], None, facts, linted=False)
        noted: dict | None = {} if job.project else None  # (lint_source puts the notes in it)
        found = lint_source(
            job.path, job.source, job.settings, fix_edits=job.fix_edits, codes=job.codes,
            speedups=job.speedups, silenced=silenced, facts=noted,
        )  # fmt: skip
        kept = noted.get("notes", {}) if noted is not None else None
        return Outcome(job.path, found, silenced or [], None, notes=kept)
    except BrokenRules:
        raise  # portlint itself is broken, not this file: the run must stop
    except Exception as error:  # a crash on one file must not end the run
        message = f"{job.path}: internal error: {type(error).__name__}: {error}"
        return Outcome(job.path, [], [], message)


def lint_for_project(
    path: str,
    source: str,
    settings: Settings,
    packages: frozenset[str],
    *,
    codes: list[str] | None = None,
    fix_edits: bool = False,
    speedups: bool = True,
    silenced: list[Silenced] | None = None,
    parts: Parts | None = None,
) -> tuple[list[Violation], dict | None, dict]:
    """One file linted for its project's judgement, from one parse: its findings as the rules
    left them (the project judges them), its facts for the project index (None where Python
    refuses the file) and what its rules noted for the judgement."""
    tree = python_verdict(path, source, parts.known if parts else None)
    module = tree if isinstance(tree, ast.Module) else None
    facts = facts_of(module, source, path, packages, settings) if module is not None else None
    noted: dict = {}  # (lint_source puts the notes in it)
    found = lint_source(
        path, source, settings, fix_edits=fix_edits, codes=codes, speedups=speedups,
        silenced=silenced, tree=tree, facts=noted, parts=parts,
    )  # fmt: skip
    return found, facts, noted.get("notes", {})
