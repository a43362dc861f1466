"""Fixing one file: its fixes applied round after round, each round linted again and parsed once,
with what was fixed, what was dropped and why, and what is left."""

from __future__ import annotations

import ast
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from portlint.bounds import python_verdict
from portlint.engine import judged_by_project, lint_source
from portlint.findings import Edit, Fix, Violation, applicable, apply_edits, split_lines
from portlint.index.project import Project
from portlint.index.reading import facts_of
from portlint.settings import Settings

# Fixes that overlap are applied over several rounds, each re-linting the result (as ruff does).
MAX_FIX_ROUNDS = 10


@dataclass
class FixResult:
    source: str  # the fixed source
    # Findings fixed, by code: by their fixes, or by another's that rewrote their code.
    applied: Counter[str] = field(default_factory=Counter)
    dropped: list[str] = field(default_factory=list)  # fixes not applied, and why
    violations: list[Violation] = field(default_factory=list)  # what is left


def fix_source(
    path: str,
    source: str,
    settings: Settings,
    unsafe: bool = False,
    project: Project | None = None,
) -> FixResult:
    """Apply the fixes of ``source``'s findings, round after round, checking that the code still
    parses. ``project``: the run's project index, whose silences apply to each round as to the
    check.

    A round lints the text once, takes every fix that changes no line another fix taken changes
    (fixes that insert the same line, such as one ``import``, share it), applies them together
    and parses the result once (where it does not parse, halves of the fixes find the ones that
    break it). The fixes that had to wait go in the next round: only those, so that what is
    fixed is what the first lint listed (a finding that a fix brings is reported, not fixed; one
    that waited and is gone, its code rewritten by the fix of another, counts as fixed). So a
    file's rounds cost a lint and a parse each, whatever its number of findings.
    """
    from portlint.visit import parses

    def findings(text: str) -> list[Violation]:
        if project is None or path not in project.facts:
            return lint_source(path, text, settings)
        tree = python_verdict(path, text)
        module = tree if isinstance(tree, ast.Module) else None
        facts = (
            facts_of(module, text, path, project.packages, settings) if module is not None else None
        )
        found = lint_source(path, text, settings, tree=tree, facts=facts)
        if facts is not None:
            project.update(path, facts, text)
        return sorted(judged_by_project(project, found, None))

    result = FixResult(source)
    outside = _link_out_of(path, settings.root)
    if outside is not None:
        result.violations = lint_source(path, source, settings)
        result.dropped.append(f"{path}: a symbolic link to {outside}, which is outside the project")
        return result
    waiting: list[tuple[str | None, int, int]] | None = None  # (None: the first round)
    for round_ in range(MAX_FIX_ROUNDS + 1):  # (the last lint only tells what is left)
        result.violations = findings(result.source)
        fixes = [(v, fix) for v in result.violations if (fix := applicable(v, unsafe))]
        if waiting is not None:
            again, gone = _found_again(result.violations, waiting)
            result.applied.update(gone)
            fixes = [(v, fix) for v, fix in fixes if id(v) in again]
        if round_ == MAX_FIX_ROUNDS:
            break
        chosen, later = _apart(fixes)
        applied = _parsing(result.source, chosen, parses)
        kept = {id(violation) for violation, _ in applied}
        result.dropped += [
            f"{path}:{violation.line}: {violation.code}: the fixed code would not parse"
            for violation, _ in chosen
            if id(violation) not in kept
        ]
        if not applied:
            break
        edits = sorted({edit for _, fix in applied for edit in fix.edits})
        result.source = apply_edits(result.source, edits)
        for violation, _ in applied:
            assert violation.code is not None  # a finding with a fix is a rule's
            result.applied[violation.code] += 1
        waiting = [(v.code, *_moved(v.line, edits)) for v, _ in later]
    return result


Fixes = list[tuple[Violation, Fix]]


def _apart(fixes: Fixes) -> tuple[Fixes, Fixes]:
    """The fixes, in order, that change no line an earlier one taken changes (a line inserted
    the same by several is theirs to share), and the others."""
    taken: set[int] = set()  # the lines the fixes taken replace, or insert before
    shared: set[Edit] = set()  # the insertions of the fixes taken
    chosen: Fixes = []
    later: Fixes = []
    for violation, fix in fixes:
        lines = {
            line
            for edit in fix.edits
            if edit not in shared
            for line in range(edit.line, max(edit.end_line, edit.line + 1))
        }
        if lines & taken:
            later.append((violation, fix))
            continue
        chosen.append((violation, fix))
        taken |= lines
        shared |= {edit for edit in fix.edits if edit.line == edit.end_line}
    return chosen, later


def _parsing(source: str, fixes: Fixes, parses: Callable[[str], bool]) -> Fixes:
    """The fixes whose edits, applied together to ``source``, leave code that parses: all of
    them where they do (one parse); else each half in turn, with the fixes kept so far."""
    kept: Fixes = []

    def settle(group: Fixes) -> None:
        edits = sorted({edit for _, fix in [*kept, *group] for edit in fix.edits})
        if parses(apply_edits(source, edits)):
            kept.extend(group)
        elif len(group) > 1:
            settle(group[: len(group) // 2])
            settle(group[len(group) // 2 :])

    if fixes:
        settle(fixes)
    return kept


def _moved(line: int, edits: list[Edit]) -> tuple[int, int]:
    """The lines that ``line`` is once ``edits`` (sorted) are applied: its own, moved, or those
    of the edit that replaced it."""
    shift = 0
    for edit in edits:
        if line < edit.line:
            break
        count = len(split_lines(edit.content))
        if line < edit.end_line:
            return edit.line + shift, edit.line + shift + max(count, 1)
        shift += count - (edit.end_line - edit.line)
    return line + shift, line + shift + 1


def _found_again(
    violations: list[Violation], waiting: list[tuple[str | None, int, int]]
) -> tuple[set[int], Counter[str]]:
    """The findings that waited for a round, found again (one each, of its code, on its lines),
    by identity; and the codes of those that are gone."""
    slots: dict[tuple[str | None, int], list[int]] = {}  # the waiting findings, by code and line
    for number, (code, low, high) in enumerate(waiting):
        for line in range(low, high):
            slots.setdefault((code, line), []).append(number)
    taken: set[int] = set()
    again: set[int] = set()
    for violation in violations:
        free = [n for n in slots.get((violation.code, violation.line), []) if n not in taken]
        if free:
            taken.add(free[0])
            again.add(id(violation))
    gone = Counter(code for n, (code, _, _) in enumerate(waiting) if n not in taken and code)
    return again, gone


def _link_out_of(path: str, root: str) -> str | None:
    """Where a symbolic link ``path`` leads, if that is outside the folder ``root``: a fix is
    never written there (a link into the project is followed: its target is fixed)."""
    if not os.path.islink(path):
        return None
    target = os.path.realpath(path)
    inside = os.path.commonpath([target, os.path.realpath(root)]) == os.path.realpath(root)
    return None if inside else target
