"""The command line: ``portlint check``, ``portlint rules``, ``portlint rule CODE``."""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import click

from portlint import __version__
from portlint.cache import CACHE_DIR, Cache
from portlint.cache import clean as clean_cache
from portlint.changes import ChangesError, changed_lines, on_changed_lines
from portlint.config import ConfigError, Overrides, find_pyproject, load_settings
from portlint.discovery import discover, is_excluded
from portlint.engine import (
    SourceError,
    decode_source,
    fix_source,
    lint_files,
    lint_source,
    read_source,
    write_source,
)
from portlint.findings import SAFE, Silenced, Violation, split_lines
from portlint.formats import FORMATS, Context, OutputFormat
from portlint.registry import BrokenRules, all_rules, check_catalog_lists_every_rule
from portlint.reporters import fixes_report, summary
from portlint.settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str | None) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()] if value else []


class _Progress:
    """A one-line counter on stderr, shown only on a terminal and only for long runs."""

    MIN_FILES = 50

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if self.enabled and total >= self.MIN_FILES:
            click.echo(f"\rportlint: {done}/{total} files", err=True, nl=False)
            self.shown = True

    def close(self) -> None:
        if self.shown:
            click.echo("\r\033[K", err=True, nl=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="portlint")
def main() -> None:
    """portlint: find code that silently assumes one accelerator."""


def _format_help() -> str:
    return "; ".join(f"{name}: {fmt.help}" for name, fmt in FORMATS.items()) + "."


@dataclass(frozen=True)
class CheckOptions:
    """What `portlint check` was given on the command line (click's parameters, by name)."""

    paths: tuple[Path, ...]
    select: str | None
    extend_select: str | None
    ignore: str | None
    config_file: Path | None
    output_format: str
    exit_zero: bool
    show_statistics: bool
    jobs: int | None
    quiet: bool
    fix: bool
    unsafe_fixes: bool
    diff: bool
    show_fixes: bool
    target_torch_version: str | None
    force_exclude: bool
    baseline: Path | None
    write_baseline: Path | None
    since: str | None
    add_noqa: bool
    stdin_filename: str | None
    no_cache: bool
    no_partial_parse: bool
    show_silenced: bool

    @property
    def reading_stdin(self) -> bool:
        return [str(p) for p in self.paths] == ["-"]

    @property
    def targets(self) -> list[Path]:
        if self.reading_stdin and self.stdin_filename:
            return [Path(self.stdin_filename)]
        return list(self.paths) or [Path(".")]

    @property
    def format(self) -> OutputFormat:
        return FORMATS[self.output_format]


