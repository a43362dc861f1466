"""What one module tells the project index, read from Python's ``ast`` (never LibCST).

The index needs, of every module of the tree, only what other modules' findings depend on
(:mod:`portlint.index.project`): what it imports and where, the functions and classes it
defines, every use of a name that an import or a definition bound (with whether the use runs only
on CUDA), the ``torch.cuda`` attributes it rebinds, and where it refers to ``torch.cuda``
attributes at all. The result is plain data (lists, strings, numbers), so the index's store can
keep it as JSON.

Whether a use runs only on CUDA is read here from the words of the code around it — an ``if``
whose test asks "is this CUDA", the ``else`` of a dispatch over other devices, the rest of a block
after ``if not <CUDA>: raise``, a function, class or test named or marked for CUDA — with the same
vocabulary as the guard analysis (:mod:`portlint.platform`). It is a cheaper reading than the
guard analysis, which runs only on the modules that have findings; it errs towards "not guarded",
which keeps a finding.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NamedTuple

from portlint.facts import EXIT_CALLS
from portlint.index.kernels import kernels_in
from portlint.model import PlatformModel, module_model
from portlint.platform import (
    SWAPPED,
    count_says_cuda,
    dotted,
    extension_build,
    is_predicate,
    names_cuda,
    names_other_device,
    requires_cuda,
    string_says_cuda,
    top_level_imports,
)
from portlint.settings import Settings

SKIPS_IF = frozenset({"skipif", "skipIf", "skip_if"})
SKIPS_UNLESS = frozenset({"skipUnless", "skip_unless", "skipunless"})
# Queries of torch's CUDA module that hold only where CUDA is (`torch.cuda.is_available()`).
CUDA_QUERIES = frozenset({"is_available", "device_count", "is_initialized"})


def says_cuda(test: ast.AST, predicates: frozenset[str] = frozenset()) -> bool | None:
    """True where ``test`` holds only on CUDA (or ROCm), False where it holds only off CUDA,
    None where it says neither. ``predicates``: the module's functions that answer "is this
    CUDA?" (:attr:`CudaQuestions.answers`), as their callers name them."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = says_cuda(test.operand, predicates)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        found = [says_cuda(value, predicates) for value in test.values]
        if isinstance(test.op, ast.And) and True in found:
            return True
        if isinstance(test.op, ast.Or) and False in found:
            return False
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _compares_cuda(test.left, test.ops[0], test.comparators[0])
    if isinstance(test, ast.Call):
        test = test.func
        if predicates and dotted(test) in predicates:
            return True
    name = dotted(test)
    if name is None:
        return None
    parts = name.split(".")
    last = parts[-1]
    if is_predicate(last) and names_cuda(last):  # is_cuda(), x.is_cuda, _is_hip, use_rocm
        return True
    if last in CUDA_QUERIES and "cuda" in parts[:-1]:  # torch.cuda.is_available()
        return True
    if parts[-2:] in (["version", "cuda"], ["version", "hip"]):  # torch.version.hip
        return True
    return None


def _compares_cuda(left: ast.AST, op: ast.cmpop, right: ast.AST) -> bool | None:
    """``x.type == "cuda"``, ``"cuda" != device``, ``torch.version.hip is not None``."""
    for one, other in ((left, right), (right, left)):
        if _is_cuda_string(one):
            if isinstance(op, ast.Eq):
                return True
            if isinstance(op, ast.NotEq):
                return False
        if isinstance(one, ast.Constant) and one.value is None and says_cuda(other):
            if isinstance(op, ast.IsNot):
                return True
            if isinstance(op, ast.Is):
                return False
    if (
        isinstance(op, ast.In)
        and isinstance(right, (ast.Tuple, ast.List, ast.Set))
        and right.elts
        and all(_is_cuda_string(e) for e in right.elts)
    ):
        return True
    return _compares_count(left, op, right)


_OPERATORS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


def _compares_count(left: ast.AST, op: ast.cmpop, right: ast.AST) -> bool | None:
    """``torch.cuda.device_count() >= 2`` (True), ``torch.cuda.device_count() < 2`` (False)."""
    operator = _OPERATORS.get(type(op))
    if operator is None:
        return None
    if _is_count(right) and isinstance(left, ast.Constant):
        left, right, operator = right, left, SWAPPED[operator]
    number = right.value if isinstance(right, ast.Constant) else None
    if not (_is_count(left) and type(number) is int):
        return None
    said = count_says_cuda(operator, number)
    return None if not said else said == 1


