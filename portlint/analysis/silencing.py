"""Which device findings the code's own account of its platform silences, and why.

A finding of a device rule (``guardable``) is silent where the code runs only on CUDA: in a
module that says so as a whole (:func:`portlint.platform.module_platform`), in a region the
guard analysis marked (:class:`~portlint.analysis.guards.GuardAnalysis`), or where it is the
check that confines CUDA code rather than a use of it (:meth:`GuardAnalysis.check`, decided
once the regions are known: a check counts when the code it guards holds CUDA-only APIs). A
``PORT101`` string inside a call already reported as a CUDA-only API is the same finding twice.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange

from portlint.analysis.guards import GuardAnalysis, Silence
from portlint.analysis.messages import only_reported
from portlint.analysis.names import dotted_name
from portlint.analysis.uses import not_used
from portlint.model import PlatformModel
from portlint.model.conditions import COUNTS, TORCH_QUERIES
from portlint.rule import Report

# The CUDA-only API family: what makes the code a guard confines CUDA-only.
CUDA_API_PREFIX = "PORT4"
DEVICE_STRING = "PORT101"
DEVICE_RULES = "PORT1"  # a device picked by name: a string, `.cuda()`
# The rules of CUDA's questions about its devices (not of its memory: a memory figure that reads
# 0 on another accelerator misleads whoever reads it).
QUERIES = frozenset({"PORT401", "PORT409"})


def silence(
    reports: list[Report],
    guards: GuardAnalysis,
    guardable: set[str],
    module: Silence | None,
) -> tuple[list[Report], list[tuple[Report, Silence]]]:
    """``reports`` split into those that stand and those silenced, each with its reason."""
    kept: list[Report] = []
    silenced: list[tuple[Report, Silence]] = []
    for report in reports:
        reason = None
        if report.code in guardable:
            reason = module or guards.is_guarded(report.start)
        if reason is None:
            kept.append(report)
        else:
            silenced.append((report, reason))
    # The tests of the guards around CUDA-only code: a CUDA API, `import pynvml`, `from .cuda
    # import *`, `check_nvlink_connectivity()` (every guard it is under, nested ones too).
    cuda_tests = {
        test
        for report, reason in silenced
        if report.code.startswith(CUDA_API_PREFIX)
        for test in guards.guard_tests(reason)
    }
    for imported in [*guards.cuda_imports, *guards.cuda_calls]:
        cuda_tests.update(guards.guard_tests(guards.is_guarded(imported)))
    device_picks = [r.node for r in reports if r.code.startswith(DEVICE_RULES)]
    standing: list[Report] = []
    for report in kept:
        # (A check is a query of CUDA's API; a device string or `.cuda()` is never one.)
        is_check = report.code in guardable and report.code.startswith(CUDA_API_PREFIX)
        reason = guards.check(report.node, cuda_tests, device_picks) if is_check else None
        if reason is None and report.code in QUERIES and "checks" in guards.inferences:
            message = only_reported(report.node, guards.parents)
            if message is not None:
                why = "its answer only goes into a message, shown and not acted on: `{code}`"
                reason = Silence("checks", why, message, quoted=message)
        if reason is None:
            standing.append(report)
        else:
            silenced.append((report, reason))
    return _without_duplicates(standing, silenced, guards.parents)


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
            silenced.append((report, Silence("duplicate", why, report.node)))
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
