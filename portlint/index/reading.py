"""What one module tells the project index, read from Python's ``ast`` (never LibCST).

The index needs, of every module of the tree, only what other modules' findings depend on
(:mod:`portlint.index.project`): what it imports and where, the functions and classes it
defines, every use of a name that an import or a definition bound, the ``torch.cuda``
attributes it rebinds, where it refers to ``torch.cuda`` attributes at all, and its pytest
fixtures. Where each use and import runs (only on CUDA, or anywhere) is the platform model's
answer (:mod:`portlint.model`), read with the module's facts (:func:`facts_of`). The result is
plain data (lists, strings, numbers), so the index's store can keep it as JSON.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from portlint.index.kernels import kernels_in
from portlint.model import PlatformModel, module_model
from portlint.platform import (
    dotted,
    extension_build,
    import_bindings,
    names_other_device,
    top_level_imports,
)
from portlint.settings import Settings

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


FIXTURE_TEXT = "fixture"  # in the text of every module that defines or requests a pytest fixture


def pytest_fixtures(tree: ast.Module, model: PlatformModel | None) -> dict[str, list[Any]]:
    """The module's pytest fixtures, by the name a test requests them by (``name=`` where
    given): ``[line, stop, requested]``, where ``stop`` is the line of the evidence by which the
    fixture cannot give its value unless on CUDA (it skips, fails or raises first: the platform
    model's summary of it; 0 where there is none) and ``requested`` the fixtures it requests in
    turn."""
    found: dict[str, list[Any]] = {}
    for function, owner in _functions_and_methods(tree):
        marker = next(filter(None, map(_fixture_marker, function.decorator_list)), None)
        if marker is None:
            continue
        keywords = marker.keywords if isinstance(marker, ast.Call) else []
        named = [
            k.value.value for k in keywords if k.arg == "name" and isinstance(k.value, ast.Constant)
        ]
        qualified = f"{owner}.{function.name}" if owner else function.name
        stop = model.requirement(qualified) if model is not None else 0
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
    for function, _ in _functions_and_methods(tree):
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


def _functions_and_methods(
    tree: ast.Module,
) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """The module's functions and its classes' methods, each with its class ("" for none)."""
    for statement in tree.body:
        if isinstance(statement, FUNCTIONS):
            yield statement, ""
        elif isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, FUNCTIONS):
                    yield member, statement.name


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


class _Reader(ast.NodeVisitor):
    """One walk of a module, carrying in which function or class (a qualified name: ``f``,
    ``C``, ``C.m``) the code reached is.

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

    def __init__(self) -> None:
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

    # --- blocks --------------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt]) -> None:
        saved_end = self.block_end
        if body:
            self.block_end = body[-1].end_lineno or body[-1].lineno
        for statement in body:
            self.visit(statement)
        self.block_end = saved_end

    def visit_Module(self, node: ast.Module) -> None:
        self._block(node.body)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        if _is_type_checking(node.test):
            return  # imports for type checkers only: never run
        self.conditional += 1
        self._block(node.body)
        self._block(node.orelse)
        self.conditional -= 1

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        self.visit(node.iter if isinstance(node, (ast.For, ast.AsyncFor)) else node.test)
        self.conditional += 1
        self._block(node.body)
        self._block(node.orelse)
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
        self._block(node.body)
        self.attempted -= 1
        for handler in node.handlers:
            self.visit(handler)
        self._block(node.orelse)
        self._block(node.finalbody)

    visit_TryStar = visit_Try

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item)
        self.attempted += 1  # (`with suppress(ImportError):`)
        self._block(node.body)
        self.attempted -= 1

    visit_With = visit_AsyncWith = _with

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
        self._block(node.body)
        self.unit, self.depth, self.conditional, self.attempted = saved

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _unit

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)  # (not its annotation: naming a type is no use)
        if node.value is not None:
            self.visit(node.value)

    # --- what the project index records ---------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(alias.name, node)
        for local, source, attribute in import_bindings(node):
            self.bindings.setdefault(local, [source, attribute, node.lineno])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = "." * node.level + (node.module or "")
        self._imported(base, node)
        for alias in node.names:
            if alias.name != "*":
                self._imported(f"{base}.{alias.name}" if node.module else base + alias.name, node)
        for local, source, attribute in import_bindings(node):
            self.bindings.setdefault(local, [source, attribute, node.lineno])

    def _imported(self, module: str, node: ast.stmt) -> None:
        """Every module an import statement may load (``from a import b``: ``a`` and ``a.b``, one
        of which is a module), where, whether it runs
        whenever the code of its function (or module) after it does (at the function's own
        level, in no branch, loop, ``try`` or ``with``), and the last line of its block (the
        code after it up to there runs only once it has)."""
        certain = not self.conditional and not self.attempted
        self.imports.append([module, node.lineno, self.unit, certain, self.block_end])
        self.import_points.append((node.lineno, node.col_offset))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.uses.append([node.id, node.lineno, self.unit])
            self.use_points.append((node.lineno, node.col_offset))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = dotted(node)
        if name is None or not isinstance(node.ctx, ast.Load):
            self.generic_visit(node)
            return
        parts = name.split(".")
        if parts[:2] == ["torch", "cuda"] and len(parts) > 2:
            self.cuda_refs.append([node.lineno, node.col_offset, parts[2]])
        self.uses.append([name, node.lineno, self.unit])
        self.use_points.append((node.lineno, node.col_offset))

    def visit_Return(self, node: ast.Return) -> None:
        self.returns_stream = self.returns_stream or _fetches_stream(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._rebound(target, node)
        self.generic_visit(node)

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
    """:func:`read_module` of the module at ``path``, with its platform model (the model the
    rules then read: :func:`portlint.model.module_model`)."""
    return read_module(tree, packages, module_model(tree, source, path, settings or Settings()))


def read_module(
    tree: ast.Module, packages: frozenset[str], model: PlatformModel | None = None
) -> dict[str, Any]:
    """The index's facts of one module (see the module docstring), as JSON-ready lists. Only the
    uses that can name the project's code are kept: names the module defines, or imports
    relatively or from one of ``packages`` (the top-level packages of the project). With the
    module's platform ``model``, also where it places each use and each import, and where its
    fixtures stop unless on CUDA."""
    reader = _Reader()
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
        "fixtures": pytest_fixtures(tree, model),
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