class UsageError(Exception):
    """Something the user must change (an option, the configuration): one line, exit 2."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--select", help="Comma-separated codes or prefixes to enable (replaces the configured list)."
)
@click.option("--extend-select", help="Codes or prefixes to enable in addition.")
@click.option("--ignore", help="Codes or prefixes to disable.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A pyproject.toml to read instead of the nearest one.",
)
@click.option(
    "--output-format",
    type=click.Choice(list(FORMATS)),
    default="concise",
    show_default=True,
    help=_format_help(),
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--statistics",
    "show_statistics",
    is_flag=True,
    help="Show counts per code instead of the findings.",
)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=1), help="Processes to use (default: CPU count)."
)
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else.")
@click.option("--fix", is_flag=True, help="Apply safe fixes and write the files.")
@click.option(
    "--unsafe-fixes", is_flag=True, help="Apply unsafe fixes as well (with --fix or --diff)."
)
@click.option("--diff", is_flag=True, help="Print the diff the fixes would make; write nothing.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file.")
@click.option(
    "--target-torch-version",
    metavar="X.Y",
    help="Oldest torch the code supports: PORT4xx report only APIs whose replacement it has.",
)
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply excludes to files named on the command line too (for pre-commit).",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Report only findings that this baseline file does not hold.",
)
@click.option(
    "--write-baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the current findings to this baseline file and exit 0.",
)
@click.option("--since", metavar="REV", help="Report only findings on lines changed since REV.")
@click.option("--add-noqa", is_flag=True, help="Add a `# noqa: CODE` to every line with a finding.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write .portlint_cache/.")
@click.option(
    "--no-partial-parse",
    is_flag=True,
    help="Parse whole files, not only the functions a rule can report on (slower).",
)
@click.option(
    "--show-silenced",
    is_flag=True,
    help="Also show each device finding that the code's own account of its platform silenced "
    "(a guard, a CUDA-only import or name, a test skip, a dispatch, a waiver), with the reason.",
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    help="With `-` as the path: the file name the source on stdin stands for.",
)
def check(**parameters: object) -> None:
    """Lint PATHS (files or folders; default: the current folder; `-`: stdin)."""
    options = CheckOptions(**parameters)  # type: ignore[arg-type]
    try:
        status = _check(options)
    except (UsageError, ConfigError, BrokenRules) as error:
        click.echo(f"portlint: error: {error}", err=True)
        status = EXIT_ERROR
    sys.exit(status)


def _settings(options: CheckOptions) -> tuple[Settings, dict[str, set[int] | None] | None]:
    """The run's settings, and the lines changed since ``--since`` (None: no such option)."""
    if options.config_file is not None and not options.config_file.is_file():
        raise UsageError(f"config file not found: {options.config_file}")
    if options.select is not None and not _codes(options.select):
        raise UsageError(f"--select {options.select!r} names no code or prefix")
    cwd = Path.cwd()
    config_path = options.config_file or find_pyproject(_common_folder(options.targets, cwd))
    overrides = Overrides(
        select=_codes(options.select) if options.select is not None else None,
        extend_select=_codes(options.extend_select),
        ignore=_codes(options.ignore),
        target_torch_version=options.target_torch_version,
    )
    settings = load_settings(config_path, overrides, cwd)
    if options.no_partial_parse:
        settings = dataclasses.replace(settings, partial_parse=False)
    if "-" in map(str, options.paths) and not options.reading_stdin:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    modes = (options.fix or options.diff, options.add_noqa, options.write_baseline is not None)
    if sum(map(bool, modes)) > 1:
        raise UsageError("use one of --fix/--diff, --add-noqa and --write-baseline at a time")
    if options.show_silenced and not options.format.shows_silenced:
        shown = ", ".join(name for name, fmt in FORMATS.items() if fmt.shows_silenced)
        raise UsageError(f"--show-silenced works with the output formats {shown}")
    try:
        changed = changed_lines(options.since, cwd) if options.since else None
    except ChangesError as error:
        raise UsageError(f"--since: {error}") from None
    return settings, changed


