"""The command line: ``portlint check``, ``portlint rules``, ``portlint rule CODE``."""

from __future__ import annotations

import difflib
import os
import sys
from collections import Counter
from pathlib import Path

import click

from portlint import __version__
from portlint.config import ConfigError, Overrides, find_pyproject, load_settings
from portlint.discovery import discover
from portlint.engine import fix_source, lint_files, read_source, write_source
from portlint.fix import SAFE
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
    "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True
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
) -> None:
    """Lint PATHS (files or folders; default: the current folder)."""
    targets = list(paths) or [Path(".")]
    cwd = Path.cwd()
    try:
        if config_file is not None and not config_file.is_file():
            raise ConfigError(f"config file not found: {config_file}")
        config_path = config_file or find_pyproject(_common_folder(targets, cwd))
        overrides = Overrides(
            select=_codes(select) if select is not None else None,
            extend_select=_codes(extend_select),
            ignore=_codes(ignore),
        )
        settings = load_settings(config_path, overrides, cwd)
    except ConfigError as error:
        click.echo(f"portlint: error: {error}", err=True)
        sys.exit(EXIT_ERROR)

    files, missing = discover(targets, settings)
    for path in missing:
        click.echo(f"portlint: error: {path}: no such file or folder", err=True)
    progress = _Progress(enabled=not quiet)
    result = lint_files(files, settings, jobs=jobs, progress=progress)
    progress.close()

    violations = result.violations
    applied: Counter[tuple[str, str]] = Counter()
    changed = False
    if fix or diff:
        violations, applied, changed, fix_errors = _apply_fixes(
            violations, settings, unsafe_fixes, diff
        )
        result.internal_errors.extend(fix_errors)
        if diff:
            sys.exit(
                EXIT_ERROR if result.internal_errors else EXIT_FINDINGS if changed else EXIT_CLEAN
            )
    if show_fixes:
        click.echo(fixes_report(applied), nl=False)
    if output_format == "json":
        click.echo(json_report(violations), nl=False)
    elif show_statistics:
        click.echo(statistics(violations), nl=False)
    else:
        click.echo(text_report(violations), nl=False)
        if not quiet:
            click.echo(summary(violations, sum(applied.values()), unsafe_fixes))
    for error in result.internal_errors:
        click.echo(f"portlint: error: {error}", err=True)

    if missing or result.internal_errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if violations and not exit_zero else EXIT_CLEAN)


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
            lines = difflib.unified_diff(
                original.splitlines(keepends=True),
                outcome.source.splitlines(keepends=True),
                path,
                path,
            )
            click.echo("".join(lines), nl=False)
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
