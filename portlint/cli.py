"""The command line: ``portlint check``, ``portlint rules``, ``portlint rule CODE``."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from portlint import __version__
from portlint.cache import CACHE_DIR
from portlint.cache import clean as clean_cache
from portlint.check_options import EXIT_ERROR, FILE_TIME_LIMIT, CheckOptions, UsageError
from portlint.config import ConfigError
from portlint.errors import BrokenRules
from portlint.formats import FORMATS
from portlint.registry import all_rules

# What a command needs beyond the options is imported when it runs (`portlint check` brings LibCST
# and the rules; `portlint server`, the protocol's modules, and the linter in its own thread).


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="portlint")
def main() -> None:
    """portlint: find code that silently assumes one accelerator."""


def _format_help() -> str:
    return "; ".join(f"{name}: {fmt.help}" for name, fmt in FORMATS.items()) + "."


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
    from portlint.check_report import Report
    from portlint.check_run import run_check

    options = CheckOptions(**parameters)  # type: ignore[arg-type]
    report = Report(options)
    try:
        status = run_check(options, report)
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
    """Run the language server for editors, over stdin and stdout."""
    from portlint.server import serve

    serve()
