"""A run over many files: what the cache holds is taken as it is, the rest is read, gated and linted
by the workers, and the findings are judged with the project index (kept in its store)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from portlint.cache import Cache, Cached, digest, file_stamp
from portlint.check_options import FILE_TIME_LIMIT
from portlint.engine import judged_by_project
from portlint.findings import Silenced, Violation
from portlint.index.joins import join_key
from portlint.index.modules import module_name, namespace_of, sys_path_name
from portlint.index.project import Project
from portlint.index.reading import RETURNS_AMBIENT_STREAM, stream_helpers
from portlint.index.store import STREAM_HELPERS, Facts, IndexStore
from portlint.job import Job
from portlint.settings import Settings
from portlint.sources import SourceError, decode_source, read_file
from portlint.speed.cut import parse_ast
from portlint.speed.gate import codes_with_triggers_in
from portlint.workers import Runner


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

    with Runner(jobs or os.cpu_count() or 1, len(files) + len(others), time_limit) as runner:
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
        result.violations = judged_by_project(joined, result.violations, silenced)
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
    runner: Runner,
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
    """The top-level packages (and modules) that ``files`` belong to, as Python imports them
    (also where a folder without ``__init__.py`` is put on ``sys.path``), and the namespace
    packages they may be parts of (:func:`~portlint.index.modules.
    namespace_of`): the project's code may import them by either name."""
    folders: dict[str, str] = {}
    plain: dict[str, str] = {}  # (as named where a folder is put on sys.path)
    found: set[str] = set()
    for file in files:
        module = module_name(str(file), folders)
        found.add(module.split(".")[0])
        short = sys_path_name(str(file), module, plain)
        if short is not None:
            found.add(short.split(".")[0])
        namespace = namespace_of(str(file), module)
        if namespace is not None:
            found.add(namespace)
    return frozenset(found)
