"""The pipeline: read → text gate → parse once → one batched visit of every rule → noqa.

Parsing and visiting live in :mod:`portlint.visit`, imported only when a file needs them.

The API returns results and never prints; the CLI does the printing.
"""

from __future__ import annotations

import ast
import ctypes
import dataclasses
import gc
import json
import os
import signal
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from portlint.atomic import write_atomically
from portlint.bounds import python_verdict
from portlint.cache import Cache, Cached, digest, file_stamp
from portlint.catalog import GUARDABLE
from portlint.errors import BrokenRules
from portlint.findings import (
    Edit,
    Fix,
    Silenced,
    Violation,
    applicable,
    apply_edits,
    split_lines,
)
from portlint.index.int64 import INT64_CODES, refine
from portlint.index.project import Project, join_key, module_name, namespace_of
from portlint.index.reading import (
    FIXTURE_TEXT,
    RETURNS_AMBIENT_STREAM,
    facts_of,
    stream_helpers,
)
from portlint.index.store import STREAM_HELPERS, Facts, IndexStore
from portlint.settings import Settings
from portlint.sources import (
    SourceError,
    decode_source,
    read_file,
    source_encoding,
)
from portlint.speed.cut import UNPARSED, Unparsed, parse_ast
from portlint.speed.gate import codes_with_triggers_in
from portlint.speed.process import without_cycle_collection

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from portlint.speed.reuse import Parts

# Below this many files to parse, a process pool costs more to start than it saves.
MIN_FILES_PER_WORKER = 8
# Seconds one file may take (its read for the index, its parse and every rule) before its process
# is stopped and the file reported as too slow to analyse; far above real code (the largest file
# of the audit corpora takes about 5 s cold), a backstop for what the bounds of portlint.bounds
# do not foresee.
FILE_TIME_LIMIT = 60.0
TOO_SLOW = "too slow to analyse"
# Fixes that overlap are applied over several rounds, each re-linting the result (as ruff does).
MAX_FIX_ROUNDS = 10


@dataclass
class RunResult:
    violations: list[Violation] = field(default_factory=list)
    internal_errors: list[str] = field(default_factory=list)
    files_checked: int = 0
    files_parsed: int = 0
    # The findings that the code's account of its platform silenced (where asked for).
    silenced: list[Silenced] = field(default_factory=list)
    # Per file, the project index it was judged with (none: the run was linted file by file).
    projects: dict[str, Project] = field(default_factory=dict)


def write_source(path: str, text: str) -> None:
    """Replace ``path``'s text atomically, keeping its encoding (and BOM), its permissions and
    its owner.

    The new text goes to a temporary file in the same folder, which is then renamed over the file
    (the target of a symbolic link, not the link; see :func:`fix_source` for a link that leads out
    of the project). Refused, with the file left as it is: a read-only file; a file with other
    hard links (a rename would split them, and writing in place could leave it half written);
    a file of another user (unless run as root, which gives the new file the old one's owner).
    """
    target = os.path.realpath(path)
    data = Path(target).read_bytes()
    info = os.stat(target)
    if not info.st_mode & stat.S_IWUSR:
        raise PermissionError(f"{path}: file is read-only; not fixed")
    if info.st_nlink > 1:
        raise PermissionError(f"{path}: file has {info.st_nlink} hard links; not fixed")
    try:
        encoding = source_encoding(data)
        data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError):  # (read with bytes replaced: see decode_source)
        raise OSError("not valid utf-8; not fixed") from None
    owner = None
    if hasattr(os, "geteuid") and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
        if os.geteuid() not in (0, info.st_uid):
            raise PermissionError(f"{path}: file is owned by another user; not fixed")
        owner = (info.st_uid, info.st_gid)
    # ("utf-8-sig" keeps a BOM.)
    write_atomically(target, text.encode(encoding), info.st_mode, owner)


