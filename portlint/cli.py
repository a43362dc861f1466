"""The command line: ``portlint check``, ``portlint rules``, ``portlint rule CODE``."""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from collections import Counter
from pathlib import Path
from typing import NoReturn

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
from portlint.findings import SAFE, Violation
from portlint.registry import all_rules
from portlint.reporters import fixes_report, json_report, statistics, summary, text_report

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


FORMATS = ["concise", "text", "full", "json", "json-lines", "junit", "github", "sarif"]
# The formats that show a fix's edits; the others only say whether a fix exists.
FORMATS_WITH_EDITS = {"full", "json", "json-lines", "sarif"}


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
    type=click.Choice(FORMATS),
    default="concise",
    show_default=True,
    help="concise (= text), full (source line, caret, fix), json, json-lines, junit, github "
    "(workflow annotations), sarif (2.1.0, for code scanning).",
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
    "--stdin-filename",
    metavar="PATH",
    help="With `-` as the path: the file name the source on stdin stands for.",
)
def check(
    paths: tuple[Path, ...],
    select: str | None,
    extend_select: str | None,
    ignore: str | None,
    config_file: Path | None,
    output_format: str,
    exit_zero: bool,
    show_statistics: bool,
    jobs: int | None,
    quiet: bool,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    show_fixes: bool,
    target_torch_version: str | None,
    force_exclude: bool,
    baseline: Path | None,
    write_baseline: Path | None,
    since: str | None,
    add_noqa: bool,
    stdin_filename: str | None,
    no_cache: bool,
    no_partial_parse: bool,
) -> None:
    """Lint PATHS (files or folders; default: the current folder; `-`: stdin)."""
    reading_stdin = [str(p) for p in paths] == ["-"]
    targets = [Path(stdin_filename)] if reading_stdin and stdin_filename else list(paths)
    cwd = Path.cwd()
    try:
        if config_file is not None and not config_file.is_file():
            raise ConfigError(f"config file not found: {config_file}")
        config_path = config_file or find_pyproject(_common_folder(targets or [Path(".")], cwd))
        overrides = Overrides(
            select=_codes(select) if select is not None else None,
            extend_select=_codes(extend_select),
            ignore=_codes(ignore),
            target_torch_version=target_torch_version,
        )
        settings = load_settings(config_path, overrides, cwd)
        if no_partial_parse:
            settings = dataclasses.replace(settings, partial_parse=False)
        if "-" in map(str, paths) and not reading_stdin:
            raise ConfigError("`-` (stdin) cannot be combined with other paths")
        if sum(map(bool, (fix or diff, add_noqa, write_baseline is not None))) > 1:
            raise ConfigError("use one of --fix/--diff, --add-noqa and --write-baseline at a time")
        changed = changed_lines(since, cwd) if since else None
    except (ConfigError, ChangesError) as error:
        _fail(f"--since: {error}" if isinstance(error, ChangesError) else str(error))
    report = Report(output_format, show_statistics, quiet, unsafe_fixes, cwd)
    if reading_stdin:
        _check_stdin(settings, stdin_filename or "-", report, fix, diff, exit_zero, force_exclude)
        return

    files, missing = discover(targets or [Path(".")], settings, force_exclude)
    if changed is not None:
        files = [f for f in files if os.path.realpath(f) in changed]
    for path in missing:
        click.echo(f"portlint: error: {path}: no such file or folder", err=True)
    progress = _Progress(enabled=not quiet)
    fix_edits = output_format in FORMATS_WITH_EDITS
    # Beside the pyproject.toml found for the paths (the project root), else here.
    cache_root = cwd if config_file is not None else Path(settings.root)
    cache = None if no_cache else Cache(cache_root, settings, fix_edits)
    result = lint_files(files, settings, jobs, progress, fix_edits, cache)
    progress.close()
    if cache is not None:
        cache.save()

    violations = result.violations
    if changed is not None:
        violations = on_changed_lines(violations, changed)
    if add_noqa:
        sys.exit(_add_noqa(violations, result.internal_errors))
    applied: Counter[tuple[str, str]] = Counter()
    if fix or diff:
        violations, applied, changed_any, fix_errors = _apply_fixes(
            violations, settings, unsafe_fixes, diff
        )
        result.internal_errors.extend(fix_errors)
        if diff:
            sys.exit(
                EXIT_ERROR
                if result.internal_errors
                else EXIT_FINDINGS
                if changed_any
                else EXIT_CLEAN
            )
        if changed is not None:
            violations = on_changed_lines(violations, changed)
    from portlint.baseline import BaselineError, new_findings
    from portlint.baseline import write_baseline as write_baseline_file

    try:
        if write_baseline is not None:
            count = write_baseline_file(write_baseline, violations)
            click.echo(f"portlint: wrote {count} findings to {write_baseline}", err=True)
            sys.exit(EXIT_ERROR if missing or result.internal_errors else EXIT_CLEAN)
        if baseline is not None:
            violations = new_findings(baseline, violations)
    except BaselineError as error:
        _fail(str(error))
    if show_fixes:
        click.echo(fixes_report(applied), nl=False)
    report.emit(violations, sum(applied.values()))
    for error in result.internal_errors:
        click.echo(f"portlint: error: {error}", err=True)

    if missing or result.internal_errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if violations and not exit_zero else EXIT_CLEAN)


