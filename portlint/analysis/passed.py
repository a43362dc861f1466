"""Whether every caller of a private function passes one of its parameters: then the parameter's
default is never used (``def _make_mesh(group, device_type="cuda")`` whose one caller passes
``device_type``).

Only a private function (``_name``, not a dunder) is read so: by convention nothing outside its
module calls it, so the calls in its module are all its calls. A function defined outside
classes is called by ``_f(...)``; a method by ``self._f(...)``, ``cls._f(...)`` or
``Class._f(...)``. Any other mention of the name (a callback, ``getattr``) leaves the callers
unknown, as does a call that spreads ``*args`` or ``**kwargs``.
"""

from __future__ import annotations

import libcst as cst

from portlint.analysis.parameter_reads import reads_value
from portlint.analysis.walk import walk
from portlint.calls import RECEIVERS


def unused_default(
    module: cst.Module, owner: cst.CSTNode | None, parameter: cst.Param
) -> str | None:
    """Why the default of ``parameter`` of ``owner`` (a function or a lambda) is never used, if
    it is not: the function never uses the value it came with, or it is private and every
    caller in ``module`` passes it."""
    name = parameter.name.value
    if isinstance(owner, (cst.FunctionDef, cst.Lambda)) and not reads_value(owner.body, name):
        return f"the function never uses the value of `{name}`"
    if isinstance(owner, cst.FunctionDef) and passed_by_every_caller(module, owner, parameter):
        return f"every caller of the private `{owner.name.value}` passes it"
    return None


def passed_by_every_caller(
    module: cst.Module, function: cst.FunctionDef, parameter: cst.Param
) -> bool:
    """Whether ``function`` is private, has a caller in ``module``, and every one of them passes
    ``parameter``."""
    name = function.name.value
    if not name.startswith("_") or name.endswith("__"):
        return False
    nodes = list(walk(module))
    owner = next(
        (
            c.name.value
            for c in nodes
            if isinstance(c, cst.ClassDef) and any(s is function for s in c.body.body)
        ),
        None,
    )
    position = _position(function, parameter, owner)
    calls = [n for n in nodes if isinstance(n, cst.Call) and _names(n.func, name, owner)]
    callees = {id(call.func) for call in calls} | {id(function.name)}
    if any(
        isinstance(n, (cst.Attribute, cst.Name)) and _names(n, name, owner) and id(n) not in callees
        for n in nodes
    ):
        return False  # (mentioned other than as a callee or by its own definition)
    return bool(calls) and all(_passes(c, parameter.name.value, position) for c in calls)


def _names(node: cst.BaseExpression, name: str, owner: str | None) -> bool:
    if owner is None:
        return isinstance(node, cst.Name) and node.value == name
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == name
        and isinstance(node.value, cst.Name)
        and node.value.value in (*RECEIVERS, owner)
    )


def _position(function: cst.FunctionDef, parameter: cst.Param, owner: str | None) -> int | None:
    """Where a call passes ``parameter`` by position (``self``/``cls`` not counted), or None
    where it cannot (keyword-only)."""
    positional = [*function.params.posonly_params, *function.params.params]
    if parameter not in positional:
        return None
    index = positional.index(parameter)
    static = any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
        for d in function.decorators
    )
    return index - 1 if owner is not None and not static else index


def _passes(call: cst.Call, keyword: str, position: int | None) -> bool:
    if any(arg.star for arg in call.args):
        return False  # (`*args`, `**kwargs`: unknown)
    if any(arg.keyword is not None and arg.keyword.value == keyword for arg in call.args):
        return True
    given = sum(1 for arg in call.args if arg.keyword is None)
    return position is not None and given > position
