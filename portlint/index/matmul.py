"""Which PORT301 findings stand: a capture whose code runs no matrix multiply is not reported.

The per-stream state that a capture on an unwarmed stream makes lazily, and that fails on ROCm,
is the BLAS handle's (cuBLAS's workspace, hipBLASLt's handles): captured code that runs no matrix
multiply makes none (:mod:`portlint.analysis.blas` lists what does and what does not). The rule
leaves a note of each capture it reports; here its code is read from Python's ``ast`` and
followed into the project's own code: its functions and classes (through the imports, at any
module), methods (``self.m(...)``), local functions, and instances — a name bound to
``Cls(...)`` (``.cuda()``, ``.eval()`` and the like return the module), an attribute of ``self``
that the class assigns one — whose ``__call__`` or ``forward`` runs, up to :data:`MAX_DEPTH`
calls deep. Anything else can run one: a parameter called, another library's function or
module not in the tables, a call of a computed value.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from portlint.analysis.blas import (
    BLAS_FUNCTIONS,
    BLAS_METHODS,
    NON_BLAS_FUNCTIONS,
    NON_BLAS_METHODS,
    NON_BLAS_MODULES,
    SELF_RETURNING_METHODS,
)
from portlint.findings import Silenced, Violation
from portlint.platform import dotted, import_bindings

if TYPE_CHECKING:
    from portlint.index.project import Project

CAPTURE_CODE = "PORT301"
# PORT301's note per capture it reports: the capture's call, the first and the last statement
# of the code it captures.
CAPTURE_NOTES = "captures"
MAX_DEPTH = 6  # how many calls deep captured code is followed
SHOWN = 3  # functions named in a reason
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
NESTED = (*FUNCTIONS, ast.ClassDef, ast.Lambda)
BUILTINS = frozenset(dir(builtins))

# A class an instance is of: ("project", path, qualified name) or ("torch", qualified name).
ClassRef = tuple[str, ...]


class _Method(NamedTuple):
    """A function of the project that a method call runs."""

    path: str
    function: ast.FunctionDef | ast.AsyncFunctionDef
    owner: str  # the qualified name of its class


def judge_captures(
    project: Project, violations: list[Violation], silenced: list[Silenced] | None
) -> list[Violation]:
    """``violations`` less the PORT301 findings whose captured code runs no matrix multiply
    (to ``silenced``, with what the code was followed into)."""
    kept = []
    for violation in violations:
        followed = _runs_none(project, violation) if violation.code == CAPTURE_CODE else None
        if followed is None:
            kept.append(violation)
        elif silenced is not None:
            into = ", ".join(followed[:SHOWN]) + (", ..." if len(followed) > SHOWN else "")
            why = "the captured code runs no matrix multiply" + (
                f" (followed into {into})" if followed else ""
            )
            silenced.append(
                Silenced(violation, "rule", why + ": it makes no BLAS state", violation.line)
            )
    return kept


def _runs_none(project: Project, violation: Violation) -> list[str] | None:
    """What the capture's code was followed into, where it runs no matrix multiply; None where
    it may run one (or the rule left no note of it)."""
    notes = project.facts.get(violation.path, {}).get("notes", {}).get(CAPTURE_NOTES, [])
    for call, first, last in notes:
        if call != [violation.line, violation.col]:
            continue
        tree = project.module_tree(violation.path)
        if tree is None:
            return None
        scope, holder = _holder(violation.path, tree, first[0])
        end = max(
            (s.end_lineno or s.lineno for s in ast.walk(holder) if isinstance(s, ast.stmt)
             and s.lineno == last[0]),
            default=last[0],
        )  # fmt: skip
        nodes = [n for n in _own_nodes(holder) if first[0] <= getattr(n, "lineno", 0) <= end]
        follower = _Follower(project)
        return follower.followed if follower.runs_none(scope, nodes, MAX_DEPTH) else None
    return None


@dataclass
class _Scope:
    """What names mean in a function: its local functions, what its names are assigned (None:
    a value portlint cannot see, a parameter's), the class ``self`` is of, and the scope around
    it (a closure sees its names)."""

    path: str
    owner: str = ""  # the qualified name of the class `self` is of ("" for none)
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    values: dict[str, list[ast.expr | None]] = field(default_factory=dict)
    outer: _Scope | None = None

    def lookup(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None and name not in scope.defs and name not in scope.values:
            scope = scope.outer
        return scope


def _scope_of(
    path: str, function: ast.AST | None, owner: str, outer: _Scope | None = None
) -> _Scope:
    scope = _Scope(path, owner, outer=outer)
    if not isinstance(function, FUNCTIONS):
        return scope
    arguments = function.args
    for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                     arguments.vararg, arguments.kwarg]:  # fmt: skip
        if argument is not None:
            scope.values.setdefault(argument.arg, []).append(None)
    nodes = _own_nodes(function)
    simple: set[int] = set()  # the names a plain `name = value` binds
    for node in nodes:
        if isinstance(node, FUNCTIONS):
            scope.defs[node.name] = node
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                simple.add(id(target))
                scope.values.setdefault(target.id, []).append(node.value)  # type: ignore[attr-defined]
    for node in nodes:  # names bound otherwise (`for`, `with ... as`, unpacking): unseen values
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)
            and id(node) not in simple
        ):
            scope.values.setdefault(node.id, []).append(None)
    return scope


def _own_nodes(holder: ast.AST) -> list[ast.AST]:
    """The nodes of the body of ``holder`` (a function or the module): not its decorators and
    defaults, which ran when it was defined, and not inside the functions, lambdas and classes
    it defines (the definitions themselves are in it)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(getattr(holder, "body", []))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, NESTED):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _holder(path: str, tree: ast.Module, line: int) -> tuple[_Scope, ast.AST]:
    """The scope of the innermost function holding ``line`` (the module where none does), and
    that function (or the module)."""
    holder: ast.AST = tree
    owner, scope = "", _Scope(path)
    node: ast.AST = tree
    while True:
        inner = next(
            (c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)
             and c.lineno <= line <= (c.end_lineno or c.lineno)),
            None,
        )  # fmt: skip
        if inner is None:
            return scope, holder
        in_function = holder is not tree
        if isinstance(inner, ast.ClassDef):  # (`self` in its methods; a nested class's name)
            owner = f"{owner}.{inner.name}" if owner and not in_function else inner.name
        elif isinstance(inner, FUNCTIONS):
            scope = _scope_of(path, inner, owner, scope if in_function else None)
            holder = inner
        node = inner


