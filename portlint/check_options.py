"""What `portlint check` was given on the command line: its options, checked, turned into the
configurations each file gets its settings from, and the exit statuses."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from portlint.changes import ChangesError, changed_lines_of
from portlint.config import Configurations, Overrides, inline_table
from portlint.formats import FORMATS, OutputFormat

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Seconds one file may take (its read for the index, its parse and every rule) before its process
# is stopped and the file reported as too slow to analyse; far above real code (the largest file
# of the audit corpora takes about 5 s cold), a backstop for what the bounds of portlint.bounds
# do not foresee.
FILE_TIME_LIMIT = 60.0


def _codes(value: str | None) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()] if value else []


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


def _pairs(value: str | None, option: str) -> dict[str, list[str]]:
    """``PATTERN:CODE,PATTERN:CODE`` as ruff's ``--per-file-ignores`` takes it."""
    table: dict[str, list[str]] = {}
    for item in _codes(value):
        pattern, colon, code = item.rpartition(":")
        if not (colon and pattern and code):
            raise UsageError(f"{option}: expected PATTERN:CODE, got {item!r}")
        table.setdefault(pattern, []).append(code.strip())
    return table


def configurations_of(options: CheckOptions) -> Configurations:
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


def check_options(options: CheckOptions) -> dict[str, set[int] | None] | None:
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