def lint_source(
    path: str,
    source: str,
    settings: Settings,
    *,
    fix_edits: bool = True,
    codes: list[str] | None = None,
    speedups: bool = False,
    silenced: list[Silenced] | None = None,
    tree: ast.Module | Violation | Unparsed = UNPARSED,
    facts: dict | None = None,
    parts: Parts | None = None,
) -> list[Violation]:
    """Lint one file's text: findings after suppressions, or one diagnostic if it does not parse.

    With ``fix_edits=False`` fixes carry their applicability and message but no edits, and only
    the parts of the file a rule can report on are parsed (``settings.partial_parse``). A file
    with no trigger string of an enabled rule is not parsed, and LibCST is not even imported.
    ``codes``: what the text gate already said of this file, where the caller ran it.
    ``speedups``: the process-wide shortcuts of :mod:`portlint.speed.process` (off: nothing
    outside this call changes while it runs). ``silenced``, where given, gets the findings that
    the code's account of its platform silenced, with the reasons (``--show-silenced``).
    ``tree``: Python's verdict on ``source`` (:func:`portlint.bounds.python_verdict`), where the
    caller has it.
    ``facts``: the file's facts for the project index (:func:`portlint.index.reading.read_module`),
    where the caller joins them with the other files' and judges the findings with the whole
    project (the rules' notes are added to them); without them the file is judged alone.
    ``parts``: what the last lint of this file parsed, reused where its text is unchanged (the
    editor's: :mod:`portlint.speed.reuse`).
    """
    enabled = settings.codes_for(path)
    if codes is None:
        codes = codes_with_triggers_in(source, enabled)
    if not codes:
        return []
    from portlint.visit import lint_parsed  # LibCST and the rules: only for files that need them

    notes: dict[str, list] = {}
    with without_cycle_collection() if speedups else nullcontext():
        # (On again once lint_parsed has returned and the trees it made are freed: on while they
        # live, the collector would look at every node of them.)
        found = lint_parsed(
            path, source, settings, codes, enabled, fix_edits, speedups, silenced, tree, notes,
            parts,
        )  # fmt: skip
    if facts is not None:
        facts["notes"] = notes
        return found
    return judged_alone(path, source, settings, found, notes)


def _judged(
    project: Project, found: list[Violation], silenced: list[Silenced] | None
) -> list[Violation]:
    """What stands of ``found`` once ``project`` has spoken (:meth:`Project.judge`), with the
    int64 findings judged by their consumers (:func:`portlint.index.int64.refine`)."""
    return refine(project, project.judge(found, silenced))


def judged_alone(
    path: str, source: str, settings: Settings, found: list[Violation], notes: dict[str, list]
) -> list[Violation]:
    """``found`` (the findings of ``source``, whose rules left ``notes``) judged as a project of
    this one file: its int64 findings by its own kernels (:mod:`portlint.index.int64`), its
    tests by its own pytest fixtures."""
    tests = FIXTURE_TEXT in source and any(v.code in GUARDABLE for v in found)
    if not (tests or any(v.code in INT64_CODES for v in found)):
        return found
    tree = parse_ast(source)
    if tree is None:
        return found
    alone = {**facts_of(tree, source, path, frozenset(), settings), "notes": notes}
    return sorted(_judged(Project({path: alone}, settings), found, None))


@dataclass
class FixResult:
    source: str  # the fixed source
    # Findings fixed, by code: by their fixes, or by another's that rewrote their code.
    applied: Counter[str] = field(default_factory=Counter)
    dropped: list[str] = field(default_factory=list)  # fixes not applied, and why
    violations: list[Violation] = field(default_factory=list)  # what is left