def _is_count(node: ast.AST) -> bool:
    """``torch.cuda.device_count()``, or the length of a sequence of torch's CUDA module, which
    has an entry per CUDA device (``len(torch.cuda.default_generators)``)."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node.func) or ""
    if name == "len" and len(node.args) == 1:
        return (dotted(node.args[0]) or "").startswith("torch.cuda.")
    return name.endswith("cuda.device_count")


def _is_cuda_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and string_says_cuda(node.value)
    )


def asks_other_device(test: ast.AST) -> bool:
    """Whether ``test`` asks about a device other than CUDA (``is_xpu()``, ``x.type == "npu"``)."""
    if isinstance(test, ast.UnaryOp):
        return False
    if isinstance(test, ast.BoolOp):
        return all(asks_other_device(value) for value in test.values)
    if isinstance(test, ast.Compare):
        return any(
            isinstance(side, ast.Constant)
            and isinstance(side.value, str)
            and names_other_device(side.value)
            for side in (test.left, *test.comparators)
        )
    if isinstance(test, ast.Call):
        test = test.func
    name = dotted(test)
    last = name.rsplit(".", 1)[-1] if name else ""
    return bool(last) and is_predicate(last) and names_other_device(last)


# What confines code to CUDA: the span of a test (line, column, end line, end column), True (a
# name or a test marker), or False (nothing).
Guard = bool | list[int]


def _span(test: ast.expr) -> list[int]:
    return [test.lineno, test.col_offset, test.end_lineno or 0, test.end_col_offset or 0]


def _exits_unless_cuda(statement: ast.stmt, predicates: frozenset[str] = frozenset()) -> Guard:
    """``if not <CUDA>: raise``, ``if <CUDA>: ... else: raise`` and ``assert <CUDA>``: the rest
    of the block runs only on CUDA."""
    if isinstance(statement, ast.Assert):
        return says_cuda(statement.test, predicates) is True and _span(statement.test)
    if not isinstance(statement, ast.If):
        return False
    said = says_cuda(statement.test, predicates)
    if said is None or (said is False and statement.orelse):
        return False
    off_cuda = statement.orelse if said else statement.body  # (where the test of CUDA fails)
    return bool(off_cuda) and _leaves(off_cuda) and _span(statement.test)


def _off_cuda(statement: ast.If) -> list[ast.stmt]:
    """The block of an exit unless on CUDA (:func:`_exits_unless_cuda`) that leaves: its ``else``
    where it has one (``if <CUDA>: ... else: raise``), else its body."""
    return statement.orelse or statement.body


LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _leaves(body: list[ast.stmt], ways: tuple[type, ...] = LEAVING) -> bool:
    """Whether a block ends by leaving: a skip or an exit call, or one of ``ways`` (``return``,
    ``raise``, ``continue``, ``break``)."""
    last = body[-1] if body else None
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        return dotted(last.value.func) in EXIT_CALLS
    return isinstance(last, ways)


class CudaQuestions(NamedTuple):
    """What the functions of a module ask about CUDA, by their code rather than their names, as
    the module's code calls them (``f``; ``self.m`` for a method)."""

    # Those that answer "can this run here?" for CUDA by what they return: every ``return``
    # gives a test that holds only on CUDA (``return x.is_cuda and torch.version.hip is None``)
    # or False or None, or comes after an exit unless on CUDA (``if not
    # torch.cuda.is_available(): return False``). A call of one is a guard, as a call of a
    # function named ``is_cuda_available`` is. One that only passes on one question (``return
    # torch.cuda.is_available()``, ``return x.is_cuda``) is not: what it answers picks a device
    # or a kernel as often as it guards CUDA code, and the rules judge that question where it
    # is asked.
    answers: frozenset[str] = frozenset()
    # Those that raise unless on CUDA before they can return (``if t.device.type != "cuda":
    # raise RuntimeError(...)``, ``assert x.is_cuda``): the rest of a block after a call of one
    # runs only on CUDA, as after the check itself.
    requirements: frozenset[str] = frozenset()
    # The module's classes whose ``__init__`` raises unless on CUDA before it can return: no
    # instance of one exists elsewhere, so its methods run only on CUDA.
    cuda_classes: frozenset[str] = frozenset()


def cuda_questions(tree: ast.Module) -> CudaQuestions:
    """The :class:`CudaQuestions` of a module's functions and methods."""
    functions = [
        (statement.name, statement) for statement in tree.body if isinstance(statement, FUNCTIONS)
    ]
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            functions += [
                (f"self.{member.name}", member)
                for member in statement.body
                if isinstance(member, FUNCTIONS)
            ]
    answers = frozenset(name for name, function in functions if _answers_cuda(function))
    requirements = frozenset(name for name, function in functions if _requires_cuda(function))
    classes = frozenset(
        statement.name
        for statement in tree.body
        if isinstance(statement, ast.ClassDef)
        and any(
            isinstance(member, FUNCTIONS) and member.name == "__init__" and _requires_cuda(member)
            for member in statement.body
        )
    )
    return CudaQuestions(answers, requirements, classes)