def _check(options: CheckOptions) -> int:
    check_catalog_lists_every_rule()
    settings, changed = _settings(options)
    report = Report(options)
    if options.reading_stdin:
        return _check_stdin(options, settings, report)
    files, missing = discover(options.targets, settings, options.force_exclude)
    if changed is not None:
        files = [f for f in files if os.path.realpath(f) in changed]
    for path in missing:
        click.echo(f"portlint: error: {path}: no such file or folder", err=True)
    progress = _Progress(enabled=not options.quiet)
    fix_edits = options.format.shows_edits
    # Beside the pyproject.toml found for the paths (the project root), else here.
    cache_root = Path.cwd() if options.config_file is not None else Path(settings.root)
    # (The cache holds what was reported, not what was silenced.)
    use_cache = not (options.no_cache or options.show_silenced)
    cache = Cache(cache_root, settings, fix_edits) if use_cache else None
    try:
        result = lint_files(
            files, settings, options.jobs, progress, fix_edits, cache, speedups=True,
            show_silenced=options.show_silenced,
        )  # fmt: skip
    finally:
        progress.close()
    if cache is not None:
        cache.save()

    violations = result.violations
    if changed is not None:
        violations = on_changed_lines(violations, changed)
    if options.add_noqa:
        return _add_noqa(violations, result.internal_errors)
    applied: Counter[tuple[str, str]] = Counter()
    if options.fix or options.diff:
        violations, applied, changed_any, fix_errors = _apply_fixes(
            violations, settings, options.unsafe_fixes, options.diff
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
            violations = new_findings(options.baseline, violations)
    except BaselineError as error:
        raise UsageError(str(error)) from None
    if options.show_fixes:
        click.echo(fixes_report(applied), nl=False)
    unchecked = len(missing) + len(result.internal_errors)
    report.silenced = result.silenced if options.show_silenced else None
    report.emit(violations, sum(applied.values()), unchecked=unchecked)
    for message in result.internal_errors:
        click.echo(f"portlint: error: {message}", err=True)
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if violations and not options.exit_zero else EXIT_CLEAN


class Report:
    """Prints findings in the chosen format (and, for people, the summary)."""

    def __init__(self, options: CheckOptions) -> None:
        self.options = options
        self.sources: dict[str, str] = {}
        self.silenced: list[Silenced] | None = None

    def render(self, violations: list[Violation]) -> str:
        context = Context(
            self.sources, str(Path.cwd()), self.options.show_statistics, self.silenced
        )
        return self.options.format.render(violations, context)

    def emit(
        self, violations: list[Violation], fixed: int = 0, err: bool = False, unchecked: int = 0
    ) -> None:
        click.echo(self.render(violations), nl=False, err=err)
        options = self.options
        if options.format.for_people and not options.quiet and not options.show_statistics:
            click.echo(summary(violations, fixed, options.unsafe_fixes, unchecked), err=err)


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
        if options.fix:
            sys.stdout.write(source)
        return EXIT_CLEAN
    if options.fix or options.diff:
        outcome = fix_source(path, source, settings, options.unsafe_fixes)
        if options.diff:
            _print_diff(path, source, outcome.source)
            return EXIT_FINDINGS if outcome.source != source else EXIT_CLEAN
        sys.stdout.write(outcome.source)
        sys.stdout.flush()
        report.emit(outcome.violations, sum(outcome.applied.values()), err=True)
        violations = outcome.violations
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


def _apply_fixes(violations, settings, unsafe: bool, diff_only: bool):
    """Fix every file with an applicable fix; return what is left, what was fixed, and errors."""
    paths = sorted(
        {v.path for v in violations if v.fix and (unsafe or v.fix.applicability == SAFE)}
    )
    applied: Counter[tuple[str, str]] = Counter()
    errors: list[str] = []
    changed = False
    remaining = [v for v in violations if v.path not in paths]
    for path in paths:
        original = read_source(path)
        outcome = fix_source(path, original, settings, unsafe)
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


def _common_folder(paths: list[Path], cwd: Path) -> Path:
    resolved = [(cwd / p).resolve() for p in paths]
    folders = [p if p.is_dir() else p.parent for p in resolved]
    return Path(os.path.commonpath(folders)) if folders else cwd


@main.command()
def clean() -> None:
    """Remove the cache (.portlint_cache/) of the current folder."""
    removed = clean_cache(Path.cwd())
    click.echo(f"Removed {CACHE_DIR}/" if removed else f"No {CACHE_DIR}/ here.")


@main.command("rules")
def list_rules() -> None:
    """List every rule: code, name, whether it has a fix."""
    rows = [("CODE", "NAME", "FIX", "SUMMARY")]
    for code, rule in all_rules().items():
        rows.append((code, rule.name, "yes" if rule.has_fix() else "no", rule.summary()))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[3]
        )


@main.command("rule")
@click.argument("code")
def show_rule(code: str) -> None:
    """Print the documentation of rule CODE."""
    rule = all_rules().get(code.upper())
    if rule is None:
        click.echo(f"portlint: error: unknown rule {code!r} (see `portlint rules`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"# {rule.code} ({rule.name})\n\n{rule.documentation()}")
