"""portlint's Python API: lint files, folders or a source string and get the findings back.
Nothing here prints or exits; the command line (:mod:`portlint.cli`) is built on it.

    from portlint import api

    result = api.lint_paths(["src"])  # each file with its closest [tool.portlint]
    for finding in result.violations:
        print(finding.path, finding.line, finding.col, finding.code, finding.message)

    settings = api.make_settings(select=["PORT1"], target_torch_version="2.9")
    found = api.lint_text('import torch\\nd = torch.device("cuda")\\n', settings=settings)
    fixed = api.fix_text(source, settings=settings, unsafe=True).source

A finding is a :class:`portlint.findings.Violation`: ``path``, ``line``, ``col``, ``end_line``,
``end_col`` (1-based), ``code`` (None for a file that could not be read or parsed), ``message``
(the point and the replacement, short), ``detail`` (why, and what the replacement needs),
``confidence`` (``"certain"`` or ``"likely"``) and ``fix`` (None, or its applicability, message
and edits). A configuration that cannot be used raises :class:`portlint.config.ConfigError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from portlint.cache import Cache
from portlint.check_options import FILE_TIME_LIMIT
from portlint.config import ConfigError, Configurations, Overrides
from portlint.discovery import discover, is_excluded
from portlint.engine import lint_source
from portlint.findings import Violation
from portlint.fix_rounds import FixResult, fix_source
from portlint.run import RunResult, lint_files
from portlint.settings import Settings
from portlint.speed.process import without_cycle_collection

__all__ = [
    "ConfigError",
    "FixResult",
    "Result",
    "Violation",
    "fix_text",
    "lint_paths",
    "lint_text",
    "make_settings",
]


@dataclass
class Result:
    """What :func:`lint_paths` found: the findings (sorted), and the paths it could not check."""

    violations: list[Violation] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)  # paths that do not exist
    errors: list[str] = field(default_factory=list)  # files whose linting crashed, and why
    files: int = 0  # files checked


def make_settings(
    config: str | Path | None = None,
    *,
    select: Iterable[str] | None = None,
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    target_torch_version: str | None = None,
    cwd: str | Path | None = None,
) -> Settings:
    """The settings of the pyproject.toml ``config`` (None: the defaults), with the given codes
    or prefixes selected, added or ignored, as ``--select``, ``--extend-select``, ``--ignore``."""
    overrides = Overrides(
        select=list(select) if select is not None else None,
        extend_select=list(extend_select),
        ignore=list(ignore),
        target_torch_version=target_torch_version,
    )
    folder = Path(cwd) if cwd is not None else Path.cwd()
    return Configurations(overrides, folder).settings_of(Path(config) if config else None)


def lint_text(
    source: str, path: str = "<string>", settings: Settings | None = None
) -> list[Violation]:
    """The findings in ``source``, linted as the file ``path`` (which matters for
    ``per-file-ignores`` and ``cuda-only-paths``); the defaults (every rule) where no
    ``settings`` are given. A source that does not parse gives one finding with code None."""
    return lint_source(path, source, settings or make_settings())


def fix_text(
    source: str, path: str = "<string>", settings: Settings | None = None, unsafe: bool = False
) -> FixResult:
    """``source`` with its findings' safe fixes applied (unsafe ones too with ``unsafe``): the
    new ``source``, the fixes ``applied`` by code, and the ``violations`` left."""
    return fix_source(path, source, settings or make_settings(), unsafe)


def lint_paths(
    paths: Iterable[str | Path],
    settings: Settings | None = None,
    *,
    jobs: int | None = None,
    cwd: str | Path | None = None,
) -> Result:
    """Lint files and folders (folders recursively, excludes and .gitignore applied). Each file
    gets the settings of its closest pyproject.toml with ``[tool.portlint]``, unless
    ``settings`` are given for all. ``jobs``: processes (default: one per CPU)."""
    folder = Path(cwd) if cwd is not None else Path.cwd()
    configurations = Configurations(Overrides(), folder)
    targets = [folder / p for p in paths] or [folder]
    groups, missing = files_by_settings(targets, configurations, settings)
    run = lint_groups(groups, jobs, project=True)  # as `portlint check` judges them
    return Result(run.violations, missing, run.internal_errors, run.files_checked)


def files_by_settings(
    targets: list[Path],
    configurations: Configurations,
    given: Settings | None = None,
    force_exclude: bool = False,
) -> tuple[dict[Settings, list[Path]], list[Path]]:
    """The files under ``targets``, grouped by the settings that apply to each, and the targets
    that do not exist. Files are found with the settings of the targets' common folder; a file
    under a nested configuration is also subject to that one's excludes (named files only with
    ``force_exclude``)."""
    top = given or configurations.settings_for(common_folder(targets))
    files, missing = discover(targets, top, force_exclude)
    named = {t.resolve() for t in targets if t.is_file()} if not force_exclude else set()
    groups: dict[Settings, list[Path]] = {}
    for file in files:
        own = given or configurations.settings_for(file)
        if own is not top and file.resolve() not in named and is_excluded(file, own):
            continue
        groups.setdefault(own, []).append(file)
    return groups, missing


def lint_groups(
    groups: dict[Settings, list[Path]],
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    fix_edits: bool = True,
    cache_for: Callable[[Settings], Cache | None] = lambda settings: None,
    speedups: bool = False,
    show_silenced: bool = False,
    project: bool = False,
    reuse_run: bool = False,
    time_limit: float = FILE_TIME_LIMIT,
) -> RunResult:
    """Lint each group of files with its settings (see :func:`portlint.run.lint_files`);
    ``cache_for(settings)``: the cache of a group, or None. Caches are saved here.
    ``progress(done, total)`` counts on across the groups. ``project``: each group is one
    project for the project index (the files that share a configuration). ``reuse_run``, ``time_limit``:
    see :func:`~portlint.run.lint_files`."""
    total = RunResult()
    for settings_, files in groups.items():
        cache = cache_for(settings_)
        counted = _counting_on(progress, total.files_parsed) if progress else None
        context = project_files(settings_) if project else None
        # (The collector off while the tables are read and the project is joined: a million
        # objects that hold no cycles, looked at again and again otherwise.)
        with without_cycle_collection() if speedups else nullcontext():
            result = lint_files(
                files, settings_, jobs, counted, fix_edits, cache, speedups=speedups,
                show_silenced=show_silenced, project=project, context=context,
                reuse_run=reuse_run, time_limit=time_limit,
            )  # fmt: skip
            if cache is not None:
                cache.save()
        total.violations += result.violations
        total.internal_errors += result.internal_errors
        total.silenced += result.silenced
        total.files_checked += result.files_checked
        total.files_parsed += result.files_parsed
        total.projects.update(result.projects)
    total.violations.sort()
    total.silenced.sort()
    return total


def project_files(settings: Settings) -> list[Path]:
    """Every file of the project whose configuration is ``settings`` (its root holds a
    ``pyproject.toml`` or is a git checkout), for the project index; none where the root is just
    the folder portlint runs in."""
    root = Path(settings.root)
    if not ((root / "pyproject.toml").is_file() or (root / ".git").exists()):
        return []
    files, _ = discover([root], settings)
    return files


def _counting_on(progress: Callable[[int, int], None], before: int) -> Callable[[int, int], None]:
    return lambda done, count: progress(before + done, before + count)


def common_folder(paths: list[Path]) -> Path:
    """The deepest folder holding every one of ``paths``."""
    resolved = [p.resolve() for p in paths]
    folders = [p if p.is_dir() else p.parent for p in resolved]
    return Path(os.path.commonpath(folders)) if folders else Path.cwd()