def _requires_cuda(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = function.body
    check = next((i for i, s in enumerate(body) if _exits_unless_cuda(s) and _raises(s)), None)
    # (Not where it may return before the check; looked for only where there is one.)
    return check is not None and next(_returns_of(body[:check]), None) is None


def _raises(statement: ast.stmt) -> bool:
    """``assert ...``, or an ``if`` whose block ends in ``raise`` and holds no ``return``."""
    if isinstance(statement, ast.Assert):
        return True
    return (
        isinstance(statement, ast.If)
        and isinstance(_off_cuda(statement)[-1], ast.Raise)
        and next(_returns_of(_off_cuda(statement)), None) is None
    )


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _answers_cuda(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    exits = [s for s in function.body if _exits_unless_cuda(s) and _falsy_exit(s)]
    after = (exits[0].end_lineno or exits[0].lineno) if exits else None
    answered = False  # (a return that says more than one question does)
    returns = list(_returns_of(function.body))
    # After the exit, a `return True` answers more than the one question where the function
    # may also answer no after it (`return False` unless a kernel loads), not where it only
    # passes the exit's answer on (`if not torch.cuda.is_available(): return False; return True`).
    asks_more = after is not None and any(
        line > after and (value is None or _is_falsy_constant(value)) for value, line in returns
    )
    for value, line in returns:
        if value is None or _is_falsy_constant(value):
            continue
        if after is not None and line > after:
            answered = answered or not isinstance(value, ast.Constant) or asks_more
        elif says_cuda(value) is True:
            answered = answered or not _one_query(value)
        else:
            return False  # (most functions, at their first return)
    return answered and not yields(function)


def _one_query(test: ast.expr) -> bool:
    """``torch.cuda.is_available()``, ``x.is_cuda``, ``x.device.type == "cuda"``: one question
    about CUDA, and nothing more (``not (a or b)`` asks two, as ``not a and not b`` does)."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return not isinstance(test, ast.BoolOp)


def _requires(statement: ast.stmt, requirements: frozenset[str]) -> Guard:
    """A call, as a statement, of a function that raises unless on CUDA: the span of the call."""
    if not (requirements and isinstance(statement, ast.Expr)):
        return False
    call = statement.value
    return isinstance(call, ast.Call) and dotted(call.func) in requirements and _span(call)


def _falsy_exit(statement: ast.stmt) -> bool:
    """An exit that answers "no" (``return False``, ``return``, ``raise``), not one that answers
    something else."""
    if isinstance(statement, ast.Assert):
        return True
    returns = _returns_of(_off_cuda(statement)) if isinstance(statement, ast.If) else iter(())
    return all(value is None or _is_falsy_constant(value) for value, _ in returns)


def _is_falsy_constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and (node.value is False or node.value is None)


def _returns_of(body: list[ast.stmt]) -> Iterator[tuple[ast.expr | None, int]]:
    """The values a function's own ``return`` statements give, with their lines (not those of
    the functions and classes inside it): a walk of its statements, not of its expressions."""
    pending: list[ast.AST] = list(reversed(body))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            yield node.value, node.lineno
        elif not isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                pending.extend(reversed(getattr(node, field, ())))


def yields(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` is a generator (a ``yield`` of its own, not of a function in it)."""
    return holds_own(function.body, (ast.Yield, ast.YieldFrom))


def holds_own(nodes: list[ast.stmt], kinds: tuple[type, ...]) -> bool:
    """Whether a node of one of ``kinds`` is in ``nodes``, outside the functions, classes and
    lambdas defined there."""
    pending: list[ast.AST] = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, kinds):
            return True
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _marked_for_cuda(decorators: list[ast.expr], predicates: frozenset[str]) -> bool:
    """A test decorated to run only where CUDA is (``@require_cuda``,
    ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``, ``@unittest.skipUnless(...)``)."""
    for decorator in decorators:
        call = decorator if isinstance(decorator, ast.Call) else None
        name = dotted(call.func if call else decorator) or ""
        last = name.rsplit(".", 1)[-1]
        if requires_cuda(last):
            return True
        if call and call.args:
            said = says_cuda(call.args[0], predicates)
            if (last in SKIPS_IF and said is False) or (last in SKIPS_UNLESS and said is True):
                return True
    return False


