"""Platform guards: code that only runs on CUDA (or ROCm, whose torch device type is "cuda" too),
each region with the reason the code gives for it.

``GuardAnalysis`` is visited with the rules. It records the code (nodes) that runs only on CUDA,
and why (:class:`Silence`):

- explicit guards (kind ``guard``): the body of ``if torch.cuda.is_available():`` (or
  ``x.is_cuda``, ``x.device.type == "cuda"``, ``current_platform.is_cuda()``, any call or name
  that asks "is this CUDA/ROCm/NVIDIA" — ``is_torch_cuda_available()``, ``_is_hip`` — a name
  assigned from such a test, a comparison with a constant that names CUDA or GPUs —
  ``DistributedType.MULTI_GPU`` — ``isinstance(x, CudaThing)``, a configured guard call), the
  ``else`` of a negated guard, the rest of a block after ``if not <guard>: return`` (or ``raise``,
  ``pytest.skip(...)``) or ``assert <guard>``, the CUDA side of a conditional expression, the
  right of ``<guard> and ...``; ``torch.version.hip is not None`` (a ROCm build); the methods of
  a class whose ``__init__`` raises unless on CUDA; and a function every call of which in the
  module is guarded ("one call away");
- ``names``: the body of a function or class named for CUDA or ROCm (``forward_cuda``,
  ``class CudaPlatform``, ``def cuda(self)``) or of a class derived from one;
- ``tests``: a test function, class or module that runs only where CUDA is (``skipif(not
  torch.cuda.is_available())``, ``skipUnless(...)``, a module's ``pytestmark``, a marker assigned
  to a name, a ``require_cuda``-like decorator, an autouse fixture that skips, a multi-process
  test case whose ``world_size`` is the number of CUDA devices);
- ``dispatch``: the ``else`` of an ``if``/``elif`` chain over other devices with no CUDA arm
  (``if is_xpu(): ... elif is_npu(): ... else: <CUDA>``), the ``"cuda"`` entry of a table keyed
  by device type, a kernel registered with torch for CUDA only, a class that declares CUDA as the
  only device it supports;
- ``fallbacks``: the arm of a torch-version (or ``hasattr(torch, ...)``) test that keeps a CUDA
  call for an older torch (the rest of the block, where the other arm returns), and the right of ``<portable accelerator query> or <CUDA>``.

It also records the tests of these guards, so that a finding *in* a test can be judged: the
check that confines CUDA-only code is not a portability bug (see :meth:`GuardAnalysis.check`).
The kinds but ``guard`` are inferences the configuration can switch off (``portlint.platform``).
What a single test says (its polarity, whether it asks about another device or the torch
release) is read by :class:`~portlint.analysis.guard_tests.GuardTests`, which this class extends.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from portlint.analysis.guard_tests import (
    RELEASE_TEXT,
    VERSION_TEXT,
    GuardTests,
    asks_tensor_is_cuda,
    code_of,
    compiles_cuda,
    is_none,
    picks_cpu,
    string_values,
    words_in,
)
from portlint.analysis.names import (
    LEAVES_BLOCK,
    argument,
    block_ends_in,
    dotted_name,
    is_cuda_device_literal,
)
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import children
from portlint.calls import call_key, definition_key
from portlint.facts import CUDA_DEVICE_TYPES, CUDA_ONLY_SHARED_LIBRARIES, EXIT_CALLS, OTHER_DEVICES
from portlint.index.reading import CudaQuestions
from portlint.platform import is_predicate, names_cuda, names_other_device, requires_cuda, words

SKIP_IF = {"skipif", "skipIf", "skip_if"}
SKIP_UNLESS = {"skipUnless", "skip_unless", "skipunless"}
# The expressions a name can be bound to that are tests themselves.
TEST_SHAPES = (
    cst.Call, cst.Name, cst.Attribute, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation,
)  # fmt: skip
# torch's registrations of a kernel for some devices only (`torch.library.custom_op(...,
# device_types=...)`, `torch.library.impl(lib, name, dispatch_key)`, `register_kernel(op, device)`).
KERNEL_REGISTRATIONS = frozenset({"custom_op", "impl", "register_kernel"})
# Device types that can share a table keyed by device type with "cuda".
DEVICE_KEYS = OTHER_DEVICES | {"cpu", "meta", "default"}


@dataclass(frozen=True, eq=False)
class Silence:
    """Why code runs only on CUDA: the kind of reason, what says so, and where (``node``: its
    line is shown; None: the module). ``text`` is written out only where it is shown: its
    ``{code}`` stands for the code of ``quoted`` (writing code out costs, and most reasons are
    never shown)."""

    kind: str
    text: str
    node: cst.CSTNode | None = None
    test: cst.CSTNode | None = None  # the guard's test, where a guard made the region
    quoted: cst.CSTNode | None = None

    @property
    def why(self) -> str:
        return self.text.format(code=code_of(self.quoted)) if self.quoted is not None else self.text


@dataclass
class Test:
    """The test of a guard. A finding in it is the check that confines CUDA code, not a use of
    CUDA, where ``role`` says why (the guard states a requirement: ``assert``, a skip marker,
    ``if not ...: raise``; it dispatches over devices; it is what a predicate named for CUDA
    answers), or where the code it guards is itself CUDA-only."""

    role: str | None = None
    # Where it asks whether a tensor is on CUDA and the code has another path for other tensors
    # (an `else`, or an early exit): the code of both paths. That is a choice of kernel by the
    # tensor's device, unless one of the paths picks a device by name.
    tensor_paths: tuple[cst.CSTNode, ...] = ()
    # Its other path picks the CPU (`else: device = "cpu"`): the guard chooses between CUDA and
    # the CPU, and the check is a finding, whatever the CUDA path does.
    cpu_otherwise: bool = False


# The keywords a test generator takes the device types to make a test for by
# (`@instantiate(devicetypes=(DeviceType.CUDA,))`, `only_for="cuda"`).
DEVICE_TYPE_KEYWORDS = frozenset({"devicetypes", "device_types", "only_for", "devices"})
REQUIREMENT = "the check of a requirement of CUDA"
SKIPS = frozenset({"pytest.skip", "self.skipTest"})  # (a test's stop, as a `raise` is)
DISPATCH = "the check of a dispatch over devices"
ANSWER = "what a predicate named for CUDA answers"


class GuardAnalysis(GuardTests):
    METADATA_DEPENDENCIES = (NameProvider, ParentProvider)

    def __init__(
        self,
        guard_functions: tuple[str, ...] = (),
        inferences: frozenset[str] = frozenset(),
        libraries: tuple[str, ...] = (),
        source: str | None = None,
        questions: CudaQuestions | None = None,
        library_names: Mapping[str, str] | None = None,
        cuda_values: frozenset[str] = frozenset(),
    ) -> None:
        """``questions``: what the module's functions ask about CUDA by their code
        (:class:`portlint.index.reading.CudaQuestions`): a call of one that answers is a guard
        (the checks in it are judged where they are, as any other check), and the rest of the
        block after a call of one that requires CUDA runs only there.
        ``library_names``: the names its own code binds only where CUDA is — to one of
        ``libraries`` (:func:`portlint.platform.library_bindings`), or by an import under a CUDA
        check (:func:`portlint.analysis.cuda_values.guarded_imports`) — each with what says so.
        ``cuda_values``: the names that hold only a CUDA-only thing or nothing, read from the
        whole module (:func:`portlint.analysis.cuda_values.cuda_only_values`)."""
        super().__init__()
        self.guard_functions = set(guard_functions)
        questions = questions or CudaQuestions()
        self.answering = questions.answers
        self.requiring = questions.requirements
        self.cuda_classes = questions.cuda_classes
        self.library_names = library_names or {}
        self.inferences = inferences
        # Nodes that run only on CUDA (with everything under them), and why.
        self.marked: dict[cst.CSTNode, Silence] = {}
        # Blocks of functions, with their function, whose statements after a use of one of
        # ``library_names`` are marked once a query walks through them (:meth:`_within`).
        self.library_blocks: dict[cst.CSTNode, cst.FunctionDef] = {}
        self.tests: dict[cst.CSTNode, Test] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.callers: dict[cst.FunctionDef, list[cst.Call]] = {}
        self.calls: list[tuple[str, cst.Call]] = []
        self.classes: list[str] = []
        # Names bound to a guard's outcome, innermost scope last: name -> polarity.
        self.guard_names: list[dict[str, int]] = [{}]
        self.count_names: list[set[str]] = [set()]  # names bound to a count of CUDA devices
        # A function's names bound to a CUDA-only thing or None (`stream = self.alt_stream`).
        self.held_names: list[set[str]] = [set()]
        self.count_reads: dict[cst.CSTNode, str] = {}  # where tests read one of them
        self.markers: dict[str, cst.BaseExpression] = {}  # module-level names of skip markers
        self.function_stack: list[cst.FunctionDef] = []
        # The tests that names were bound to (a check held in a name is checked where tested).
        self.bound: dict[str, list[cst.CSTNode]] = {}
        self.version_names: set[str] = set()  # names bound to a test of the torch release
        # Names bound to a CUDA-only thing or None (`x if is_cuda() else None`).
        self.cuda_only_values: set[str] = set(cuda_values)
        # `torch.cuda` attributes the module assigns (a patch), and the reads that save them.
        self.patched: set[str] = set()
        self.saved: list[tuple[cst.BaseExpression, str]] = []
        self.libraries = libraries
        # Words a test of the torch release or a portable first choice must hold, looked for
        # in the module's text before any test's words are (most modules have none).
        text = source if source is not None else ""
        self.may_ask_versions = source is None or any(w in text for w in VERSION_TEXT)
        self.may_ask_versions |= RELEASE_TEXT.search(text) is not None
        self.may_prefer_accelerator = source is None or "accelerator" in text
        self.may_launch_itself = source is None or ("__file__" in text and "__main__" in text)
        # Imports of those libraries in functions, and of modules named for CUDA or ROCm (`from
        # .cuda import *`, the variant a package's `__init__` picks): CUDA-only code.
        self.cuda_imports: list[cst.CSTNode] = []
        # Calls of functions named for a library or link of NVIDIA's or AMD's GPUs, not for CUDA
        # itself (`check_nvlink_connectivity()`, `init_nccl_comm()`; not `move_to_cuda(x)`,
        # which may pick a device): CUDA-only code, as a CUDA API is.
        self.cuda_calls: list[cst.CSTNode] = []
        self.predicates: list[cst.FunctionDef] = []  # functions named as a question about CUDA
        self._guarded_functions: set[cst.FunctionDef] | None = None
        self._name_uses: dict[str, list[cst.Name]] | None = None  # bound names, where read

    # --- Recording guarded code ------------------------------------------------------------
    def _mark(self, node: cst.CSTNode, silence: Silence) -> None:
        self.marked.setdefault(node, silence)

    def _guard(self, test: cst.BaseExpression, shown: cst.CSTNode, text: str) -> Silence:
        """A guard's reason: ``text`` quotes the test as ``{code}``, and names what the test reads
        that holds something only where CUDA is (``self.alt_stream``, made only on CUDA)."""
        held = self._held_in(test) if self.cuda_only_values or any(self.held_names) else []
        if held:
            names = ", ".join(f"`{name}`" for name in held)
            text += f", where {names} holds something only on CUDA (else None or False)"
        return Silence("guard", text, shown, test, test)

    def _held_in(self, test: cst.CSTNode) -> list[str]:
        found: list[str] = []
        pending = [test]
        while pending:
            node = pending.pop()
            name = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            if name is not None:
                if self.holds_cuda_only(name) and name not in found:
                    found.append(name)
            elif not isinstance(node, cst.Call):  # (not what a call is given)
                pending.extend(children(node))
        return found

    def _in_block(self, statement: cst.CSTNode) -> tuple[Sequence[cst.CSTNode], int] | None:
        """The statements of the block ``statement`` is in, and its place there."""
        block = self.get_metadata(ParentProvider, statement, None)
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or statement not in body:
            return None
        return body, body.index(statement)

    def _rest_of_block(self, statement: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
        found = self._in_block(statement)
        return tuple(found[0][found[1] + 1 :]) if found else ()

    def _mark_rest_of_block(self, statement: cst.CSTNode, silence: Silence) -> None:
        for later in self._rest_of_block(statement):
            self._mark(later, silence)

    def _mark_required_value(
        self, statement: cst.CSTNode, test: cst.BaseExpression, silence: Silence
    ) -> None:
        """The statement right before a requirement of CUDA (``if device.type != "cuda":
        raise``, ``assert x.is_cuda``) where it binds what the test reads (``device =
        torch.device("cuda", index)``): the value is made to be checked, and off CUDA the run
        stops at the check, loudly. So is the default of a parameter that the function checks
        first of all (``def __init__(self, device="cuda"):`` ``assert device.startswith("cuda")``),
        and a CUDA device as any parameter's default where the requirement comes first
        (``def worker(rank, device_type="cuda"):`` ``assert torch.cuda.is_available()``).
        """
        found = self._in_block(statement)
        if found is None:
            return
        body, index = found
        read = {n.value for n in _names_in(test)}
        why = f"made to be checked: {silence.text}, which stops unless on CUDA"
        checked = Silence("guard", why, silence.node, test, silence.quoted)
        block = self.parents.get(statement)
        function = self.parents.get(block) if block is not None else None
        if isinstance(function, cst.FunctionDef) and index == (
            function.get_docstring() is not None
        ):
            # (the function's first statement, after its docstring: its parameters are checked)
            for param in _parameters(function.params):
                # (and a CUDA device by default: the function runs nowhere else)
                if param.default is not None and (
                    param.name.value in read or is_cuda_device_literal(param.default)
                ):
                    self._mark(param.default, checked)
        if index == 0:
            return
        before = body[index - 1]
        if not isinstance(before, cst.SimpleStatementLine) or len(before.body) != 1:
            return
        bound = _binding(before.body[0])
        if bound and any(isinstance(t, cst.Name) and t.value in read for t in bound[0]):
            self._mark(before, checked)

    def _infers(self, kind: str) -> bool:
        return kind in self.inferences

    def visit_Module(self, node: cst.Module) -> None:
        # Kept for the queries after the visit. The ignore: LibCST types all metadata as object.
        self.parents: Mapping[cst.CSTNode, cst.CSTNode] = self.metadata[ParentProvider]  # type: ignore[assignment]
        self.module = node
        self._bind_guard_names(node.body)
        for statement in node.body:
            if isinstance(statement, cst.FunctionDef):
                self._autouse_skip(node, statement)
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    name = dotted_name(small.targets[0].target)
                    if name == "pytestmark":
                        self._mark_test_module(node, small.value, statement)
                    elif name is not None:
                        self.markers[name] = small.value
        self._dispatch_siblings(node.body)

    def _bind_guard_names(self, body: Sequence[cst.CSTNode]) -> None:
        """Names a block assigns from a guard's test (``_is_cuda = is_cuda()``), bound before the
        code below them is looked at (a module's or a class's, which functions read later)."""
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self._bind_guard_name(small)

    def _bind_guard_name(self, small: cst.BaseSmallStatement) -> None:
        bound = _binding(small)
        if bound is None:
            return
        targets, value = bound
        polarity = self.polarity(value)
        counted = isinstance(value, cst.Call) and self._is_count(value)
        # (Only a value shaped as a test can be one; looking into others costs.)
        version = isinstance(value, TEST_SHAPES) and self._asks_torch_version(value)
        cuda_or_none = isinstance(value, cst.IfExp) and (
            (self.polarity(value.test) == 1 and is_none(value.orelse))
            or (self.polarity(value.test) == -1 and is_none(value.body))
        )
        holds_cuda_only = cuda_or_none or self.holds_cuda_only(dotted_name(value))
        for target in targets:
            name = dotted_name(target)
            if name is None:
                continue
            # (`self.x`, bound in one method and tested in another: the module's scope.)
            scope = self.guard_names[0] if name.startswith("self.") else self.guard_names[-1]
            counts = self.count_names[0] if name.startswith("self.") else self.count_names[-1]
            if counted:
                counts.add(name)
                self.tests.setdefault(value, Test())  # (a check held in a name, as below)
                self.bound.setdefault(name, []).append(value)
            else:
                counts.discard(name)
            if polarity:
                scope[name] = polarity
                self.tests.setdefault(value, Test())  # a check held in a name
                self.bound.setdefault(name, []).append(value)
            else:
                scope.pop(name, None)
            if version:
                self.version_names.add(name)
            held = self.held_names[-1]
            if holds_cuda_only:
                # (`self.x`, and a module's names, are the module's; a function's are its own.)
                kept = name.startswith("self.") or len(self.held_names) == 1
                (self.cuda_only_values if kept else held).add(name)
            else:
                held.discard(name)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for statement in node.body:
            if isinstance(statement, cst.Assert):
                self.tests.setdefault(statement.test, Test(REQUIREMENT))
                if self.polarity(statement.test) == 1:
                    silence = self._guard(statement.test, node, "`assert {code}`")
                    self._mark_rest_of_block(node, silence)
                    self._mark_required_value(node, statement.test, silence)
            if (
                self.requiring
                and isinstance(statement, cst.Expr)
                and isinstance(statement.value, cst.Call)
                and dotted_name(statement.value.func) in self.requiring
            ):
                call = statement.value
                silence = self._guard(call, node, "`{code}`, which raises unless on CUDA")
                self._mark_rest_of_block(node, silence)
            if len(self.guard_names) > 1:  # a function's own names (its module's are bound)
                self._bind_guard_name(statement)
            if isinstance(statement, cst.Assign):
                for target in statement.targets:
                    if self._infers("dispatch"):
                        self._table_entry(target.target, statement.value)
                    self._patch(target.target, statement.value)

    def visit_If(self, node: cst.If) -> None:
        test = node.test
        polarity = self.polarity(test)
        exits = block_ends_in(node.body, LEAVES_BLOCK, EXIT_CALLS)
        raises = block_ends_in(node.body, (cst.Raise,), SKIPS)
        # (`if <CUDA>: ... else: raise`: the rest of the block, too, runs only on CUDA.)
        orelse = node.orelse.body if isinstance(node.orelse, cst.Else) else None
        orelse_exits = orelse is not None and block_ends_in(orelse, LEAVES_BLOCK, EXIT_CALLS)
        orelse_raises = orelse is not None and block_ends_in(orelse, (cst.Raise,), SKIPS)
        role = self.tests.setdefault(test, Test())
        if (polarity == -1 and raises) or (polarity == 1 and orelse_raises):
            role.role = REQUIREMENT
        role.cpu_otherwise = self._picks_cpu_otherwise(node)
        if (
            polarity
            and asks_tensor_is_cuda(test)
            and (node.orelse is not None or exits or _may_return(node.body))
        ):
            # (Without an `else`, the rest of the block is the other path where the body leaves,
            # or may return: `if x.is_cuda and ...:` `return fused(x)` unless compiling, then
            # `return portable(x)`. A body that only adds to the rest, `if t.is_cuda:
            # t.record_stream(s)`, chooses nothing: on XPU the step is silently skipped.)
            other = (node.orelse,) if node.orelse is not None else self._rest_of_block(node)
            if other or exits:  # (an `elif` that leaves: the other path follows its chain)
                role.tensor_paths = (node.body, *other)
        if polarity == 1:
            self._mark(node.body, self._guard(test, node, "`if {code}:`"))
            if orelse_exits:
                silence = self._guard(test, node, "`if {code}:` ... `else:` leaves")
                self._mark_rest_of_block(node, silence)
                if orelse_raises:
                    self._mark_required_value(node, test, silence)
        elif polarity == -1:
            silence = self._guard(test, node, "`if {code}:`")
            if node.orelse is not None:
                self._mark(node.orelse, silence)
            if exits:
                self._mark_rest_of_block(node, silence)
                self._nvidia_only_exits(node)
            if raises:
                self._mark_required_value(node, test, silence)
        parent = self.get_metadata(ParentProvider, node, None)
        if not (isinstance(parent, cst.If) and parent.orelse is node):
            self._dispatch_chain(node)
        if self._infers("fallbacks") and self._asks_torch_version(test):
            if node.orelse is not None:
                self._fallback_arms([(node.body,), (node.orelse,)], node, test)
            elif block_ends_in(node.body, (cst.Return,), frozenset()):
                # (`if <new torch>: return <portable>`: the rest is the other torch's)
                self._fallback_arms([(node.body,), self._rest_of_block(node)], node, test)

    def _picks_cpu_otherwise(self, node: cst.If | cst.IfExp) -> bool:
        """Whether the path an ``if`` (or ``... if ... else ...``) takes where its test of CUDA
        fails picks the CPU."""
        polarity = self.polarity(node.test)
        other_path = node.orelse if polarity == 1 else node.body if polarity == -1 else None
        return other_path is not None and picks_cpu(other_path)

    def _dispatch_chain(self, head: cst.If | cst.IfExp) -> None:
        """``if is_xpu(): ... elif is_npu(): ... else: ...`` (or its expression, ``"cuda" if
        cuda() else "xpu" if xpu() else "cpu"``): every test of a chain that asks about other
        devices is a dispatch; its ``else``, where no arm asks for CUDA, is the CUDA arm."""
        arms: list[cst.If | cst.IfExp] = [head]
        while isinstance(arms[-1].orelse, type(head)):
            arms.append(arms[-1].orelse)
        others = [arm for arm in arms if self.other_device(arm.test)]
        if not others or not self._infers("dispatch"):
            return
        # Where the chain names no accelerator but Apple's (`if cuda: "cuda" elif mps: "mps"
        # else: "cpu"`, `if mps: ... elif cpu: ... else: torch.cuda...`), every other one, XPU
        # and NPU among them, takes the CPU's path or CUDA's: a check that picks the CPU
        # otherwise is a choice of device there, and the `else` is not CUDA's alone.
        accelerators = [
            arm for arm in others if self.other_device(arm.test, cpu=False, apple=False)
        ]
        for arm in arms:
            if accelerators or not self._picks_cpu_otherwise(arm):
                self.tests.setdefault(arm.test, Test()).role = DISPATCH
        last = arms[-1].orelse
        if (
            last is not None
            and accelerators
            and not any(self.polarity(arm.test) == 1 for arm in arms)
        ):
            why = "the `else` of a dispatch over devices (`if {code}:` ...), with no CUDA arm"
            quoted = accelerators[0].test
            self._mark(last, Silence("dispatch", why, accelerators[0], quoted=quoted))

    def _dispatch_siblings(self, body: Sequence[cst.CSTNode]) -> None:
        """Sibling ``if`` statements, one per device (``if torch.cuda.is_available(): ...`` then
        ``if is_torch_npu_available(): ...``, or ``if x.device.type != "cpu": ...``): the CUDA
        one is a dispatch too. (Not beside Apple's alone: `if cuda: return "cuda"`, `if mps:
        return "mps"`, then `return "cpu"` sends XPU to the CPU, as in `_dispatch_chain`.)"""
        ifs = [s for s in body if isinstance(s, cst.If)]
        if (
            len(ifs) > 1
            and self._infers("dispatch")
            and any(self.other_device(s.test, apple=False) for s in ifs)
        ):
            for statement in ifs:
                if self.polarity(statement.test):
                    self.tests.setdefault(statement.test, Test()).role = DISPATCH

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._dispatch_siblings(node.body)
        # (Not a function's body already marked for using one first: that says more.)
        uses_libraries = self.library_names and self._infers("imports")
        if uses_libraries and self.function_stack and node not in self.marked:
            self.library_blocks[node] = self.function_stack[-1]  # (read when asked: _within)

    def _after_library_use(
        self, body: Sequence[cst.BaseStatement], function: cst.FunctionDef
    ) -> None:
        """In a function, a block's statements from the first that uses a library that exists
        only for NVIDIA or AMD GPUs on (``device = torch.device("cuda", smp.local_rank())``,
        where the module binds ``smp`` under ``if is_sagemaker_mp_enabled():``): off those
        GPUs that use fails, and what follows it in the block never runs."""
        parameters = {p.name.value for p in _parameters(function.params)}
        for index, statement in enumerate(body):
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            used = self._library_name_in(statement, parameters)
            if used is not None:
                name, library = used
                why = f"its block first uses `{name}`, of {library}"
                for later in body[index:]:
                    self._mark(later, Silence("imports", why, statement))
                return

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """`guard and expr`: ``expr`` runs only when the guard held (`not guard or expr` too);
        `<portable accelerator query> or <CUDA>`: the CUDA side is the fallback."""
        polarity = self.polarity(node.left)
        self.tests.setdefault(node.left, Test())
        if (isinstance(node.operator, cst.And) and polarity == 1) or (
            isinstance(node.operator, cst.Or) and polarity == -1
        ):
            operator = "and" if isinstance(node.operator, cst.And) else "or"
            self._mark(node.right, self._guard(node.left, node, f"`{{code}} {operator} ...`"))
        if (
            isinstance(node.operator, cst.And)
            and self._infers("checks")
            and (self.polarity(node.right) == 1 or self._rules_out_rocm(node.right))
            and not self._asks_answering(node.right)
        ):  # `torch.cuda.is_available() and isinstance(self, CUDABuilder)`: checked together;
            # `x.is_cuda and torch.version.hip is None`: a check for NVIDIA's CUDA, not ROCm's
            why = "a check made together with `{code}`"
            self._mark(node.left, Silence("checks", why, node, quoted=node.right))
        if (
            isinstance(node.operator, cst.Or)
            and polarity == -1
            and self._infers("checks")
            and self._asks_rocm(node.right)
        ):  # `not torch.cuda.is_available() or torch.version.hip is not None`: the same, negated
            why = "a check made together with `{code}`"
            self._mark(node.left, Silence("checks", why, node, quoted=node.right))
        if isinstance(node.operator, cst.And) and self._infers("dispatch"):
            self._other_device_only(node)
        if (
            isinstance(node.operator, cst.Or)
            and polarity != -1
            and self._infers("fallbacks")
            and self.may_prefer_accelerator
            and "accelerator" in words_in(node.left)
        ):
            why = "the fallback of `{code} or ...`"
            self._mark(node.right, Silence("fallbacks", why, node, quoted=node.left))

    def _other_device_only(self, node: cst.BooleanOperation) -> None:
        """``torch.backends.mps.is_available() and not torch.cuda.is_available()``: a test that
        holds only on another device, with CUDA ruled out, is the check of a dispatch to that
        device (on XPU the MPS term is false already), not a use of CUDA."""
        parent = self.get_metadata(ParentProvider, node, None)
        if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And):
            return  # (read once, from the whole conjunction)
        terms: list[cst.BaseExpression] = []
        pending: list[cst.BaseExpression] = [node]
        while pending:
            term = pending.pop()
            if isinstance(term, cst.BooleanOperation) and isinstance(term.operator, cst.And):
                pending += [term.right, term.left]
            else:
                terms.append(term)
        if not any(
            not isinstance(term, cst.UnaryOperation) and self.other_device(term, cpu=False)
            for term in terms
        ):
            return
        for term in terms:
            if self.polarity(term) == -1:
                self.tests.setdefault(term, Test()).role = DISPATCH

    def _nvidia_only_exits(self, node: cst.If) -> None:
        """``if not torch.cuda.is_available(): return`` and then ``if torch.version.hip is not
        None: return``: the two leave together for everything but NVIDIA's CUDA, which the code
        after them asks for in particular (as ``x.is_cuda and torch.version.hip is None`` does)."""
        if not self._infers("checks"):
            return
        later = self._rest_of_block(node)
        after = later[0] if later else None
        if (
            isinstance(after, cst.If)
            and self._asks_rocm(after.test)
            and block_ends_in(after.body, LEAVES_BLOCK, EXIT_CALLS)
        ):
            why = "a check made together with `{code}`"
            self._mark(node.test, Silence("checks", why, node, quoted=after.test))

    def _rules_out_rocm(self, test: cst.BaseExpression) -> bool:
        """``torch.version.hip is None``, ``not is_hip()``, ``not _is_rocm``: beside a CUDA check,
        the code asks for NVIDIA's CUDA in particular (a kernel ROCm lacks), not for a GPU."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._asks_rocm(test.expression)
        return _compares_hip_version(test, cst.Is)

    @staticmethod
    def _asks_rocm(test: cst.BaseExpression) -> bool:
        """``is_hip()``, ``_is_rocm``, ``torch.version.hip is not None`` (``getattr(torch.version,
        "hip", None)`` too): whether this is ROCm."""
        if isinstance(test, (cst.Call, cst.Name, cst.Attribute)):
            name = dotted_name(test.func if isinstance(test, cst.Call) else test) or ""
            last = name.rsplit(".", 1)[-1]
            return is_predicate(last) and bool({"hip", "rocm"} & set(words(last)))
        return _compares_hip_version(test, cst.IsNot)

    def _asks_answering(self, test: cst.BaseExpression) -> bool:
        """A call of a function found to answer "is this CUDA?" (``_bias_ok(x, b)``): not a
        partner that makes a check beside it part of one test, as its own checks are judged
        in it (each would hide the other)."""
        return isinstance(test, cst.Call) and dotted_name(test.func) in self.answering

    def visit_For(self, node: cst.For) -> None:
        """``for index in range(torch.cuda.device_count()):``: the body runs once per CUDA
        device, so never where there is none (its ``else`` runs everywhere)."""
        loop = node.iter
        if (
            isinstance(loop, cst.Call)
            and dotted_name(loop.func) == "range"
            and len(loop.args) == 1
            and self._is_count(loop.args[0].value)
        ):
            self.tests.setdefault(loop, Test())
            self._mark(node.body, self._guard(loop, node, "`for ... in {code}:`"))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        polarity = self.polarity(node.test)
        role = self.tests.setdefault(node.test, Test())
        if polarity:
            role.cpu_otherwise = picks_cpu(node.orelse if polarity == 1 else node.body)
        if polarity and asks_tensor_is_cuda(node.test):
            role.tensor_paths = (node.body, node.orelse)
        if polarity:
            silence = self._guard(node.test, node, "`... if {code} else ...`")
            self._mark(node.body if polarity == 1 else node.orelse, silence)
        elif self._infers("fallbacks") and self._asks_torch_version(node.test):
            self._fallback_arms([(node.body,), (node.orelse,)], node, node.test)
        parent = self.get_metadata(ParentProvider, node, None)
        if not (isinstance(parent, cst.IfExp) and parent.orelse is node):
            self._dispatch_chain(node)

    def _fallback_arms(
        self, arms: list[Sequence[cst.CSTNode]], shown: cst.CSTNode, test: cst.CSTNode
    ) -> None:
        """Of the two arms of a torch-version test (each its nodes: a body, an ``else``, or the
        rest of the block after a body that leaves), the one that uses CUDA where the other does
        not is the fallback for the other torch (what the arms name, not what they bind: both
        may bind `torch_cuda_amp_custom_fwd`)."""
        uses = [any("cuda" in words_in(n, targets=False) for n in arm) for arm in arms]
        if uses.count(True) == 1:
            for node in arms[uses.index(True)]:
                why = "the arm for another torch release of `{code}`"
                self._mark(node, Silence("fallbacks", why, shown, quoted=test))

    def visit_Dict(self, node: cst.Dict) -> None:
        """``{"cuda": torch.cuda.synchronize, "xpu": ..., "cpu": ...}``: a table keyed by device
        type; its CUDA entries are used on CUDA only."""
        if not self._infers("dispatch"):
            return
        keyed = [
            (element, string_values(element.key)) for element in node.elements
            if isinstance(element, cst.DictElement)
        ]  # fmt: skip
        keys = {k for _, ks in keyed for k in ks or ()}
        if keys & CUDA_DEVICE_TYPES and keys & DEVICE_KEYS:
            for element, key in keyed:
                if key and set(key) <= CUDA_DEVICE_TYPES:
                    why = "the CUDA entry of a table keyed by device type"
                    self._mark(element.value, Silence("dispatch", why, node))

    def _patch(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``torch.cuda.Event = XpuEvent`` patches torch; ``saved = torch.cuda.Event`` keeps the
        original to restore (recorded here, judged once the module is read)."""
        assigned, read = dotted_name(target) or "", dotted_name(value) or ""
        if assigned.startswith("torch.cuda."):
            self.patched.add(assigned)
        if read.startswith("torch.cuda."):
            self.saved.append((value, read))

    def _table_entry(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``TABLE["cuda"] = torch.cuda.synchronize``: an entry of a table keyed by device type."""
        if isinstance(target, cst.Subscript) and len(target.slice) == 1:
            index = target.slice[0].slice
            key = string_values(index.value) if isinstance(index, cst.Index) else None
            if key and set(key) <= CUDA_DEVICE_TYPES:
                why = "the CUDA entry of a table keyed by device type"
                self._mark(value, Silence("dispatch", why, target))

    # --- Names and tests ----------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)
        name = node.name.value
        if self._infers("names"):
            if names_cuda(name):
                self._mark(
                    node.body, Silence("names", f"class `{name}` is named for CUDA or ROCm", node)
                )
            elif not names_other_device(name):
                for base in node.bases:
                    base_name = (dotted_name(base.value) or "").rsplit(".", 1)[-1]
                    if base_name and names_cuda(base_name):
                        why = f"class `{name}` derives from `{base_name}`, named for CUDA or ROCm"
                        self._mark(node.body, Silence("names", why, node))
        self._test_decorators(node)
        self._cuda_ranks(node)
        self._declared_devices(node)
        self._made_only_on_cuda(node)
        self._enter_scope()
        self._bind_guard_names(node.body.body)

    def _made_only_on_cuda(self, node: cst.ClassDef) -> None:
        """A module's class whose ``__init__`` raises unless on CUDA before it can return
        (``assert torch.cuda.is_initialized(), "Cuda Graphs can only be used with GPUs"``) has
        no instance elsewhere: its methods run only on CUDA (and what only they call)."""
        top_level = len(self.classes) == 1 and not self.function_stack  # (`classes`: this one)
        if not top_level or node.name.value not in self.cuda_classes:
            return
        # (None where the lint's cut of the module left `__init__` out: the class says so then.)
        init = next(
            (
                m
                for m in node.body.body
                if isinstance(m, cst.FunctionDef) and m.name.value == "__init__"
            ),
            None,
        )
        why = f"no `{node.name.value}` is made off CUDA: its `__init__` raises unless on CUDA"
        self._mark(node.body, Silence("guard", why, init or node))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()
        self._leave_scope()

    def _enter_scope(self) -> None:
        self.guard_names.append({})
        self.count_names.append(set())
        self.held_names.append(set())

    def _leave_scope(self) -> None:
        self.guard_names.pop()
        self.count_names.pop()
        self.held_names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = self.classes[-1] if self.classes else None
        self.functions[definition_key(node.name.value, owner)] = node
        name = node.name.value
        if self._infers("names") and names_cuda(name):
            if is_predicate(name):  # `is_cuda_available()`: its body is the check, not CUDA code
                self.predicates.append(node)
            else:
                why = f"function `{name}` is named for CUDA or ROCm"
                self._mark(node.body, Silence("names", why, node))
                self._mark(node.params, Silence("names", why, node))  # (its defaults too)
        if self._infers("tests") and requires_cuda(name):
            why = f"`{name}` is a decorator that requires CUDA"
            self._mark(node.body, Silence("tests", why, node))
        self._test_decorators(node)
        self._cuda_kernel(node)
        if self.library_names and self._infers("imports"):
            self._calls_library_first(node)
        self._enter_scope()
        self.function_stack.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._leave_scope()
        self.function_stack.pop()

    def visit_Return(self, node: cst.Return) -> None:
        if (
            node.value is not None
            and self.function_stack
            and self.function_stack[-1] in self.predicates
        ):
            self.tests.setdefault(node.value, Test()).role = ANSWER

    def _test_decorators(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        if not self._infers("tests"):
            return
        for decorator in node.decorators:
            why = self._cuda_only_marker(decorator.decorator)
            if why:
                silence = Silence("tests", f"{why}: `{{code}}`", decorator, quoted=decorator)
                self._mark(node.body, silence)

    def _cuda_kernel(self, node: cst.FunctionDef) -> None:
        """A function registered with torch as a kernel for CUDA only
        (``@torch.library.custom_op(..., device_types="cuda")``, ``@torch.library.impl(lib,
        "op", "CUDA")``, ``@register_kernel("lib::op", "cuda")``): torch calls it only for CUDA
        tensors."""
        if not self._infers("dispatch"):
            return
        for decorator in node.decorators:
            call = decorator.decorator
            if not isinstance(call, cst.Call):
                continue
            if (dotted_name(call.func) or "").rpartition(".")[2] not in KERNEL_REGISTRATIONS:
                continue
            for arg in call.args:
                values = string_values(arg.value)
                if values and all(v.lower() in CUDA_DEVICE_TYPES for v in values):
                    why = "a kernel registered for CUDA only: `{code}`"
                    silence = Silence("dispatch", why, decorator, quoted=arg)
                    self._mark(node.body, silence)
                    self._mark(node.params, silence)
                    return

    def _declared_devices(self, node: cst.ClassDef) -> None:
        """A class that declares the devices it supports, CUDA's only (``SUPPORTED_DEVICES =
        {"cuda"}``, ``SUPPORTS_DEVICES = [DEVICE.CUDA, DEVICE.ROCM]``), for a dispatcher that
        reads the declaration: its code runs only there."""
        if not self._infers("dispatch"):
            return
        for statement in node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                bound = _binding(small)
                if bound is None or len(bound[0]) != 1:
                    continue
                (target,), value = bound
                name = dotted_name(target) or ""
                said = set(words(name))
                if not ({"device", "devices"} & said and {"supported", "supports"} & said):
                    continue  # (`devices = ["cuda"]` may be a default, not a declaration)
                if isinstance(value, (cst.Set, cst.List, cst.Tuple)) and _names_only_cuda(value):
                    why = f"the class declares CUDA as the only device it supports: `{name} = {{code}}`"
                    self._mark(node.body, Silence("dispatch", why, statement, quoted=value))
                    return

    def _cuda_ranks(self, node: cst.ClassDef) -> None:
        """A multi-process test case whose ``world_size`` is the number of CUDA devices
        (``world_size = min(torch.cuda.device_count(), 4)``, or a property that returns it)
        starts no process where there is none, and torch's distributed test cases then skip
        every test: the class runs only on CUDA (outside a test case, the same count is a
        finding: a run with no rank on another accelerator)."""
        if not (self._infers("tests") and _is_test_case(node)):
            return
        for statement in node.body.body:
            for value in _world_size_values(statement):
                if self._is_count(value) or (
                    isinstance(value, cst.Call)
                    and dotted_name(value.func) == "min"
                    and any(self._is_count(arg.value) for arg in value.args)
                ):
                    why = "the test's world size is the number of CUDA devices: `{code}`"
                    self._mark(node.body, Silence("tests", why, statement, quoted=value))
                    return

    def _cuda_only_marker(self, marker: cst.BaseExpression, depth: int = 0) -> str | None:
        """What says a test marker runs its test only on CUDA: a skip whose condition is a CUDA
        guard, a name a module assigns such a skip to, or a ``require_cuda``-like decorator."""
        callee = marker.func if isinstance(marker, cst.Call) else marker
        dotted = dotted_name(callee)
        if dotted is None:
            return None
        last = dotted.rsplit(".", 1)[-1]
        if isinstance(marker, cst.Call) and last in SKIP_IF | SKIP_UNLESS:
            condition = argument(marker, "condition", 0)
            if condition is None:
                return None
            self.tests.setdefault(condition.value, Test()).role = REQUIREMENT
            wanted = -1 if last in SKIP_IF else 1
            if self.polarity(condition.value) == wanted:
                return "the test is skipped unless CUDA"
            return None
        if dotted in self.markers and depth == 0:
            assigned = self._cuda_only_marker(self.markers[dotted], depth + 1)
            if assigned:
                return f"{assigned} (`{dotted}`)"
        if requires_cuda(dotted):
            return "the test requires CUDA"
        if isinstance(marker, cst.Call) and any(
            arg.keyword is not None
            and arg.keyword.value in DEVICE_TYPE_KEYWORDS
            and _names_only_cuda(arg.value)
            for arg in marker.args
        ):
            return "the test is made for CUDA's device type only"
        return None

    def _mark_test_module(
        self, module: cst.Module, value: cst.BaseExpression, statement: cst.CSTNode
    ) -> None:
        """``pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)`` (or a list of
        markers): every test of the module runs only on CUDA."""
        if not self._infers("tests"):
            return
        markers = (
            [e.value for e in value.elements]
            if isinstance(value, (cst.List, cst.Tuple))
            else [value]
        )
        for marker in markers:
            why = self._cuda_only_marker(marker)
            if why:
                silence = Silence(
                    "tests", f"`pytestmark`: {why}: `{{code}}`", statement, quoted=marker
                )
                self._mark(module, silence)
                return

    def _autouse_skip(self, module: cst.Module, function: cst.FunctionDef) -> None:
        """An autouse fixture that skips every test off CUDA (``if not torch.cuda.is_available():
        pytest.skip(...)``)."""
        autouse = any(
            isinstance(d.decorator, cst.Call)
            and (dotted_name(d.decorator.func) or "").endswith("fixture")
            and any(
                a.keyword is not None
                and a.keyword.value == "autouse"
                and isinstance(a.value, cst.Name)
                and a.value.value == "True"
                for a in d.decorator.args
            )
            for d in function.decorators
        )
        if not (autouse and self._infers("tests")):
            return
        for statement in function.body.body:
            if (
                isinstance(statement, cst.If)
                and self.polarity(statement.test) == -1
                and block_ends_in(statement.body, (cst.Raise,), EXIT_CALLS)
            ):
                why = "an autouse fixture skips every test unless CUDA: `if {code}:`"
                self._mark(module, Silence("tests", why, statement, quoted=statement.test))

    def visit_Import(self, node: cst.Import) -> None:
        self._cuda_only_import([get_full_name_for_node(a.name) or "" for a in node.names], node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self._infers("names") and self._imports_variant(node):
            self.cuda_imports.append(node)
        if node.relative or node.module is None:
            return
        module = get_full_name_for_node(node.module) or ""
        names = [] if isinstance(node.names, cst.ImportStar) else node.names
        self._cuda_only_import(
            [module, *(f"{module}.{a.name.value}" for a in names if isinstance(a.name, cst.Name))],
            node,
        )

    @staticmethod
    def _imports_variant(node: cst.ImportFrom) -> bool:
        """``from .cuda import *``, ``from .backends import rocm``, ``from pkg.nvidia.ops
        import f``: a module named for CUDA or ROCm (not one of torch's own)."""
        module = get_full_name_for_node(node.module) if node.module is not None else ""
        if not node.relative and (module or "").partition(".")[0] == "torch":
            return False
        names = [] if isinstance(node.names, cst.ImportStar) else node.names
        parts = (module or "").split(".")[-1:] + [
            a.name.value for a in names if isinstance(a.name, cst.Name)
        ]
        return any(part and names_cuda(part) for part in parts)

    def _cuda_only_import(self, imported: list[str], node: cst.CSTNode) -> None:
        """A function that imports a library that exists only for NVIDIA or AMD GPUs (outside a
        ``try``) runs only there, as a module that does so at its top level does; an import of
        one is CUDA-only code for the guard around it too."""
        if not self._infers("imports") or not self.function_stack:
            return
        library = next(
            (
                lib
                for name in imported
                for lib in self.libraries
                if name == lib or name.startswith(f"{lib}.")
            ),
            None,
        )
        if library is None:
            return
        self.cuda_imports.append(node)
        if not self._inside_try(node):
            why = f"the function imports `{library}`, which exists only for NVIDIA or AMD GPUs"
            function = self.function_stack[-1]
            self._mark(function.body, Silence("imports", why, node))
            self._mark(function.params, Silence("imports", why, node))  # (its defaults too)

    def _calls_library_first(self, function: cst.FunctionDef) -> None:
        """A function that uses a library that exists only for NVIDIA or AMD GPUs before
        anything in it can return or raise (``args = get_args()``, where the module binds
        ``get_args`` under ``if is_megatron_lm_available():``) runs only there, as one that
        imports it does: off those GPUs it fails at that use whatever else it does."""
        parameters = {p.name.value for p in _parameters(function.params)}
        body = function.body.body
        for statement in body if isinstance(body, Sequence) else ():
            if isinstance(statement, cst.SimpleStatementLine):
                used = self._library_name_in(statement, parameters)
                if used is not None:
                    name, library = used
                    why = f"the function uses `{name}` of {library} before it can return"
                    self._mark(function.body, Silence("imports", why, statement))
                    return
            if _may_leave(statement):
                return

    def _library_name_in(self, node: cst.CSTNode, shadowed: set[str]) -> tuple[str, str] | None:
        """A name of :attr:`library_names` that ``node`` uses whenever it runs (not in a
        lambda, a comprehension, the arms of ``a if t else b`` or the right of ``and``/``or``)."""
        pending = [node]
        while pending:
            current = pending.pop()
            if isinstance(current, cst.Name):
                library = self.library_names.get(current.value)
                if library is not None and current.value not in shadowed:
                    return current.value, library
            elif isinstance(current, cst.Attribute):
                pending.append(current.value)  # (not `x.mpu`: an attribute of something else)
            elif isinstance(current, cst.Arg):
                pending.append(current.value)  # (not a keyword's name)
            elif isinstance(current, cst.IfExp):
                pending.append(current.test)
            elif isinstance(current, cst.BooleanOperation):
                pending.append(current.left)
            elif not isinstance(current, (cst.Lambda, cst.FunctionDef, *_COMPREHENSIONS)):
                pending.extend(children(current))
        return None

    def _inside_try(self, node: cst.CSTNode) -> bool:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, cst.Try):
                return True
            current = self.parents.get(current)
        return False

    def _mark_function_or_module(self, node: cst.CSTNode, text: str, quoted: cst.CSTNode) -> None:
        where = self.function_stack[-1].body if self.function_stack else self.module
        self._mark(where, Silence("imports", text, node, quoted=quoted))

    # --- Functions and their callers ------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        callee = dotted_name(node.func)
        if callee is not None:
            self.calls.append((call_key(callee, self.classes[-1] if self.classes else None), node))
        last = callee.rsplit(".", 1)[-1] if callee else ""
        if last and names_cuda(last) and "cuda" not in words(last) and not is_predicate(last):
            self.cuda_calls.append(node)
        enabled = next(
            (a.value for a in node.args if a.keyword and a.keyword.value == "enabled"), None
        )
        if enabled is not None and self.polarity(enabled) == 1:
            # `GradScaler(enabled=use_amp)`, `use_amp = device.type == "cuda"`: off CUDA the
            # object is made disabled, and does nothing there.
            self._mark(
                node, self._guard(enabled, node, "`enabled={code}`, which holds only on CUDA")
            )
        if last in SKIP_IF | SKIP_UNLESS and node.args:  # `unittest.skipUnless(...)(test)`
            condition = argument(node, "condition", 0)
            if condition is not None:
                self.tests.setdefault(condition.value, Test()).role = REQUIREMENT
        if callee and (callee.endswith("patch.object") or last == "setattr") and node.args:
            if self._infers("checks"):
                why = "the target of a patch, not a use: `{code}`"
                self._mark(node.args[0].value, Silence("checks", why, node, quoted=node))
        elif self._infers("imports") and compiles_cuda(node):
            why = "compiles CUDA sources: `{code}`"
            self._mark_function_or_module(node, why, node)
        elif self._infers("imports") and last in ("CDLL", "LoadLibrary") and node.args:
            loaded = string_values(node.args[0].value) or []
            if any(library in text for text in loaded for library in CUDA_ONLY_SHARED_LIBRARIES):
                self._mark_function_or_module(
                    node, "loads {code}, a library of NVIDIA's or AMD's driver", node.args[0].value
                )
        if callee == "hasattr" and node.args and self._infers("checks"):
            why = "a probe of what the module has: `{code}`"
            self._mark(node.args[0].value, Silence("checks", why, node, quoted=node))
        elif callee == "getattr" and len(node.args) == 3 and self._infers("fallbacks"):
            why = "the default of `{code}`, for a device torch has no module for"
            self._mark(node.args[2].value, Silence("fallbacks", why, node, quoted=node))

    def leave_Module(self, original_node: cst.Module) -> None:
        for callee, call in self.calls:
            if callee in self.functions:
                self.callers.setdefault(self.functions[callee], []).append(call)
        if self.may_launch_itself and self._infers("tests"):
            self._worker_of_own_tests(original_node)
        for value, name in self.saved:
            if name in self.patched and self._infers("checks"):
                why = f"the original of `{name}`, kept while the module patches it"
                self._mark(value, Silence("checks", why, value))

    def _worker_of_own_tests(self, module: cst.Module) -> None:
        """A test module that runs itself as the worker of its own tests (``subprocess.run([
        sys.executable, __file__, "--worker"])``, the worker called under ``if __name__ ==
        "__main__":``): where every launch, every use of ``__file__`` outside that block, runs
        only on CUDA (a test skipped unless CUDA), so does the block, and what only it calls."""
        mains = [s for s in module.body if isinstance(s, cst.If) and _tests_main(s.test)]
        if not mains:
            return
        launches = [
            node
            for node in self.parents
            if isinstance(node, cst.Name)
            and node.value == "__file__"
            and not any(self._under(node, (main,)) for main in mains)
        ]
        confined = self.guarded_functions()
        self._guarded_functions = None  # (found again with the block marked)
        if not launches or not all(self._within(node, confined) for node in launches):
            return
        why = "the module runs it only as the worker of its own tests, which run only on CUDA"
        for main in mains:
            self._mark(main.body, Silence("tests", f"{why} (`__file__`)", launches[0]))

    # --- Queries --------------------------------------------------------------------------
    def _within(self, node: cst.CSTNode | None, functions: set[cst.FunctionDef]) -> Silence | None:
        """The reason ``node`` runs only on CUDA: the innermost marked node it is under, or one of
        ``functions`` whose body holds it (its decorators run where it is defined, not where it
        is called)."""
        child = None
        while node is not None:
            parent = self.parents.get(node)
            if parent in self.library_blocks and isinstance(parent, cst.IndentedBlock):
                # (A walk of the block: only where a query asks.)
                self._after_library_use(parent.body, self.library_blocks.pop(parent))
            silence = self.marked.get(node)
            if silence is not None:
                return silence
            if (
                node in functions
                and isinstance(node, cst.FunctionDef)
                and not (child is not None and child in node.decorators)
            ):
                why = f"every call of `{node.name.value}` in the module runs only on CUDA"
                return Silence("guard", why, node)
            child, node = node, parent
        return None

    def guarded_functions(self) -> set[cst.FunctionDef]:
        """Functions all of whose (one or more) callers in the module are guarded, to a fixpoint."""
        if self._guarded_functions is None:
            guarded: set[cst.FunctionDef] = set()
            changed = True
            while changed:
                changed = False
                for function in self.functions.values():
                    callers = self.callers.get(function)
                    if function in guarded or not callers:
                        continue
                    if all(self._within(call, guarded) for call in callers):
                        guarded.add(function)
                        changed = True
            self._guarded_functions = guarded
        return self._guarded_functions

    def is_guarded(self, node: cst.CSTNode) -> Silence | None:
        """Why ``node`` runs only on CUDA, if it does."""
        return self._within(node, self.guarded_functions())

    def guard_tests(self, reason: Silence | None) -> list[cst.CSTNode]:
        """The tests of the guards that code silenced for ``reason`` runs under, innermost (its
        own) first: ``if torch.cuda.is_available():`` and ``if torch.version.cuda:`` around
        ``from .cuda import *``."""
        found: list[cst.CSTNode] = []
        while reason is not None and reason.test is not None and reason.test not in found:
            found.append(reason.test)
            reason = self.is_guarded(reason.node) if reason.node is not None else None
        return found

    def tests_of(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The guard tests ``node`` is part of, innermost first (up to its statement)."""
        found = []
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, cst.BaseStatement):
            if current in self.tests:
                found.append(current)
            current = self.parents.get(current)
        return found

    def _under(self, node: cst.CSTNode, ancestors: tuple[cst.CSTNode, ...]) -> bool:
        current: cst.CSTNode | None = node
        while current is not None:
            if current in ancestors:
                return True
            current = self.parents.get(current)
        return False

    def check(
        self, node: cst.CSTNode, cuda_tests: set[cst.CSTNode], device_picks: list[cst.CSTNode]
    ) -> Silence | None:
        """Why a finding at ``node`` is the check that confines CUDA code rather than a use of
        CUDA, if it is: it is in the test of a guard that states a requirement or dispatches over
        devices, or one of ``cuda_tests`` (tests whose guarded code holds CUDA-only APIs), or it
        chooses a kernel by a tensor's device with another path for other tensors, and neither
        path holds one of ``device_picks`` (a device picked by name). A check whose guarded
        code only picks a device (`"cuda" if torch.cuda.is_available() else "cpu"`) is a finding:
        on another accelerator that code silently runs on the CPU."""
        if "checks" not in self.inferences:
            return None
        restores = self._restores_checkpoints(node)
        if restores is not None:
            why = "it chooses only the `map_location` of a load (where CUDA storages restore): `{code}`"
            return Silence("checks", why, restores, quoted=restores)
        if self.predicates:
            answer = self.answer(node)
            if answer is not None:
                return answer
        for test in self.tests_of(node):
            silence = self._check(test, cuda_tests, device_picks)
            if silence is not None:
                return silence
        return None

    def _holder(self, value: cst.CSTNode) -> str | None:
        """The one plain name ``value`` (a check) is bound to, if there is one."""
        names = [name for name, values in self.bound.items() if value in values]
        return names[0] if len(names) == 1 and "." not in names[0] else None

    def _uses_of(self, name: str) -> list[cst.Name]:
        """Where the module reads ``name``, one of the names checks are bound to."""
        if self._name_uses is None:  # (once per module, and only where it is asked)
            self._name_uses = {}
            for node in self.parents:
                if (
                    isinstance(node, cst.Name)
                    and node.value in self.bound
                    and not isinstance(self.parents.get(node), cst.AssignTarget)
                ):
                    self._name_uses.setdefault(node.value, []).append(node)
        return self._name_uses.get(name, [])

    def _names_held_in(self, tested: cst.CSTNode) -> list[str]:
        """The names whose bound checks a test reads: the test itself (``if _is_cuda:``), or
        the counts it compares or loops over (``if num_gpus > 0:``, ``range(num_gpus)``) where
        every use of the count is such a test (one given on as data, ``nprocs=num_gpus``, is a
        number of devices that is zero off CUDA: the count is a finding there)."""
        name = dotted_name(tested) if isinstance(tested, (cst.Name, cst.Attribute)) else None
        if name is not None:
            return [name]
        if isinstance(tested, cst.Comparison):
            sides = [tested.left, *(c.comparator for c in tested.comparisons)]
        elif isinstance(tested, cst.Call):
            sides = [arg.value for arg in tested.args]
        else:
            return []
        counts = [self.count_reads[side] for side in sides if side in self.count_reads]
        # (An attribute's uses are not looked for: `self.num_gpus` is never held so.)
        uses = {count: self._uses_of(count) for count in counts}
        return [c for c in counts if uses[c] and all(self.tests_of(use) for use in uses[c])]

    def _restores_checkpoints(self, node: cst.CSTNode) -> cst.IfExp | None:
        """The ``a if <check> else b`` that ``node`` is in the test of, where what it chooses is
        only the ``map_location`` of a load: given as it (``torch.load(f, map_location="cuda" if
        torch.cuda.is_available() else "cpu")``) or held in a name every use of which is one
        (``map_location = None if torch.cuda.is_available() else "cpu"``). A checkpoint saved on
        CUDA restores there only where CUDA is; elsewhere it must be mapped (to the CPU), and
        the portable check would leave it unmapped on XPU."""
        current: cst.CSTNode | None = self.parents.get(node)
        child: cst.CSTNode | None = node
        while current is not None and not isinstance(current, cst.BaseStatement):
            if isinstance(current, cst.IfExp) and child is current.test:
                break
            current, child = self.parents.get(current), current
        if not isinstance(current, cst.IfExp):
            return None
        choice, holder = current, self.parents.get(current)
        if isinstance(holder, cst.Arg):
            return choice if _maps_location(holder) else None
        if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1):
            return None
        target = holder.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        scope = self._scope_of(holder)
        uses = [use for use in _names_in(scope) if use.value == target.value and use is not target]
        arguments = [self.parents.get(use) for use in uses]
        if uses and all(isinstance(a, cst.Arg) and _maps_location(a) for a in arguments):
            return choice
        return None

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The body of the function ``node`` is in, or the module."""
        current = self.parents.get(node)
        while current is not None and not isinstance(current, cst.FunctionDef):
            current = self.parents.get(current)
        return current.body if isinstance(current, cst.FunctionDef) else self.module

    def _held_for_a_cpu_choice(self, test: cst.CSTNode) -> bool:
        """Whether ``test`` is (part of) a check held in a name that the module also tests to
        pick the CPU otherwise (``HAS = torch.cuda.is_available() and ...``, then ``"cuda" if
        HAS else "cpu"``): the name chooses the device there, whatever its own ``and`` guards."""
        current: cst.CSTNode | None = test
        while current is not None and not isinstance(current, cst.BaseStatement):
            name = self._holder(current)
            if name is not None:
                return any(
                    self.tests[tested].cpu_otherwise
                    for use in self._uses_of(name)
                    for tested in self.tests_of(use)
                )
            current = self.parents.get(current)
        return False

    def _tested_only_as_requirement(self, value: cst.CSTNode) -> str | None:
        """The name ``value`` (a check) is bound to, where every use of the name is in the test
        of a requirement or a dispatch (``_HAS_CUDA = torch.cuda.is_available()``, then only
        ``@unittest.skipUnless(_HAS_CUDA and ..., ...)``): the check confines, as there."""
        name = self._holder(value)
        uses = self._uses_of(name) if name is not None else []
        required = tuple(t for t, r in self.tests.items() if r.role in (REQUIREMENT, DISPATCH))
        if uses and all(self._under(use, required) for use in uses):
            return name
        return None

    def _named_for_cuda(self, value: cst.CSTNode) -> str | None:
        """The name ``value`` (a check) is bound to, where the name says that it asks about CUDA
        (``is_cuda_available = torch.cuda.is_available()``, ``_is_cuda = ...``) and the module
        only tests it, never to pick the CPU otherwise: the question is CUDA's by intent (a
        portable query there would change what the name means), and each test is judged where
        it is. A use as data (printed in an environment report, passed on) keeps the finding."""
        name = self._holder(value)
        if name is None or not names_cuda(name):
            return None
        for use in self._uses_of(name):
            tests = self.tests_of(use)
            if not tests or any(self.tests[test].cpu_otherwise for test in tests):
                return None
        return name

    def answer(self, node: cst.CSTNode) -> Silence | None:
        """Why a check at ``node`` is the answer of a predicate named for CUDA
        (``def is_cuda_available(): ...``), if it is."""
        current = self.parents.get(node)
        while current is not None:
            if current in self.predicates and isinstance(current, cst.FunctionDef):
                why = f"{ANSWER}: `{current.name.value}`"
                return Silence("checks", why, current)
            current = self.parents.get(current)
        return None

    def _check(
        self, test: cst.CSTNode, cuda_tests: set[cst.CSTNode], device_picks: list[cst.CSTNode]
    ) -> Silence | None:
        role = self.tests[test]
        if role.role is not None:
            return Silence("checks", f"{role.role}: `{{code}}`", test, quoted=test)
        held = {
            value
            for tested in cuda_tests
            for name in self._names_held_in(tested)
            for value in self.bound.get(name, [])
        }
        if (
            (test in cuda_tests or test in held)
            and not role.cpu_otherwise
            and not self._held_for_a_cpu_choice(test)
        ):
            why = "the check that confines CUDA-only code: `{code}`"
            return Silence("checks", why, test, quoted=test)
        required = self._tested_only_as_requirement(test)
        if required is not None:
            why = f"held in `{required}`, tested only as a requirement of CUDA or in a dispatch over devices: `{{code}}`"
            return Silence("checks", why, test, quoted=test)
        named = self._named_for_cuda(test)
        if named is not None:
            why = f"held in `{named}`, a name that says it asks about CUDA: `{{code}}`"
            return Silence("checks", why, test, quoted=test)
        paths = role.tensor_paths
        if paths and not any(self._under(pick, paths) for pick in device_picks):
            why = "a choice of kernel by the tensor's device, with another path: `{code}`"
            return Silence("checks", why, test, quoted=test)
        return None


def _compares_hip_version(test: cst.BaseExpression, operator: type) -> bool:
    """``torch.version.hip is None`` (``operator``: ``cst.Is``; ``is not``: ``cst.IsNot``), the
    version also read as ``getattr(torch.version, "hip", None)``."""
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, operator)
        and is_none(test.comparisons[0].comparator)
    ):
        return False
    left = test.left
    if isinstance(left, cst.Call) and dotted_name(left.func) == "getattr" and len(left.args) >= 2:
        attribute = left.args[1].value
        return (
            dotted_name(left.args[0].value) == "torch.version"
            and isinstance(attribute, cst.SimpleString)
            and attribute.evaluated_value == "hip"
        )
    return dotted_name(left) == "torch.version.hip"


def _names_only_cuda(value: cst.BaseExpression) -> bool:
    """``"cuda"``, ``DeviceType.CUDA`` or a tuple or list of such: CUDA's device types only."""
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        return bool(value.elements) and all(_names_only_cuda(e.value) for e in value.elements)
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return isinstance(text, str) and text.lower() in CUDA_DEVICE_TYPES
    name = dotted_name(value)
    return name is not None and name.rpartition(".")[2].lower() in CUDA_DEVICE_TYPES


def _maps_location(argument: cst.Arg) -> bool:
    """``map_location=...``, as ``torch.load`` and the loaders of state dicts take it."""
    return argument.keyword is not None and argument.keyword.value == "map_location"


def _parameters(parameters: cst.Parameters) -> list[cst.Param]:
    found = [*parameters.posonly_params, *parameters.params, *parameters.kwonly_params]
    found += [p for p in (parameters.star_arg, parameters.star_kwarg) if isinstance(p, cst.Param)]
    return found


def _names_in(node: cst.CSTNode) -> Iterator[cst.Name]:
    """The names an expression reads (``device`` of ``device.type``; not ``type``)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            yield current
        elif isinstance(current, cst.Attribute):
            pending.append(current.value)
        else:
            pending.extend(children(current))


def _is_test_case(node: cst.ClassDef) -> bool:
    """A class named as a test case (``TestTrace``, ``FSDPTraceTest``), or derived from one."""
    names = [
        node.name.value,
        *((dotted_name(b.value) or "").rsplit(".", 1)[-1] for b in node.bases),
    ]
    return any(
        name.startswith("Test") or name.endswith(("Test", "Tests", "TestCase", "TestBase"))
        for name in names
    )


def _binding(small: cst.CSTNode) -> tuple[list[cst.BaseExpression], cst.BaseExpression] | None:
    """What an assignment (``a = b = value``, ``a: T = value``) binds, and to what."""
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets], small.value
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return [small.target], small.value
    return None


def _world_size_values(statement: cst.CSTNode) -> list[cst.BaseExpression]:
    """What a statement of a class body gives as the class's ``world_size``: the value of
    ``world_size = ...``, or what a ``world_size`` property returns."""
    if isinstance(statement, cst.SimpleStatementLine):
        bindings = [b for b in map(_binding, statement.body) if b is not None]
        return [
            value
            for targets, value in bindings
            if any(dotted_name(target) == "world_size" for target in targets)
        ]
    if isinstance(statement, cst.FunctionDef) and statement.name.value == "world_size":
        return [
            small.value
            for line in statement.body.body
            if isinstance(line, cst.SimpleStatementLine)
            for small in line.body
            if isinstance(small, cst.Return) and small.value is not None
        ]
    return []


def _tests_main(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``."""
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and {dotted_name(test.left), *(string_values(test.comparisons[0].comparator) or [])}
        == {"__name__", "__main__"}
    )


def _may_return(block: cst.BaseSuite) -> bool:
    """Whether a ``return`` of the block's own (not of a function in it) may end it."""
    pending: list[cst.CSTNode] = [block]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Return):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.BaseExpression)):
            pending.extend(children(node))
    return False


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _may_leave(statement: cst.CSTNode) -> bool:
    """Whether a statement of a function's body can end the function (a ``return``, a
    ``raise``, a ``yield``, which makes it a generator), anywhere in it."""
    pending = [statement]
    while pending:
        current = pending.pop()
        if isinstance(current, (cst.Return, cst.Raise, cst.Yield)):
            return True
        if not isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            pending.extend(children(current))
    return False
