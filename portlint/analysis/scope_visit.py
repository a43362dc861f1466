"""The one walk of a module that finds its scopes, bindings and accesses in LibCST's visiting
order (which decides what an access sees), for :class:`portlint.analysis.scopes.Names`."""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from portlint.analysis.bindings import Access, Scope
from portlint.analysis.walk import Walk

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


class ScopeVisitor:
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
        setattr(ScopeVisitor, f"leave_{_kind.__name__}", ScopeVisitor._left)
