"""What the code does with an object a call makes: whether every use is one a portable type has.

A fix that replaces ``torch.cuda.Stream()`` with ``torch.Stream()`` keeps the program's meaning
only where nothing asks the object for what the portable type lacks (``.cuda_stream``, a raw
handle for a CUDA library) and the object goes nowhere unknown. :func:`uses_only` follows the
call's value: used in place, or bound to a name (every use in the function or module) or to
``self.x`` (every use of ``.x`` in the module). A use is: a member the portable type has, a
``with`` item, a comparison, a statement of its own, or an argument of a stream API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from portlint.analysis.names import dotted_name, method_name, qualified_names
from portlint.analysis.parents import parent_of
from portlint.analysis.walk import walk
from portlint.facts import CAPTURE_CONTEXTS, SET_STREAM_FUNCTIONS, STREAM_CONTEXTS

# Stream and event methods that take a stream or an event, and the torch APIs that take a stream.
TAKING_METHODS = frozenset(
    {"wait_stream", "wait_event", "record_event", "record", "record_stream", "wait"}
)
TAKING_FUNCTIONS = STREAM_CONTEXTS | SET_STREAM_FUNCTIONS | CAPTURE_CONTEXTS


def uses_only(rule, call: cst.Call, members: frozenset[str]) -> bool:
    """Whether every use of the value of ``call`` is one an object with ``members`` allows."""
    parent = parent_of(rule, call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return _bound_uses(rule, parent.targets[0].target, members)
    return _use(rule, call, members)


def _use(rule, node: cst.CSTNode, members: frozenset[str]) -> bool:
    parent = parent_of(rule, node)
    if isinstance(parent, cst.Attribute):
        return parent.attr.value in members
    if isinstance(parent, (cst.WithItem, cst.Expr, cst.Comparison, cst.ComparisonTarget)):
        return True
    if isinstance(parent, cst.Arg):
        called = parent_of(rule, parent)
        return isinstance(called, cst.Call) and (
            method_name(called) in TAKING_METHODS
            or bool(qualified_names(rule, called.func) & TAKING_FUNCTIONS)
        )
    return False


def _bound_uses(rule, target: cst.BaseExpression, members: frozenset[str]) -> bool:
    """Every use of what ``target`` (a name or ``self.x``) is bound to, in its scope."""
    uses: list[cst.CSTNode]
    if isinstance(target, cst.Name):
        scope = _scope(rule, target)
        uses = [
            n
            for n in _nodes(rule, scope)
            if isinstance(n, cst.Name) and n.value == target.value and n is not target
            and not _is_attribute_name(rule, n)
        ]  # fmt: skip
    elif isinstance(target, cst.Attribute) and dotted_name(target) == f"self.{target.attr.value}":
        uses = [  # any `<object>.x` in the module: who else holds the object is not known
            n
            for n in _attributes(rule).get(target.attr.value, ())
            if n is not target
            and not (dotted_name(n) or "").startswith("torch.")  # (`torch.cuda.stream` is no use)
        ]  # fmt: skip
    else:
        return False
    return all(_is_rebinding(rule, use) or _use(rule, use, members) for use in uses)


def _nodes(rule, scope: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node of ``scope`` (a function or the module), walked once per file: each stream
    or event of a module asks for the same scopes."""
    walked = rule.__dict__.setdefault("_walked_scopes", {})
    if id(scope) not in walked:
        walked[id(scope)] = (scope, list(walk(scope)))  # (the scope kept: its id stays its own)
    return walked[id(scope)][1]


def _attributes(rule) -> dict[str, list[cst.Attribute]]:
    """The module's attributes (``a.x``), by name."""
    found: dict[str, list[cst.Attribute]] | None = rule.__dict__.get("_attributes_by_name")
    if found is None:
        found = {}
        for node in _nodes(rule, rule.module):
            if type(node) is cst.Attribute:
                found.setdefault(node.attr.value, []).append(node)
        rule.__dict__["_attributes_by_name"] = found
    return found


def _assigned(rule, scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression | None]]:
    """The values that ``scope`` assigns, by the dotted name of each target (``x``, ``self.x``),
    in the order of the source: found once per file (each stream of a module asks)."""
    known = rule.__dict__.setdefault("_assigned_in", {})
    if id(scope) not in known:
        found: dict[str, list[cst.BaseExpression | None]] = {}
        node: Any
        for node in _nodes(rule, scope):
            kind = type(node)  # (LibCST's node classes are final; `isinstance` goes through abc)
            if kind is cst.Assign:
                keys = dict.fromkeys(dotted_name(t.target) for t in node.targets)
            elif kind is cst.AnnAssign:
                keys = {dotted_name(node.target): None}
            else:
                continue
            for key in keys:
                if key is not None:
                    found.setdefault(key, []).append(node.value)
        known[id(scope)] = (scope, found)  # (the scope kept: its id stays its own)
    return known[id(scope)][1]


def made_by(rule, value: cst.BaseExpression, maker: Callable[[cst.Call], bool]) -> bool:
    """Whether ``value`` is a call that ``maker`` accepts, or a name (or ``self.x``) that the
    function (the module) binds to such calls only, and is no parameter."""
    if isinstance(value, cst.Call):
        return maker(value)
    key = dotted_name(value)
    if key is None or not (isinstance(value, cst.Name) or key == f"self.{key[5:]}"):
        return False
    scope = _scope(rule, value) if isinstance(value, cst.Name) else rule.module
    if isinstance(scope, cst.FunctionDef) and isinstance(value, cst.Name):
        params = scope.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        if any(p.name.value == key for p in every):
            return False
    values = _assigned(rule, scope).get(key, [])
    return bool(values) and all(isinstance(v, cst.Call) and maker(v) for v in values)


def _is_attribute_name(rule, name: cst.Name) -> bool:
    parent = parent_of(rule, name)
    return isinstance(parent, cst.Attribute) and parent.attr is name


def _is_rebinding(rule, node: cst.CSTNode) -> bool:
    return isinstance(parent_of(rule, node), cst.AssignTarget)


def _scope(rule, node: cst.CSTNode) -> cst.CSTNode:
    current = parent_of(rule, node)
    while current is not None and not isinstance(current, cst.FunctionDef):
        current = parent_of(rule, current)
    return current if current is not None else rule.module
