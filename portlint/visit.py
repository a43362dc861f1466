"""Parse once, visit once: every rule that a file's text triggers, in one batched LibCST visit.

Imported by the engine only for files that pass the text gate.
"""

from __future__ import annotations

import ast
from contextlib import ExitStack, nullcontext

import libcst as cst
from libcst.metadata import BatchableMetadataProvider, MetadataWrapper, ProviderT

from portlint.analysis.guards import GuardAnalysis
from portlint.analysis.positions import PositionProvider
from portlint.analysis.walk import Walk
from portlint.findings import Violation
from portlint.registry import all_rules
from portlint.rule import FileContext, Rule
from portlint.rules.port001_unused_noqa import UnusedNoqa
from portlint.settings import Settings
from portlint.speed.cut import NOTHING, parse_ast, slice_source, source_line
from portlint.speed.gate import shows_evidence
from portlint.speed.process import parse_unvalidated, without_cycle_collection
from portlint.suppression import apply_suppressions


def lint_parsed(
    path: str,
    source: str,
    settings: Settings,
    codes: list[str],
    enabled: frozenset[str],
    fix_edits: bool,
    speedups: bool = False,
    silenced: list[Violation] | None = None,
) -> list[Violation]:
    """Run the rules ``codes`` on ``source``, apply suppressions, then check unused ``noqa``.

    A rule runs only where the file's code shows its evidence (:func:`shows_evidence`), with
    partial parsing or without: a file where no rule can report is not parsed either way (so a
    syntax error in it goes unreported both ways, as in a file without any trigger).
    ``speedups``: the process-wide shortcuts of :mod:`portlint.speed.process`. ``silenced``,
    where given, gets the findings that platform guards silenced."""
    rules = [all_rules()[code] for code in codes]
    shown = {  # (the nine PORT4xx rules share theirs: looked for once)
        evidence: shows_evidence(source, evidence) for evidence in {rule.evidence for rule in rules}
    }
    visiting = [rule for rule in rules if rule is not UnusedNoqa and shown[rule.evidence]]
    violations: list[Violation] = []
    if visiting:
        with without_cycle_collection() if speedups else nullcontext():
            violations = _violations(
                path, source, settings, visiting, fix_edits, speedups, silenced
            )
    kept, used = apply_suppressions(violations, source)
    if UnusedNoqa in rules:
        kept += UnusedNoqa.check(path, source, used, enabled)
    return sorted(kept)


def _violations(
    path: str,
    source: str,
    settings: Settings,
    rules: list[type[Rule]],
    fix_edits: bool,
    speedups: bool,
    silenced: list[Violation] | None,
) -> list[Violation]:
    """The findings of ``rules`` in ``source``, parsed whole or cut (see
    :mod:`portlint.speed.cut`), or the syntax error that stops the parse."""
    tree = parse_ast(source)
    cut = None
    if tree and settings.partial_parse and not fix_edits:
        cut = slice_source(source, tree, [rule.entry() for rule in rules])
        if cut is NOTHING:
            return []
    parsed = cut.text if cut else source
    statements = cut.statements if cut else (tree.body if tree else None)
    lines = cut.lines if cut else None
    parse = parse_unvalidated if tree and speedups else cst.parse_module
    try:
        module = parse(parsed)
    except cst.ParserSyntaxError as error:
        return [_syntax_error(path, source, error, lines)]
    wrapper = _Wrapper(module, parsed, statements, lines)
    return _visit(path, wrapper, rules, settings, fix_edits, silenced)


class _Wrapper(MetadataWrapper):
    """LibCST's metadata wrapper, with batched visits (of the rules and of the analyses that
    are batchable metadata providers) made by :class:`Walk` instead of ``CSTNode.visit``.

    It carries the text the module was parsed from, its top-level statements as ``ast``
    parsed them and, for a cut, the line of the file each line of the text is, so positions are
    computed only where asked (``PositionProvider``), and given as in the file.
    """

    def __init__(
        self,
        module: cst.Module,
        source: str,
        statements: list[ast.stmt] | None,
        lines: list[int] | None,
    ) -> None:
        super().__init__(module, unsafe_skip_copy=True)
        self.source, self.statements, self.lines = source, statements, lines

    def visit_batched(self, visitors, before_visit=None, after_leave=None) -> cst.Module:
        if not visitors:  # LibCST asks for a batch even when it has no batchable provider
            return self.module
        wanted = _with_dependencies({p for v in visitors for p in v.get_inherited_dependencies()})
        # The providers that are not batchable first (LibCST resolves providers as their
        # dependencies complete, so a batchable one can wait for a later walk of its own); then
        # every batchable provider in one shared walk.
        for provider in wanted:
            if not issubclass(provider, BatchableMetadataProvider):
                self.resolve(provider)
        self.resolve_many(wanted)
        with ExitStack() as stack:
            for visitor in visitors:
                stack.enter_context(visitor.resolve(self))
            Walk(visitors)(self.module)
        return self.module


def _with_dependencies(providers: set[ProviderT]) -> set[ProviderT]:
    for provider in list(providers):
        providers |= _with_dependencies(set(provider.METADATA_DEPENDENCIES))
    return providers


def _visit(
    path: str,
    wrapper: _Wrapper,
    rules: list[type[Rule]],
    settings: Settings,
    fix_edits: bool,
    silenced: list[Violation] | None,
) -> list[Violation]:
    """Every rule in one batched visit; the guarded reports of guardable rules dropped (or
    given to ``silenced``), the others placed."""
    context = FileContext(path, settings, fix_edits=fix_edits)
    visitors: list[cst.BatchableCSTVisitor] = [rule(context) for rule in rules]
    guardable = {rule.code for rule in rules if rule.guardable}
    guards = GuardAnalysis(settings.guard_functions) if guardable else None
    wrapper.visit_batched(visitors + ([guards] if guards else []))
    positions = wrapper.resolve(PositionProvider)
    found = []
    for report in context.reports:
        if guards is not None and report.code in guardable and guards.is_guarded(report.start):
            if silenced is not None:
                silenced.append(report.violation(path, positions))
        else:
            found.append(report.violation(path, positions))
    return found


def parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return False
    return True


def _syntax_error(
    path: str, source: str, error: cst.ParserSyntaxError, lines: list[int] | None
) -> Violation:
    """Python's own account of the error where it has one: it names the cause more plainly.
    (``lines``: where LibCST parsed a cut, the line of the file each of its lines is.)"""
    try:
        ast.parse(source, filename=path)
    except SyntaxError as python_error:
        line, col = python_error.lineno or 1, python_error.offset or 1
        return Violation(path, line, col, None, f"SyntaxError: {python_error.msg}")
    except (ValueError, RecursionError, MemoryError):
        pass
    message = f"SyntaxError: {error.message.splitlines()[0]}"
    line = source_line(lines, error.editor_line) if lines else error.editor_line
    return Violation(path, line, error.editor_column, None, message)
