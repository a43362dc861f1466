"""What pytest and unittest read of a module: skip markers and the names the module gives them
(``requires_cuda = pytest.mark.skipif(...)``, a decorator whose wrapper skips), and the fixtures
``@pytest.mark.usefixtures`` names. The ``skip-marker`` and ``fixture`` rows of
:mod:`portlint.model.rows` read them (:mod:`portlint.model.recognisers`)."""

from __future__ import annotations

import ast

from portlint.facts import EXIT_CALLS
from portlint.platform import dotted

SKIP_IF = frozenset({"skipif", "skipIf", "skip_if"})
SKIP_UNLESS = frozenset({"skipUnless", "skip_unless"})


def used_fixtures(nodes: list) -> list[str]:
    """The fixtures that ``@pytest.mark.usefixtures("a", "b")`` on ``nodes`` names."""
    return [
        argument.value
        for node in nodes
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        and (dotted(decorator.func) or "").endswith("usefixtures")
        for argument in decorator.args
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str)
    ]


def skip_condition(marker: ast.Call) -> ast.expr | None:
    """The condition of ``skipif(condition, ...)`` (``condition=`` too)."""
    if marker.args:
        return marker.args[0]
    return next((k.value for k in marker.keywords if k.arg == "condition"), None)


def markers_of(tree: ast.Module) -> dict[str, ast.Call]:
    """The module's names for a skip marker: ``requires_cuda = pytest.mark.skipif(...)``, a
    function that returns one applied (``return unittest.skipUnless(...)(test)``), or one that
    returns a wrapper of the test that first skips (fails) where a test holds (:func:`_skips`:
    read as ``skipIf`` of that test)."""
    found: dict[str, ast.Call] = {}
    for node in tree.body:
        skips = _skips(node)
        if skips is not None:
            found[node.name] = skips  # type: ignore[attr-defined]
            continue
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            value = node.value if isinstance(target, ast.Name) else None
            name = target.id if isinstance(target, ast.Name) else ""
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            last = node.body[-1]
            value = last.value if isinstance(last, ast.Return) else None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Call):
                value = value.func  # (the marker, applied to the test)
            name = node.name
        callee = value.func if isinstance(value, ast.Call) else None
        if (
            callee is not None
            and (dotted(callee) or "").rsplit(".", 1)[-1] in SKIP_IF | SKIP_UNLESS
        ):
            found[name] = value  # type: ignore[assignment]
    return found


def _skips(node: ast.stmt) -> ast.Call | None:
    """``def requires_cuda(fn): ... def wrapper(*a): if not <test>: pytest.skip(...); return
    fn(*a) ... return wrapper``: the decorator as ``skipIf(not <test>)``, where the wrapper's
    first statement (after its docstring) skips, fails or raises where the test holds."""
    if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body):
        return None
    last = node.body[-1]
    returned = last.value if isinstance(last, ast.Return) else None
    wrapper = next(
        (
            n
            for n in node.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and isinstance(returned, ast.Name)
            and n.name == returned.id
        ),
        None,
    )
    body = wrapper.body if wrapper is not None else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # (its docstring)
    first = body[0] if body else None
    if not (isinstance(first, ast.If) and not first.orelse and _stops(first.body)):
        return None
    test = first.test
    call = ast.Call(
        func=ast.Name("skipIf", ast.Load()), args=[test], keywords=[], lineno=test.lineno,
        col_offset=test.col_offset, end_lineno=test.end_lineno, end_col_offset=test.end_col_offset,
    )  # fmt: skip
    call.wraps = True  # type: ignore[attr-defined]
    return call


def _stops(body: list[ast.stmt]) -> bool:
    """Whether a block ends in a skip, a failure or a ``raise``."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise):
        return True
    call = last.value if isinstance(last, ast.Expr) else None
    return isinstance(call, ast.Call) and dotted(call.func) in EXIT_CALLS


def is_pytestmark(statement: ast.stmt) -> bool:
    """Whether ``statement`` is the module's ``pytestmark = ...`` (it runs wherever the module is
    imported, to decide whether its tests run: what it calls is not confined by its skip)."""
    return isinstance(statement, ast.Assign) and [dotted(t) for t in statement.targets] == [
        "pytestmark"
    ]


def skip_deciders(module: list[ast.stmt]) -> frozenset[str]:
    """The names that ``module``'s ``pytestmark`` uses: the functions it calls run wherever the
    module is imported, to decide whether the tests run, and are not confined by their skip."""
    return frozenset(
        node.id
        for mark in module
        if is_pytestmark(mark)
        for node in ast.walk(mark)
        if isinstance(node, ast.Name)
    )


def decides_skip(statement: ast.stmt, deciders: frozenset[str]) -> bool:
    """Whether ``statement``, at the top level of its module, is its ``pytestmark`` or defines a
    function that one calls (``deciders``: :func:`skip_deciders` of the module)."""
    if is_pytestmark(statement):
        return True
    return isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
        statement.name in deciders
    )
