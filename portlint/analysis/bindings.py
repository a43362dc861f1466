"""The scopes of a module and the bindings and accesses they hold, as LibCST's ``ScopeProvider``
models them: what :mod:`portlint.analysis.scopes` resolves names with, apart from the walk that
fills them (:mod:`portlint.analysis.scope_visit`)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import QualifiedName, QualifiedNameSource

IMPORT, LOCAL, BUILTIN = (
    QualifiedNameSource.IMPORT,
    QualifiedNameSource.LOCAL,
    QualifiedNameSource.BUILTIN,
)


@dataclass(eq=False)
class Binding:
    name: str  # the bound name; dotted for ``import a.b``
    scope: Scope
    index: int  # binding steps the scope had taken before this one
    node: (
        cst.CSTNode | None
    )  # Name, FunctionDef, ClassDef, Param, Import, ImportFrom; None: builtin

    def qualified(self, full_name: str) -> set[QualifiedName]:
        """What ``full_name`` (this binding's name, or an attribute chain on it) stands for."""
        if self.node is None:
            return {QualifiedName(f"builtins.{self.name}", BUILTIN)}
        if isinstance(self.node, (cst.Import, cst.ImportFrom)):
            return qualified_by_import(self.node, full_name)
        prefix = self.scope.prefix
        return {QualifiedName(f"{prefix}.{full_name}" if prefix else full_name, LOCAL)}


def qualified_by_import(node: cst.Import | cst.ImportFrom, full_name: str) -> set[QualifiedName]:
    """As LibCST does it: every alias of the statement whose bound name prefixes ``full_name``."""
    module = ""
    if isinstance(node, cst.ImportFrom):
        if node.module is not None:
            module = get_full_name_for_node(node.module) or ""
        module = "." * len(node.relative) + module
    results: set[QualifiedName] = set()
    if isinstance(node.names, cst.ImportStar):
        return results
    for alias in node.names:
        real_name = get_full_name_for_node(alias.name)
        if not real_name:
            continue
        parts = real_name.split(".")
        for size in range(len(parts), 0, -1):
            real = as_name = ".".join(parts[:size])
            if module.endswith("."):
                real = f"{module}{real}"
            elif module:
                real = f"{module}.{real}"
            if alias.asname is not None:
                as_name = alias.evaluated_alias or as_name
            if full_name.startswith(as_name):
                rest = full_name.split(as_name, 1)[1]
                if rest and not rest.startswith("."):
                    continue
                rest = rest.lstrip(".")
                results.add(QualifiedName(f"{real}.{rest}" if rest else real, IMPORT))
                break
    return results


@dataclass(eq=False)
class Scope:
    # "builtins", "module", "function", "class", "comprehension", or "annotation" (the scope of
    # PEP 695 type parameters and type aliases: transparent to qualified names)
    kind: str
    parent: Scope | None  # None for builtins
    name: str | None = None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    overwrites: dict[str, Scope] = field(default_factory=dict)  # global / nonlocal
    steps: int = 0  # binding steps taken so far (see BINDING_STEPS)

    def __post_init__(self) -> None:
        parent_prefix = self.parent.prefix if self.parent else ""
        self.globals: Scope = self.parent.globals if self.parent else self
        if self.kind in ("builtins", "module"):
            self.prefix: str = ""
            if self.kind == "module":
                self.globals = self
        elif self.kind == "function":
            self.prefix = ".".join(filter(None, [parent_prefix, self.name, "<locals>"]))
        elif self.kind == "class":
            self.prefix = ".".join(filter(None, [parent_prefix, self.name]))
        elif self.kind == "annotation":
            self.prefix = parent_prefix
        else:
            self.prefix = ".".join(filter(None, [parent_prefix, "<comprehension>"]))

    def visible_parent(self, first: Scope | None = None, origin: Scope | None = None) -> Scope:
        """The first enclosing scope (from ``first``) whose names code in ``origin`` (default:
        here) sees: not a class, but for the type parameters' scope right inside it."""
        origin = origin or self
        parent = first if first is not None else self.parent or self
        while parent.kind == "class" and not (
            origin.kind == "annotation" and origin.parent is parent
        ):
            parent = parent.parent or parent
        return parent

    def binds(self, name: str) -> bool:
        """Whether ``name`` is bound here or in a scope visible from here."""
        if self.kind == "builtins":
            return hasattr(builtins, name)
        if name in self.overwrites:
            return self.overwrites[name].binds(name)
        if name in self.bindings:
            return bool(self.bindings[name])
        return self.visible_parent().binds(name)

    def resolve(self, name: str, origin: Scope | None = None) -> list[Binding]:
        """Every binding ``name`` may refer to from here (code in ``origin``, default: here),
        wherever in the scope it was made."""
        origin = origin or self
        if self.kind == "builtins":
            if name not in self.bindings and hasattr(builtins, name):
                self.bindings[name] = [Binding(name, self, -1, None)]
            return self.bindings.get(name, [])
        if name in self.overwrites:
            return self.visible_parent(self.overwrites[name], origin).resolve(name, origin)
        if name in self.bindings:
            return self.bindings[name]
        return self.visible_parent(origin=origin).resolve(name, origin)

    def bind(self, name: str, node: cst.CSTNode) -> None:
        scope = self
        while name in scope.overwrites:
            scope = scope.visible_parent(scope.overwrites[name])
        scope.bindings.setdefault(name, []).append(Binding(name, scope, scope.steps, node))


@dataclass(eq=False)
class Access:
    node: cst.Name | cst.Attribute  # an Attribute where a prefix of the chain is bound as such
    name: str
    scope: Scope
    index: int  # the scope's binding steps when the access was made
    chain: cst.Attribute | None  # the outermost attribute chain the name starts
