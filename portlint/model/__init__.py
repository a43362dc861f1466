"""One model of where code runs: for each line and column of a module, whether it runs only on
CUDA (or ROCm), with the evidence, or may run anywhere.

The model reads Python's ``ast`` of the module: one evaluator of conditions
(:mod:`portlint.model.conditions`), one flow pass per scope (:mod:`portlint.model.flow`), one
table of recognisers (:mod:`portlint.model.recognisers`), and the summaries of the module's
functions (cannot return unless on CUDA, answers a test of CUDA, used only in CUDA-only code),
taken to a fixpoint by passing again while a pass learns something new. The device, API and
stream rules ask it through :meth:`PlatformModel.where` (``platform-inferences = []`` turns it
off).
"""

from __future__ import annotations

import ast
import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from portlint.findings import split_lines
from portlint.index.kernels import is_kernel
from portlint.model.conditions import (
    DEVICE_SET,
    Evidence,
    bindings_of,
    is_pending,
    origins_of,
    resolver,
)
from portlint.model.flow import Flow
from portlint.model.places import END, FUNCTIONS, Check, Region, Summaries, statements_in
from portlint.model.recognisers import Recognisers
from portlint.platform import dotted, foreign_libraries
from portlint.settings import Settings

# The passes walk until the summaries settle; this many is a backstop against summaries that
# never do (none of vLLM's and SGLang's 7,950 modules: the slowest settled in its eighth pass,
# 21 needed more than four).
MAX_PASSES = 16
MAX_QUOTED = 80


class ModuleText:
    """What the passes read of a module: its tree, its text, its names, the settings."""

    def __init__(self, tree: ast.Module, source: str, guard_functions: Iterable[str]) -> None:
        self.tree = tree
        # (As Python numbers them: `str.splitlines` also ends a line at a form feed.)
        self.lines = [line.rstrip("\r\n") for line in split_lines(source)]
        imports: list[ast.Import | ast.ImportFrom] = []
        fixtures: dict[str, str] = {}  # (a fixture's name, as tests request it -> its function)
        autouse: list[str] = []
        classes: set[str] = set()
        rebound: set[str] = set()
        functions = {"__file__"}  # (and `__file__`: a worker launched by its tests)
        for node in statements_in(tree.body, own=False):  # (imports anywhere in it, fixtures)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.append(node)
            elif isinstance(node, ast.ClassDef):
                classes.add(node.name)
                functions.update(
                    f"{node.name}.{f.name}" for f in node.body if isinstance(f, FUNCTIONS)
                )
            elif isinstance(node, ast.Global):
                rebound.update(node.names)
            elif isinstance(node, FUNCTIONS):
                functions.add(node.name)
                for decorator in filter(_is_fixture, node.decorator_list):
                    keywords = _keywords(decorator)
                    name = keywords.get("name")
                    fixtures[name if isinstance(name, str) else node.name] = node.name
                    if keywords.get("autouse") is True and node in tree.body:
                        autouse.append(node.name)
        self.fixtures = fixtures
        self.autouse = tuple(autouse)  # (the module's fixtures that every test of it takes)
        # The module's names that a function rebinds (`global HAVE_CUPY`): set there too.
        self.rebound = frozenset(rebound)
        # The module's classes: `A.m(y)` is a use of method `A.m` only where `A` is one of them.
        self.classes = frozenset(classes)
        # What a use is recorded of (:attr:`Summaries.uses`): the module's functions and methods
        # (``f``, ``A.m``), whose every use may be confined.
        self.functions = frozenset(functions)
        # The names that launch one of the module's Triton kernels when called (`kernel[grid]`,
        # an alias `_kernel = kernel`), and the module's functions that launch one, at any depth.
        self.kernels = _launchers(tree)
        self.resolve = resolver(bindings_of(imports))
        self.origins = origins_of(tree)
        self.guard_functions = frozenset(guard_functions)

    def segment(self, node: Any) -> str:
        """The code of an expression or a statement on one line, cut short where long."""
        if not self.lines:  # (the project index's: no text kept, the code written again)
            text = ast.unparse(node)
            return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 4].rstrip() + " ..."
        line, end = node.lineno, node.end_lineno or node.lineno
        start, stop = node.col_offset, node.end_col_offset or 0
        if line == end:
            text = _chars(self.lines[line - 1], start, stop)
        else:
            text = " ".join(
                [_chars(self.lines[line - 1], start, None).strip()]
                + [self.lines[n].strip() for n in range(line, end - 1)]
                + [_chars(self.lines[end - 1], 0, stop).strip()]
            )
        return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 3].rstrip() + " ..."