def _fail(message: str) -> NoReturn:
    click.echo(f"portlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


class Report:
    """Prints findings in the chosen format (and, for people, the summary)."""

    def __init__(
        self, output_format: str, statistics: bool, quiet: bool, unsafe: bool, cwd: Path
    ) -> None:
        self.format = output_format
        self.statistics = statistics
        self.quiet = quiet
        self.unsafe = unsafe
        self.cwd = cwd
        self.sources: dict[str, str] = {}

    def render(self, violations: list[Violation]) -> str:
        if self.statistics and self.format in ("concise", "text", "full"):
            return statistics(violations)
        if self.format in ("concise", "text"):
            return text_report(violations)
        from portlint.formats import (
            full_report,
            github_report,
            json_lines_report,
            junit_report,
            sarif_report,
        )

        renderers = {
            "full": lambda found: full_report(found, self.sources),
            "json": json_report,
            "json-lines": json_lines_report,
            "junit": junit_report,
            "github": github_report,
            "sarif": lambda found: sarif_report(found, str(self.cwd)),
        }
        return renderers[self.format](violations)

    def emit(self, violations: list[Violation], fixed: int = 0, err: bool = False) -> None:
        click.echo(self.render(violations), nl=False, err=err)
        if self.format in ("concise", "text", "full") and not self.quiet and not self.statistics:
            click.echo(summary(violations, fixed, self.unsafe), err=err)


def _check_stdin(
    settings, path: str, report: Report, fix: bool, diff: bool, exit_zero: bool, force: bool
) -> None:
    """Lint the source on stdin as ``path``; with --fix, print the fixed source to stdout."""
    data = sys.stdin.buffer.read()
    try:
        source = decode_source(path, data)
    except SourceError as error:
        report.emit([error.violation])
        sys.exit(EXIT_FINDINGS)
    report.sources[path] = source
    if force and path != "-" and is_excluded(Path(path), settings):
        if fix:
            sys.stdout.write(source)
        sys.exit(EXIT_CLEAN)
    if fix or diff:
        outcome = fix_source(path, source, settings, report.unsafe)
        if diff:
            _print_diff(path, source, outcome.source)
            sys.exit(EXIT_FINDINGS if outcome.source != source else EXIT_CLEAN)
        sys.stdout.write(outcome.source)
        sys.stdout.flush()
        report.emit(outcome.violations, sum(outcome.applied.values()), err=True)
        violations = outcome.violations
    else:
        violations = lint_source(
            path, source, settings, fix_edits=report.format in FORMATS_WITH_EDITS
        )
        report.emit(violations)
    sys.exit(EXIT_FINDINGS if violations and not exit_zero else EXIT_CLEAN)


def _print_diff(path: str, before: str, after: str) -> None:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), path, path
    )
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
    for error in errors:
        click.echo(f"portlint: error: {error}", err=True)
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
