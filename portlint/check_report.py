"""How `portlint check` shows what it found: the findings in the chosen format with the summary,
to stdout or to a file, and a progress counter on a terminal."""

from __future__ import annotations

import os
import sys

import click

from portlint.atomic import write_atomically
from portlint.check_options import CheckOptions
from portlint.findings import Silenced, Violation
from portlint.formats import Context, repository_root
from portlint.reporters import held_back, summary


class Progress:
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
