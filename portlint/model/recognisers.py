"""The table of recognisers: what the flow pass (:mod:`portlint.model.flow`) cannot see in a
condition, each a row with a line of documentation, code it keeps silent and code that it does
not (``tests/test_model.py`` runs both; ``docs/platform.md`` lists the rows).

A row says that a definition (a function or a class), a statement's sequel or the whole module
runs only on CUDA, on evidence in the code: never on a name alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from portlint.facts import EXIT_CALLS, OTHER_DEVICES
from portlint.model.conditions import PENDING, Evidence, is_pending, names_only_cuda, pending
from portlint.model.places import SET_UP, Check, span, walk
from portlint.platform import dotted, extension_build, first_import_of, library_bindings


@dataclass(frozen=True)
class Row:
    kind: str
    doc: str
    silent: str  # code where `torch.cuda.synchronize()` runs only on CUDA by this row
    flagged: str  # code like it where it may run elsewhere


ROWS = (
    Row(
        "skip-marker",
        "a test, or a class of tests, skipped unless CUDA by `pytest.mark.skipif`, "
        "`unittest.skipIf` or `unittest.skipUnless` (a decorator, `pytestmark`, or a name or "
        "function of the module that is or returns one: `requires_cuda = "
        "pytest.mark.skipif(...)`), or by a decorator whose wrapper first skips or raises "
        "unless on CUDA",
        """\
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")
def test_sync():
    torch.cuda.synchronize()
""",
        """\
@pytest.mark.skipif(sys.platform == "win32", reason="posix")
def test_sync():
    torch.cuda.synchronize()
""",
    ),
    Row(
        "library-import",
        "after an import of a library that exists only for NVIDIA or AMD GPUs (the "
        "`cuda-only-imports` table) or `pytest.importorskip` of one: the rest of its block, or "
        "the whole module where the import is unconditional at its top level",
        """\
import flashinfer


def run():
    torch.cuda.synchronize()
""",
        """\
try:
    import flashinfer
except ImportError:
    flashinfer = None


def run():
    torch.cuda.synchronize()
""",
    ),
    Row(
        "library-use",
        "after a statement that uses a module of such a library, imported optionally "
        "(`flashinfer.sampling.top_k(...)`, where `import flashinfer` is in a `try`): the use "
        "fails wherever the library is not",
        """\
try:
    import flashinfer
except ImportError:
    flashinfer = None


def run(x):
    y = flashinfer.norm(x)
    torch.cuda.synchronize()
""",
        """\
try:
    import flashinfer
except ImportError:
    flashinfer = None


def run(x):
    if flashinfer is None:
        torch.cuda.synchronize()
""",
    ),
    Row(
        "extension-build",
        "a module that builds its own CUDA extension from `.cu` sources as it is imported",
        """\
from torch.utils.cpp_extension import load

ext = load("k", sources=["k.cu"])
torch.cuda.synchronize()
""",
        """\
from torch.utils.cpp_extension import load

ext = load("k", sources=["k.cpp"])
torch.cuda.synchronize()
""",
    ),
    Row(
        "enabled-argument",
        "a call made disabled unless on CUDA: its `enabled=` argument holds only on CUDA "
        '(`torch.amp.GradScaler(enabled=use_amp)`, `use_amp = x.device.type == "cuda"`)',
        """\
def step(x):
    use_amp = x.device.type == "cuda"
    scaler = Scaler(torch.cuda.synchronize(), enabled=use_amp)
""",
        """\
def step(x):
    use_amp = x.dtype == torch.float16
    scaler = Scaler(torch.cuda.synchronize(), enabled=use_amp)
""",
    ),
    Row(
        "registered-kernel",
        "a function registered as an operator's CUDA kernel (`@torch.library.impl(..., "
        "'CUDA')`, `@torch.library.register_kernel(..., 'cuda')`), or made for CUDA's device "
        "type only by a decorator's argument (`@torch.library.custom_op(..., "
        "device_types='cuda')`, a test's `@instantiate(devicetypes=(DeviceType.CUDA,))`, "
        "`only_for='cuda'`)",
        """\