def _held(test: ast.expr, negated: bool = False) -> list[str]:
    """The names ``test`` requires to hold (to fail, where ``negated``): ``F``, ``m.F``, ``f(x)``,
    each term of an ``and`` (of an ``or``, negated); ``not F`` the other way round."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _held(test.operand, not negated)
    if isinstance(test, ast.BoolOp):
        joined = ast.Or if negated else ast.And
        if not isinstance(test.op, joined):
            return []
        return [name for value in test.values for name in _held(value, negated)]
    if negated:
        return []
    name = dotted(test.func if isinstance(test, ast.Call) else test)
    return [name] if name is not None else []


def _names_cpu(statements: list[ast.stmt]) -> bool:
    """Whether ``statements`` name the CPU as a device (``"cpu"``, ``"cpu:0"``)."""
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "cpu" or node.value.startswith("cpu:"))
        for statement in statements
        for node in ast.walk(statement)
    )


def _skipped_unless(decorators: list[ast.expr]) -> list[str]:
    """The names a skip marker needs to hold for the test to run (``@skipUnless(F, ...)``,
    ``@pytest.mark.skipif(not F, ...)``)."""
    names = []
    for decorator in decorators:
        if not (isinstance(decorator, ast.Call) and decorator.args):
            continue
        last = (dotted(decorator.func) or "").rsplit(".", 1)[-1]
        if last in SKIPS_UNLESS:
            names += _held(decorator.args[0])
        elif last in SKIPS_IF:
            names += _held(decorator.args[0], negated=True)
    return names


FIXTURE_TEXT = "fixture"  # in the text of every module that defines or requests a pytest fixture


def pytest_fixtures(tree: ast.Module, questions: CudaQuestions) -> dict[str, list[Any]]:
    """The module's pytest fixtures, by the name a test requests them by (``name=`` where
    given): ``[line, stop, requested]``, where ``stop`` is the line of a check that stops the
    test unless on CUDA before the fixture gives anything (``if not torch.cuda.is_available():
    pytest.skip(...)``, ``assert x.is_cuda``, a call of a function that raises unless on CUDA;
    0 where there is none) and ``requested`` the fixtures it requests in turn."""
    found: dict[str, list[Any]] = {}
    for function in _functions_and_methods(tree):
        marker = next(filter(None, map(_fixture_marker, function.decorator_list)), None)
        if marker is None:
            continue
        keywords = marker.keywords if isinstance(marker, ast.Call) else []
        named = [
            k.value.value for k in keywords if k.arg == "name" and isinstance(k.value, ast.Constant)
        ]
        stop = _stops_unless_cuda(function, questions)
        found[str(named[0]) if named else function.name] = [
            function.lineno,
            stop,
            _requested(function),
        ]
    return found


def fixture_requests(tree: ast.Module) -> list[list[Any]]:
    """Where tests and fixtures request fixtures: ``[first line, last line, names]`` for each
    ``test*`` function or method and each fixture that requests any, by its parameters or
    ``@pytest.mark.usefixtures(...)``, and for each class so marked."""
    rows = []
    for function in _functions_and_methods(tree):
        decorators = function.decorator_list
        if function.name.startswith("test") or any(map(_fixture_marker, decorators)):
            names = _requested(function) + _used_fixtures(decorators)
            first = min([function.lineno, *(d.lineno for d in decorators)])
            if names:
                rows.append([first, function.end_lineno or function.lineno, names])
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            names = _used_fixtures(statement.decorator_list)
            if names:
                first = min([statement.lineno, *(d.lineno for d in statement.decorator_list)])
                rows.append([first, statement.end_lineno or statement.lineno, names])
    return rows


def _functions_and_methods(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for statement in tree.body:
        if isinstance(statement, FUNCTIONS):
            yield statement
        elif isinstance(statement, ast.ClassDef):
            yield from (member for member in statement.body if isinstance(member, FUNCTIONS))


def _fixture_marker(decorator: ast.expr) -> ast.expr | None:
    """``@pytest.fixture``, ``@pytest.fixture(scope="module")``, ``@fixture``: the decorator."""
    callee = decorator.func if isinstance(decorator, ast.Call) else decorator
    return decorator if (dotted(callee) or "").rsplit(".", 1)[-1] == "fixture" else None


def _requested(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The fixtures a test or fixture requests: its parameters (not ``self`` or ``cls``)."""
    arguments = function.args
    names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
    return [name for name in names if name not in ("self", "cls")]


def _used_fixtures(decorators: list[ast.expr]) -> list[str]:
    """The fixtures ``@pytest.mark.usefixtures("a", "b")`` names."""
    return [
        arg.value
        for d in decorators
        if isinstance(d, ast.Call) and (dotted(d.func) or "").endswith("usefixtures")
        for arg in d.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    ]


def _stops_unless_cuda(
    function: ast.FunctionDef | ast.AsyncFunctionDef, questions: CudaQuestions
) -> int:
    """The line of the check by which a fixture stops its test unless on CUDA (it skips,
    fails or raises; not ``return``, after which the test runs on), before it can give a
    value; 0 where it has none."""
    for statement in function.body:
        if holds_own([statement], (ast.Return, ast.Yield, ast.YieldFrom)):
            return 0
        if _requires(statement, questions.requirements) or (
            _exits_unless_cuda(statement, questions.answers) and _stops(statement)
        ):
            return statement.lineno
    return 0


def _stops(statement: ast.stmt) -> bool:
    """``assert ...``, or an ``if`` whose block ends in ``raise`` or a skip, fail or exit."""
    if isinstance(statement, ast.Assert):
        return True
    return isinstance(statement, ast.If) and _leaves(_off_cuda(statement), (ast.Raise,))


