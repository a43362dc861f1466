"""What a function does with its parameters, its results and ``self``'s attributes, where an
int64 tensor could meet a kernel's contract (:mod:`portlint.index.kernels`): the uses the int64
findings follow (:mod:`portlint.index.int64`), and what it returns as int32 on purpose
(:mod:`portlint.index.siblings`). Read from Python's ``ast``; plain data for the index."""

from __future__ import annotations

import ast
from typing import Any

from portlint.facts import INT32_DTYPES, INT64_DTYPES
from portlint.index.kernels import is_kernel, name_of


def functions_in(tree: ast.Module) -> dict[str, dict[str, Any]]:
    """Per function and method (``f``, ``C.m``) of the module that is not a kernel, its
    parameters in order and their uses (:func:`parameter_uses`), where any could need int32."""
    found: dict[str, dict[str, Any]] = {}
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for function in members:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_kernel(
                function
            ):
                uses, results = parameter_uses(function), result_uses(function)
                attributes = attribute_uses(function) if prefix else {}
                int32 = int32_returns(function)
                if uses or results or attributes or int32:
                    arguments = function.args
                    order = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
                    found[prefix + function.name] = {
                        "parameters": order, "uses": uses, "results": results,
                        "attributes": attributes, "int32_returns": int32,
                    }  # fmt: skip
    return found


OPAQUE = "opaque"  # a use portlint cannot follow (into a container, a return, an attribute)
# A use that demands int64: a test of the tensor's dtype against it (`assert x.dtype == torch.int64`,
# a compiled op's wrapper checking what its schema takes).
NEEDS_INT64 = "int64"
TORCH = "torch"


def parameter_uses(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[list]]:
    """Per parameter of ``function``, the uses of it that could need int32: given to a launch
    (``["launch", kernel, position or keyword]``) or to a call (``["call", callee, position or
    keyword]``) of something not torch's, or put where it cannot be followed (``["opaque"]``:
    a container, an attribute, a return), or its dtype tested against int64 (``["int64"]``). Reads, arithmetic, comparisons and torch's own
    functions take any integer width: they are left out, so a parameter with no entry takes any
    width."""
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    return _uses(function, dict.fromkeys(names, 0))


def result_uses(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list]:
    """Each call of ``function`` whose result it binds to a name (``x = f(...)``, or an element
    of it: ``a, b = f(...)``), where the callee is not torch's or a value's method: ``[callee,
    element (None: the whole result), the name's uses as in parameter_uses]`` (no uses: the
    result takes any width there)."""
    bound: list[tuple[str, int | None, str]] = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        value, target = node.value, node.targets[0]
        if not isinstance(value, ast.Call) or isinstance(value.func, ast.Subscript):
            continue
        callee = name_of(value.func)
        if not callee or callee.split(".")[0] == TORCH:
            continue
        if isinstance(target, ast.Name):
            bound.append((callee, None, target.id))
        elif isinstance(target, ast.Tuple):
            bound += [
                (callee, i, e.id) for i, e in enumerate(target.elts) if isinstance(e, ast.Name)
            ]
    uses = _uses(function, dict.fromkeys((name for _, _, name in bound), 1)) if bound else {}
    return [[callee, element, uses.get(name, [])] for callee, element, name in bound]


def attribute_uses(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[list]]:
    """Per attribute of ``self`` that the method reads (``self.num_sampled``), its uses as in
    :func:`parameter_uses` (none: read, and any width taken); a method whose first parameter is
    not ``self`` reads none."""
    arguments = [*function.args.posonlyargs, *function.args.args]
    if not arguments or arguments[0].arg != "self":
        return {}
    parents: dict[int, ast.AST] = {}
    loads: list[ast.Attribute] = []
    for node in ast.walk(function):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.ctx, ast.Load)
                and isinstance(child.value, ast.Name)
                and child.value.id == "self"
            ):
                loads.append(child)
    uses: dict[str, list[list]] = {}
    for load in loads:
        use = _use(load, parents)
        uses.setdefault(load.attr, []).extend([use] if use is not None else [])
    return uses


