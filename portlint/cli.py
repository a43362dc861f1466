"""The command line: ``portlint check``, ``portlint rules``, ``portlint rule CODE``."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import click

from portlint import __version__
from portlint.api import files_by_settings, lint_groups
from portlint.atomic import write_atomically
from portlint.cache import CACHE_DIR, Cache
from portlint.cache import clean as clean_cache
from portlint.changes import ChangesError, changed_lines_of, on_changed_lines
from portlint.config import ConfigError, Configurations, Overrides, inline_table
from portlint.discovery import is_excluded
from portlint.engine import lint_source
from portlint.errors import BrokenRules
from portlint.findings import Silenced, Violation, applicable, split_lines
from portlint.fix_rounds import fix_source
from portlint.formats import FORMATS, Context, OutputFormat, repository_root
from portlint.index.project import Project
from portlint.registry import all_rules, check_catalog_lists_every_rule
from portlint.reporters import fixed_summary, fixes_report, held_back, summary
from portlint.settings import Settings
from portlint.sources import SourceError, decode_source, read_source, write_source
from portlint.workers import FILE_TIME_LIMIT

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
    config: tuple[str, ...]
    output_format: str
    output_file: Path | None
    exit_zero: bool
    exit_non_zero_on_fix: bool
    show_statistics: bool
    show_settings: bool
    show_files: bool
    jobs: int | None
    file_time_limit: float
    quiet: bool
    verbose: bool
    color: str
    fix: bool
    fix_only: bool
    unsafe_fixes: bool
    diff: bool
    show_fixes: bool
    target_torch_version: str | None
    exclude: str | None
    extend_exclude: str | None
    per_file_ignores: str | None
    extend_per_file_ignores: str | None
    force_exclude: bool
    ignore_noqa: bool
    baseline: Path | None
    write_baseline: Path | None
    since: str | None
    add_noqa: bool
    stdin_filename: str | None
    no_cache: bool
    cache_dir: Path | None
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

    @property
    def fixing(self) -> bool:
        """Fixes are written (``--fix``, or ``--fix-only``, which implies it)."""
        return self.fix or self.fix_only

    @property
    def colored(self) -> bool | None:
        """Colour for click: True (always), False (never), None (where the output is a
        terminal). ``NO_COLOR`` set to anything but the empty string turns "auto" off."""
        if self.color == "always":
            return True
        if self.color == "never" or os.environ.get("NO_COLOR"):
            return False
        return None


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
    multiple=True,
    metavar="CONFIG_OPTION",
    help="A pyproject.toml to use for every file instead of the closest one, or a TOML "
    "`KEY = VALUE` pair laid over the configuration (as in [tool.portlint]); repeatable.",
)
@click.option(
    "--output-format",
    type=click.Choice(list(FORMATS)),
    default="concise",
    show_default=True,
    help=_format_help(),
)
@click.option(
    "-o",
    "--output-file",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="PORTLINT_OUTPUT_FILE",
    help="Write the report to this file instead of stdout.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when a fix changed a file, even if no finding remains.",
)
@click.option(
    "--statistics",
    "show_statistics",
    is_flag=True,
    help="Show counts per code instead of the findings.",
)
@click.option(
    "--show-settings",
    is_flag=True,
    help="Show the settings that apply to the first path, and the file they come from; lint "
    "nothing.",
)
@click.option(
    "--show-files", is_flag=True, help="List the files that would be linted; lint nothing."
)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=1), help="Processes to use (default: CPU count)."
)
@click.option(
    "--file-time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=FILE_TIME_LIMIT,
    show_default=True,
    metavar="SECONDS",
    help="Stop a file's analysis after this long and report it as too slow to analyse.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else.")
@click.option(
    "-v", "--verbose", is_flag=True, help="Also say, on stderr, which configuration each file got."
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour in the text formats (auto: on a terminal, unless NO_COLOR is set).",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes and write the files.")
@click.option(
    "--fix-only",
    is_flag=True,
    help="Apply fixes, but report nothing of what is left, and exit 0 for it (implies --fix).",
)
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
    "--exclude", help="Comma-separated patterns to exclude (replaces the configured list)."
)
@click.option("--extend-exclude", help="Patterns to exclude in addition.")
@click.option(
    "--per-file-ignores",
    metavar="PATTERN:CODE,...",
    help="Codes to ignore in files matching a pattern (replaces the configured table).",
)
@click.option(
    "--extend-per-file-ignores",
    metavar="PATTERN:CODE,...",
    help="Codes to ignore in files matching a pattern, in addition.",
)
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply excludes to files named on the command line too (for pre-commit).",
)
@click.option("--ignore-noqa", is_flag=True, help="Report findings that a noqa comment suppresses.")
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
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="PORTLINT_CACHE_DIR",
    help=f"Where to keep the cache (default: {CACHE_DIR}/ beside the configuration).",
)
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
    report = Report(options)
    try:
        status = _check(options, report)
        report.close()
    except (UsageError, ConfigError, BrokenRules) as error:
        click.echo(f"portlint: error: {error}", err=True)
        status = EXIT_ERROR
    except BrokenPipeError:  # the reader of the output stopped (`portlint check | head`)
        _quiet_stdout()
        status = EXIT_ERROR
    except OSError as error:  # the output file
        click.echo(f"portlint: error: {options.output_file}: {error.strerror}", err=True)
        status = EXIT_ERROR
    if _program:
        _exit_now(status)
    sys.exit(status)


# Whether this process is the `portlint` program (:func:`run`), not a caller of :func:`main`.
_program = False


def run() -> None:
    """The `portlint` program: :func:`main` as its own process."""
    global _program
    _program = True
    main()


def _quiet_stdout() -> None:
    """Standard output sent nowhere from now on, so that what is left in its buffer (written
    out at exit) cannot fail again on a pipe nobody reads."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _exit_now(status: int) -> None:
    """End the program once its output is out, without freeing what the run built: the tables a
    warm run reads are a million objects, and freeing them took a fifth of such a run (as mypy
    does it, `os._exit`; every file the run writes is written and renamed into place by then)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def _pairs(value: str | None, option: str) -> dict[str, list[str]]:
    """``PATTERN:CODE,PATTERN:CODE`` as ruff's ``--per-file-ignores`` takes it."""
    table: dict[str, list[str]] = {}
    for item in _codes(value):
        pattern, colon, code = item.rpartition(":")
        if not (colon and pattern and code):
            raise UsageError(f"{option}: expected PATTERN:CODE, got {item!r}")
        table.setdefault(pattern, []).append(code.strip())
    return table


