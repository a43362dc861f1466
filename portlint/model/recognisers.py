"""The recognisers of the platform model, applied to a module: the rows of
:data:`portlint.model.rows.ROWS`, each where the flow pass asks (a definition, a statement's
sequel, the whole module)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from portlint.facts import (
    CUDA_DEVICE_TYPES,
    CUDA_ONLY_SHARED_LIBRARIES,
    CUDA_SOURCE_SUFFIXES,
    OTHER_DEVICES,
)
from portlint.model.conditions import (
    ENUM_MEMBERS,
    PENDING,
    Evidence,
    Meaning,
    is_pending,
    names_only_cuda,
    pending,
)
from portlint.model.markers import (
    SKIP_IF,
    SKIP_UNLESS,
    is_pytestmark,
    markers_of,
    skip_condition,
    used_fixtures,
)
from portlint.model.places import SET_UP
from portlint.platform import (
    dotted,
    extension_build,
    first_import_of,
    given_cuda,
    library_bindings,
)

REGISTERS = frozenset({"impl", "register_kernel"})
# A decorator's arguments that name the device types (or the platform) a function or class is
# made for (not autocast's `device_type`: the device it picks).
DEVICE_TYPES = frozenset({"device_types", "devicetypes", "only_for", "platform"})
# The attributes by which a platform class gives its device's name or type.
DEVICE_ATTRIBUTES = frozenset({"device_name", "device_type", "dispatch_key", "_name"})
# The attributes by which a class (an operator's) names the devices it supports.
DEVICE_SETS = frozenset({"supported_devices", "supports_devices", "device_types", "devices"})
# What a class of no base declares only where its name says so (`devices = ["cuda"]`: a default).
SUPPORTS = re.compile(r"(?i)support")
DISPATCHED = ("cuda", "hip", "rocm")
SIBLINGS = ("native", "cpu", *sorted(OTHER_DEVICES))
# torch's distributed test cases: a process per rank of `world_size`, none where it is 0.
HARNESSES = frozenset(
    {"MultiProcessTestCase", "FSDPTest", "DTensorTestBase", "MultiProcContinuousTest"}
)


class Recognisers:
    """The rows of :data:`ROWS`, applied to one module: ``libraries`` are the NVIDIA- and
    AMD-only libraries it may import (``cuda-only-imports``, less its own package)."""

    def __init__(self, tree: ast.Module, lines: list[str], libraries: tuple[str, ...]) -> None:
        self.libraries = libraries
        self.bound = library_bindings(tree, libraries)  # a name -> the library it is
        # The lines whose text holds one of those names (no other statement can use one).
        named = re.compile("|".join(map(re.escape, self.bound))) if self.bound else None
        self.bound_lines = frozenset(
            number for number, line in enumerate(lines, 1) if named and named.search(line)
        )
        self.markers = markers_of(tree)
        self.platforms: set[str] = set()  # (its classes declared for CUDA: the base of others)

    def module(self, tree: ast.Module, flow) -> Evidence | None:
        """Why the whole module runs only on CUDA: it builds a CUDA extension as it is imported,
        or its ``pytestmark`` skips its tests unless CUDA. (Each skip marker it names, applied
        here or in other modules, makes its test a check: :meth:`marker`.)"""
        for marker in self.markers.values():
            self.marker(marker, flow)
        line = extension_build(tree)
        if line:
            why = "the module builds a CUDA extension from `.cu` sources as it is imported"
            return Evidence("extension-build", why, line)
        for statement in tree.body:
            found = self._pytestmark(statement, flow)
            if found is not None and not is_pending(found):
                return found
        return None

    def definition(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        flow,
        nested: bool = False,
    ) -> Evidence | None:
        """Why a function or a class runs only on CUDA, by a row of the table (a decorator whose
        answer waits for another module marks a pending region of its own, and the next is
        asked)."""
        for decorator in node.decorator_list:
            found = self._registered(decorator) or self.marker(decorator, flow)
            if is_pending(found):
                flow.mark_node(node, found)
            elif found is not None:
                return found
        previous = flow.previous
        if isinstance(node, ast.ClassDef):
            declared = self._platform(node) or _world(node, flow)
            if declared is not None:
                return declared
            for name in SET_UP:
                required = previous.requires.get(f"{node.name}.{name}")
                if required is not None:
                    return Evidence("constructor", required.why, required.line)
            for statement in node.body:  # `pytestmark = pytest.mark.skipif(...)`
                found = self._pytestmark(statement, flow)
                if found is not None:
                    return found
            return None
        found = self._dispatched(node, flow) or self._fixture(node, flow)
        if found is not None:
            return found
        name = ".".join([*flow.classes[-1:], node.name])
        uses = previous.uses.get(name, [])
        private = nested or (node.name.startswith("_") and not node.name.endswith("__"))
        if private and uses and all(line is not None for line in uses):
            flow.implied[node.lineno] = frozenset(uses)  # (what confines its uses needs CUDA)
            return Evidence(
                "callers", f"every use of `{name}` in the module runs only on CUDA", node.lineno
            )
        return None

    def after(self, node: ast.stmt, flow) -> Evidence | None:
        """Why what follows the statement in its block runs only on CUDA: it imports a library of
        the table, or calls a function that cannot return unless on CUDA."""
        if not isinstance(node, (ast.Import, ast.ImportFrom)) and not isinstance(
            getattr(node, "value", None), (ast.Call, ast.Await)
        ):  # (no import, and no call of its own: what it may use of a library is all it says)
            used = self._used(node, flow.parameters) if self.bound else None
            return self._library_use(used, node.lineno)
        imported = _imported(node)
        if imported:
            found = first_import_of(imported, self.libraries)
            if found is not None:
                why = f"`{found[0]}` is imported, which exists only for NVIDIA or AMD GPUs"
                return Evidence("library-import", why, node.lineno)
        built = _built(node)
        if built is not None:
            why = f"CUDA sources are built: `{flow.segment(built)}`"
            return Evidence("extension-build", why, node.lineno)
        loaded = _loaded(node)
        if loaded is not None:
            why = f"`{loaded}` is loaded, a library of NVIDIA's or AMD's driver"
            return Evidence("library-import", why, node.lineno)
        used = self._used(node, flow.parameters) if self.bound else None
        return self._library_use(used, node.lineno) or flow.required(node)

    def _library_use(self, used: str | None, line: int) -> Evidence | None:
        if used is None:
            return None
        why = f"`{used}` of `{self.bound[used]}` is used, which exists only for NVIDIA or AMD GPUs"
        return Evidence("library-use", why, line)

    def _platform(self, node: ast.ClassDef) -> Evidence | None:
        """A class of a platform layer declared for CUDA or ROCm (the ``platform-class`` row)."""
        if any(map(_declares_fields, node.decorator_list)):
            return None  # (a dataclass's field has a default)
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.platforms:
                self.platforms.add(node.name)
                why = f"`{node.name}` derives from `{base.id}`, a platform class for CUDA"
                return Evidence("platform-class", why, node.lineno)
        for name, value, line in _declarations(node):
            enum = isinstance(value, ast.Attribute) and value.attr in ENUM_MEMBERS
            device = name in DEVICE_ATTRIBUTES and _device_string(value)
            device = device or (name.lower() in DEVICE_SETS and names_only_cuda(value))
            if (enum or device) and (node.bases or SUPPORTS.search(name)):  # (else a default)
                self.platforms.add(node.name)
                said = f"{name} = {ast.unparse(value)}"
                why = f"`{node.name}` is a platform class declared for CUDA or ROCm: `{said}`"
                return Evidence("platform-class", why, line)
        return None

    def main(self, node: ast.If, flow) -> Evidence | None:
        """Why the ``if __name__ == "__main__":`` block runs only on CUDA: the module names
        ``__file__`` only in code that runs only there (a test that requires CUDA launches the
        module as its worker: ``subprocess.run([sys.executable, __file__, "--worker"])``)."""
        test = node.test
        if not (
            isinstance(test, ast.Compare)
            and dotted(test.left) == "__name__"
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        ):
            return None
        launches = flow.previous.uses.get("__file__", [])
        if not launches or None in launches:
            return None
        why = "the module runs as a worker only of tests that run only on CUDA (`__file__`)"
        return Evidence("worker-entry", why, launches[0])

    def _used(self, node: ast.stmt, parameters: frozenset[str]) -> str | None:
        """A name bound to a library of the table that the statement (a simple one, or the
        header of a ``with``) surely uses: calls, or reads an attribute of; not in a part that
        may not run (an arm of ``a if t else b``, the right of ``and``/``or``, a lambda or a
        comprehension's element), nor a name a parameter of the function shadows."""
        if isinstance(node, (ast.With, ast.AsyncWith)):
            roots: list[ast.AST] = [item.context_expr for item in node.items]
        elif isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            roots = [node]
        else:
            return None
        if self.bound_lines.isdisjoint(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
            return None
        for current in _surely_run(roots):
            base = current.func if isinstance(current, ast.Call) else current
            if isinstance(base, ast.Attribute):
                base = base.value
            if (
                isinstance(base, ast.Name)
                and base.id in self.bound
                and base is not current
                and base.id not in parameters
            ):
                return base.id
        return None

    def marker(self, decorator: ast.expr, flow) -> Evidence | None:
        """Why a decorator (or a name for one) skips its test unless on CUDA, where it does."""
        named = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(named, ast.Name) and named.id in self.markers:
            found = self.marker(self.markers[named.id], flow)
            if found is None or is_pending(found):
                return found
            return Evidence(found.kind, f"`@{named.id}`: {found.why}", found.line)
        if isinstance(named, ast.Name) and named.id in flow.conditions.origins:
            origin = flow.conditions.origins[named.id]  # (a marker another module defines?)
            return Evidence(PENDING, pending("marker", *origin), decorator.lineno)
        if not isinstance(decorator, ast.Call):
            return None
        last = (dotted(decorator.func) or "").rsplit(".", 1)[-1]
        test = skip_condition(decorator)
        if last not in SKIP_IF | SKIP_UNLESS or test is None:
            return None
        meaning = flow.conditions.meaning(test)
        evidence = meaning.if_false if last in SKIP_IF else meaning.if_true
        if not meaning.known:
            flow.supported(test)  # (`skipif(not (cuda or xpu))`: the devices it supports)
        if evidence is None or is_pending(evidence):
            return evidence
        flow.check(test, Meaning(if_true=evidence), [], [decorator])  # (the skip: the other arm)
        if getattr(decorator, "wraps", False):  # (a wrapper that skips: `_skips`)
            why = f"its wrapper skips unless {evidence.why}"
            return Evidence("skip-marker", why, evidence.line)
        return Evidence("skip-marker", f"`@{flow.segment(decorator)}`", evidence.line)

    def _pytestmark(self, statement: ast.stmt, flow) -> Evidence | None:
        if not is_pytestmark(statement):
            return None
        assert isinstance(statement, ast.Assign)
        value = statement.value
        marks = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        return next(filter(None, (self.marker(mark, flow) for mark in marks)), None)

    def _registered(self, decorator: ast.expr) -> Evidence | None:
        if not isinstance(decorator, ast.Call):
            return None
        last = (dotted(decorator.func) or "").rsplit(".", 1)[-1]
        keys = [
            a.value
            for a in [*decorator.args, *(k.value for k in decorator.keywords)]
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if last in REGISTERS and any(key.lower() in DISPATCHED for key in keys):
            return Evidence(
                "registered-kernel", "registered as the operator's CUDA kernel", decorator.lineno
            )
        for keyword in decorator.keywords:
            if keyword.arg in DEVICE_TYPES and names_only_cuda(keyword.value):
                why = f"made for CUDA's device type only: `{keyword.arg}=`"
                return Evidence("registered-kernel", why, decorator.lineno)
        return None

    def _dispatched(self, node: ast.FunctionDef | ast.AsyncFunctionDef, flow) -> Evidence | None:
        stem, _, device = node.name.rpartition("_")
        if not (device in DISPATCHED and flow.siblings):
            return None
        prefix = f"{stem}_" if stem else ""  # (`forward_cuda`; `cuda` beside `npu`, `xpu`)
        others = [prefix + o for o in SIBLINGS if prefix + o in flow.siblings[-1] and o != "native"]
        if not stem and others == ["cpu"] and _moves_itself(flow.class_nodes[-1]):
            return None  # (its own `self.cuda(self.device)`: the move to any device)
        if stem and f"{stem}_native" in flow.siblings[-1]:
            others.insert(0, f"{stem}_native")
        if not others:
            return None
        why = f"`{node.name}` is the CUDA arm of a dispatch by platform (beside `{others[0]}`)"
        return Evidence("dispatch-method", why, node.lineno)

    def _fixture(self, node: ast.FunctionDef | ast.AsyncFunctionDef, flow) -> Evidence | None:
        """A test (or a fixture) that takes a fixture of the module that cannot return unless
        on CUDA: by a parameter, by ``@pytest.mark.usefixtures(...)`` on it or its class, or
        as the module's ``autouse`` fixture."""
        taken = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
        taken += used_fixtures([node, *flow.class_nodes])
        if node.name.startswith("test"):
            taken += flow.autouse
        for fixture in taken:
            required = flow.previous.requires.get(flow.fixtures.get(fixture, ""))
            if required is not None:
                why = (
                    required.why
                    if required.kind == "fixture"
                    else f"the test takes the fixture {required.why}"
                )
                return Evidence("fixture", why, required.line)
        return None


def _declarations(node: ast.ClassDef) -> Iterator[tuple[str, ast.expr, int]]:
    """What a class binds its own attributes to: class attributes, properties that return a
    value, and ``self.x = ...`` in ``__init__`` (name, value, line)."""
    for statement in node.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    yield target.id, statement.value, statement.lineno
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = [s for s in statement.body if not isinstance(s, ast.Expr)]  # (a docstring)
            if statement.name == "__init__":
                for line in statement.body:
                    if not isinstance(line, ast.Assign):
                        continue
                    target = line.targets[0]
                    if isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                        yield target.attr, line.value, line.lineno
            elif (
                len(body) == 1
                and isinstance(body[0], ast.Return)
                and body[0].value is not None
                and any(dotted(d) == "property" for d in statement.decorator_list)
            ):
                yield statement.name, body[0].value, body[0].lineno


def _world(node: ast.ClassDef, flow) -> Evidence | None:
    """A test case of torch's distributed harness that runs a process per CUDA device (the
    ``world-size`` row)."""
    if not any((dotted(base) or "").rsplit(".", 1)[-1] in HARNESSES for base in node.bases):
        return None
    for name, value, line in _declarations(node):
        counted = (
            value.args if isinstance(value, ast.Call) and dotted(value.func) == "min" else [value]
        )
        if name == "world_size" and any(map(flow.conditions.is_count, counted)):
            why = f"`{node.name}` runs a process per CUDA device: `world_size = {flow.segment(value)}`"
            return Evidence("world-size", why, line)
    return None


def _declares_fields(decorator: ast.expr) -> bool:
    """``@dataclass``, ``@attr.s``, ``@define``: a class whose attributes are fields."""
    named = decorator.func if isinstance(decorator, ast.Call) else decorator
    last = (dotted(named) or "").rsplit(".", 1)[-1]
    return "dataclass" in last or last in ("s", "define", "frozen", "mutable", "attrs")


def _device_string(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Constant)
        and isinstance(value.value, str)
        and value.value.lower() in CUDA_DEVICE_TYPES
    )


def _surely_run(roots: list[ast.AST]) -> Iterator[ast.AST]:
    """The nodes of ``roots`` that run whenever the statement does (:meth:`Recognisers._used`)."""
    pending = list(roots)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.IfExp):
            pending.append(node.test)
        elif isinstance(node, ast.BoolOp):
            pending.append(node.values[0])
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            pending.append(node.generators[0].iter)
        elif not isinstance(node, ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))


