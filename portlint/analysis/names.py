"""Name resolution and small expression helpers shared by the rules.

Names are resolved as LibCST's ``QualifiedNameProvider`` resolves them (by
:class:`~portlint.analysis.scopes.NameProvider`, which is cheaper): ``import torch as t`` makes
``t.device`` resolve to ``torch.device``, ``from torch import cuda`` makes ``cuda.graph`` resolve
to ``torch.cuda.graph``, and a local that shadows an import resolves to the local instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import QualifiedName, QualifiedNameSource

from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import walk

CUDA_DEVICE_STRING = re.compile(r"cuda(:\d+)?")
# The strings a CUDA device's name is built from with its index: `"cuda:" + str(i)`,
# `"cuda:%d" % i`, `"cuda:{}".format(i)`.
CUDA_PLUS = re.compile(r"cuda:")
CUDA_PERCENT = re.compile(r"cuda:%[dis]")
CUDA_FORMAT = re.compile(r"cuda:\{[^{}]*\}")


def _qualified(resolver: MetadataDependent, node: cst.CSTNode) -> set[QualifiedName]:
    names = resolver.get_metadata(NameProvider, node, None)
    return names.qualified(node) if names is not None else set()


def qualified_names(resolver: MetadataDependent, node: cst.CSTNode) -> set[str]:
    """The qualified names ``node`` may refer to (empty when unknown)."""
    return {q.name for q in _qualified(resolver, node)}


def imported_names(resolver: MetadataDependent, node: cst.CSTNode) -> set[str]:
    """The qualified names ``node`` may refer to through an import (not a local definition)."""
    return {q.name for q in _qualified(resolver, node) if q.source is QualifiedNameSource.IMPORT}


def is_builtin(resolver: MetadataDependent, node: cst.CSTNode) -> bool:
    """Whether ``node`` names one of Python's builtins (``range``, ``len``), not shadowed."""
    found = _qualified(resolver, node)
    return bool(found) and all(q.source is QualifiedNameSource.BUILTIN for q in found)


def resolves_to(resolver: MetadataDependent, node: cst.CSTNode, names: Iterable[str]) -> bool:
    return not qualified_names(resolver, node).isdisjoint(names)


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of names and attributes; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


# What ends a block for good: the function is left; the rest of the block is not run.
LEAVES_FUNCTION = (cst.Return, cst.Raise)


def block_ends_in(
    block: cst.BaseSuite, kinds: tuple[type[cst.CSTNode], ...], calls: frozenset[str] = frozenset()
) -> bool:
    """Whether the last statement of ``block`` is one of ``kinds`` (``LEAVES_FUNCTION``...), or a
    call of one of ``calls`` (``EXIT_CALLS``)."""
    last: cst.CSTNode | None = block.body[-1] if block.body else None
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        last = last.body[-1]
    if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
        return dotted_name(last.value.func) in calls
    return isinstance(last, kinds)


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) else None


def argument(call: cst.Call, name: str, index: int) -> cst.Arg | None:
    """The argument bound to parameter ``name`` at position ``index``, given either way."""
    return keyword(call, name) or positional(call, index)


def method_name(call: cst.Call) -> str | None:
    """``m`` for a call ``<expr>.m(...)``."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def built_device_string(node: cst.BaseExpression) -> cst.SimpleString | None:
    """The ``"cuda:..."`` that ``node`` builds a CUDA device's name from, an index added:
    ``"cuda:" + str(i)``, ``"cuda:%d" % i``, ``"cuda:{}".format(i)``."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Modulo)):
        text, pattern = node.left, CUDA_PLUS if isinstance(node.operator, cst.Add) else CUDA_PERCENT
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
    ):
        text, pattern = node.func.value, CUDA_FORMAT
    else:
        return None
    value = text.evaluated_value if isinstance(text, cst.SimpleString) else None
    matches = isinstance(value, str) and pattern.fullmatch(value) is not None
    return text if matches and isinstance(text, cst.SimpleString) else None


def is_cuda_device_literal(node: cst.BaseExpression) -> bool:
    """``"cuda"``, ``"cuda:1"`` or ``f"cuda:{i}"``: a string naming a CUDA device (or one built
    of ``"cuda:"`` and an index: :func:`built_device_string`)."""
    if built_device_string(node) is not None:
        return True
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and CUDA_DEVICE_STRING.fullmatch(value) is not None
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        if not isinstance(first, cst.FormattedStringText):
            return False
        if len(node.parts) == 1:
            return CUDA_DEVICE_STRING.fullmatch(first.value) is not None
        return first.value == "cuda:"
    return False


_CODE = cst.Module([])


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def code_of(node: cst.CSTNode) -> str:
    """The code of ``node`` on one line (its whitespace runs made single spaces)."""
    return " ".join(_CODE.code_for_node(node).split())


def bound_in(function: cst.FunctionDef) -> frozenset[str]:
    """The names ``function`` binds itself: its parameters, and what it assigns, loops over,
    takes ``as``, imports or defines (a name it does not bind is its caller's or the module's)."""
    params = function.params
    bound = {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}
    bound.update(
        p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)
    )
    for n in walk(function.body):
        targets: list[cst.CSTNode] = []
        if isinstance(n, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor)):
            targets = [n.target]
        elif isinstance(n, (cst.AsName, cst.NamedExpr)):
            targets = [n.name if isinstance(n, cst.AsName) else n.target]
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            bound.add(n.name.value)
        elif isinstance(n, cst.ImportAlias) and n.asname is None:
            bound.add((dotted_name(n.name) or "").split(".")[0])
        for target in targets:
            bound.update(t.value for t in walk(target) if isinstance(t, cst.Name))
    return frozenset(bound)