def _launchers(tree: ast.Module) -> frozenset[str]:
    """The module's Triton kernels and their aliases, and the functions of the module that
    launch one of them (``kernel[grid](...)``) or call a function that does."""
    kernels = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef) and is_kernel(node)
    }
    kernels.update(
        node.targets[0].id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Name)
        and node.value.id in kernels
    )
    if not kernels:
        return frozenset()
    called = {  # (each function's calls, walked once: `f(...)` and `k[grid](...)` alike)
        f.name: {
            callee.id
            for node in ast.walk(f)
            if isinstance(node, ast.Call)
            and isinstance(
                callee := node.func.value if isinstance(node.func, ast.Subscript) else node.func,
                ast.Name,
            )
        }
        for f in tree.body
        if isinstance(f, FUNCTIONS)
    }
    launching = set(kernels)
    while more := {f for f, names in called.items() if f not in launching and names & launching}:
        launching |= more
    return frozenset(launching)


class _Regions:
    """Regions, to find one around a point fast (a module has thousands of points to place)."""

    def __init__(self, regions: list[Region]) -> None:
        self.regions = sorted(regions, key=lambda r: r.start)
        self.starts = [r.start for r in self.regions]
        self.reach = list(itertools.accumulate((r.end for r in self.regions), max))

    def around(self, point: tuple[int, int]) -> Region | None:
        """The region around ``point`` that starts nearest it, if one is."""
        return next(self.all_around(point), None)

    def all_around(self, point: tuple[int, int]) -> Iterator[Region]:
        """The regions around ``point``, the one that starts nearest it first."""
        index = bisect.bisect_right(self.starts, point)  # (the regions that start before it)
        if not index or point >= self.reach[index - 1]:  # (none of them ends after it)
            return
        for i in range(index - 1, -1, -1):
            if point < self.regions[i].end:
                yield self.regions[i]


def _keywords(call: ast.expr) -> dict[str, object]:
    """The constant keyword arguments of a call (``@pytest.fixture(autouse=True)``)."""
    if not isinstance(call, ast.Call):
        return {}
    return {
        k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant) and k.arg
    }


def _is_fixture(decorator: ast.expr) -> bool:
    callee = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (dotted(callee) or "").rsplit(".", 1)[-1] == "fixture"


def _chars(line: str, start: int, stop: int | None) -> str:
    """The characters of ``line`` between two UTF-8 byte offsets (as ``ast`` counts columns)."""
    if line.isascii():
        return line[start:stop]
    return line.encode()[start:stop].decode(errors="replace")


def module_model(tree: ast.Module, source: str, path: str, settings: Settings) -> PlatformModel:
    """The model of the module at ``path``, with ``settings``' libraries and guard functions:
    made once where the project index and the rules read the same tree in turn (one job reads
    a file's facts, then lints it), by keeping the last one made."""
    libraries = foreign_libraries(path, settings.root, settings.cuda_only_imports)
    key = (libraries, settings.guard_functions, source)
    if _LAST and _LAST[0] is tree and _LAST[1] == key:
        return _LAST[2]
    model = PlatformModel(tree, source, libraries, settings.guard_functions)
    _LAST[:] = [tree, key, model]
    return model


_LAST: list[Any] = []  # (the tree, the key and the model that `module_model` made last)