def fix_source(
    path: str,
    source: str,
    settings: Settings,
    unsafe: bool = False,
    project: Project | None = None,
) -> FixResult:
    """Apply the fixes of ``source``'s findings, round after round, checking that the code still
    parses. ``project``: the run's project index, whose silences apply to each round as to the
    check.

    A round lints the text once, takes every fix that changes no line another fix taken changes
    (fixes that insert the same line, such as one ``import``, share it), applies them together
    and parses the result once (where it does not parse, halves of the fixes find the ones that
    break it). The fixes that had to wait go in the next round: only those, so that what is
    fixed is what the first lint listed (a finding that a fix brings is reported, not fixed; one
    that waited and is gone, its code rewritten by the fix of another, counts as fixed). So a
    file's rounds cost a lint and a parse each, whatever its number of findings.
    """
    from portlint.visit import parses

    def findings(text: str) -> list[Violation]:
        if project is None or path not in project.facts:
            return lint_source(path, text, settings)
        tree = python_verdict(path, text)
        module = tree if isinstance(tree, ast.Module) else None
        facts = (
            facts_of(module, text, path, project.packages, settings) if module is not None else None
        )
        found = lint_source(path, text, settings, tree=tree, facts=facts)
        if facts is not None:
            project.update(path, facts)
        return sorted(_judged(project, found, None))

    result = FixResult(source)
    outside = _link_out_of(path, settings.root)
    if outside is not None:
        result.violations = lint_source(path, source, settings)
        result.dropped.append(f"{path}: a symbolic link to {outside}, which is outside the project")
        return result
    waiting: list[tuple[str | None, int, int]] | None = None  # (None: the first round)
    for round_ in range(MAX_FIX_ROUNDS + 1):  # (the last lint only tells what is left)
        result.violations = findings(result.source)
        fixes = [(v, fix) for v in result.violations if (fix := applicable(v, unsafe))]
        if waiting is not None:
            again, gone = _found_again(result.violations, waiting)
            result.applied.update(gone)
            fixes = [(v, fix) for v, fix in fixes if id(v) in again]
        if round_ == MAX_FIX_ROUNDS:
            break
        chosen, later = _apart(fixes)
        applied = _parsing(result.source, chosen, parses)
        kept = {id(violation) for violation, _ in applied}
        result.dropped += [
            f"{path}:{violation.line}: {violation.code}: the fixed code would not parse"
            for violation, _ in chosen
            if id(violation) not in kept
        ]
        if not applied:
            break
        edits = sorted({edit for _, fix in applied for edit in fix.edits})
        result.source = apply_edits(result.source, edits)
        for violation, _ in applied:
            assert violation.code is not None  # a finding with a fix is a rule's
            result.applied[violation.code] += 1
        waiting = [(v.code, *_moved(v.line, edits)) for v, _ in later]
    return result


Fixes = list[tuple[Violation, Fix]]


def _apart(fixes: Fixes) -> tuple[Fixes, Fixes]:
    """The fixes, in order, that change no line an earlier one taken changes (a line inserted
    the same by several is theirs to share), and the others."""
    taken: set[int] = set()  # the lines the fixes taken replace, or insert before
    shared: set[Edit] = set()  # the insertions of the fixes taken
    chosen: Fixes = []
    later: Fixes = []
    for violation, fix in fixes:
        lines = {
            line
            for edit in fix.edits
            if edit not in shared
            for line in range(edit.line, max(edit.end_line, edit.line + 1))
        }
        if lines & taken:
            later.append((violation, fix))
            continue
        chosen.append((violation, fix))
        taken |= lines
        shared |= {edit for edit in fix.edits if edit.line == edit.end_line}
    return chosen, later


