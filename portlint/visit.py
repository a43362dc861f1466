"""Parse once, visit once: every rule that a file's text triggers, in one batched LibCST visit.

Imported by the engine only for files that pass the text gate.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import BatchableMetadataProvider, MetadataWrapper, ProviderT

from portlint.analysis.parents import ParentProvider
from portlint.analysis.positions import PositionProvider
from portlint.analysis.silencing import silence_where
from portlint.analysis.walk import Walk
from portlint.bounds import TOO_LARGE, python_verdict, too_deep
from portlint.catalog import GUARDABLE
from portlint.findings import Silenced, Violation
from portlint.fix import FixMaker
from portlint.model import module_model
from portlint.registry import all_rules
from portlint.rule import FileContext, Report, Rule
from portlint.rules.port001_unused_noqa import UnusedNoqa
from portlint.settings import Settings
from portlint.speed.cut import NOTHING, UNPARSED, Unparsed, parse_ast, slice_source
from portlint.speed.gate import shows_evidence
from portlint.speed.process import parse_unvalidated
from portlint.speed.reuse import Parts
from portlint.suppression import apply_suppressions, cuda_waiver_lines, marker_lines


def lint_parsed(
    path: str,
    source: str,
    settings: Settings,
    codes: list[str],
    enabled: frozenset[str],
    fix_edits: bool,
    speedups: bool = False,
    silenced: list[Silenced] | None = None,
    tree: ast.Module | Violation | Unparsed = UNPARSED,
    notes: dict[str, list] | None = None,
    parts: Parts | None = None,
) -> list[Violation]:
    """Run the rules ``codes`` on ``source``, apply suppressions, then check unused ``noqa``.

    Python's verdict comes first (:func:`portlint.bounds.python_verdict`): a file it refuses,
    or one past portlint's bounds, gets that one diagnostic (a file without any trigger of an
    enabled rule is not parsed at all, so a syntax error there goes unreported). A rule runs only
    where the file's code shows its evidence (:func:`shows_evidence`), with partial parsing or
    without; a file where no rule can report is not parsed by LibCST either way. The platform
    model (:mod:`portlint.model`) silences the device rules' findings in code that runs only on
    CUDA. ``speedups``: the process-wide shortcuts of :mod:`portlint.speed.process`.
    ``silenced``, where given, gets the findings that the model silenced, with the reasons. ``tree``:
    Python's verdict on ``source`` (:func:`portlint.bounds.python_verdict`), where the caller
    has it. ``notes``, where given, gets what the rules tell the project index
    (:attr:`FileContext.notes`, nodes given as positions). ``parts``: the parts of this file
    that its last lint parsed, to be parsed again only where they changed (the editor's)."""
    if tree is UNPARSED:
        tree = python_verdict(path, source, parts.known if parts is not None else None)
    if isinstance(tree, Violation):  # Python refuses it, or it is past portlint's bounds
        return [tree]
    rules = [all_rules()[code] for code in codes]
    shown = {  # (the nine PORT4xx rules share theirs: looked for once)
        evidence: shows_evidence(source, evidence) for evidence in {rule.evidence for rule in rules}
    }
    visiting = [rule for rule in rules if rule is not UnusedNoqa and shown[rule.evidence]]
    violations: list[Violation] = []
    if visiting:
        job = _Job(path, source, tree, settings, fix_edits, speedups, silenced, notes, parts)
        try:
            violations = _violations(job, visiting)
        except RecursionError:
            return [too_deep(path, source)]
        except MemoryError:
            return [Violation(path, 1, 1, None, TOO_LARGE)]
    violations = _waived(violations, source, settings, silenced)
    if settings.ignore_noqa:
        return sorted(violations)
    kept, used = apply_suppressions(violations, source)
    if UnusedNoqa in rules:
        kept += UnusedNoqa.check(path, source, used, enabled)
    return sorted(kept)


@dataclass
class _Job:
    """One file to parse and visit, and what the run asks of it."""

    path: str
    source: str
    tree: ast.Module  # Python's parse of it
    settings: Settings
    fix_edits: bool
    speedups: bool
    silenced: list[Silenced] | None
    notes: dict[str, list] | None  # where to give the rules' notes to the project index
    parts: Parts | None = None  # the parts of the file its last lint parsed (the editor's)


def _waived(
    violations: list[Violation], source: str, settings: Settings, silenced: list[Silenced] | None
) -> list[Violation]:
    """Device findings on lines whose comment waives CUDA by name (``#ignore-cuda``, ``# cuda-ok``:
    :data:`~portlint.suppression.CUDA_WAIVER`; the inference ``waivers``) or carries one of the
    project's own markers (``extend-noqa-markers``) are silent."""
    if not violations or not any(v.code in GUARDABLE for v in violations):
        return violations
    lines: dict[int, str] = {}
    if "waivers" in settings.platform_inferences:
        lines = {
            line: f"the line's comment `{text}` waives CUDA"
            for line, text in cuda_waiver_lines(
                source, {v.line for v in violations if v.code in GUARDABLE}
            ).items()
        }
    if settings.noqa_markers:
        for line, marker in marker_lines(source, settings.noqa_markers).items():
            lines[line] = f"the line is marked `{marker}` (extend-noqa-markers)"
    if not lines:
        return violations
    kept = []
    for violation in violations:
        why = lines.get(violation.line) if violation.code in GUARDABLE else None
        if why is None:
            kept.append(violation)
        elif silenced is not None:
            silenced.append(Silenced(violation, "waiver", why, violation.line))
    return kept


def _violations(job: _Job, rules: list[type[Rule]]) -> list[Violation]:
    """The findings of ``rules`` in the job's file, parsed whole or cut (see
    :mod:`portlint.speed.cut`). Python has accepted the file: where LibCST refuses a cut, the
    whole file is parsed instead; where it refuses the whole file, the diagnostic says that it
    was not analysed (it is no syntax error)."""
    source, tree = job.source, job.tree
    cut = None
    if job.settings.partial_parse:
        cut = slice_source(source, tree, [rule.entry() for rule in rules])
        if cut is NOTHING:
            return []
        if cut is not None and cut.idle:
            rules = [rule for rule in rules if rule.name not in cut.idle]
            if not rules:
                return []
    parse = parse_unvalidated if job.speedups else cst.parse_module
    if cut is not None:
        try:
            module, text = _parsed(parse, cut.text, job.parts, cut.statements, cut.lines)
        except cst.ParserSyntaxError:
            pass  # (parsed whole below)
        else:
            return _visit(job, _Wrapper(module, text, cut.statements, cut.lines), rules)
    try:
        module, text = _parsed(parse, source, job.parts, tree.body, None)
    except cst.ParserSyntaxError as error:
        reason = error.message.splitlines()[0]
        message = f"not analysed: Python accepts this file but LibCST cannot parse it ({reason})"
        return [Violation(job.path, error.editor_line, error.editor_column, None, message)]
    return _visit(job, _Wrapper(module, text, tree.body, None), rules)


# What LibCST's tokenizer refuses and Python accepts, at the very end of a file: backslash
# continuations with nothing after them.
DANGLING_CONTINUATION = re.compile(r"(?:[ \t\f]*\\(?:\r\n|\r|\n))+[ \t\f]*\Z")


def _parsed(
    parse: Callable[[str], cst.Module],
    text: str,
    parts: Parts | None = None,
    statements: Sequence[ast.stmt] = (),
    lines: Sequence[int] | None = None,
) -> tuple[cst.Module, str]:
    """``text`` parsed by LibCST, and the text it parsed: ``text``, or, where LibCST refuses a
    dangling continuation that Python accepts, ``text`` without it (every line before keeps its
    place, so positions and line edits hold for the file). With ``parts``, ``text`` (whose
    top-level statements are ``statements``, on the file's ``lines``) is parsed in parts, those
    known from the file's last lint reused (:mod:`portlint.speed.reuse`)."""
    try:
        if parts is not None:
            return parts.parse(parse, text, statements, lines), text
        return parse(text), text
    except cst.ParserSyntaxError:
        trimmed = DANGLING_CONTINUATION.sub("", text)
        if trimmed == text:
            raise
        return parse(trimmed), trimmed


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


def _visit(job: _Job, wrapper: _Wrapper, rules: list[type[Rule]]) -> list[Violation]:
    """Every rule in one batched visit; the reports of guardable rules that the code's account
    of its platform silences dropped (or given to ``job.silenced``), the others placed."""
    settings = job.settings
    context = FileContext(job.path, settings, fix_edits=job.fix_edits)
    visitors: list[cst.BatchableCSTVisitor] = [rule(context) for rule in rules]
    guardable = {rule.code for rule in rules if rule.guardable}
    if not settings.platform_inferences:
        guardable = set()  # (`platform-inferences = []`: every finding as the rules find it)
    if not guardable:
        wrapper.visit_batched(visitors)
        positions = wrapper.resolve(PositionProvider)
        _give_notes(job, context, positions)
        fixes = _fix_maker(job, wrapper, positions)
        reports = _held_back(job, context.reports, positions)
        return [report.violation(job.path, positions, fixes) for report in reports]
    return _visit_modelled(job, wrapper, visitors, context, guardable)


def _visit_modelled(
    job: _Job,
    wrapper: _Wrapper,
    visitors: list[cst.BatchableCSTVisitor],
    context: FileContext,
    guardable: set[str],
) -> list[Violation]:
    """:func:`_visit`, with the platform model (:mod:`portlint.model`) saying where each
    finding's code runs."""
    wrapper.visit_batched(visitors)
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentProvider)
    _give_notes(job, context, positions)
    model = module_model(job.tree, job.source, job.path, job.settings)
    if job.notes is not None and model.pending:  # (for the project to judge: Project.judge)
        job.notes.setdefault("platform", []).extend(model.pending_rows())
    reports = _held_back(job, context.reports, positions)
    kept, quiet = silence_where(reports, model, guardable, positions, parents)
    if job.silenced is not None:
        for report, reason, line in quiet:
            violation = report.violation(job.path, positions)
            job.silenced.append(Silenced(violation, reason.kind, reason.why, line))
    fixes = _fix_maker(job, wrapper, positions)
    return [report.violation(job.path, positions, fixes) for report in kept]