def _built(node: ast.stmt) -> ast.Call | None:
    """The call, as a statement's own value, that builds CUDA sources (``cuda_sources=``,
    ``cuda_files=``, ``with_cuda=True``, a ``.cu`` file), if the statement is one."""
    value = getattr(node, "value", None)
    if not isinstance(value, ast.Call):
        return None
    named = [a.value for a in value.args if isinstance(a, ast.Constant)]
    sources = [n for n in named if isinstance(n, str) and n.endswith(CUDA_SOURCE_SUFFIXES)]
    return value if sources or given_cuda(value) else None


def _loaded(node: ast.stmt) -> str | None:
    """The library of NVIDIA's or AMD's driver that a statement loads with ``ctypes``
    (``ctypes.CDLL("libcudart.so")``), if it loads one."""
    value = getattr(node, "value", None)
    if not (isinstance(value, ast.Call) and value.args):
        return None
    if (dotted(value.func) or "").rsplit(".", 1)[-1] not in ("CDLL", "LoadLibrary"):
        return None
    first = value.args[0]
    text = first.value if isinstance(first, ast.Constant) else None
    if isinstance(text, str) and any(lib in text for lib in CUDA_ONLY_SHARED_LIBRARIES):
        return text
    return None


def _imported(node: ast.stmt) -> list[tuple[str, int]]:
    """The modules a statement imports (``pytest.importorskip("x")`` too), with its line."""
    if isinstance(node, ast.Import):
        return [(alias.name, node.lineno) for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [
            (node.module, node.lineno),
            *((f"{node.module}.{a.name}", node.lineno) for a in node.names),
        ]
    value = getattr(node, "value", None)
    if isinstance(value, ast.Call) and dotted(value.func) == "pytest.importorskip" and value.args:
        first = value.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [(first.value, node.lineno)]
    return []


def _moves_itself(klass: ast.ClassDef) -> bool:
    """Whether a class's own code calls ``self.cuda(...)`` with a device: its ``cuda`` method
    is how it moves to whatever device it is given (hqq's ``HQQLinear``), not CUDA's arm."""
    return any(
        isinstance(node, ast.Call) and node.args and dotted(node.func) == "self.cuda"
        for node in ast.walk(klass)
    )