class _Reader(ast.NodeVisitor):
    """One walk of a module, carrying whether the code reached runs only on CUDA, and in which
    function or class (a qualified name: ``f``, ``C``, ``C.m``) it is.

    It visits every node of every module of the project, so its walk is ``ast.NodeVisitor``'s
    made cheaper: the method of each node type looked up once, and expression contexts
    (``Load``, ``Store``) and constants not visited."""

    # By node type: its method (``generic_visit`` where it has none), and its fields that may
    # hold nodes (not its expression context, a leaf).
    _plans: ClassVar[dict[type, tuple[Callable[[Any, Any], None], tuple[str, ...]]]] = {}

    def _plan(self, kind: type) -> tuple[Callable[[Any, Any], None], tuple[str, ...]]:
        method = getattr(type(self), f"visit_{kind.__name__}", type(self).generic_visit)
        fields: tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
        self._plans[kind] = method, tuple(field for field in fields if field != "ctx")
        return self._plans[kind]

    def visit(self, node: ast.AST) -> None:
        (self._plans.get(node.__class__) or self._plan(node.__class__))[0](self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for field in (self._plans.get(node.__class__) or self._plan(node.__class__))[1]:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if item.__class__ not in LEAF_TYPES and isinstance(item, ast.AST):
                        self.visit(item)
            elif value.__class__ not in LEAF_TYPES and isinstance(value, ast.AST):
                self.visit(value)

    def __init__(self, questions: CudaQuestions) -> None:
        self.predicates = questions.answers  # the module's functions that answer "is this CUDA?"
        self.requirements = questions.requirements  # and those that raise unless on CUDA
        self.cuda_classes = questions.cuda_classes  # classes made only on CUDA
        # What confines the code the walk is in to CUDA: a test's span, True for a name or a
        # marker, False for nothing.
        self.guarded: Guard = False
        self.unit = ""  # the qualified name of the function or class the walk is in ("" at top)
        self.depth = 0  # how many functions or classes deep
        # Within the function (or the module) the walk is in: how many branches or loops deep
        # (code there may not run).
        self.conditional = 0
        # How many `try` and `with` blocks deep (an import there may fail and be caught).
        self.attempted = 0
        # The last line of the block the walk is in (what follows a statement there runs after
        # it); 0 where that is not known (the cases of a `match`).
        self.block_end = 0
        self.units: list[list[Any]] = []
        self.bindings: dict[str, list[Any]] = {}
        self.uses: list[list[Any]] = []
        # Where each use and each import is (line, column), for the platform model to place.
        self.use_points: list[tuple[int, int]] = []
        self.import_points: list[tuple[int, int]] = []
        self.imports: list[list[Any]] = []
        self.rebinds: list[list[Any]] = []
        self.cuda_refs: list[list[Any]] = []
        self.returns_stream = False  # whether something returns `current_stream()`
        # Where code runs only once a name holds or has been called: [name, first line, last
        # line, the line of the test or call, "if" (it holds) or "call" (it was called)]. Which
        # of these names another module's check of CUDA is for the project to say.
        self.tested: list[list[Any]] = []
        # The module's top-level names by what is assigned to them, with the lines: checks of
        # CUDA (True), falsy constants (None), anything else (False); and the names made
        # `global` somewhere.
        self.assigned: dict[str, list[tuple[bool | None, int]]] = {}
        self.globals: set[str] = set()

    # --- blocks, with what makes their code run only on CUDA ------------------------------------
    def _block(self, body: list[ast.stmt], guard: Guard) -> None:
        saved, saved_end = self.guarded, self.block_end
        self.guarded = saved or guard
        if body:
            self.block_end = body[-1].end_lineno or body[-1].lineno
        for statement in body:
            self.visit(statement)
            self._test_after(statement)
            self.guarded = (
                self.guarded
                or _exits_unless_cuda(statement, self.predicates)
                or _requires(statement, self.requirements)
            )
        self.guarded, self.block_end = saved, saved_end

    def _test_after(self, statement: ast.stmt) -> None:
        """The rest of the block runs only once a name holds (after ``if not F: raise``, ``assert
        F``) or once a function has returned (after ``f(x)`` as a statement)."""
        kind = statement.__class__
        if kind is ast.Expr:
            call = statement.value  # type: ignore[attr-defined]
            name = dotted(call.func) if call.__class__ is ast.Call else None
            names, how = ([name] if name is not None else []), "call"
        elif kind is ast.Assert:
            names, how = _held(statement.test), "if"  # type: ignore[attr-defined]
        elif kind is ast.If and not statement.orelse and _leaves(statement.body):  # type: ignore[attr-defined]
            names, how = _held(statement.test, negated=True), "if"  # type: ignore[attr-defined]
        else:
            return
        first, last = (statement.end_lineno or statement.lineno) + 1, self.block_end
        if first <= last:
            for name in self._imported_names(names):
                self.tested.append([name, first, last, statement.lineno, how])

    def _imported_names(self, names: list[str]) -> list[str]:
        """Those of ``names`` whose first part an import bound (so far: imports come first)."""
        bindings = self.bindings
        return [n for n in names if bindings.get(n.partition(".")[0], ("",))[0] != ""]

    def _test_region(self, test: ast.expr, body: list[ast.stmt], other: list[ast.stmt]) -> None:
        """``body`` runs only where the names ``test`` requires hold (not where ``other``, the
        path taken when they do not, picks the CPU: then the test chooses the device)."""
        names = self._imported_names(_held(test)) if body else []
        if not names or _names_cpu(other):
            return
        first, last = body[0].lineno, body[-1].end_lineno or body[-1].lineno
        for name in names:
            self.tested.append([name, first, last, test.lineno, "if"])

    def visit_Module(self, node: ast.Module) -> None:
        self._block(node.body, False)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        if _is_type_checking(node.test):
            return  # imports for type checkers only: never run
        self.conditional += 1
        self._if(node)
        self.conditional -= 1

    def _if(self, node: ast.If) -> None:
        said = says_cuda(node.test, self.predicates)
        self._test_region(node.test, node.body, node.orelse)
        if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not):
            self._test_region(node.test.operand, node.orelse, node.body)
        self._block(node.body, said is True and _span(node.test))
        chain_other = asks_other_device(node.test)
        orelse = node.orelse
        # The `else` of a dispatch over other devices (`if is_xpu(): ... elif is_npu(): ... else:`)
        while len(orelse) == 1 and isinstance(orelse[0], ast.If):
            branch = orelse[0]
            self.visit(branch.test)
            self._test_region(branch.test, branch.body, branch.orelse)
            chain_other = chain_other and asks_other_device(branch.test)
            said_here = says_cuda(branch.test, self.predicates)
            self._block(branch.body, said_here is True and _span(branch.test))
            orelse = branch.orelse
        dispatch = chain_other and bool(orelse)
        self._block(orelse, (said is False and _span(node.test)) or dispatch)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        said = says_cuda(node.test, self.predicates)
        self._expression(node.body, said is True and _span(node.test))
        self._expression(node.orelse, said is False and _span(node.test))

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        saved = self.guarded
        for value in node.values:  # `<CUDA> and f()`: f runs only on CUDA
            self.visit(value)
            if isinstance(node.op, ast.And) and says_cuda(value, self.predicates) is True:
                self.guarded = self.guarded or _span(value)
        self.guarded = saved

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        self.visit(node.iter if isinstance(node, (ast.For, ast.AsyncFor)) else node.test)
        self.conditional += 1
        self._block(node.body, False)
        self._block(node.orelse, False)
        self.conditional -= 1

    visit_For = visit_AsyncFor = visit_While = _loop

    def _branching(self, node: ast.AST) -> None:
        saved_end = self.block_end
        # (A handler's body is its block; the cases of a `match` are not known here.)
        self.block_end = node.end_lineno or 0 if isinstance(node, ast.ExceptHandler) else 0
        self.conditional += 1
        self.generic_visit(node)
        self.conditional -= 1
        self.block_end = saved_end

    visit_Match = visit_ExceptHandler = _branching

    def visit_Try(self, node: ast.Try) -> None:  # (and `try`/`except*`, of the same fields)
        self.attempted += 1
        self._block(node.body, False)
        self.attempted -= 1
        for handler in node.handlers:
            self.visit(handler)
        self._block(node.orelse, False)
        self._block(node.finalbody, False)

    visit_TryStar = visit_Try

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item)
        self.attempted += 1  # (`with suppress(ImportError):`)
        self._block(node.body, False)
        self.attempted -= 1

    visit_With = visit_AsyncWith = _with

    def _expression(self, node: ast.AST, guard: Guard) -> None:
        saved = self.guarded
        self.guarded = saved or guard
        self.visit(node)
        self.guarded = saved

    def _unit(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        if isinstance(node, ast.ClassDef):
            for base in [*node.bases, *node.keywords]:
                self.visit(base)
        else:  # (not its annotations: naming a type is no use)
            for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
                self.visit(default)
        if not self.depth:  # a definition of the module's: its uses are the module's own
            self.bindings.setdefault(node.name, ["", node.name, node.lineno])
        saved = self.unit, self.depth, self.conditional, self.attempted
        self.conditional = self.attempted = 0
        named = self.depth < 2 and (not self.unit or "." not in self.unit)
        if named:
            self.unit = f"{self.unit}.{node.name}" if self.unit else node.name
            self.units.append([self.unit, node.lineno, node.end_lineno or node.lineno])
        self.depth += 1
        for name in self._imported_names(_skipped_unless(node.decorator_list)):
            first = min(d.lineno for d in node.decorator_list)
            self.tested.append([name, first, node.end_lineno or node.lineno, first, "if"])
        cuda_only = (
            names_cuda(node.name)
            or _marked_for_cuda(node.decorator_list, self.predicates)
            or (
                isinstance(node, ast.ClassDef)
                and self.depth == 1
                and node.name in self.cuda_classes
            )
        )
        self._block(node.body, cuda_only)
        self.unit, self.depth, self.conditional, self.attempted = saved

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _unit

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)  # (not its annotation: naming a type is no use)
        if node.value is not None:
            self._top_level(node.target, node.value)
            self.visit(node.value)

    # --- what the project index records ---------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(alias.name, node)
            if alias.asname:
                self.bindings.setdefault(alias.asname, [alias.name, "", node.lineno])
            else:
                first = alias.name.split(".")[0]
                self.bindings.setdefault(first, [first, "", node.lineno])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = "." * node.level + (node.module or "")
        self._imported(base, node)
        for alias in node.names:
            if alias.name == "*":
                continue
            self._imported(f"{base}.{alias.name}" if node.module else base + alias.name, node)
            local = alias.asname or alias.name
            self.bindings.setdefault(local, [base, alias.name, node.lineno])

    def _imported(self, module: str, node: ast.stmt) -> None:
        """Every module an import statement may load (``from a import b``: ``a`` and ``a.b``, one
        of which is a module), with whether it runs only on CUDA, where, whether it runs
        whenever the code of its function (or module) after it does (at the function's own
        level, in no branch, loop, ``try`` or ``with``), and the last line of its block (the
        code after it up to there runs only once it has)."""
        certain = not self.conditional and not self.attempted
        self.imports.append([module, node.lineno, self.guarded, self.unit, certain, self.block_end])
        self.import_points.append((node.lineno, node.col_offset))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.uses.append([node.id, node.lineno, self.guarded, self.unit])
            self.use_points.append((node.lineno, node.col_offset))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = dotted(node)
        if name is None or not isinstance(node.ctx, ast.Load):
            self.generic_visit(node)
            return
        parts = name.split(".")
        if parts[:2] == ["torch", "cuda"] and len(parts) > 2:
            self.cuda_refs.append([node.lineno, node.col_offset, parts[2]])
        self.uses.append([name, node.lineno, self.guarded, self.unit])
        self.use_points.append((node.lineno, node.col_offset))

    def visit_Return(self, node: ast.Return) -> None:
        self.returns_stream = self.returns_stream or _fetches_stream(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._rebound(target, node)
            self._top_level(target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._top_level(node.target, None)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.globals.update(node.names)

    def _top_level(self, target: ast.AST, value: ast.expr | None) -> None:
        """What a top-level name is assigned (``value`` None: changed in place); a
        ``pytestmark`` that skips the module unless a name holds makes the module's code need it."""
        if self.depth or not isinstance(target, ast.Name):
            return
        if target.id == "pytestmark" and value is not None:
            for name in self._imported_names(_skipped_unless([value])):
                self.tested.append([name, 1, 1 << 30, target.lineno, "if"])
        said = value is not None and says_cuda(value, self.predicates) is True
        falsy = value is not None and _is_falsy_constant(value)
        kind = True if said else None if falsy else False
        self.assigned.setdefault(target.id, []).append((kind, target.lineno))

    def _rebound(self, target: ast.AST, node: ast.Assign) -> None:
        """``torch.cuda.Event = torch.xpu.Event`` (or all of ``torch.cuda``): the project puts its
        own object there. One under a condition within its function does not count: it does not
        hold everywhere the function runs. Each is kept with its function, and with whether its
        value names another device (a device backend's shim, the best evidence to show)."""
        name = dotted(target) if isinstance(target, ast.Attribute) else None
        if name is None or self.conditional:
            return
        parts = name.split(".")
        attribute = "*" if parts == ["torch", "cuda"] else parts[2] if len(parts) == 3 else None
        if parts[:2] == ["torch", "cuda"] and attribute is not None:
            device = any(
                names_other_device(dotted(n) or "")
                for n in ast.walk(node.value)
                if isinstance(n, (ast.Name, ast.Attribute))
            )
            self.rebinds.append([attribute, node.lineno, self.unit, device])


def _lasting(rebinds: list[list[Any]]) -> list[list[Any]]:
    """The rebindings that last: not one that its own function makes twice (a patch and its
    restore, ``torch.cuda.Event = ...`` then ``torch.cuda.Event = saved`` in a ``finally``).
    Each as [attribute, line, whether its value names another device]."""
    made = Counter((attribute, unit) for attribute, _, unit, _ in rebinds)
    return [
        [attribute, line, device]
        for attribute, line, unit, device in rebinds
        if made[attribute, unit] == 1
    ]


def _is_type_checking(test: ast.AST) -> bool:
    return dotted(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


# A function that hands out the ambient stream: `return torch.cuda.current_stream()`, as text.
RETURNS_AMBIENT_STREAM = re.compile(r"return\s+[\w.]*\bcurrent_stream\(")


def stream_helpers(tree: ast.Module) -> list[str]:
    """The module's functions that return the ambient stream (``return torch.cuda.current_stream()``,
    or any ``current_stream()``): a capture on their result captures on the ambient stream."""
    found = []
    for node in tree.body:
        functions = (ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, functions) and any(map(_fetches_stream, ast.walk(node))):
            found.append(node.name)
    return found


def subclasses(kind: type) -> Iterator[type]:
    yield kind
    sub: type
    for sub in kind.__subclasses__():
        yield from subclasses(sub)


# Nodes with nothing the reader records below them, by their exact types.
LEAF_TYPES = frozenset(
    kind
    for leaf in (ast.expr_context, ast.Constant, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)
    for kind in subclasses(leaf)
)


def _fetches_stream(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Return)
        and isinstance(node.value, ast.Call)
        and (dotted(node.value.func) or "").rsplit(".", 1)[-1] == "current_stream"
    )


def facts_of(
    tree: ast.Module, source: str, path: str, packages: frozenset[str], settings: Settings | None
) -> dict[str, Any]:
    """:func:`read_module` of the module at ``path``, with its platform model where ``settings``
    turn it on (the model the rules then read: :func:`portlint.model.module_model`)."""
    model = module_model(tree, source, path, settings) if settings else None
    return read_module(tree, packages, model)


def read_module(
    tree: ast.Module, packages: frozenset[str], model: PlatformModel | None = None
) -> dict[str, Any]:
    """The index's facts of one module (see the module docstring), as JSON-ready lists. Only the
    uses that can name the project's code are kept: names the module defines, or imports
    relatively or from one of ``packages`` (the top-level packages of the project). With the
    module's ``model`` (``platform-model = "flow"``), also where it places each use and each
    import."""
    questions = cuda_questions(tree)
    reader = _Reader(questions)
    reader.visit(tree)
    ours = {
        local
        for local, (source, _, _) in reader.bindings.items()
        if source == "" or source.startswith(".") or source.split(".")[0] in packages
    }
    kept = [index for index, use in enumerate(reader.uses) if use[0].split(".")[0] in ours]
    imported = [
        index
        for index, row in enumerate(reader.imports)
        if row[0].split(".")[0] in packages or row[0].startswith(".")
    ]
    return {
        "units": reader.units,
        "bindings": [[local, *reader.bindings[local]] for local in sorted(ours)],
        "uses": [reader.uses[index] for index in kept],
        "imports": [reader.imports[index] for index in imported],
        "top_imports": [list(found) for found in top_level_imports(tree)],
        "extension": extension_build(tree),
        "rebinds": _lasting(reader.rebinds),
        "cuda_refs": reader.cuda_refs,
        "kernels": kernels_in(tree),
        "stream_helpers": stream_helpers(tree) if reader.returns_stream else [],
        "tested": [row for row in reader.tested if row[0].partition(".")[0] in ours],
        "cuda_names": _cuda_names(reader, questions),
        "fixtures": pytest_fixtures(tree, questions),
        "fixture_requests": fixture_requests(tree),
        # Where the platform model places each use and each import (the evidence's line; -1:
        # anywhere), and the evidence that the whole module runs only on CUDA.
        **(_placed(model, reader, kept, imported) if model else {}),
    }


def _placed(
    model: PlatformModel, reader: _Reader, uses: list[int], imports: list[int]
) -> dict[str, Any]:
    return {
        "placed": [
            model.placed(reader.use_points[index] for index in uses),
            model.placed(reader.import_points[index] for index in imports),
        ],
        "confined": model.whole(),
        "platform": model.exports(),  # (what other modules' pending evidence asks)
    }


def _cuda_names(reader: _Reader, questions: CudaQuestions) -> dict[str, list[Any]]:
    """What the module's top-level names tell another module that tests or calls them, by name:
    ``["holds", line]`` for a name that holds only on CUDA (a flag assigned only checks of CUDA,
    or falsy constants: ``_SUPPORTS_FLEX = torch.cuda.is_available() and ...``; a function that
    answers "is this CUDA?"), ``["requires", line]`` for a function that raises unless on CUDA."""
    found: dict[str, list[Any]] = {}
    for name, values in reader.assigned.items():
        kinds = [kind for kind, _ in values]
        # (Not a name the module also imports or defines, nor one a function rebinds.)
        unchanged = name not in reader.globals and name not in reader.bindings
        if True in kinds and False not in kinds and unchanged:
            found[name] = ["holds", next(line for kind, line in values if kind)]
    lines = {row[0]: row[1] for row in reader.units}
    for kind, names in (("holds", questions.answers), ("requires", questions.requirements)):
        for name in names:
            if name in lines:  # (a top-level function; not a method, `self.m`)
                found[name] = [kind, lines[name]]
    return found
