"""Which int64 findings stand: those where the int64 tensor meets something that needs int32.

An int64 tensor is no bug by itself (offsets, token ids, a ``torch.cat`` of a zero and a
cumulative sum are int64 on purpose). It is one where something needs int32 (issue #19):

- ``PORT202`` stands where the launched kernel's contract (:mod:`portlint.index.kernels`) needs
  int32 for the parameter the tensor is given to, wherever in the project the kernel is defined;
  the finding's detail names the kernel's line that needs it. A kernel that takes any width, or one the
  project does not define, is given the tensor silently.
- ``PORT201`` (a ``new_*`` inheriting int64) stands where the new tensor reaches such a kernel
  parameter, or where an int32 tensor of its own function consumes it (a comparison); otherwise
  the inherited int64 is what the code already works with.

The rules leave notes of what they saw (the launch, the tensor's ancestry) for this join.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import TYPE_CHECKING

from portlint.findings import Violation
from portlint.index.function_uses import NEEDS_INT64
from portlint.index.siblings import int32_sibling

if TYPE_CHECKING:
    from portlint.index.project import Project

NEW_TENSOR, INTO_KERNEL = "PORT201", "PORT202"
# The notes the rules leave: PORT202's per int64 argument of a launch (the argument, the kernel's
# qualified names, its position or keyword, the expressions it became int64 through, their
# description); PORT201's per new tensor that an int32 tensor of its function consumes (how).
LAUNCH_NOTES, CONSUMER_NOTES = "int64_launches", "int64_consumers"
# PORT201's per argument of a call that is or comes from a `new_*` without `dtype=`: the
# argument, the callee's qualified names, the position or keyword, those `new_*` calls, the callee.
CALL_NOTES = "int64_calls"
# PORT201's per returned value that is or comes from a `new_*` without `dtype=`: those `new_*`
# calls, the element of the returned tuple (None: the whole value), the function returning it.
RETURN_NOTES = "int64_returns"
# PORT201's per such tensor stored on `self` in a method: those `new_*` calls, the class, the
# attribute, the method storing it.
STORE_NOTES = "int64_stores"
MAX_CALL_DEPTH = 6  # how many calls deep a tensor is followed to a kernel
INT64_CODES = frozenset({NEW_TENSOR, INTO_KERNEL})


def refine(project: Project, violations: list[Violation]) -> list[Violation]:
    """``violations`` with the int64 findings judged by their consumers (see the module doc)."""
    if not any(v.code in INT64_CODES for v in violations):
        return violations
    # A new tensor's position -> the consumer that needs int32, and the confidence it gives.
    reached: dict[tuple[str, int, int], tuple[str, str]] = {}
    kept: list[Violation] = []
    for violation in violations:
        if violation.code != INTO_KERNEL:
            kept.append(violation)
            continue
        judged = _into_kernel(project, violation, reached)
        if judged is not None:
            kept.append(judged)
    standing = []
    for violation in kept:
        if violation.code != NEW_TENSOR:
            standing.append(violation)
            continue
        where = (violation.path, violation.line, violation.col)
        consumer = (
            reached.get(where) or _consumer(project, violation) or _given_to(project, violation)
        )
        if consumer is None or consumer[1] != "certain":
            consumer = _returned(project, violation) or _stored(project, violation) or consumer
        if consumer is None or consumer[1] != "certain":
            consumer = _unlike_its_siblings(project, violation) or consumer
        if consumer is not None:
            detail = f"{consumer[0][0].upper()}{consumer[0][1:]}. {violation.detail}"
            standing.append(dataclasses.replace(violation, detail=detail, confidence=consumer[1]))
    return standing


def _notes(project: Project, path: str, kind: str) -> list[list]:
    return project.facts.get(path, {}).get("notes", {}).get(kind, [])


def _into_kernel(
    project: Project, violation: Violation, reached: dict[tuple[str, int, int], tuple[str, str]]
) -> Violation | None:
    at = [violation.line, violation.col]
    note = next((n for n in _notes(project, violation.path, LAUNCH_NOTES) if n[0] == at), None)
    if note is None:
        return None
    _, names, where, ancestry, description = note
    kernel = project.kernel(violation.path, names)
    if kernel is None:
        return None  # not the project's kernel: nothing says what it needs
    path, name, _, parameters, needs = kernel
    parameter = parameters[where] if isinstance(where, int) and where < len(parameters) else where
    need = needs.get(parameter) if isinstance(parameter, str) else None
    if need is None:
        return None  # the kernel takes any integer width there
    variable, need_line = need
    place = f"{project.shown(path)}:{need_line}"
    message = f"Triton kernel `{name}` needs int32 for `{parameter}`; give this tensor `dtype=torch.int32`"
    detail = (
        f"It is implicitly int64: {description}. `{variable}` meets an int32 value at {place}, "
        "and Triton refuses a variable whose type changes."
    )
    for ancestor_line, ancestor_col in ancestry:
        consumer = (
            f"it reaches Triton kernel `{name}` ({place}), which needs int32 for `{parameter}`"
        )
        reached.setdefault((violation.path, ancestor_line, ancestor_col), (consumer, "certain"))
    return dataclasses.replace(violation, message=message, detail=detail, confidence="certain")


def _consumer(project: Project, violation: Violation) -> tuple[str, str] | None:
    at = [violation.line, violation.col]
    for position, how in _notes(project, violation.path, CONSUMER_NOTES):
        if position == at:
            return how, "likely"
    return None


def _given_to(project: Project, violation: Violation) -> tuple[str, str] | None:
    """The call the new tensor is given to that needs int32 (certain), or after which portlint
    cannot follow it (another library's function, a container: likely); None where every call
    it is given to takes any width."""
    at = [violation.line, violation.col]
    unseen = None
    for _, names, where, news, callee in _notes(project, violation.path, CALL_NOTES):
        if at not in news:
            continue
        verdict = _needs(project, violation.path, names or [callee], where, MAX_CALL_DEPTH)
        if verdict is FINE:
            continue
        if verdict is not UNSEEN:
            return f"it is given to `{callee}`, and {verdict}", "certain"
        unseen = unseen or (
            f"it is given to `{callee}`, and portlint cannot follow it from there: check that "
            "what consumes it takes int64",
            "likely",
        )
    return unseen


def _returned(project: Project, violation: Violation) -> tuple[str, str] | None:
    """Where the new tensor goes once its function returns it: a kernel that needs int32 in a
    caller (certain, naming the caller and the kernel's line); else, where it reached a kernel
    before it left and not every caller's use can be followed, or no caller is in the project
    (likely: where it went); None where every caller's use takes any width."""
    at = [violation.line, violation.col]
    for news, element, function in _notes(project, violation.path, RETURN_NOTES):
        if at not in news:
            continue
        seen, followed = False, True
        for caller_path, caller, uses in _callers(project, violation.path, function, element):
            seen = True
            need, every = _first_need(project, caller_path, uses)
            if need is not None:
                where = f"`{caller}` ({project.shown(caller_path)})"
                return f"it is returned by `{function}` to {where}, and {need}", "certain"
            followed = followed and every
        if not (seen and followed):
            return _left_after_a_kernel(project, violation, f"is returned by `{function}`")
    return None


def _unlike_its_siblings(project: Project, violation: Violation) -> tuple[str, str] | None:
    """A returned new tensor where a sibling of its function returns int32 (likely: the
    callers of either expect int32; :mod:`portlint.index.siblings`)."""
    at = [violation.line, violation.col]
    for news, element, function in _notes(project, violation.path, RETURN_NOTES):
        sibling = int32_sibling(project, violation.path, function, element) if at in news else None
        if sibling is not None:
            return (
                f"it is returned by `{function}`, and its sibling `{sibling[0]}` ({sibling[1]}) "
                "returns int32 in its place: the callers of either expect int32",
                "likely",
            )
    return None


def _stored(project: Project, violation: Violation) -> tuple[str, str] | None:
    """Where the new tensor goes once a method stores it on ``self``: a kernel that needs int32
    in a method of the class that reads the attribute (certain); else, where it reached a kernel
    before and no other method of the class reads it, or a reader's use cannot be followed
    (likely: where it went); None where every other reader takes any width."""
    at = [violation.line, violation.col]
    for news, cls, attribute, method in _notes(project, violation.path, STORE_NOTES):
        if at not in news:
            continue
        followed, read = True, False
        for name, summary in project.functions(violation.path).items():
            uses = (
                summary.get("attributes", {}).get(attribute) if name.startswith(f"{cls}.") else None
            )
            if uses is None:
                continue
            read = read or name != method  # (read by another method than the one storing it)
            need, every = _first_need(project, violation.path, uses)
            if need is not None:
                return (
                    f"it is stored in `self.{attribute}`, which `{name}` reads, and {need}",
                    "certain",
                )
            followed = followed and every
        if not (read and followed):
            how = f"is stored in `self.{attribute}` by `{method}`"
            return _left_after_a_kernel(project, violation, how)
    return None


def _first_need(project: Project, path: str, uses: list[list]) -> tuple[str | None, bool]:
    """What the first of ``uses`` (of a tensor, in ``path``) that needs int32 says of the need,
    and whether every use could be followed to something that takes any width."""
    followed = True
    for use in uses:
        if use[0] == NEEDS_INT64:
            return None, followed  # (it checks that it has int64: nothing here needs int32)
        verdict = (
            UNSEEN
            if use[0] == "opaque"
            else _needs(project, path, [use[1]], use[2], MAX_CALL_DEPTH)
        )
        if verdict not in (FINE, UNSEEN):
            return verdict, followed
        followed = followed and verdict is FINE
    return None, followed


def _left_after_a_kernel(
    project: Project, violation: Violation, how: str
) -> tuple[str, str] | None:
    """A new tensor that left its function (``how``) after reaching a kernel: likely, saying
    where it went (None: it reached no kernel, and what it is used for is unknown)."""
    kernel = _kernel_reached(project, violation)
    if kernel is None:
        return None
    return (
        f"it reaches Triton kernel `{kernel}` and {how}: portlint cannot see every use of it "
        "after that; check that each takes int64",
        "likely",
    )


def _callers(
    project: Project, path: str, function: str, element: int | None
) -> list[tuple[str, str, list[list]]]:
    """Each function of the project that binds the result of ``function`` of ``path`` (its
    ``element``, for a tuple): its path, its name and the bound name's uses."""
    target = (path, function)
    last = function.rsplit(".", 1)[-1]
    found = []
    for caller_path in list(project.facts):
        names = {row[0] for row in project.facts[caller_path].get("uses", [])}
        if not any(name.rsplit(".", 1)[-1] == last for name in names):
            continue
        for caller, summary in project.functions(caller_path).items():
            for callee, bound, uses in summary.get("results", []):
                if bound == element and project.resolve_name(caller_path, callee) == target:
                    found.append((caller_path, caller, uses))
    return found


def _kernel_reached(project: Project, violation: Violation) -> str | None:
    """A project kernel the new tensor is launched into, from its own function or through the
    project's functions it is given to, if one is."""
    at = [violation.line, violation.col]
    for _, names, where, news, callee in _notes(project, violation.path, CALL_NOTES):
        if at in news:
            kernel = _launched(project, violation.path, names or [callee], where, MAX_CALL_DEPTH)
            if kernel is not None:
                return kernel
    return None


def _launched(
    project: Project, path: str, names: list[str], where: int | str, depth: int
) -> str | None:
    """The kernel that the callee named ``names`` in ``path`` launches with what it gets at
    ``where`` (itself, where it is one), if any."""
    for name in names:
        target = project.resolve_name(path, name) if depth > 0 else None
        if target is None:
            continue
        module_path, member = target
        if member in project.facts[module_path].get("kernels", {}):
            return member
        function = project.functions(module_path).get(member)
        parameter = _parameter(function["parameters"], where) if function else None
        for use in function["uses"].get(parameter, []) if function and parameter else []:
            if use[0] in ("launch", "call"):
                found = _launched(project, module_path, [use[1]], use[2], depth - 1)
                if found is not None:
                    return found
    return None


FINE, UNSEEN = "fine", "unseen"  # what a callee does with a tensor: takes any width; unknown


def _needs(project: Project, path: str, names: list[str], where: int | str, depth: int) -> str:
    """What the callee named ``names`` in ``path`` needs of the tensor it gets at ``where``:
    FINE, UNSEEN, or (as text) the kernel parameter that needs int32."""
    if depth <= 0:
        return UNSEEN
    for name in names:
        target = project.resolve_name(path, name)
        if target is None:
            continue
        module_path, member = target
        facts = project.facts[module_path]
        kernel = facts.get("kernels", {}).get(member)
        if kernel is not None:
            _, parameters, needs = kernel
            parameter = _parameter(parameters, where)
            if parameter in needs:
                place = f"{project.shown(module_path)}:{needs[parameter][1]}"
                return f"Triton kernel `{member}` ({place}) needs int32 for `{parameter}`"
            return FINE
        # The project's own code is seen: a function that passes the tensor on to nothing that
        # needs int32, or a class that stores it, takes any width.
        function = project.functions(module_path).get(member)
        if function is None:
            return FINE
        parameter = _parameter(function["parameters"], where)
        verdict = FINE
        for use in function["uses"].get(parameter, []) if parameter else [["opaque"]]:
            if use[0] == NEEDS_INT64:
                return FINE  # (it checks that it was given int64: int32 would break it)
            if use[0] == "opaque":
                verdict = UNSEEN
                continue
            found = _needs(project, module_path, [use[1]], use[2], depth - 1)
            if found not in (FINE, UNSEEN):
                return found
            verdict = UNSEEN if found is UNSEEN else verdict
        return verdict
    if all(name.split(".")[0] in ("torch", *BUILTINS) for name in names):
        return FINE
    return UNSEEN


BUILTINS = frozenset(dir(builtins))


def _parameter(parameters: list[str], where: int | str) -> str | None:
    if isinstance(where, str):
        return where
    return parameters[where] if where < len(parameters) else None