@torch.library.register_kernel("mylib::op", "cuda")
def op_cuda(x):
    torch.cuda.synchronize()
""",
        """\
@torch.library.register_kernel("mylib::op", "cpu")
def op_cpu(x):
    torch.cuda.synchronize()
""",
    ),
    Row(
        "dispatch-method",
        "a method `<name>_cuda` (or `_hip`, `_rocm`) of a class that also defines "
        "`<name>_native` or `<name>_<another device>`: one arm of a dispatch by platform",
        """\
class Op:
    def forward_native(self, x):
        return x

    def forward_cuda(self, x):
        torch.cuda.synchronize()
""",
        """\
class Op:
    def forward_cuda(self, x):
        torch.cuda.synchronize()
""",
    ),
    Row(
        "constructor",
        "the methods of a class whose `__init__` (or `setUp`, `setUpClass`, `setup_method`, "
        "`setup_class`) cannot return unless on CUDA",
        """\
class Runner:
    def __init__(self):
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA")

    def run(self):
        torch.cuda.synchronize()
""",
        """\
class Runner:
    def __init__(self):
        self.n = 0

    def run(self):
        torch.cuda.synchronize()
""",
    ),
    Row(
        "fixture",
        "a test that takes a fixture of its module that cannot return unless on CUDA (it skips "
        "or fails elsewhere)",
        """\
@pytest.fixture
def gpu():
    if not torch.cuda.is_available():
        pytest.skip("CUDA")
    return 0


def test_sync(gpu):
    torch.cuda.synchronize()
""",
        """\
@pytest.fixture
def gpu():
    return 0


def test_sync(gpu):
    torch.cuda.synchronize()
""",
    ),
    Row(
        "callers",
        "a private function of the module (`_name`, or one defined in a function) whose every "
        "use is in code that runs only on CUDA",
        """\
def _sync():
    torch.cuda.synchronize()


def step():
    if torch.cuda.is_available():
        _sync()
""",
        """\
def _sync():
    torch.cuda.synchronize()


def step():
    _sync()
""",
    ),
    Row(
        "requires",
        "after a call of a function of the module that cannot return unless on CUDA",
        """\
def need_cuda():
    assert torch.cuda.is_available()


def step():
    need_cuda()
    torch.cuda.synchronize()
""",
        """\
def need_cuda():
    return torch.cuda.is_available()


def step():
    need_cuda()
    torch.cuda.synchronize()