def _configurations(options: CheckOptions) -> Configurations:
    """How each file gets its settings: the closest configuration, or the one ``--config`` file,
    with ``--config KEY=VALUE`` pairs and the other options laid over."""
    files, table = [], {}
    for value in options.config:
        if "=" in value and not Path(value).is_file():
            table.update(inline_table(value))
        else:
            files.append(Path(value))
    if len(files) > 1:
        raise UsageError("--config: give one configuration file (and any KEY = VALUE pairs)")
    if files and not files[0].is_file():
        raise UsageError(f"config file not found: {files[0]}")
    if options.select is not None and not _codes(options.select):
        raise UsageError(f"--select {options.select!r} names no code or prefix")
    overrides = Overrides(
        select=_codes(options.select) if options.select is not None else None,
        extend_select=_codes(options.extend_select),
        ignore=_codes(options.ignore),
        target_torch_version=options.target_torch_version,
        table=table,
        exclude=_codes(options.exclude) if options.exclude is not None else None,
        extend_exclude=_codes(options.extend_exclude),
        per_file_ignores=(
            _pairs(options.per_file_ignores, "--per-file-ignores")
            if options.per_file_ignores is not None
            else None
        ),
        extend_per_file_ignores=_pairs(
            options.extend_per_file_ignores, "--extend-per-file-ignores"
        ),
        ignore_noqa=options.ignore_noqa,
        partial_parse=not options.no_partial_parse,
    )
    return Configurations(overrides, Path.cwd(), files[0] if files else None)


