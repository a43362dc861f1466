"""The rule base class, the violations rules report and the inline cases that specify them."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import libcst as cst
from libcst.metadata import CodeRange, ProviderT

from portlint.analysis.positions import PositionProvider
from portlint.errors import RuleDefinitionError
from portlint.evidence import Entry, Evidence
from portlint.findings import Fix, Violation
from portlint.fix import FixMaker, PendingFix, Rewrite
from portlint.settings import Settings


@dataclass(frozen=True)
class Invalid:
    """An inline case a rule must flag: exactly one finding at ``line``:``col`` (1-based).

    ``fixed``, where given, is the source after the rule's fix (safe and unsafe fixes applied).
    """

    source: str
    line: int
    col: int
    fixed: str | None = None


# Why a rule itself holds a finding back, and the node that says so (a test double's data, a seed
# repeated for every device): silent, but shown by ``--show-silenced``.
Quiet = tuple[str, cst.CSTNode] | None


@dataclass(frozen=True)
class Report:
    """A finding as a rule reports it: on nodes, before positions are known (they are computed
    only for the reports that survive the platform guards)."""

    code: str
    node: cst.CSTNode
    start: cst.CSTNode  # where the finding begins (``node`` itself unless the rule says)
    message: str
    confidence: str
    fix: Fix | None
    quiet: Quiet = None
    detail: str = ""  # the reasoning (:attr:`portlint.findings.Violation.detail`)

    def violation(
        self,
        path: str,
        positions: Mapping[cst.CSTNode, CodeRange],
        fixes: FixMaker | None = None,
    ) -> Violation:
        """The finding placed; its fix's edits made by ``fixes`` (none: the fix described
        only)."""
        begin, end = positions[self.start].start, positions[self.node].end
        fix = self.fix
        if isinstance(fix, PendingFix):
            fix = fixes.fix(fix) if fixes is not None else Fix(fix.applicability, fix.message, ())
        return Violation(
            path=path,
            line=begin.line,
            col=begin.column + 1,
            code=self.code,
            message=self.message,
            end_line=end.line,
            end_col=end.column + 1,
            confidence=self.confidence,
            fix=fix,
            detail=self.detail,
        )


@dataclass
class FileContext:
    """What a rule may know about the file under analysis."""

    path: str
    settings: Settings
    reports: list[Report] = field(default_factory=list)
    # False: a fix is described (applicability, message) but its edits are not made; reports
    # that only show "[*]" do not need them.
    fix_edits: bool = True
    # What rules tell the project index beside their reports (portlint.index.project reads it):
    # per kind, rows whose CST nodes are given as their positions, [line, column].
    notes: dict[str, list[list[Any]]] = field(default_factory=dict)


# The sections every rule's documentation has, in this order.
DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "Use instead:",
                "## Fix safety", "## References")  # fmt: skip
CODE = re.compile(r"PORT\d{3}")
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class Rule(cst.BatchableCSTVisitor):
    """Base class of every rule. A rule is one module of ``portlint.rules``, holding one subclass.

    The subclass declares, as class attributes:

    - ``code`` (``PORTnnn``) and ``name`` (kebab-case);
    - ``triggers``: strings one of which must occur in a file's text for the rule to run on it
      (the text gate; a file with none of them is not even parsed);
    - ``evidence``: what the code of a function must show for the rule to report there
      (:class:`~portlint.evidence.Evidence`; none: one of the triggers), so that partial parsing
      may leave the other functions out;
    - ``guardable``: a device rule, silent in code that runs only on CUDA (platform guards,
      CUDA-only modules, ``cuda-only-paths``);
    - ``at_launches``: its findings are at launches (``kernel[grid](...)``) of the functions its
      triggers mark, so partial parsing keeps those launches;
    - ``reads_class``: what it reports depends on the class around a finding (the
      ``self.device`` a fix uses), so partial parsing keeps that class's ``__init__``;
    - its inline ``VALID`` and ``INVALID`` cases, which are its specification (a test is
      generated for each);

    and writes ``visit_*``/``leave_*`` methods that call :meth:`report`. Its docstring is its
    documentation, with the sections What it does / Why is this bad? / Example (and "Use
    instead:") / Fix safety / References. A class that lacks one of these fails at import
    (:class:`RuleDefinitionError`). ``portlint/catalog.py`` is generated from these declarations
    (``python -m portlint.generate``); a test fails when it is stale.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    triggers: ClassVar[tuple[str, ...]]
    evidence: ClassVar[tuple[Evidence, ...]] = ()
    guardable: ClassVar[bool] = False
    at_launches: ClassVar[bool] = False
    reads_class: ClassVar[bool] = False
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid]] = []
    # Other rules enabled while the inline cases run (a rule about other rules' findings).
    CASES_ALSO_SELECT: ClassVar[tuple[str, ...]] = ()
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = (PositionProvider,)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            problem = _definition_problem(cls)
            if problem:
                raise RuleDefinitionError(f"rule {cls.__module__}.{cls.__qualname__}: {problem}")

    @classmethod
    def entry(cls) -> Entry:
        """What the catalog holds of this rule."""
        return Entry(
            cls.__module__.rsplit(".", 1)[-1], cls.name, cls.triggers, cls.guardable,
            cls.evidence, cls.at_launches, cls.reads_class,
        )  # fmt: skip

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context

    @property
    def settings(self) -> Settings:
        return self.context.settings

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        start: cst.CSTNode | None = None,
        confidence: str = "certain",
        fix: Fix | None = None,
        quiet: Quiet = None,
        detail: str = "",
    ) -> None:
        """Report ``message`` spanning ``node`` (or from ``start`` to the end of ``node``);
        ``quiet``: why the rule holds it back (:attr:`Report.quiet`); ``detail``: the reasoning
        behind the short message (the torch release needed, caveats, why)."""
        self.context.reports.append(
            Report(self.code, node, start or node, message, confidence, fix, quiet, detail)
        )

    def visit_Module(self, node: cst.Module) -> None:
        self.module = node

    def build_fix(self, rewrite: Rewrite, applicability: str, message: str) -> Fix | None:
        """The fix ``rewrite`` describes, for :meth:`report`: its edits are made once the finding
        is placed (:class:`portlint.fix.FixMaker`), if it is not silenced; a fix that then
        changes nothing is none."""
        if not self.context.fix_edits:
            return Fix(applicability, message, ())
        return PendingFix(applicability, message, (), rewrite)

    @classmethod
    def has_fix(cls) -> bool:
        """Whether the rule has a fix: some inline case says what it fixes to."""
        return any(case.fixed is not None for case in cls.INVALID)

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first line of the docs: what the rule reports, in a few words."""
        return cls.documentation().splitlines()[0] if cls.__doc__ else cls.name


def _definition_problem(rule: type[Rule]) -> str | None:
    """What is missing or wrong in a rule class's declarations, if anything."""
    if not isinstance(rule.__dict__.get("code"), str) or not CODE.fullmatch(rule.code):
        return "`code` must be a string like 'PORT123'"
    if not isinstance(getattr(rule, "name", None), str) or not NAME.fullmatch(rule.name):
        return "`name` must be a kebab-case string like 'hardcoded-cuda-device'"
    triggers = getattr(rule, "triggers", None)
    if (
        not isinstance(triggers, tuple)
        or not triggers
        or not all(isinstance(t, str) and t for t in triggers)
    ):
        return "`triggers` must be a non-empty tuple of non-empty strings"
    if not isinstance(rule.evidence, tuple) or not all(
        isinstance(e, Evidence) for e in rule.evidence
    ):
        return "`evidence` must be a tuple of portlint.evidence.Evidence"
    for flag in ("guardable", "at_launches", "reads_class"):
        if not isinstance(getattr(rule, flag), bool):
            return f"`{flag}` must be True or False"
    if not rule.VALID or not rule.INVALID:
        return "it needs inline `VALID` and `INVALID` cases"
    if not all(isinstance(case, Invalid) for case in rule.INVALID):
        return "each `INVALID` case must be an `Invalid(source, line, col)`"
    docs = rule.documentation()
    missing = [section for section in DOC_SECTIONS if section not in docs]
    if missing:
        return f"its docstring lacks {', '.join(map(repr, missing))}"
    return None
