"""What `portlint check` does once its options are read: lint the files (or stdin), fix them or
show the diff, add noqa comments, write or apply a baseline, and report."""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from collections import Counter
from pathlib import Path

import click

from portlint.api import files_by_settings, lint_groups
from portlint.cache import Cache
from portlint.changes import on_changed_lines
from portlint.check_options import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    CheckOptions,
    UsageError,
    check_options,
    configurations_of,
)
from portlint.check_report import Progress, Report
from portlint.config import Configurations
from portlint.discovery import is_excluded
from portlint.engine import lint_source
from portlint.findings import Silenced, Violation, applicable, split_lines
from portlint.fix_rounds import fix_source
from portlint.index.project import Project
from portlint.registry import check_catalog_lists_every_rule
from portlint.reporters import fixed_summary, fixes_report
from portlint.settings import Settings
from portlint.sources import SourceError, decode_source, read_source, write_source


def run_check(options: CheckOptions, report: Report) -> int:
    check_catalog_lists_every_rule()
    configurations = configurations_of(options)
    changed = check_options(options)
    if options.show_settings:
        return _show_settings(options.targets[0], configurations)
    if options.reading_stdin:
        stdin_settings = configurations.settings_for(Path(options.stdin_filename or "."))
        return _check_stdin(options, stdin_settings, report)
    groups, missing = files_by_settings(
        options.targets, configurations, force_exclude=options.force_exclude
    )
    if not missing and not any(groups.values()):
        click.echo("portlint: warning: no Python files found under the given paths", err=True)
    if changed is not None:
        groups = {
            s: [f for f in files if os.path.realpath(f) in changed] for s, files in groups.items()
        }
    if options.show_files:
        for file in sorted(f for files in groups.values() for f in files):
            click.echo(str(file))
        return EXIT_CLEAN
    for path in missing:
        click.echo(f"portlint: error: {path}: no such file or folder", err=True)
    if options.verbose:
        for settings, files in groups.items():
            config = configurations.config_of(settings)
            click.echo(f"portlint: {config or 'the defaults'}: {len(files)} file(s)", err=True)
    progress = Progress(enabled=not options.quiet)
    fix_edits = options.format.shows_edits
    try:
        result = lint_groups(
            groups, options.jobs, progress, fix_edits,
            lambda settings: _cache(options, configurations, settings, fix_edits),
            speedups=True, show_silenced=options.show_silenced, project=True,
            reuse_run=not (options.fixing or options.diff),  # (fixes need the project index)
            time_limit=options.file_time_limit,
        )  # fmt: skip
    finally:
        progress.close()

    violations = result.violations
    if changed is not None:
        violations = on_changed_lines(violations, changed)
    if options.add_noqa:
        return _add_noqa(violations, result.internal_errors)
    applied: Counter[tuple[str, str]] = Counter()
    changed_any = False
    if options.fixing or options.diff:
        settings_of = {str(f): s for s, files in groups.items() for f in files}
        violations, applied, changed_any, fix_errors = _apply_fixes(
            violations, settings_of, options.unsafe_fixes, options.diff, result.projects
        )
        result.internal_errors.extend(fix_errors)
        if options.diff:
            if result.internal_errors:
                return EXIT_ERROR
            return EXIT_FINDINGS if changed_any else EXIT_CLEAN
        if changed is not None:
            violations = on_changed_lines(violations, changed)
    from portlint.baseline import BaselineError, new_findings
    from portlint.baseline import write_baseline as write_baseline_file

    failed = bool(missing or result.internal_errors)
    try:
        if options.write_baseline is not None:
            count = write_baseline_file(options.write_baseline, violations)
            click.echo(f"portlint: wrote {count} findings to {options.write_baseline}", err=True)
            return EXIT_ERROR if failed else EXIT_CLEAN
        if options.baseline is not None:
            before = len(violations)
            violations = new_findings(options.baseline, violations)
            report.held = before - len(violations)
    except BaselineError as error:
        raise UsageError(str(error)) from None
    if options.show_fixes:
        report.write(fixes_report(applied))
    if options.verbose:
        click.echo(
            f"portlint: checked {result.files_checked} files, parsed {result.files_parsed}",
            err=True,
        )
    unchecked = len(missing) + len(result.internal_errors)
    report.silenced = result.silenced if options.show_silenced else None
    if options.fix_only:
        report.write(fixed_summary(sum(applied.values()), violations, options.unsafe_fixes) + "\n")
        violations = []
    else:
        report.emit(violations, sum(applied.values()), unchecked=unchecked)
    for message in result.internal_errors:
        click.echo(f"portlint: error: {message}", err=True)
    if failed:
        return EXIT_ERROR
    if options.exit_non_zero_on_fix and changed_any:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if violations and not options.exit_zero else EXIT_CLEAN