def _check_options(options: CheckOptions) -> dict[str, set[int] | None] | None:
    """Options that cannot go together; the lines changed since ``--since`` (None: no such
    option)."""
    if "-" in map(str, options.paths) and not options.reading_stdin:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    modes = (options.fixing or options.diff, options.add_noqa, options.write_baseline is not None)
    if sum(map(bool, modes)) > 1:
        raise UsageError("use one of --fix/--diff, --add-noqa and --write-baseline at a time")
    if options.show_silenced and not options.format.shows_silenced:
        shown = ", ".join(name for name, fmt in FORMATS.items() if fmt.shows_silenced)
        raise UsageError(f"--show-silenced works with the output formats {shown}")
    if options.show_statistics and not options.format.shows_statistics:
        shown = ", ".join(name for name, fmt in FORMATS.items() if fmt.shows_statistics)
        raise UsageError(f"--statistics works with the output formats {shown}")
    try:
        return changed_lines_of(options.since, options.targets) if options.since else None
    except ChangesError as error:
        raise UsageError(f"--since: {error}") from None


def _check(options: CheckOptions, report: Report) -> int:
    check_catalog_lists_every_rule()
    configurations = _configurations(options)
    changed = _check_options(options)
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
    progress = _Progress(enabled=not options.quiet)
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


class Report:
    """Prints findings in the chosen format (and, for people, the summary), to stdout or to
    ``--output-file`` (written whole at the end)."""

    def __init__(self, options: CheckOptions) -> None:
        self.options = options
        self.sources: dict[str, str] = {}
        self.silenced: list[Silenced] | None = None
        self.kept: list[str] | None = [] if options.output_file is not None else None
        self.held = 0  # (findings the baseline holds back: said in the summary)

    def write(self, text: str, err: bool = False) -> None:
        if self.kept is not None and not err:
            self.kept.append(text)
        else:
            click.echo(text, nl=False, err=err, color=self.options.colored)

    def close(self) -> None:
        if self.kept is not None and self.options.output_file is not None:
            text = "".join(self.kept)
            if not self.options.colored:
                text = click.unstyle(text)
            write_atomically(str(self.options.output_file), text.encode("utf-8"))

    def render(self, violations: list[Violation]) -> str:
        root = repository_root(os.getcwd())
        color = self.options.colored is not False and self.options.format.for_people
        context = Context(
            self.sources, root, self.options.show_statistics, self.silenced, color,
            self.options.unsafe_fixes,
        )  # fmt: skip
        return self.options.format.render(violations, context)

    def emit(
        self, violations: list[Violation], fixed: int = 0, err: bool = False, unchecked: int = 0
    ) -> None:
        self.write(self.render(violations), err=err)
        options = self.options
        if options.format.for_people and not options.quiet and not options.show_statistics:
            baseline = options.baseline is not None
            text = summary(violations, fixed, options.unsafe_fixes, unchecked, baseline)
            if self.held:
                text += f"\n{held_back(self.held)}"
            self.write(text + "\n", err=err)


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


@main.command()
def server() -> None:
    """Run the language server for editors, over stdin and stdout (the `lsp` extra)."""
    try:
        from portlint.server import serve  # pygls: installed with the `lsp` extra only
    except ModuleNotFoundError as error:
        if (error.name or "").startswith("portlint"):
            raise
        click.echo(
            f"portlint: error: `portlint server` needs the `lsp` extra (no module {error.name!r}):"
            ' pip install "portlint[lsp] @ git+https://github.com/portlint/portlint"',
            err=True,
        )
        sys.exit(EXIT_ERROR)
    serve()
