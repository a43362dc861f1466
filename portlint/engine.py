"""One file's lint: read → text gate → parse once → one batched visit of every rule → noqa.

Parsing and visiting live in :mod:`portlint.visit`, imported only when a file needs them. A run
over many files is :mod:`portlint.run`; the rounds of fixes, :mod:`portlint.fix_rounds`.

The API returns results and never prints; the CLI does the printing.
"""

from __future__ import annotations

import ast
from contextlib import nullcontext
from typing import TYPE_CHECKING

from portlint.catalog import GUARDABLE
from portlint.findings import Silenced, Violation
from portlint.index.int64 import INT64_CODES, refine
from portlint.index.matmul import CAPTURE_CODE, judge_captures
from portlint.index.project import Project
from portlint.index.reading import FIXTURE_TEXT, facts_of
from portlint.settings import Settings
from portlint.speed.cut import UNPARSED, Unparsed, parse_ast
from portlint.speed.gate import codes_with_triggers_in
from portlint.speed.process import without_cycle_collection

if TYPE_CHECKING:
    from portlint.speed.reuse import Parts


def lint_source(
    path: str,
    source: str,
    settings: Settings,
    *,
    fix_edits: bool = True,
    codes: list[str] | None = None,
    speedups: bool = False,
    silenced: list[Silenced] | None = None,
    tree: ast.Module | Violation | Unparsed = UNPARSED,
    facts: dict | None = None,
    parts: Parts | None = None,
) -> list[Violation]:
    """Lint one file's text: findings after suppressions, or one diagnostic if it does not parse.

    With ``fix_edits=False`` fixes carry their applicability and message but no edits, and only
    the parts of the file a rule can report on are parsed (``settings.partial_parse``). A file
    with no trigger string of an enabled rule is not parsed, and LibCST is not even imported.
    ``codes``: what the text gate already said of this file, where the caller ran it.
    ``speedups``: the process-wide shortcuts of :mod:`portlint.speed.process` (off: nothing
    outside this call changes while it runs). ``silenced``, where given, gets the findings that
    the code's account of its platform silenced, with the reasons (``--show-silenced``).
    ``tree``: Python's verdict on ``source`` (:func:`portlint.bounds.python_verdict`), where the
    caller has it.
    ``facts``: the file's facts for the project index (:func:`portlint.index.reading.read_module`),
    where the caller joins them with the other files' and judges the findings with the whole
    project (the rules' notes are added to them); without them the file is judged alone.
    ``parts``: what the last lint of this file parsed, reused where its text is unchanged (the
    editor's: :mod:`portlint.speed.reuse`).
    """
    enabled = settings.codes_for(path)
    if codes is None:
        codes = codes_with_triggers_in(source, enabled)
    if not codes:
        return []
    from portlint.visit import lint_parsed  # LibCST and the rules: only for files that need them

    notes: dict[str, list] = {}
    with without_cycle_collection() if speedups else nullcontext():
        # (On again once lint_parsed has returned and the trees it made are freed: on while they
        # live, the collector would look at every node of them.)
        found = lint_parsed(
            path, source, settings, codes, enabled, fix_edits, speedups, silenced, tree, notes,
            parts,
        )  # fmt: skip
    if facts is not None:
        facts["notes"] = notes
        return found
    return judged_alone(path, source, settings, found, notes, silenced)


def judged_by_project(
    project: Project, found: list[Violation], silenced: list[Silenced] | None
) -> list[Violation]:
    """What stands of ``found`` once ``project`` has spoken (:meth:`Project.judge`), with the
    int64 findings judged by their consumers (:func:`portlint.index.int64.refine`) and the
    captures by their code (:func:`portlint.index.matmul.judge_captures`)."""
    return judge_captures(project, refine(project, project.judge(found, silenced)), silenced)


def judged_alone(
    path: str,
    source: str,
    settings: Settings,
    found: list[Violation],
    notes: dict[str, list],
    silenced: list[Silenced] | None = None,
) -> list[Violation]:
    """``found`` (the findings of ``source``, whose rules left ``notes``) judged as a project of
    this one file: its int64 findings by its own kernels (:mod:`portlint.index.int64`), its
    tests by its own pytest fixtures."""
    tests = FIXTURE_TEXT in source and any(v.code in GUARDABLE for v in found)
    if not (tests or any(v.code in INT64_CODES or v.code == CAPTURE_CODE for v in found)):
        return found
    tree = parse_ast(source)
    if tree is None:
        return found
    alone = {**facts_of(tree, source, path, frozenset(), settings), "notes": notes}
    project = Project({path: alone}, settings)
    project.update(path, alone, source, tree)
    return sorted(judged_by_project(project, found, silenced))