class _Follower:
    """One capture's code, followed; :attr:`followed`: the project's functions it went into."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.followed: list[str] = []
        self.seen: set[int] = set()  # functions followed (or being followed: a cycle runs none)
        self.imports: dict[str, dict[str, str]] = {}  # per path, what each imported name is

    def _external(self, path: str, name: str) -> str | None:
        """What a dotted name used in ``path`` names outside the project, qualified through the
        module's imports (``F.linear``: ``torch.nn.functional.linear``); None for the project's
        own names and for names no import binds."""
        if path not in self.imports:
            tree = self.project.module_tree(path)
            self.imports[path] = {
                local: ".".join(part for part in (source, attribute) if part)
                for node in (ast.walk(tree) if tree is not None else ())
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for local, source, attribute in import_bindings(node)
                if not source.startswith(".")
            }
        head, _, rest = name.partition(".")
        if head not in self.imports[path] or self.project.resolve_name(path, name) is not None:
            return None
        return ".".join(part for part in (self.imports[path][head], rest) if part)

    def runs_none(self, scope: _Scope, nodes: list[ast.AST], depth: int) -> bool:
        for node in nodes:
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                return False
            if isinstance(node, ast.Call) and not self._call(scope, node, depth):
                return False
        return True

    def _function(self, method: _Method, depth: int, outer: _Scope | None = None) -> bool:
        """Whether ``method`` runs none (``outer``: the scope a local function closes over)."""
        path, function, owner = method
        if id(function) in self.seen:
            return True
        if depth <= 0:
            return False
        self.seen.add(id(function))
        if outer is None:
            name = f"{owner}.{function.name}" if owner else function.name
            self.followed.append(f"`{name}` ({self.project.shown(path)}:{function.lineno})")
        scope = _scope_of(path, function, owner, outer)
        return self.runs_none(scope, _own_nodes(function), depth - 1)

    def _call(self, scope: _Scope, call: ast.Call, depth: int) -> bool:
        name = _name(call.func)
        func = call.func
        if (
            not name
            and isinstance(func, ast.Attribute)
            and _name(func.value) == ""
            and (
                isinstance(func.value, ast.Call)
                and _name(func.value.func) == "super"
                and scope.owner
            )
        ):  # `super().m(...)`
            this = ("project", scope.path, scope.owner)
            return self._instance_call(this, func.attr, depth, inherited=True)
        if not name:  # a call of a computed value: only a known method of it
            return isinstance(func, ast.Attribute) and _method_runs_none(func.attr)
        head, _, rest = name.partition(".")
        if head == "self" and scope.owner and rest:
            return self._self_call(scope, rest, depth)
        local = scope.lookup(head)
        if local is not None:
            if head in local.defs and not rest:
                method = _Method(scope.path, local.defs[head], scope.owner)
                return self._function(method, depth, local)
            return self._value_call(scope.path, local.values.get(head, []), rest, depth)
        external = self._external(scope.path, name)
        if external is not None:
            return _torch_runs_none(external)
        target = self.project.resolve_name(scope.path, name)
        if target is not None:
            return self._project_call(target, depth)
        if head in BUILTINS and not rest:
            return True
        return bool(rest) and _method_runs_none(rest.rpartition(".")[2])

    def _project_call(self, target: tuple[str, str], depth: int) -> bool:
        path, member = target
        units = self.project.units(path)
        node = units.get(member)
        if isinstance(node, ast.ClassDef):  # constructing: its __init__ runs
            found = self._method(("project", path, member), "__init__")
            return not isinstance(found, _Method) or self._function(found, depth)
        if not isinstance(node, FUNCTIONS):
            return False
        return self._function(_Method(path, node, member.rpartition(".")[0]), depth)

    def _self_call(self, scope: _Scope, rest: str, depth: int) -> bool:
        first, _, more = rest.partition(".")
        this = ("project", scope.path, scope.owner)
        method = self._method(this, first) if not more else None
        if isinstance(method, _Method):
            return self._function(method, depth)
        values = self._attribute_values(scope.path, scope.owner, first)
        return self._value_call(scope.path, values, more, depth)

    def _value_call(self, path: str, values: list[ast.expr | None], rest: str, depth: int) -> bool:
        """A call of a value that was assigned ``values`` (``rest``: the method called on it,
        "" for the value itself): an instance's method, a ``functools.partial`` of the
        project's function, or a known method of anything."""
        partial = self._partial_of(path, values) if not rest else None
        if partial is not None:
            return self._project_call(partial, depth)
        instance = self._instance(path, values)
        if instance is not None and "." not in rest:
            return self._instance_call(instance, rest or "__call__", depth)
        return bool(rest) and _method_runs_none(rest.rpartition(".")[2])

    def _partial_of(self, path: str, values: list[ast.expr | None]) -> tuple[str, str] | None:
        """The project's function that the one value assigned is a ``functools.partial`` of."""
        value = values[0] if len(values) == 1 else None
        if not (isinstance(value, ast.Call) and value.args and _name(value.args[0])):
            return None
        if self._external(path, _name(value.func)) != "functools.partial":
            return None
        return self.project.resolve_name(path, _name(value.args[0]))

    def _attribute_values(self, path: str, owner: str, attribute: str) -> list[ast.expr | None]:
        """What the methods of class ``owner`` assign to ``self.<attribute>``."""
        node = self.project.units(path).get(owner)
        if not isinstance(node, ast.ClassDef):
            return []
        return [
            statement.value
            for statement in ast.walk(node)
            if isinstance(statement, ast.Assign)
            for target in statement.targets
            if _name(target) == f"self.{attribute}"
        ]

    def _instance(self, path: str, values: list[ast.expr | None]) -> ClassRef | None:
        """The one class that every value assigned (but ``None``) is an instance of."""
        classes: set[ClassRef] = set()
        for value in values:
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            while (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in SELF_RETURNING_METHODS
            ):
                value = value.func.value
            name = _name(value.func) if isinstance(value, ast.Call) else ""
            external = self._external(path, name) if name else None
            target = self.project.resolve_name(path, name) if name and external is None else None
            if external is not None:
                classes.add(("torch", external))
            elif target is not None and isinstance(
                self.project.units(target[0]).get(target[1]), ast.ClassDef
            ):
                classes.add(("project", *target))
            else:
                return None
        return classes.pop() if len(classes) == 1 else None

    def _instance_call(
        self, instance: ClassRef, method: str, depth: int, inherited: bool = False
    ) -> bool:
        """Whether ``instance.method(...)`` runs none (``__call__``: its ``forward`` where the
        class defines no ``__call__``); ``inherited``: the bases' method (``super().m()``)."""
        if instance[0] == "torch":
            return instance[1] in NON_BLAS_MODULES and method in ("__call__", "forward")
        found = self._method(instance, method, inherited)
        if not isinstance(found, _Method) and method == "__call__":  # (torch's: `forward`)
            found = self._method(instance, "forward", inherited)
        if isinstance(found, _Method):
            return self._function(found, depth)
        return found is not None and self._instance_call(found, method, depth)

    def _method(
        self, instance: ClassRef, method: str, inherited: bool = False, hops: int = 0
    ) -> _Method | ClassRef | None:
        """Where a project class finds ``method``, in its own body (not where ``inherited``)
        or its bases', in order: (path, function, its class's qualified name), or the torch
        class it comes to first (a ``ClassRef``); None where it is not found."""
        _, path, owner = instance
        node = self.project.units(path).get(owner)
        if not isinstance(node, ast.ClassDef) or hops > MAX_DEPTH:
            return None
        own = self.project.units(path).get(f"{owner}.{method}")
        if isinstance(own, FUNCTIONS) and not inherited:
            return _Method(path, own, owner)
        for base in filter(None, map(_name, node.bases)):
            external = self._external(path, base)
            if external is not None:
                return ("torch", external) if external.startswith("torch.") else None
            target = self.project.resolve_name(path, base)
            found = self._method(("project", *target), method, False, hops + 1) if target else None
            if found is not None:
                return found
        return None


def _method_runs_none(method: str) -> bool:
    return method in NON_BLAS_METHODS and method not in BLAS_METHODS


def _torch_runs_none(qualified: str) -> bool:
    return qualified not in BLAS_FUNCTIONS and qualified in NON_BLAS_FUNCTIONS


def _name(node: ast.AST) -> str:
    return dotted(node) or ""