def _uses(function: ast.AST, names: dict[str, int]) -> dict[str, list[list]]:
    """The uses (as in :func:`parameter_uses`) of ``names`` in ``function``, each bound there as
    many times as ``names`` says (a name bound more often is rebound: it cannot be followed)."""
    # One walk: each load of a name (and each keyword argument) with its parent, and how often
    # the function binds each name.
    parents: dict[int, ast.AST] = {}
    loads: list[ast.Name] = []
    stores: dict[str, int] = dict.fromkeys(names, 0)
    for node in ast.walk(function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and child.id in names:
                parents[id(child)] = node
                if isinstance(child.ctx, ast.Load):
                    loads.append(child)
                else:
                    stores[child.id] += 1
            elif isinstance(child, ast.keyword) or (
                isinstance(child, ast.Attribute) and child.attr == "dtype"
            ):
                parents[id(child)] = node
    uses: dict[str, list[list]] = {}
    for load in loads:
        if stores[load.id] > names[load.id]:
            uses[load.id] = [[OPAQUE]]
            continue
        use = _use(load, parents)
        if use is not None:
            uses.setdefault(load.id, []).append(use)
    return uses


def _use(node: ast.Name | ast.Attribute, parents: dict[int, ast.AST]) -> list | None:
    parent = parents.get(id(node))
    where: int | str | None = None
    call = None
    if isinstance(parent, ast.keyword):
        call, where = parents.get(id(parent)), parent.arg
    elif isinstance(parent, ast.Call) and node in parent.args:
        call, where = parent, parent.args.index(node)
    if isinstance(call, ast.Call) and where is not None:
        if isinstance(call.func, ast.Subscript):
            return ["launch", name_of(call.func.value), where]
        callee = name_of(call.func)
        if (
            callee.split(".")[0] == TORCH
            or not callee
            or (
                isinstance(call.func, ast.Attribute) and (not isinstance(call.func.value, ast.Name))
            )
        ):
            return None  # torch's, or a method of a value: takes what it is given
        return ["call", callee, where]
    if _dtype_is_int64(parent, parents):
        return [NEEDS_INT64]
    if isinstance(parent, (ast.Attribute, ast.Subscript, ast.BinOp, ast.Compare, ast.UnaryOp)):
        return None
    if isinstance(parent, (ast.If, ast.While, ast.BoolOp, ast.Assert)):
        return None
    return [OPAQUE]


def _dtype_is_int64(attribute: ast.AST | None, parents: dict[int, ast.AST]) -> bool:
    """Whether ``attribute`` is ``x.dtype`` compared for equality with int64."""
    if not (isinstance(attribute, ast.Attribute) and attribute.attr == "dtype"):
        return False
    compare = parents.get(id(attribute))
    return (
        isinstance(compare, ast.Compare)
        and len(compare.ops) == 1
        and isinstance(compare.ops[0], (ast.Eq, ast.Is))
        and any(name_of(side) in INT64_DTYPES for side in (compare.left, *compare.comparators))
    )


def int32_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int | None]:
    """The elements of what ``function`` returns (None: the whole value) that are tensors made
    int32 on purpose (``dtype=torch.int32``, ``.int()``, ``.to(torch.int32)``), directly or
    through the name last bound to one: what its interface siblings' callers expect."""
    int32_names: dict[str, bool] = {}
    returned: list[int | None] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    int32_names[target.id] = _made_int32(node.value)
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            parts = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            elements: list[int | None] = (
                list(range(len(parts))) if isinstance(node.value, ast.Tuple) else [None]
            )
            for element, part in zip(elements, parts, strict=True):
                named = isinstance(part, ast.Name) and int32_names.get(part.id, False)
                if (named or _made_int32(part)) and element not in returned:
                    returned.append(element)
    return returned


def _made_int32(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if any(k.arg == "dtype" and name_of(k.value) in INT32_DTYPES for k in value.keywords):
        return True
    method = value.func.attr if isinstance(value.func, ast.Attribute) else ""
    if method == "int" and not value.args:
        return True
    return method in ("to", "type") and any(name_of(a) in INT32_DTYPES for a in value.args)