def _held_back(job: _Job, reports: list[Report], positions: Mapping) -> list[Report]:
    """``reports`` less those their rule holds back (:attr:`Report.quiet`), which go to
    ``job.silenced`` where it asks, with the kind ``rule``."""
    if not any(report.quiet for report in reports):
        return reports
    kept = []
    for report in reports:
        if report.quiet is None:
            kept.append(report)
        elif job.silenced is not None:
            why, node = report.quiet
            line = positions[node].start.line
            job.silenced.append(Silenced(report.violation(job.path, positions), "rule", why, line))
    return kept


def _fix_maker(job: _Job, wrapper: _Wrapper, positions: Mapping) -> FixMaker:
    parents = wrapper.resolve(ParentProvider)
    return FixMaker(wrapper.module, parents, positions, job.source, job.tree)


def _give_notes(job: _Job, context: FileContext, positions: Mapping) -> None:
    """The rules' notes, each node in them given as its position ``[line, column]``."""
    if job.notes is not None:
        for kind, rows in context.notes.items():
            job.notes.setdefault(kind, []).extend(_placed(row, positions) for row in rows)


def _placed(value: Any, positions: Mapping) -> Any:
    # (Not a closure over ``positions``: a recursive closure is a reference cycle, which would
    # keep the file's trees alive until the cycle collector looks at every node of them.)
    if isinstance(value, cst.CSTNode):
        start = positions[value].start
        return [start.line, start.column + 1]
    if isinstance(value, (list, tuple)):
        return [_placed(item, positions) for item in value]
    return value


def parses(source: str) -> bool:
    """Whether both Python and LibCST accept ``source`` (a fixed file must stay valid)."""
    if not isinstance(parse_ast(source), ast.Module):
        return False
    try:
        _parsed(cst.parse_module, source)
    except cst.ParserSyntaxError:
        return False
    return True
