"""Platform guards: code that only runs on CUDA (or ROCm, whose torch device type is "cuda" too).

``GuardAnalysis`` is visited with the rules. It records the code (nodes) that runs only on CUDA:
the body of ``if torch.cuda.is_available():`` (or ``x.is_cuda``, ``x.device.type == "cuda"``,
``current_platform.is_cuda()``, a configured guard call), the ``else`` of a negated guard, the
rest of a block after ``if not <guard>: return`` or ``assert <guard>``, the CUDA side of a
conditional expression, and the right of ``<guard> and ...``. ``torch.version.hip is not None``
is a guard too (a ROCm build). A function is guarded when it has callers in its module and every one of
them is guarded ("one call away"). Rules with ``guardable = True`` drop findings inside.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from portlint.analysis.names import LEAVES_BLOCK, block_ends_in, dotted_name, qualified_names
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.calls import call_key, definition_key

CUDA_TYPES = {"cuda", "hip", "rocm"}
GUARD_CALL_NAMES = {"is_cuda", "is_cuda_alike", "is_rocm", "is_hip"}
GUARD_QUALIFIED = {"torch.cuda.is_available", "torch.cuda.is_initialized"}
GUARD_ATTRIBUTES = {"is_cuda", "torch.version.cuda", "torch.version.hip"}
GUARD_VARIABLES = {
    "is_cuda", "use_cuda", "on_cuda", "cuda_available", "is_rocm", "is_hip", "is_nvidia",
}  # fmt: skip
VERSION_ATTRIBUTES = {"torch.version.cuda", "torch.version.hip"}


def _string_values(node: cst.BaseExpression) -> list[str] | None:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return [node.evaluated_value]
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        values = [_string_values(e.value) for e in node.elements]
        if all(v is not None for v in values):
            return [s for v in values if v is not None for s in v]
    return None


class GuardAnalysis(cst.BatchableCSTVisitor):
    METADATA_DEPENDENCIES = (NameProvider, ParentProvider)

    def __init__(self, guard_functions: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.guard_functions = set(guard_functions)
        # Nodes that run only on CUDA, with everything under them.
        self.marked: set[cst.CSTNode] = set()
        self.functions: dict[str, cst.FunctionDef] = {}
        self.callers: dict[cst.FunctionDef, list[cst.Call]] = {}
        self.calls: list[tuple[str, cst.Call]] = []
        self.classes: list[str] = []
        self._guarded_functions: set[cst.FunctionDef] | None = None

    # --- What counts as a guard -----------------------------------------------------------
    def polarity(self, test: cst.BaseExpression) -> int:
        """+1 when ``test`` being true implies CUDA, -1 when it being false does, else 0."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return -self.polarity(test.expression)
        if isinstance(test, cst.BooleanOperation):
            left, right = self.polarity(test.left), self.polarity(test.right)
            if isinstance(test.operator, cst.And):
                return 1 if 1 in (left, right) else 0
            if -1 in (left, right):
                return -1
            return 1 if left == right == 1 else 0
        if isinstance(test, cst.Call):
            return 1 if self._is_guard_call(test) else 0
        if isinstance(test, cst.Attribute):
            name = dotted_name(test)
            if test.attr.value == "is_cuda" or name in GUARD_ATTRIBUTES:
                return 1
            return 1 if qualified_names(self, test) & GUARD_ATTRIBUTES else 0
        if isinstance(test, cst.Name):
            return 1 if test.value in GUARD_VARIABLES else 0
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._comparison_polarity(test)
        return 0

    def _is_guard_call(self, call: cst.Call) -> bool:
        names = qualified_names(self, call.func)
        if names & (GUARD_QUALIFIED | self.guard_functions):
            return True
        dotted = dotted_name(call.func)
        if dotted and (
            dotted in self.guard_functions or dotted.rsplit(".", 1)[-1] in GUARD_CALL_NAMES
        ):
            return True
        if (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "startswith"
            and call.args
        ):
            values = _string_values(call.args[0].value)
            return bool(values and all(v in CUDA_TYPES for v in values))
        return False

    def _comparison_polarity(self, test: cst.Comparison) -> int:
        target = test.comparisons[0]
        operator = target.operator
        if (
            isinstance(target.comparator, cst.Name)
            and target.comparator.value == "None"
            and (
                dotted_name(test.left) in VERSION_ATTRIBUTES
                or qualified_names(self, test.left) & VERSION_ATTRIBUTES
            )
        ):  # `torch.version.hip is not None`: a ROCm (or CUDA) build
            return {cst.IsNot: 1, cst.Is: -1}.get(type(operator), 0)
        values = _string_values(target.comparator) or _string_values(test.left)
        if not values or not all(v in CUDA_TYPES for v in values):
            return 0
        if isinstance(operator, (cst.Equal, cst.In, cst.Is)):
            return 1
        if isinstance(operator, (cst.NotEqual, cst.NotIn, cst.IsNot)):
            return -1
        return 0

    # --- Recording guarded code ------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        # Kept for the queries after the visit. The ignore: LibCST types all metadata as object.
        self.parents: Mapping[cst.CSTNode, cst.CSTNode] = self.metadata[ParentProvider]  # type: ignore[assignment]

    def _mark(self, node: cst.CSTNode) -> None:
        self.marked.add(node)

    def _mark_rest_of_block(self, statement: cst.CSTNode) -> None:
        block = self.get_metadata(ParentProvider, statement, None)
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or statement not in body:
            return
        self.marked.update(body[body.index(statement) + 1 :])

    def visit_If(self, node: cst.If) -> None:
        polarity = self.polarity(node.test)
        if polarity == 1:
            self._mark(node.body)
        elif polarity == -1:
            if node.orelse is not None:
                self._mark(node.orelse)
            if block_ends_in(node.body, LEAVES_BLOCK):
                self._mark_rest_of_block(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """`guard and expr`: ``expr`` runs only when the guard held (`not guard or expr` too)."""
        polarity = self.polarity(node.left)
        if (isinstance(node.operator, cst.And) and polarity == 1) or (
            isinstance(node.operator, cst.Or) and polarity == -1
        ):
            self._mark(node.right)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        polarity = self.polarity(node.test)
        if polarity:
            self._mark(node.body if polarity == 1 else node.orelse)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for statement in node.body:
            if isinstance(statement, cst.Assert) and self.polarity(statement.test) == 1:
                self._mark_rest_of_block(node)

    # --- Functions and their callers ------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = self.classes[-1] if self.classes else None
        self.functions[definition_key(node.name.value, owner)] = node

    def visit_Call(self, node: cst.Call) -> None:
        callee = dotted_name(node.func)
        if callee is not None:
            self.calls.append((call_key(callee, self.classes[-1] if self.classes else None), node))

    def leave_Module(self, original_node: cst.Module) -> None:
        for callee, call in self.calls:
            if callee in self.functions:
                self.callers.setdefault(self.functions[callee], []).append(call)

    # --- Queries --------------------------------------------------------------------------
    def _within(self, node: cst.CSTNode | None, functions: set[cst.FunctionDef]) -> bool:
        """Whether ``node`` is under a marked node, or in the body of one of ``functions``
        (its decorators run where it is defined, not where it is called)."""
        child = None
        while node is not None:
            if node in self.marked:
                return True
            if (
                node in functions
                and isinstance(node, cst.FunctionDef)
                and not (child is not None and child in node.decorators)
            ):
                return True
            child, node = node, self.parents.get(node)
        return False

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

    def is_guarded(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` runs only on CUDA."""
        return self._within(node, self.guarded_functions())