def _parsing(source: str, fixes: Fixes, parses: Callable[[str], bool]) -> Fixes:
    """The fixes whose edits, applied together to ``source``, leave code that parses: all of
    them where they do (one parse); else each half in turn, with the fixes kept so far."""
    kept: Fixes = []

    def settle(group: Fixes) -> None:
        edits = sorted({edit for _, fix in [*kept, *group] for edit in fix.edits})
        if parses(apply_edits(source, edits)):
            kept.extend(group)
        elif len(group) > 1:
            settle(group[: len(group) // 2])
            settle(group[len(group) // 2 :])

    if fixes:
        settle(fixes)
    return kept


def _moved(line: int, edits: list[Edit]) -> tuple[int, int]:
    """The lines that ``line`` is once ``edits`` (sorted) are applied: its own, moved, or those
    of the edit that replaced it."""
    shift = 0
    for edit in edits:
        if line < edit.line:
            break
        count = len(split_lines(edit.content))
        if line < edit.end_line:
            return edit.line + shift, edit.line + shift + max(count, 1)
        shift += count - (edit.end_line - edit.line)
    return line + shift, line + shift + 1


def _found_again(
    violations: list[Violation], waiting: list[tuple[str | None, int, int]]
) -> tuple[set[int], Counter[str]]:
    """The findings that waited for a round, found again (one each, of its code, on its lines),
    by identity; and the codes of those that are gone."""
    slots: dict[tuple[str | None, int], list[int]] = {}  # the waiting findings, by code and line
    for number, (code, low, high) in enumerate(waiting):
        for line in range(low, high):
            slots.setdefault((code, line), []).append(number)
    taken: set[int] = set()
    again: set[int] = set()
    for violation in violations:
        free = [n for n in slots.get((violation.code, violation.line), []) if n not in taken]
        if free:
            taken.add(free[0])
            again.add(id(violation))
    gone = Counter(code for n, (code, _, _) in enumerate(waiting) if n not in taken and code)
    return again, gone


def _link_out_of(path: str, root: str) -> str | None:
    """Where a symbolic link ``path`` leads, if that is outside the folder ``root``: a fix is
    never written there (a link into the project is followed: its target is fixed)."""
    if not os.path.islink(path):
        return None
    target = os.path.realpath(path)
    inside = os.path.commonpath([target, os.path.realpath(root)]) == os.path.realpath(root)
    return None if inside else target


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


def _lint_job(job: Job) -> Outcome:
    with without_cycle_collection() if job.speedups else nullcontext():
        # (On again once the job's trees are freed, as lint_source does it for its lint.)
        return _job_outcome(job)


def _job_outcome(job: Job) -> Outcome:
    silenced: list[Silenced] | None = [] if job.show_silenced else None
    try:
        tree: ast.Module | Violation | Unparsed = UNPARSED
        facts = None
        if job.packages is not None:
            # (Python's full verdict where the rules run; its parse alone for the index)
            module = parse_ast(job.source) if not job.codes else None
            if job.codes:
                tree = python_verdict(job.path, job.source)
                module = tree if isinstance(tree, ast.Module) else None
            facts = (
                facts_of(module, job.source, job.path, job.packages, job.settings)
                if module is not None
                else None
            )
        found: list[Violation] = []
        noted: dict | None = {} if job.project else None  # (lint_source puts the notes in it)
        if job.codes:
            found = lint_source(
                job.path, job.source, job.settings, fix_edits=job.fix_edits, codes=job.codes,
                speedups=job.speedups, silenced=silenced, tree=tree, facts=noted,
            )  # fmt: skip
        notes = noted.get("notes", {}) if noted is not None else None
        return Outcome(job.path, found, silenced or [], None, facts, bool(job.codes), notes=notes)
    except BrokenRules:
        raise  # portlint itself is broken, not this file: the run must stop
    except Exception as error:  # a crash on one file must not end the run
        message = f"{job.path}: internal error: {type(error).__name__}: {error}"
        return Outcome(job.path, [], [], message)


def lint_files(
    files: list[Path],
    settings: Settings,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    fix_edits: bool = True,
    cache: Cache | None = None,
    speedups: bool = False,
    show_silenced: bool = False,
    project: bool = False,
    context: list[Path] | None = None,
    reuse_run: bool = False,
    time_limit: float = FILE_TIME_LIMIT,
) -> RunResult:
    """Lint ``files``; ``progress(done, total)`` is called as parsed files complete.

    With a ``cache``, a file whose results it holds is neither read nor parsed; the others are,
    and their results are stored (the caller saves the cache). ``speedups``: as for
    :func:`lint_source` (the command line turns them on). ``show_silenced``: collect the
    silenced findings too (``result.silenced``; the cache holds none, so pass none).
    ``project``: join the files into a project index (:mod:`portlint.index.project`) and apply
    what it says of each finding; its facts are kept beside the cache, where there is one. The
    cache holds each file's own findings, before the index speaks. ``context``: more files of the
    project, read for its index only, never reported (a run on the files a commit changed still
    sees the callers and kernels of the rest of the tree). ``reuse_run``: where the cache holds a
    run of these very files, none changed since, its findings are the answer (the run's project
    index is then not built: not for a caller that fixes). ``time_limit``: the seconds one file
    may take before it is stopped and reported as too slow to analyse.
    """
    result = RunResult(files_checked=len(files))
    read: dict[str, tuple[str, os.stat_result]] = {}  # a file's digest and status, as read
    linted = {str(file) for file in files}
    others: list[Path] = []
    if project and context:
        named = {os.path.realpath(file) for file in files}
        others = [f for f in context if os.path.realpath(f) not in named]
    statuses = _Statuses()
    run_key = (
        _run_key([*files, *others], statuses) if reuse_run and cache and not show_silenced else None
    )
    if run_key is not None and cache is not None:
        found = cache.run_lookup(run_key)
        if found is not None:
            return RunResult(sorted(found), files_checked=len(files))
    packages = _top_packages([*files, *others]) if project else None
    store = IndexStore(cache.folder, packages, settings) if cache and packages is not None else None
    facts = Facts(store, packages or frozenset(), settings)
    early: dict[str, tuple[bytes, os.stat_result, str]] = {}  # files read before the run
    given = cache
    if packages is not None:
        settings, cache = _with_stream_helpers(
            [*files, *others], settings, cache, store, early, statuses
        )
    complete = True  # (not: a file's analysis was stopped, and the run is not one to reuse)
    judged = packages is not None  # (the findings are judged with the project, not file by file)
    notes: dict[str, dict] = {}  # per file, what its rules noted for the project's judgement

    def take(path: str, found: Cached) -> None:
        result.violations.extend(found.findings)
        if found.notes:
            notes[path] = found.notes

    with _Runner(jobs or os.cpu_count() or 1, len(files) + len(others), time_limit) as runner:
        for file in [*files, *others]:
            path = str(file)
            if path not in linted:
                _read_for_index(path, store, early, facts, read, runner, settings, packages)
                continue
            cached = cache.lookup(path, statuses.of(path), judged) if cache else None
            known = store.entry(path, info=statuses.of(path)) if store else None
            if known is not None:
                facts.keep(path, known)
            if cached is not None and (not judged or known is not None):
                take(path, cached)
                continue
            try:
                data, info, source = early.pop(path) if path in early else _read(path)
            except SourceError as error:
                result.violations.append(error.violation)
                continue
            if cache:
                read[path] = digest(data), info
                cached = cached or cache.lookup_content(path, *read[path], judged)
                known = known or (store.entry(path, read[path][0]) if store else None)
                if known is not None:
                    facts.keep(path, known)
                if cached is not None and (not judged or known is not None):
                    take(path, cached)
                    continue
            index = packages if judged and known is None else None
            codes = (
                []
                if cached is not None
                else codes_with_triggers_in(source, settings.codes_for(path))
            )
            if cached is not None:  # (its facts only are missing)
                take(path, cached)
            elif not codes and cache:
                cache.store(path, read[path][0], [], read[path][1], {} if judged else None)
            if codes or index is not None:
                runner.submit(
                    Job(path, source, settings, fix_edits, codes, speedups, show_silenced, index,
                        judged)
                )  # fmt: skip
        result.files_parsed = runner.linted
        for outcome in runner.results(progress):
            complete = complete and outcome.complete
            result.violations.extend(outcome.violations)
            result.silenced.extend(outcome.silenced)
            if outcome.facts is not None:
                facts[outcome.path] = outcome.facts
                if store:
                    store.store(outcome.path, read[outcome.path][0], outcome.facts)
            if outcome.linted and outcome.notes:
                notes[outcome.path] = outcome.notes
            if outcome.error and outcome.path in linted:
                result.internal_errors.append(outcome.error)
            elif cache and outcome.linted:
                data_digest, info = read[outcome.path]
                cache.store(outcome.path, data_digest, outcome.violations, info, outcome.notes)
    if cache is not given and cache is not None:
        cache.save()  # (the caller saves the table it gave)
    if packages is not None:
        for path, noted in notes.items():
            if path in facts:  # (the notes go with the facts they are judged with, never stored)
                facts[path] = {**facts[path], "notes": noted}
        joined = _joined(facts, settings, packages, store)
        result.projects = dict.fromkeys(facts, joined)
        silenced = result.silenced if show_silenced else None
        result.violations = _judged(joined, result.violations, silenced)
        if store is not None:
            for path in joined.read_later:
                store.update(path, facts[path])
    if store is not None:
        store.save()
    if run_key is not None and given is not None and complete and not result.internal_errors:
        given.run_store(run_key, result.violations)
    result.violations.sort()
    result.silenced.sort()
    return result


def _joined(
    facts: Facts, settings: Settings, packages: frozenset[str], store: IndexStore | None
) -> Project:
    """The project of ``facts``: its joins' verdicts as the store kept them, where they were made
    for modules of the same shapes (then only the facts that findings ask about are read), else
    made now, and kept."""
    key = None
    if store is not None:
        shapes = store.shapes(iter(facts))
        key = join_key(shapes, settings, packages) if shapes is not None else None
    if store is not None and key is not None:
        verdicts = store.verdicts(key)
        if verdicts is not None:
            with suppress(KeyError, TypeError, ValueError):
                return Project(facts, settings, packages, verdicts)
    joined = Project(facts, settings, packages)
    if store is not None and key is not None:
        store.keep_verdicts(key, joined.verdicts())
    return joined


def _read_for_index(
    path: str,
    store: IndexStore | None,
    early: dict[str, tuple[bytes, os.stat_result, str]],
    facts: Facts,
    read: dict[str, tuple[str, os.stat_result]],
    runner: _Runner,
    settings: Settings,
    packages: frozenset[str] | None,
) -> None:
    """A file of the project that the run does not report on: its facts, from the index store or
    read by a worker."""
    known = store.entry(path) if store else None
    if known is None:
        try:
            data, info, source = early.pop(path) if path in early else _read(path)
        except SourceError:
            return
        read[path] = digest(data), info
        known = store.entry(path, read[path][0]) if store else None
        if known is None:
            runner.submit(Job(path, source, settings, False, [], True, False, packages))
            return
    facts.keep(path, known)


class _Statuses(dict):
    """Each file's status (``os.stat``), taken once in a run: the run's key, the cache and the
    index store each compare it with what they kept, before anything reads the file."""

    def of(self, path: str) -> os.stat_result | None:
        """``path``'s status (None: it cannot be taken)."""
        if path not in self:
            try:
                self[path] = os.stat(path)
            except OSError:
                self[path] = None
        return self[path]


def _run_key(files: list[Path], statuses: _Statuses) -> str | None:
    """What a whole run's findings depend on besides the settings (the cache table's): every
    file and its stamp (None: a file cannot be looked at)."""
    stamps = []
    for file in files:
        info = statuses.of(str(file))
        if info is None:
            return None
        stamps.append([str(file), file_stamp(info)])
    return digest(json.dumps(stamps).encode())


def _read(path: str) -> tuple[bytes, os.stat_result, str]:
    """The bytes of ``path``, its status before they were read, and its text."""
    data, info = read_file(path)
    return data, info, decode_source(path, data)


def _with_stream_helpers(
    files: list[Path],
    settings: Settings,
    cache: Cache | None,
    store: IndexStore | None,
    read: dict[str, tuple[bytes, os.stat_result, str]],
    statuses: _Statuses,
) -> tuple[Settings, Cache | None]:
    """``settings`` whose ``stream-functions`` hold the project's own functions that return the
    ambient stream (PORT301 and PORT302 read them), and the cache table for those settings. The
    index store knows them for unchanged files; the others are read now (into ``read``), and
    parsed where their text has such a ``return``."""
    folders: dict[str, str] = {}
    helpers: set[str] = set()
    for file in files:
        path = str(file)
        known = store.entry(path, info=statuses.of(path)) if store else None
        if known is not None:
            names = known[STREAM_HELPERS]
        else:
            try:
                read[path] = _read(path)
            except SourceError:
                continue
            source = read[path][2]
            tree = parse_ast(source) if RETURNS_AMBIENT_STREAM.search(source) else None
            names = stream_helpers(tree) if tree is not None else []
        if names:
            module = module_name(path, folders)
            namespace = namespace_of(path, module)
            # (as imported elsewhere, also through a namespace package it may be part of, and
            # as called in the module itself)
            for prefix in (module, f"{namespace}.{module}" if namespace else None):
                helpers.update(f"{prefix}.{name}" for name in names if prefix)
            helpers.update(names)
    if not helpers - set(settings.stream_functions):
        return settings, cache
    functions = tuple(sorted({*settings.stream_functions, *helpers}))
    settings = dataclasses.replace(settings, stream_functions=functions)
    return settings, cache.for_settings(settings) if cache is not None else None


def _top_packages(files: list[Path]) -> frozenset[str]:
    """The top-level packages (and modules) that ``files`` belong to, as Python imports them,
    and the namespace packages they may be parts of (:func:`~portlint.index.project.
    namespace_of`): the project's code may import them by either name."""
    folders: dict[str, str] = {}
    found: set[str] = set()
    for file in files:
        module = module_name(str(file), folders)
        found.add(module.split(".")[0])
        namespace = namespace_of(str(file), module)
        if namespace is not None:
            found.add(namespace)
    return frozenset(found)


class _Runner:
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

    def __enter__(self) -> _Runner:
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
            outcomes: Iterator[Outcome] = (_lint_job(job) for job in self.jobs)
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
    outcome = _lint_job(job)
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
    sending.send(_lint_job(job))
