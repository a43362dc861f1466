"""What a module's top-level names tell the modules that import them, for the platform model's
pending evidence (:func:`portlint.model.conditions.pending`): read from Python's ``ast`` of
every module of a project (the index's facts), so it is kept cheap: the module's top level, and
the ``return`` statements of its functions.

- ``test``: a flag bound to a test that holds only on CUDA (``HAS_CUDA =
  torch.cuda.is_available()``), or a function whose every ``return`` is one
  (``def is_cuda(): return torch.version.cuda is not None``);
- ``marker``: a skip marker unless CUDA (``requires_cuda = pytest.mark.skipif(not
  torch.cuda.is_available(), ...)``, or a function that returns one applied).
"""

from __future__ import annotations

import ast
from typing import Any

from portlint.model.conditions import UNKNOWN, Conditions, Meaning, bindings_of, resolver
from portlint.model.places import FUNCTIONS, own
from portlint.model.recognisers import SKIP_IF, markers_of
from portlint.platform import dotted

MAX_QUOTED = 60


def exports(tree: ast.Module) -> dict[str, list[Any]]:
    """Each top-level name of the module that holds only on CUDA (``["test", why, line]``) or
    marks a test to be skipped unless on CUDA (``["marker", why, line]``)."""
    flags: dict[str, Meaning] = {}
    predicates: dict[str, Meaning] = {}

    def called(call: ast.Call) -> Meaning | None:
        return predicates.get(call.func.id) if isinstance(call.func, ast.Name) else None

    conditions = Conditions(resolver(bindings_of(tree.body)), flags.get, called, _quoted)
    found: dict[str, list[Any]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                meaning = conditions.meaning(node.value)
                flags.pop(target.id, None)
                found.pop(target.id, None)
                if meaning.if_true is not None:
                    flags[target.id] = meaning
                    found[target.id] = ["test", meaning.if_true.why, node.lineno]
        elif isinstance(node, FUNCTIONS):
            meaning = _answers(node, conditions)
            if meaning.if_true is not None:
                predicates[node.name] = meaning
                why = f"`{node.name}()` answers {meaning.if_true.why}"
                found[node.name] = ["test", why, node.lineno]
    for name, marker in markers_of(tree).items():
        last = (dotted(marker.func) or "").rsplit(".", 1)[-1]
        if not marker.args:
            continue
        meaning = conditions.meaning(marker.args[0])
        evidence = meaning.if_false if last in SKIP_IF else meaning.if_true
        if evidence is not None:
            found[name] = ["marker", f"`{name}` skips unless {evidence.why}", marker.lineno]
    return found


def _answers(function: ast.FunctionDef | ast.AsyncFunctionDef, conditions: Conditions) -> Meaning:
    """What a function answers, where it holds only on CUDA: it starts by returning a false
    value unless on CUDA (``if not torch.cuda.is_available(): return False``), or its every
    ``return`` is such a test."""
    first = function.body[0] if function.body else None
    if _docstring(first) and len(function.body) > 1:
        first = function.body[1]
    if (
        isinstance(first, ast.If)
        and not first.orelse
        and len(first.body) == 1
        and isinstance(first.body[0], ast.Return)
        and _false(first.body[0].value)
    ):
        meaning = conditions.meaning(first.test).negated()
        if meaning.if_true is not None:
            return Meaning(meaning.if_true)
    last = function.body[-1] if function.body else None
    if not (isinstance(last, ast.Return) and last.value is not None):
        return UNKNOWN  # (a cheap first look: most functions end otherwise)
    if conditions.meaning(last.value).if_true is None:
        return UNKNOWN
    nodes = list(own(function))
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
        return UNKNOWN
    meanings = [conditions.meaning(r.value) if r.value else UNKNOWN for r in returns]
    return meanings[0] if all(m.if_true for m in meanings) else UNKNOWN


def _docstring(node: ast.stmt | None) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _false(value: ast.expr | None) -> bool:
    """``return``, ``return None``, ``return False``, ``return 0``: a false answer."""
    return value is None or (isinstance(value, ast.Constant) and not value.value)


def _quoted(node: Any) -> str:
    text = ast.unparse(node)
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 4].rstrip() + " ..."
