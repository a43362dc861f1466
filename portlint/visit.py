"""Parse once, visit once: every rule that a file's text triggers, in one batched LibCST visit.

Imported by the engine only for files that pass the text gate.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import libcst as cst
from libcst._nodes.base import CSTNode
from libcst.metadata import BatchableMetadataProvider, MetadataWrapper, ProviderT

from portlint.analysis.guards import GuardAnalysis
from portlint.analysis.positions import PositionProvider
from portlint.analysis.walk import Walk
from portlint.findings import Violation
from portlint.catalog import CATALOG
from portlint.partial import NOTHING, parse_ast, shows_evidence, slice_source, source_line
from portlint.registry import all_rules
from portlint.rule import FileContext, Rule
from portlint.rules.port001_unused_noqa import UnusedNoqa
from portlint.settings import Settings
from portlint.suppression import apply_suppressions


def lint_parsed(
    path: str,
    source: str,
    settings: Settings,
    codes: list[str],
    enabled: frozenset[str],
    fix_edits: bool,
) -> list[Violation]:
    """Run the rules ``codes`` on ``source``, apply suppressions, then check unused ``noqa``.

    A rule runs only where the file's code shows its evidence (:func:`shows_evidence`), with
    partial parsing or without: a file where no rule can report is not parsed either way (so a
    syntax error in it goes unreported both ways, as in a file without any trigger)."""
    rules = [all_rules()[code] for code in codes]
    shown = {  # (the nine PORT4xx rules share theirs: looked for once)
        evidence: shows_evidence(source, evidence)
        for evidence in {CATALOG[rule.code].evidence for rule in rules}
    }
    visiting = [
        rule for rule in rules if rule is not UnusedNoqa and shown[CATALOG[rule.code].evidence]
    ]
    violations = _violations(path, source, settings, visiting, fix_edits) if visiting else []
    kept, used = apply_suppressions(violations, source)
    if UnusedNoqa in rules:
        kept += UnusedNoqa.check(path, source, used, enabled)
    return sorted(kept)


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while a file is parsed and analysed, on again after (where it
    was on). Parsing makes hundreds of thousands of objects that reference counting frees (trees
    hold no cycles), and the collector would look at them again and again: 12% of a cold run on
    vLLM. The few cycles the analysis makes are collected once the file is done."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _violations(
    path: str, source: str, settings: Settings, rules: list[type[Rule]], fix_edits: bool
) -> list[Violation]:
    """The findings of ``rules`` in ``source``, parsed whole or cut (see :mod:`portlint.partial`),
    or the syntax error that stops the parse."""
    with _without_cycle_collection():
        return _parsed_and_visited(path, source, settings, rules, fix_edits)


def _parsed_and_visited(
    path: str, source: str, settings: Settings, rules: list[type[Rule]], fix_edits: bool
) -> list[Violation]:
    tree = parse_ast(source)
    cut = None
    if tree and settings.partial_parse and not fix_edits:
        cut = slice_source(source, tree, [CATALOG[rule.code] for rule in rules])
        if cut is NOTHING:
            return []
    parsed, statements = (cut.text, cut.statements) if cut else (source, tree and tree.body)
    lines = cut.lines if cut else None
    try:
        module = parse_unvalidated(parsed) if tree else cst.parse_module(parsed)
    except cst.ParserSyntaxError as error:
        return [_syntax_error(path, source, error, lines)]
    return _visit(path, _Wrapper(module, parsed, statements, lines), rules, settings, fix_edits)


_VALIDATE = CSTNode.__post_init__


def _no_validation(node: CSTNode) -> None:
    pass


def parse_unvalidated(source: str) -> cst.Module:
    """``cst.parse_module`` without LibCST's validation of every node it builds.

    ``CSTNode.__post_init__`` checks each new node's fields (a ``Name`` is not empty, a
    ``Comparison`` has an operator...): checks for trees made by hand, which a tree parsed from
    text that Python's own parser accepts passes by construction; on vLLM they are 13% of the
    parse. They are off only while this parse runs, and on again after it, however it ends.
    """
    CSTNode.__post_init__ = _no_validation
    try:
        return cst.parse_module(source)
    finally:
        CSTNode.__post_init__ = _VALIDATE


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
    path: str, wrapper: _Wrapper, rules: list[type[Rule]], settings: Settings, fix_edits: bool
) -> list[Violation]:
    """Every rule in one batched visit; the guarded reports of guardable rules dropped, the
    others placed."""
    context = FileContext(path, settings, fix_edits=fix_edits)
    visitors: list[cst.BatchableCSTVisitor] = [rule(context) for rule in rules]
    guardable = {rule.code for rule in rules if rule.guardable}
    guards = GuardAnalysis(settings.guard_functions) if guardable else None
    wrapper.visit_batched(visitors + ([guards] if guards else []))
    positions = wrapper.resolve(PositionProvider)
    return [
        report.violation(path, positions)
        for report in context.reports
        if guards is None or report.code not in guardable or not guards.is_guarded(report.start)
    ]


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
