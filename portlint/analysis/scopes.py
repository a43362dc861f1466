"""Qualified names for the rules: the answers of LibCST's ``QualifiedNameProvider``, computed in
one walk.

LibCST computes qualified names from ``ScopeProvider``, which needs ``ExpressionContextProvider``
and then a second visit to attach a lazy value to every node: about half the cost of a
file. The rules only ask what a name, attribute chain or call refers to, so :class:`NameProvider`
keeps, in a single visit, what that answer needs: each scope's bindings (imports, assignments,
definitions, parameters, ``global``/``nonlocal``), each name's scope and each access's position
among the bindings. The rules follow LibCST's, including its corners: a name refers to the
bindings of its scope made before it (else to the enclosing scope's), class scopes are invisible
to nested functions, the first iterable of a comprehension belongs to the enclosing scope, and an
attribute chain resolves through its longest bound prefix (``import torch.cuda`` binds
``torch.cuda``). ``tests/test_names.py`` checks the answers equal to LibCST's on every name,
attribute, call, subscript and definition of this repository's files and the test fixtures.
Names in string annotations are not resolved (no rule reads them).
"""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import BaseMetadataProvider, QualifiedName

from portlint.analysis.bindings import Access, Binding, qualified_by_import
from portlint.analysis.scope_visit import ScopeVisitor


def _dotted_prefixes(node: cst.BaseExpression) -> list[tuple[str, cst.Name | cst.Attribute]]:
    """``a.b.c`` → ("a.b.c", a.b.c), ("a.b", a.b), ("a", a); a call's callee stands for the call."""
    if isinstance(node, cst.Name):
        return [(node.value, node)]
    if not isinstance(node, cst.Attribute):
        return []
    if isinstance(node.value, cst.Call):
        return _dotted_prefixes(node.value.func)
    inner = _dotted_prefixes(node.value)
    if not inner:
        return []
    return [(f"{inner[0][0]}.{node.attr.value}", node), *inner]


class Names:
    """What each node of one module refers to."""

    def __init__(self, module: cst.Module) -> None:
        visitor = ScopeVisitor()
        visitor.run(module)
        self.scope_of = visitor.scope_of
        self._imports = visitor.imported
        self._imported_from: dict[str, frozenset[str]] = {}
        self.referents: dict[cst.CSTNode, list[Binding]] = {}
        for access in visitor.accesses:
            self._infer(access)

    def names_imported_from(self, fragment: str) -> frozenset[str]:
        """The names (their first parts) that an import anywhere in the module binds to what
        ``fragment`` is part of: ``from torch.cuda import nvtx`` binds ``nvtx`` for ``cuda``."""
        if fragment not in self._imported_from:
            self._imported_from[fragment] = frozenset(
                name.split(".")[0]
                for node, name in self._imports
                if any(fragment in q.name for q in qualified_by_import(node, name))
            )
        return self._imported_from[fragment]

    def _infer(self, access: Access) -> None:
        if access.chain is not None:
            for name, node in _dotted_prefixes(access.chain):
                if access.scope.binds(name):
                    access.node, access.name = node, name
                    break
        scope = access.scope
        bindings = scope.resolve(access.name)
        earlier = [b for b in bindings if b.scope is not scope or b.index < access.index]
        if not earlier and bindings and scope.parent is not None:
            earlier = scope.parent.resolve(access.name)
        self.referents.setdefault(access.node, []).extend(earlier)

    def qualified(self, node: cst.CSTNode) -> set[QualifiedName]:
        referents = self.referents.get(node)
        if referents is not None:
            return {q for binding in referents for q in binding.qualified(binding.name)}
        scope = self.scope_of.get(node)
        full_name = get_full_name_for_node(node)
        if scope is None or full_name is None:
            return set()
        prefix, bindings = full_name, []
        while prefix:
            if scope.binds(prefix):
                bindings = scope.resolve(prefix)
                break
            prefix = prefix.rpartition(".")[0]
        for binding in bindings:
            if binding.node is not None and _binds_node(binding.node, node):
                return binding.qualified(full_name)
        return {q for binding in bindings for q in binding.qualified(full_name)}


def _binds_node(binding: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``node`` is the binding's own name (for an import: one of its aliases' names)."""
    if node is binding:
        return True
    if isinstance(binding, (cst.Import, cst.ImportFrom)) and not isinstance(
        binding.names, cst.ImportStar
    ):
        return any(
            alias.name is node or (alias.asname is not None and alias.asname.name is node)
            for alias in binding.names
        )
    return False


class NameProvider(BaseMetadataProvider[Names]):
    """The module's :class:`Names`, on every node it can name (see :func:`qualified_names`)."""

    def _gen_impl(self, module: cst.Module) -> None:
        names = Names(module)
        self._computed.update(dict.fromkeys(names.scope_of, names))
