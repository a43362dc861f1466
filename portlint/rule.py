"""The rule base class, the violations rules report and the inline cases that specify them."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst
from libcst.metadata import CodeRange, ProviderT

from portlint.analysis.positions import PositionProvider
from portlint.catalog import CATALOG
from portlint.findings import Fix, Violation
from portlint.fix import Rewrite, build_fix
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

    def violation(self, path: str, positions: Mapping[cst.CSTNode, CodeRange]) -> Violation:
        begin, end = positions[self.start].start, positions[self.node].end
        return Violation(
            path=path,
            line=begin.line,
            col=begin.column + 1,
            code=self.code,
            message=self.message,
            end_line=end.line,
            end_col=end.column + 1,
            confidence=self.confidence,
            fix=self.fix,
        )


@dataclass
class FileContext:
    """What a rule may know about the file under analysis."""

    path: str
    settings: Settings
    reports: list[Report] = field(default_factory=list)
    # False: a fix is described (applicability, message) but its edits are not computed, which
    # costs a rewrite of the module per finding; reports that only show "[*]" do not need them.
    fix_edits: bool = True


class Rule(cst.BatchableCSTVisitor):
    """Base class of every rule.

    A subclass sets ``code`` (its name, triggers and ``guardable`` come from the catalog) and its
    inline ``VALID`` and ``INVALID`` cases,
    and writes ``visit_*``/``leave_*`` methods that call :meth:`report`. Its docstring is its
    documentation, with the sections What it does / Why is this bad? / Example / Fix safety /
    References.
    """

    code: ClassVar[str]
    # From the catalog (portlint/catalog.py), by code: name, triggers, guardable.
    name: ClassVar[str]
    triggers: ClassVar[tuple[str, ...]]
    guardable: ClassVar[bool] = False
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid]] = []
    # Other rules enabled while the inline cases run (a rule about other rules' findings).
    CASES_ALSO_SELECT: ClassVar[tuple[str, ...]] = ()
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = (PositionProvider,)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            entry = CATALOG[cls.code]
            cls.name, cls.triggers, cls.guardable = entry.name, entry.triggers, entry.guardable

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
    ) -> None:
        """Report ``message`` spanning ``node`` (or from ``start`` to the end of ``node``)."""
        self.context.reports.append(
            Report(self.code, node, start or node, message, confidence, fix)
        )

    def visit_Module(self, node: cst.Module) -> None:
        self.module = node

    def build_fix(self, rewrite: Rewrite, applicability: str, message: str) -> Fix | None:
        if not self.context.fix_edits:
            return Fix(applicability, message, ())
        return build_fix(self.module, rewrite, applicability, message)

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