def _cache(
    options: CheckOptions, configurations: Configurations, settings: Settings, fix_edits: bool
) -> Cache | None:
    """The cache of the files with ``settings``: beside their configuration (here with a
    ``--config`` file), or in ``--cache-dir``. None with --no-cache or --show-silenced (the
    cache holds what was reported, not what was silenced)."""
    if options.no_cache or options.show_silenced:
        return None
    root = Path.cwd() if configurations.config_file is not None else Path(settings.root)
    return Cache(root, settings, fix_edits, folder=options.cache_dir)


def _show_settings(target: Path, configurations: Configurations) -> int:
    """``--show-settings``: the configuration that applies to ``target`` and what it says."""
    config = configurations.config_for(target)
    settings = configurations.settings_of(config)
    click.echo(f"Resolved settings for: {target}")
    click.echo(f"Settings path: {config.resolve() if config else 'none (the defaults)'}")
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, frozenset):
            value = sorted(value)
        elif item.name == "per_file_ignores":
            value = {pattern: sorted(codes) for pattern, codes in value}
        click.echo(f"{item.name} = {value!r}")
    return EXIT_CLEAN


def _check_stdin(options: CheckOptions, settings: Settings, report: Report) -> int:
    """Lint the source on stdin as ``--stdin-filename``; with --fix, print the fixed source to
    stdout."""
    path = options.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    try:
        source = decode_source(path, data)
    except SourceError as error:
        report.emit([error.violation])
        return EXIT_FINDINGS
    report.sources[path] = source
    if options.force_exclude and path != "-" and is_excluded(Path(path), settings):
        if options.fixing:
            sys.stdout.write(source)
        return EXIT_CLEAN
    if options.fixing or options.diff:
        outcome = fix_source(path, source, settings, options.unsafe_fixes)
        if options.diff:
            _print_diff(path, source, outcome.source)
            return EXIT_FINDINGS if outcome.source != source else EXIT_CLEAN
        sys.stdout.write(outcome.source)
        sys.stdout.flush()
        fixed = outcome.source != source
        if options.fix_only:
            return EXIT_FINDINGS if options.exit_non_zero_on_fix and fixed else EXIT_CLEAN
        report.emit(outcome.violations, sum(outcome.applied.values()), err=True)
        violations = outcome.violations
        if options.exit_non_zero_on_fix and fixed:
            return EXIT_FINDINGS
    else:
        fix_edits = options.format.shows_edits
        silenced: list[Silenced] | None = [] if options.show_silenced else None
        violations = lint_source(
            path, source, settings, fix_edits=fix_edits, speedups=True, silenced=silenced
        )
        report.silenced = silenced
        report.emit(violations)
    return EXIT_FINDINGS if violations and not options.exit_zero else EXIT_CLEAN


def _print_diff(path: str, before: str, after: str) -> None:
    lines = difflib.unified_diff(split_lines(before), split_lines(after), path, path)
    click.echo("".join(lines), nl=False)


def _add_noqa(violations: list[Violation], errors: list[str]) -> int:
    """Write a `# noqa` for every finding; return the exit status."""
    from portlint.suppression import add_noqa  # here: only --add-noqa needs it (2 ms of start-up)

    added = 0
    for path in sorted({v.path for v in violations if v.code is not None}):
        source = read_source(path)
        new, changed, skipped = add_noqa(source, [v for v in violations if v.path == path])
        for line in skipped:
            click.echo(
                f"portlint: warning: {path}:{line}: no comment can go on this line", err=True
            )
        if changed:
            try:
                write_source(path, new)
            except OSError as error:
                errors.append(f"{path}: {error}")
                continue
            added += changed
    click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    for message in errors:
        click.echo(f"portlint: error: {message}", err=True)
    return EXIT_ERROR if errors else EXIT_CLEAN


def _apply_fixes(
    violations,
    settings_of: dict[str, Settings],
    unsafe: bool,
    diff_only: bool,
    projects: dict[str, Project],
):
    """Fix every file with an applicable fix (``settings_of``: each file's settings;
    ``projects``: the project index each file belongs to); return what is left, what was fixed,
    whether a file changed, and errors."""
    paths = sorted({v.path for v in violations if applicable(v, unsafe)})
    applied: Counter[tuple[str, str]] = Counter()
    errors: list[str] = []
    changed = False
    remaining = [v for v in violations if v.path not in paths]
    for path in paths:
        original = read_source(path)
        outcome = fix_source(path, original, settings_of[path], unsafe, projects.get(path))
        for dropped in outcome.dropped:
            click.echo(f"portlint: warning: fix dropped: {dropped}", err=True)
        if outcome.source == original:
            remaining += [v for v in violations if v.path == path]
            continue
        changed = True
        if diff_only:
            _print_diff(path, original, outcome.source)
            continue
        try:
            write_source(path, outcome.source)
        except OSError as error:
            errors.append(str(error) if isinstance(error, PermissionError) else f"{path}: {error}")
            remaining += [v for v in violations if v.path == path]
            continue
        remaining += outcome.violations
        applied.update({(path, code): count for code, count in outcome.applied.items()})
    return sorted(remaining), applied, changed, errors
