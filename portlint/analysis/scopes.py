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

import builtins
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import BaseMetadataProvider, QualifiedName, QualifiedNameSource

from portlint.analysis.walk import Walk

IMPORT, LOCAL, BUILTIN = (
    QualifiedNameSource.IMPORT,
    QualifiedNameSource.LOCAL,
    QualifiedNameSource.BUILTIN,
)
# Nodes after which a scope counts one more binding step (LibCST's "assignment-like" nodes).
BINDING_STEPS = (
    cst.AnnAssign, cst.AsName, cst.Assign, cst.AugAssign, cst.ClassDef, cst.CompFor,
    cst.FunctionDef, cst.Global, cst.Import, cst.ImportFrom, cst.NamedExpr, cst.Nonlocal,
    cst.Parameters, cst.WithItem, cst.TypeVar, cst.TypeAlias, cst.TypeVarTuple, cst.ParamSpec,
)  # fmt: skip
# The node types a full name can be given for (``get_full_name_for_node``).
NAMED = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.FunctionDef,
    cst.ClassDef,
    cst.Decorator,
)
NAMED_TYPES, BINDING_STEP_TYPES = frozenset(NAMED), frozenset(BINDING_STEPS)


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
            return _imported(self.node, full_name)
        prefix = self.scope.prefix
        return {QualifiedName(f"{prefix}.{full_name}" if prefix else full_name, LOCAL)}


def _imported(node: cst.Import | cst.ImportFrom, full_name: str) -> set[QualifiedName]:
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