class PlatformModel:
    """Where each part of a module runs (see the module's docstring)."""

    def __init__(
        self,
        tree: ast.Module,
        source: str,
        libraries: tuple[str, ...],
        guard_functions: Iterable[str] = (),
    ) -> None:
        self.text = ModuleText(tree, source, guard_functions)
        recognisers = Recognisers(tree, self.text.lines, libraries)
        summaries = Summaries()
        flow: Flow | None = None
        for _ in range(MAX_PASSES):
            if flow is not None:  # (the last pass's conditions: their callbacks make a cycle)
                flow.conditions = None  # type: ignore[assignment]
            flow = Flow(self.text, recognisers, summaries)
            flow.module()
            flow.finish()
            learnt = _learnt(flow.summaries)
            if learnt == _learnt(summaries):
                break
            summaries = flow.summaries
        assert flow is not None
        self.regions: list[Region] = flow.regions
        self.pending: list[Region] = flow.pending
        self.checks: list[Check] = list(flow.checks)
        self.needed: frozenset[int] = frozenset(flow.needed)
        self.implied: dict[int, frozenset] = flow.implied
        self._exports = _exports(flow)
        self._requires = {name: found.line for name, found in flow.summaries.requires.items()}
        flow.conditions = None  # type: ignore[assignment]  # (so the walk holds no cycle)

    def _point(self, line: int, column: int) -> tuple[int, int]:
        """A finding's position (1-based, columns in characters) as ``ast`` counts it."""
        text = self.text.lines[line - 1] if 0 < line <= len(self.text.lines) else ""
        return line, column - 1 if text.isascii() else len(text[: column - 1].encode())

    def where(self, line: int, column: int) -> list[Evidence]:
        """The evidence that the code at ``line`` and ``column`` (1-based, in characters, as
        findings count them) runs only on CUDA: of each region around it, the innermost first;
        none: it may run anywhere."""
        point = self._point(line, column)
        return [
            r.evidence
            for r in sorted((r for r in self.regions if r.start <= point < r.end), reverse=True)
        ]

    def placed(self, points: Iterable[tuple[int, int]]) -> list[Any]:
        """For each point (a line, and a column in UTF-8 bytes as ``ast`` counts it), the line
        of evidence that the code there runs only on CUDA (of a region around it; the module's
        path: 0); else what the regions around it wait for (``[[want, module, name], ...]``:
        :func:`~portlint.model.conditions.pending`, for the project to answer: one is enough);
        else -1: it may run anywhere."""
        known, waiting = _Regions(self.regions), _Regions(self.pending)
        found: list[Any] = []
        for point in points:
            region = known.around(point)
            if region is not None:
                found.append(region.evidence.line)
                continue
            wanted = dict.fromkeys(r.evidence.why for r in waiting.all_around(point))
            found.append([why.split(" ") for why in wanted] or -1)
        return found

    def exports(self) -> dict[str, list]:
        """What the module's top-level names tell the modules that import them, for their
        pending evidence (:func:`~portlint.model.conditions.pending`): ``["test", why, line]``
        for a name bound to a test that holds only on CUDA, or to a value made only there, and
        for a function that gives a true value only on CUDA; ``["marker", why, line]`` for a
        skip marker unless CUDA; ``["requires", why, line]`` for a function that cannot return
        unless on CUDA."""
        return self._exports

    def requirement(self, name: str) -> int:
        """The line of the evidence by which the function ``name`` (``f``, ``Class.method``)
        cannot return unless on CUDA (it skips, fails or raises first); 0 where it can."""
        return self._requires.get(name, 0)

    def whole(self) -> list | None:
        """Why the whole module runs only on CUDA (``[kind, why, line]``), where it does: it
        builds a CUDA extension, or imports a CUDA-only library, at its top level."""
        first = (self.text.tree.body[0].lineno, 0) if self.text.tree.body else (1, 0)
        for region in self.regions:
            if region.start <= first and region.end == END:
                return [region.evidence.kind, region.evidence.why, region.evidence.line]
        return None

    def check(self, line: int, column: int, needed: set[int]) -> Evidence | None:
        """Where the code at ``line`` and ``column`` is a test that confines CUDA-only code:
        the code each of its tests decides holds something that needs CUDA (``needed``: the
        lines of the tests whose evidence covers a CUDA-only API; the model adds those that
        cover a use of a CUDA-only library)."""
        point = self._point(line, column)
        needs = needed | self.needed
        for decided in needed:
            needs |= self.implied.get(decided, frozenset())
        for found in sorted((c for c in self.checks if c.start <= point < c.end), reverse=True):
            if found.confines(needs):
                return found.evidence
        return None

    def pending_rows(self) -> list[list]:
        """The regions whose evidence waits for what another module says (the project's to
        judge: :meth:`portlint.index.project.Project.judge`), as JSON-ready rows: what must be
        said (``want``), of which name of which module (as imported), and where the region is
        (lines, and columns in characters, as findings count them) and its evidence's line."""
        rows = []
        for region in self.pending:
            parts = region.evidence.why.split(" ")
            if len(parts) != 3:  # (pending evidence says what it waits for: `pending()`)
                continue
            want, module, name = parts
            start, end = self._columns(region.start), self._columns(region.end)
            rows.append([want, module, name, *start, *end, region.evidence.line])
        return rows

    def _columns(self, point: tuple[int, int]) -> tuple[int, int]:
        """``(line, byte offset)`` as ``(line, character offset)``."""
        line, offset = point
        text = self.text.lines[line - 1] if 0 < line <= len(self.text.lines) else ""
        return line, offset if text.isascii() else len(
            text.encode()[:offset].decode(errors="replace")
        )


def _learnt(summaries: Summaries) -> tuple:
    confined = frozenset(name for name, uses in summaries.uses.items() if uses and None not in uses)
    return frozenset(summaries.requires), frozenset(summaries.predicates), confined


def _exports(flow: Flow) -> dict[str, list]:
    """What :meth:`PlatformModel.exports` gives, from the finished walk."""
    found: dict[str, list] = {
        name: [
            DEVICE_SET + ",".join(sorted(devices)),
            f"`{name}` is one of {', '.join(sorted(devices))} (what it is bound to returns)",
            flow.device_lines[name],
        ]
        for name, devices in flow.devices.items()
    }
    scope = flow.scope  # (the module's, once the walk is done)
    for name, made in scope.made.items():
        if isinstance(made, Evidence):
            found[name] = ["test", f"`{name}` is made only under {made.why}", made.line]
    for name, flag in scope.flags.items():
        evidence = flag.meaning.if_true
        if evidence is not None and not is_pending(evidence):
            found[name] = [
                "test",
                f"`{name}` holds only under {evidence.why}",
                flag.value.lineno,
            ]
    for kind, table in (
        ("test", flow.summaries.predicates),
        ("requires", flow.summaries.requires),
    ):
        for name, evidence in table.items():
            if "." not in name:  # (a function of the module, not a method)
                found[name] = [kind, evidence.why, evidence.line]
    for name in flow.recognisers.markers:
        evidence = flow.recognisers.marker(ast.Name(name), flow)
        if evidence is not None and not is_pending(evidence):
            found[name] = ["marker", evidence.why, evidence.line]
    return found
