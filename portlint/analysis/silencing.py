"""Which device findings the platform model (:mod:`portlint.model`) silences, and why.

A finding of a device rule (``guardable``) is silent where the model places its code in
CUDA-only code, or where it is the check that confines CUDA-only code rather than a use of it
(:meth:`PlatformModel.check`, decided once every finding is placed: a check counts where the
code it decides needs CUDA). A ``PORT101`` string inside a call already reported as a
CUDA-only API is the same finding twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange

from portlint.analysis.messages import only_reported
from portlint.analysis.names import code_of, dotted_name
from portlint.analysis.uses import not_used
from portlint.model import PlatformModel
from portlint.model.conditions import COUNTS, TORCH_QUERIES
from portlint.rule import Report


@dataclass(frozen=True)
class Silence:
    """Why a finding is silent: the kind of reason and what says so (``{code}`` in ``text``
    stands for the code of ``quoted``, written out only where the reason is shown)."""

    kind: str
    text: str
    quoted: cst.CSTNode | None = None

    @property
    def why(self) -> str:
        return self.text.format(code=code_of(self.quoted)) if self.quoted is not None else self.text


# The CUDA-only API family: what makes the code a guard confines CUDA-only.
CUDA_API_PREFIX = "PORT4"
DEVICE_STRING = "PORT101"
# The rules of CUDA's questions about its devices (not of its memory: a memory figure that reads
# 0 on another accelerator misleads whoever reads it).
QUERIES = frozenset({"PORT401", "PORT409"})


def silence_where(
    reports: list[Report],
    model: PlatformModel,
    guardable: set[str],
    positions: Mapping[cst.CSTNode, CodeRange],
    parents: Mapping[cst.CSTNode, cst.CSTNode],
) -> tuple[list[Report], list[tuple[Report, Silence, int]]]:
    """:func:`silence`, with the platform model saying where each finding's code runs: each
    silenced report with its reason and the line that gives it. A test of CUDA is silent where
    the code it decides needs CUDA (a CUDA-only API there is silenced by that test's evidence)
    or its other arm is another device's."""
    placed: list[tuple[Report, list]] = []
    needed: set[int] = set()
    for report in reports:
        evidence = []
        if report.code in guardable:
            start = positions[report.start].start
            evidence = model.where(start.line, start.column + 1)
            if report.code.startswith(CUDA_API_PREFIX) and not _asks(report.node):
                needed.update(e.line for e in evidence)  # (the code there needs CUDA)
        placed.append((report, evidence))
    kept: list[Report] = []
    silenced: list[tuple[Report, Silence, int]] = []
    for report, evidence in placed:
        reason, line = None, 0
        if evidence:
            reason, line = Silence(evidence[0].kind, evidence[0].why), evidence[0].line
        elif report.code in guardable and report.code.startswith(CUDA_API_PREFIX):
            start = positions[report.start].start
            check = model.check(start.line, start.column + 1, needed)
            if check is not None:
                reason, line = Silence(check.kind, check.why), check.line
        if reason is None and report.code in QUERIES:
            message = only_reported(report.node, parents)
            if message is not None:
                why = "its answer only goes into a message, shown and not acted on: `{code}`"
                reason, line = (
                    Silence("message", why, quoted=message),
                    positions[message].start.line,
                )
        if reason is None and report.code in guardable:
            unused = not_used(report.node, parents)
            if unused is not None:
                kind, why, call = unused
                reason = Silence(kind, why, quoted=call)
                line = positions[call].start.line
        if reason is None:
            kept.append(report)
        else:
            silenced.append((report, reason, line))
    standing, twice = _without_duplicates(kept, [], parents)
    lines = {id(report): positions[report.node].start.line for report, _ in twice}
    return standing, [*silenced, *((r, why, lines[id(r)]) for r, why in twice)]


def _asks(node: cst.CSTNode) -> bool:
    """Whether a finding is a question of the platform (``x.is_cuda``,
    ``torch.cuda.is_available()``, a device count): it answers on any device, so code that
    holds one needs no CUDA for it."""
    callee = node.func if isinstance(node, cst.Call) else node
    if isinstance(callee, cst.Attribute) and callee.attr.value == "is_cuda":
        return not isinstance(node, cst.Call)
    return isinstance(callee, cst.BaseExpression) and (dotted_name(callee) or "") in (
        TORCH_QUERIES | COUNTS
    )


def _without_duplicates(
    standing: list[Report],
    silenced: list[tuple[Report, Silence]],
    parents: Mapping[cst.CSTNode, cst.CSTNode],
) -> tuple[list[Report], list[tuple[Report, Silence]]]:
    """One call, one finding: a ``"cuda"`` string (PORT101) given to a call of a CUDA-only API that
    is reported itself (``torch.cuda.set_device("cuda:1")``) is that finding again."""
    apis = {
        id(report.node): report
        for report in [*standing, *(r for r, _ in silenced)]
        if report.code.startswith(CUDA_API_PREFIX)
    }
    kept = []
    for report in standing:
        calls = _calls_given(report.node, parents)[:2] if report.code == DEVICE_STRING else []
        api = next((apis[id(c.func)] for c in calls if id(c.func) in apis), None)
        if api is None:
            kept.append(report)
        else:
            why = f"the call is reported as {api.code} already"
            silenced.append((report, Silence("duplicate", why)))
    return kept, silenced


def _calls_given(node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> list[cst.Call]:
    """The calls that ``node`` is (part of) an argument of, innermost first, in its statement."""
    calls: list[cst.Call] = []
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, cst.BaseStatement):
        if isinstance(current, cst.Call) and isinstance(child, cst.Arg):
            calls.append(current)
        child, current = current, parents.get(current)
    return calls
