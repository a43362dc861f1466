"""What the editor's server lints, with no protocol in it: a document's text linted as the file
it is, the result of each version kept for the next, and the edits of a code action.

A document of a project that `portlint check` has run in (its cache is there) is judged with the
project, as `portlint check FILE` judges it: the facts of the project's other files are taken from
the cache once (:func:`project_of`), and each lint puts the document's own facts, as its text
is now, in their place. Elsewhere a document is judged alone.

The server (:mod:`portlint.server`) imports this off the thread that reads the editor's messages
once it has answered the editor's first request: it brings LibCST and the rules.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from portlint.api import project_files
from portlint.cache import CACHE_DIR, Cache
from portlint.config import ConfigError, Overrides, find_pyproject, load_settings
from portlint.discovery import is_excluded
from portlint.engine import judged_by_project, lint_source
from portlint.findings import Edit, Violation, split_lines
from portlint.index.project import Project
from portlint.job import lint_for_project
from portlint.run import lint_files
from portlint.settings import Settings
from portlint.speed.reuse import Parts
from portlint.suppression import add_noqa


@dataclass
class Lint:
    """What one version of a document linted to."""

    version: int | None
    source: str
    settings: Settings | None  # None: the configuration could not be read
    violations: list[Violation]  # their fixes carry no edits
    # By code: the same findings with their fix edits, computed when a code action needs them.
    with_edits: dict[str, list[Violation]] = field(default_factory=dict)
    # What LibCST parsed of it, by part: the next version parses again only the parts it changed.
    parts: Parts = field(default_factory=Parts)
    project: Project | None = None  # the project it was judged with (None: judged alone)

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    def at(self, first: int, last: int) -> list[Violation]:
        """The rules' findings on lines ``first`` .. ``last`` (1-based)."""
        return [
            v
            for v in self.violations
            if v.code is not None and v.line <= last and max(v.line, v.end_line) >= first
        ]


def settings_for(path: str) -> Settings:
    """The settings `portlint check PATH` uses, run from this process's folder."""
    cwd = Path.cwd()
    return load_settings(find_pyproject(cwd / path), Overrides(), cwd)


def lint_text(path: str, version: int | None, source: str, previous: Lint | None) -> Lint:
    """Lint ``source`` as the text of ``path`` (the fast path: no fix edits). The previous
    version's result is reused where neither the text, the settings nor the project changed."""
    try:
        settings = settings_for(path)
    except ConfigError as error:
        return Lint(version, source, None, [Violation(path, 1, 1, None, f"portlint: {error}")])
    parts = previous.parts if previous else Parts()
    if is_excluded(Path(path), settings):
        return Lint(version, source, settings, [], parts=parts)
    project = project_of(path, settings)
    if (
        previous
        and previous.source == source
        and previous.settings == settings
        and previous.project is project
    ):
        return Lint(
            version, source, settings, previous.violations, previous.with_edits, parts, project
        )
    if project is None:
        found = lint_source(path, source, settings, fix_edits=False, speedups=True, parts=parts)
        return Lint(version, source, settings, found, parts=parts)
    found, facts, notes = lint_for_project(path, source, settings, project.packages, parts=parts)
    if facts is None:  # (Python refuses it: nothing to judge)
        return Lint(version, source, settings, found, parts=parts, project=project)
    project.update(path, {**facts, "notes": notes}, source)
    judged = judged_by_project(project, found, None)
    return Lint(version, source, settings, judged, parts=parts, project=project)


# The project of each configuration, as the cache left it (None: judged alone), until a
# configuration changes (:func:`forget_projects`); each lint of a document puts its facts in.
_PROJECTS: dict[Settings, Project | None] = {}


def project_of(path: str, settings: Settings) -> Project | None:
    """The project ``path`` belongs to, joined from the facts that `portlint check` keeps in the
    cache of its root (a file changed since is read again); None where the root has no cache,
    or ``path`` is not one of the project's files on disk (a new one)."""
    if settings not in _PROJECTS:
        try:
            _PROJECTS[settings] = _cached_project(settings)
        except Exception:  # (a defect: the documents are judged alone, not joined again each lint)
            traceback.print_exc()
            _PROJECTS[settings] = None
    project = _PROJECTS[settings]
    return project if project is not None and path in project.facts else None


def _cached_project(settings: Settings) -> Project | None:
    root = Path(settings.root)
    files = project_files(settings) if (root / CACHE_DIR).is_dir() else []
    if not files:
        return None
    cache = Cache(root, settings, fix_edits=False)
    result = lint_files([], settings, cache=cache, speedups=True, project=True, context=files)
    return next(iter(result.projects.values()), None)


def forget_projects() -> None:
    """A configuration changed: each project is joined again when next asked."""
    _PROJECTS.clear()


Key = tuple[str, int, int]  # a finding's code, line and column: what a code action is about


def finding(violations: list[Violation], key: Key) -> Violation | None:
    return next((v for v in violations if (v.code, v.line, v.col) == key), None)


def fix_edits(path: str, lint: Lint, key: Key) -> tuple[Edit, ...]:
    """The edits of the fix of ``lint``'s finding ``key``. Where the diagnostics' lint did not
    make them (it makes PORT001's), the file is linted again with that rule alone, its fixes'
    edits made: once per version."""
    known = finding(lint.violations, key)
    if known is not None and known.fix is not None and known.fix.edits:
        return known.fix.edits
    code = key[0]
    if code not in lint.with_edits:
        assert lint.settings is not None  # it has findings of a rule: its settings were read
        lint.with_edits[code] = lint_source(
            path, lint.source, lint.settings, fix_edits=True, codes=[code], speedups=True
        )
    fixed = finding(lint.with_edits[code], key)
    return fixed.fix.edits if fixed is not None and fixed.fix is not None else ()


def noqa_edits(path: str, lint: Lint, key: Key) -> tuple[Edit, ...]:
    """The edit that adds ``# noqa: CODE`` to the line of ``lint``'s finding ``key`` (extending
    a ``noqa`` comment there); none where no comment can go (a line inside a string)."""
    found = finding(lint.violations, key)
    if found is None:
        return ()
    suppressed, changed, _ = add_noqa(lint.source, [found])
    if not changed:
        return ()
    return (Edit(found.line, 1, found.line + 1, 1, split_lines(suppressed)[found.line - 1]),)


# What each kind of code action does, by its name in the action's data.
EDITS: dict[str, Callable[[str, Lint, Key], tuple[Edit, ...]]] = {
    "fix": fix_edits,
    "noqa": noqa_edits,
}