""",
    ),
)
KINDS = frozenset(row.kind for row in ROWS)
SKIP_IF = frozenset({"skipif", "skipIf", "skip_if"})
SKIP_UNLESS = frozenset({"skipUnless", "skip_unless"})
REGISTERS = frozenset({"impl", "register_kernel"})
# A decorator's arguments that name the device types a function is made for.
DEVICE_TYPES = frozenset({"device_types", "devicetypes", "device_type", "only_for"})
DISPATCHED = ("cuda", "hip", "rocm")
SIBLINGS = ("native", "cpu", *sorted(OTHER_DEVICES))


class Recognisers:
    """The rows of :data:`ROWS`, applied to one module: ``libraries`` are the NVIDIA- and
    AMD-only libraries it may import (``cuda-only-imports``, less its own package)."""

    def __init__(self, tree: ast.Module, libraries: tuple[str, ...]) -> None:
        self.libraries = libraries
        self.bound = library_bindings(tree, libraries)  # a name -> the library it is
        self.markers = markers_of(tree)

    def module(self, tree: ast.Module) -> Evidence | None:
        """Why the whole module runs only on CUDA: it builds a CUDA extension as it is imported,
        or its ``pytestmark`` skips it unless CUDA."""
        line = extension_build(tree)
        if line:
            why = "the module builds a CUDA extension from `.cu` sources as it is imported"
            return Evidence("extension-build", why, line)
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
            found = self._marker(decorator, flow) or self._registered(decorator)
            if is_pending(found):
                flow.mark_node(node, found)
            elif found is not None:
                return found
        previous = flow.previous
        if isinstance(node, ast.ClassDef):
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
        imported = _imported(node)
        if imported:
            found = first_import_of(imported, self.libraries)
            if found is not None:
                why = f"`{found[0]}` is imported, which exists only for NVIDIA or AMD GPUs"
                return Evidence("library-import", why, node.lineno)
        used = self._used(node) if self.bound else None
        if used is not None:
            why = f"`{used}` of `{self.bound[used]}` is used, which exists only for NVIDIA or AMD GPUs"
            return Evidence("library-use", why, node.lineno)
        return flow.required(node)

    def _used(self, node: ast.stmt) -> str | None:
        """A name bound to a library of the table that the statement (a simple one, or the
        header of a ``with``) uses: calls, or reads an attribute of."""
        if isinstance(node, (ast.With, ast.AsyncWith)):
            roots: list[ast.AST] = [item.context_expr for item in node.items]
        elif isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            roots = [node]
        else:
            return None
        for root in roots:
            for current in walk(root):
                base = current.func if isinstance(current, ast.Call) else current
                if isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in self.bound and base is not current:
                    return base.id
        return None

    def _marker(self, decorator: ast.expr, flow) -> Evidence | None:
        named = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(named, ast.Name) and named.id in self.markers:
            found = self._marker(self.markers[named.id], flow)
            if found is None or is_pending(found):
                return found
            return Evidence(found.kind, f"`@{named.id}`: {found.why}", found.line)
        if isinstance(named, ast.Name) and named.id in flow.conditions.origins:
            origin = flow.conditions.origins[named.id]  # (a marker another module defines?)
            return Evidence(PENDING, pending("marker", *origin), decorator.lineno)
        if not (isinstance(decorator, ast.Call) and decorator.args):
            return None
        last = (dotted(decorator.func) or "").rsplit(".", 1)[-1]
        if last not in SKIP_IF | SKIP_UNLESS:
            return None
        test = decorator.args[0]
        meaning = flow.conditions.meaning(test)
        evidence = meaning.if_false if last in SKIP_IF else meaning.if_true
        if evidence is None or is_pending(evidence):
            return evidence
        why = f"the skip {evidence.why} decides CUDA-only code"
        flow.checks.append(
            Check(*span(test), Evidence("check", why, test.lineno), ((decorator.lineno, False),))
        )
        if getattr(decorator, "wraps", False):  # (a wrapper that skips: `_skips`)
            return Evidence("skip-marker", f"its wrapper skips unless {evidence.why}", test.lineno)
        return Evidence("skip-marker", f"`@{flow.segment(decorator)}`", decorator.lineno)

    def _pytestmark(self, statement: ast.stmt, flow) -> Evidence | None:
        if not (
            isinstance(statement, ast.Assign)
            and [dotted(t) for t in statement.targets] == ["pytestmark"]
        ):
            return None
        value = statement.value
        marks = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        return next(filter(None, (self._marker(mark, flow) for mark in marks)), None)

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
        if not (stem and device in DISPATCHED and flow.siblings):
            return None
        others = [f"{stem}_{other}" for other in SIBLINGS if f"{stem}_{other}" in flow.siblings[-1]]
        if not others:
            return None
        why = f"`{node.name}` is the CUDA arm of a dispatch by platform (beside `{others[0]}`)"
        return Evidence("dispatch-method", why, node.lineno)

    def _fixture(self, node: ast.FunctionDef | ast.AsyncFunctionDef, flow) -> Evidence | None:
        for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            required = flow.previous.requires.get(argument.arg)
            if required is not None and argument.arg in flow.fixtures:
                return Evidence(
                    "fixture", f"the test takes the fixture {required.why}", required.line
                )
        return None


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