class _ScopeVisitor:
    """Bindings and accesses in LibCST's visiting order (which decides what an access sees)."""

    walk: Walk  # (while it walks: see run)

    def __init__(self) -> None:
        self.scope = Scope("module", Scope("builtins", None))
        self.scope_of: dict[cst.CSTNode, Scope] = {}
        self.accesses: list[Access] = []
        self.imported: list[tuple[cst.Import | cst.ImportFrom, str]] = []  # with a bound name
        self.stores: set[cst.Name] = set()
        self.chains: list[cst.Attribute | None] = [None]

    def run(self, module: cst.Module) -> None:
        """Walk ``module``. The walk holds this visitor, which holds the walk while it runs, and
        not after: a reference cycle would keep the module's nodes alive until the cycle
        collector looks at every one of them."""
        self.walk = Walk([self])
        try:
            self.walk(module)
        finally:
            del self.walk

    def _enter(self, kind: str, name: str | None = None) -> Scope:
        outer, self.scope = self.scope, Scope(kind, self.scope, name)
        return outer

    def _store(self, target: cst.BaseExpression) -> None:
        """Mark the names ``target`` assigns (through tuples, lists and starred elements)."""
        if isinstance(target, cst.Name):
            self.stores.add(target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value)
        elif isinstance(target, cst.StarredElement):
            self._store(target.value)

    def _left(self, node: cst.CSTNode) -> None:
        """After a node that can be named or that is a binding step (see the loop below)."""
        kind = type(node)  # LibCST's node classes are final: compare types, not isinstance
        if kind in NAMED_TYPES:
            self.scope_of[node] = self.scope
        if kind in BINDING_STEP_TYPES:
            self.scope.steps += 1

    # --- bindings -------------------------------------------------------------------------
    def _import(self, node: cst.Import | cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar):
            return False
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            name = get_full_name_for_node(bound)
            if name:
                self.imported.append((node, name))
            while name:
                self.scope.bind(name, node)
                name = name.rpartition(".")[0]
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        return self._import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return self._import(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._store(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._store(node.name)

    def visit_Global(self, node: cst.Global) -> bool:
        if self.scope.kind != "module":
            for item in node.names:
                self.scope.overwrites[item.name.value] = self.scope.globals
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        assert self.scope.parent is not None  # only the builtins scope has none: no code is in it
        for item in node.names:
            self.scope.overwrites[item.name.value] = self.scope.parent
        return False

    def _type_parameters(self, node: cst.FunctionDef | cst.ClassDef | cst.TypeAlias) -> None:
        """PEP 695: type parameters live in a scope of their own, around the definition."""
        if node.type_parameters is not None or isinstance(node, cst.TypeAlias):
            self._enter("annotation")
            if node.type_parameters is not None:
                self.walk(node.type_parameters)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.scope.bind(node.name.value, node)
        self.scope_of[node.name] = self.scope
        enclosing = self.scope
        self._type_parameters(node)
        around = self._enter("function", node.name.value)
        self.walk(node.params)
        self.walk(node.body)
        self.scope = around
        for decorator in node.decorators:
            self.walk(decorator)
        if node.returns:
            self.walk(node.returns)
        self.scope = enclosing
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        outer = self._enter("function")
        self.walk(node.params)
        self.walk(node.body)
        self.scope = outer
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        self.scope.bind(node.name.value, node)
        self.scope_of[node.name] = self.scope
        assert self.scope.parent is not None  # a function's, inside the scope around it
        inner, self.scope = self.scope, self.scope.parent
        for part in (node.default, node.annotation):
            if part:
                self.walk(part)
        self.scope = inner
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        self.walk(node.value)  # the keyword is neither a binding nor an access
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.scope.bind(node.name.value, node)
        self.scope_of[node.name] = self.scope
        enclosing = self.scope
        for decorator in node.decorators:
            self.walk(decorator)
        self._type_parameters(node)
        for part in (*node.bases, *node.keywords):
            self.walk(part)
        self._enter("class", node.name.value)
        for statement in node.body.body:
            self.walk(statement)
        self.scope = enclosing
        return False

    def visit_TypeAlias(self, node: cst.TypeAlias) -> bool:
        self.scope.bind(node.name.value, node)
        enclosing = self.scope
        self._type_parameters(node)
        self.walk(node.value)
        self.scope = enclosing
        return False

    def visit_TypeVar(self, node: cst.TypeVar) -> bool:
        self.scope.bind(node.name.value, node)
        if node.bound is not None:
            self.walk(node.bound)
        return False

    def visit_TypeVarTuple(self, node: cst.TypeVarTuple) -> bool:
        self.scope.bind(node.name.value, node)
        return False

    visit_ParamSpec = visit_TypeVarTuple

    def _comprehension(self, node: cst.BaseSimpleComp | cst.DictComp) -> bool:
        for_in = node.for_in
        self.walk(for_in.iter)  # the first iterable is evaluated outside
        outer = self._enter("comprehension")
        self._store(for_in.target)
        self.walk(for_in.target)
        self.scope.steps += 1
        for condition in for_in.ifs:
            self.walk(condition)
        if for_in.inner_for_in:
            self.walk(for_in.inner_for_in)
        for part in (node.key, node.value) if isinstance(node, cst.DictComp) else (node.elt,):
            self.walk(part)
        self.scope = outer
        return False

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._store(node.target)  # an inner `for` of a comprehension

    def visit_For(self, node: cst.For) -> bool:
        self._store(node.target)
        self.walk(node.target)
        self.scope.steps += 1
        for part in (node.iter, node.body, node.orelse, node.asynchronous):
            if part is not None:
                self.walk(part)
        return False

    # --- accesses -------------------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self.chains[-1] is None:
            self.chains[-1] = node
        self.walk(node.value)  # not the attribute's own name
        if self.chains[-1] is node:
            self.chains[-1] = None
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.chains.append(None)

    def leave_Call(self, original_node: cst.Call) -> None:
        self.chains.pop()
        self._left(original_node)

    def visit_SimpleString(self, node: cst.SimpleString) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node in self.stores:
            self.scope.bind(node.value, node)
        else:
            self.accesses.append(
                Access(node, node.value, self.scope, self.scope.steps, self.chains[-1])
            )


for _kind in NAMED_TYPES | BINDING_STEP_TYPES:
    if _kind is not cst.Call:
        setattr(_ScopeVisitor, f"leave_{_kind.__name__}", _ScopeVisitor._left)


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
        visitor = _ScopeVisitor()
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
                if any(fragment in q.name for q in _imported(node, name))
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
