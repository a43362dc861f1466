"""``Walk`` calls visitors exactly as ``CSTNode.visit`` does, in the same order, on real files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from portlint.analysis.walk import TRIVIA, TRIVIA_TYPES, Walk, children, holds_only_trivia
from tests.test_names import COMPARE_TREE, CORNERS, FILES, parsed


class _LibCSTRecorder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append((f"visit_{type(node).__name__}", id(node)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append((f"leave_{type(original_node).__name__}", id(original_node)))

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.events.append((f"visit_{type(node).__name__}_{attribute}", id(node)))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.events.append((f"leave_{type(original_node).__name__}_{attribute}", id(original_node)))


NODE_CLASSES = [
    value
    for value in vars(cst).values()
    if isinstance(value, type)
    and issubclass(value, cst.CSTNode)
    and dataclasses.is_dataclass(value)
]


def _recorder(skip: frozenset[str] = frozenset()) -> type:
    """A visitor class with a recording ``visit_``/``leave_`` method for every node type and
    every field of every node type, except the node types named in ``skip``."""

    def method(name: str):
        return lambda self, node: self.events.append((name, id(node)))

    names = [
        f"{event}_{kind.__name__}{suffix}"
        for kind in NODE_CLASSES
        if kind.__name__ not in skip
        for suffix in ["", *(f"_{f.name}" for f in dataclasses.fields(kind))]
        for event in ("visit", "leave")
    ]
    methods = {name: method(name) for name in names}
    return type("Recorder", (), {"__init__": lambda self: setattr(self, "events", []), **methods})


_WalkRecorder = _recorder()


def _events_differ(module: cst.Module) -> int | None:
    """The index of the first event where the two traversals part, or None."""
    expected, walked = _LibCSTRecorder(), _WalkRecorder()
    module.visit(expected)
    Walk([walked])(module)
    for index, (a, b) in enumerate(zip(expected.events, walked.events, strict=False)):
        if a != b:
            return index
    return (
        None
        if len(expected.events) == len(walked.events)
        else min(len(expected.events), len(walked.events))
    )


@pytest.mark.parametrize(
    "source",
    [
        *CORNERS,
        'f"{x!r:>{width}.{p}f} {y=}"\nfrom a import *\ntry:\n    pass\nexcept E as e:\n    pass\n',
    ],
)
def test_walk_visits_like_libcst_on_corner_cases(source: str) -> None:
    module = cst.parse_module(source)
    assert _events_differ(module) is None
    assert all(
        list(children(n)) == [c for c in n.children if type(c) not in TRIVIA_TYPES]
        for n in _nodes(module)
    )


def _nodes(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _nodes(child)


def _differing(files: list[Path]) -> dict[str, int]:
    found = {str(path): _events_differ(module) for path, _, module in parsed(files)}
    return {path: index for path, index in found.items() if index is not None}


def test_walk_visits_like_libcst_on_every_file_of_the_repository() -> None:
    assert _differing(FILES) == {}


@pytest.mark.skipif(not COMPARE_TREE, reason="PORTLINT_COMPARE_TREE names no tree to compare on")
def test_walk_visits_like_libcst_on_a_given_tree() -> None:
    assert _differing(sorted(Path(COMPARE_TREE).rglob("*.py"))) == {}


def test_a_visit_method_returning_false_skips_the_children() -> None:
    class SkipCalls:
        def __init__(self) -> None:
            self.names: list[str] = []

        def visit_Call(self, node: cst.Call) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            self.names.append(node.value)

    visitor = SkipCalls()
    Walk([visitor])(cst.parse_module("a = f(b)\nc\n"))
    assert visitor.names == ["a", "c"]


_NonTriviaRecorder = _recorder(skip=TRIVIA)  # methods for every node type but trivia


def test_trivia_is_skipped_only_where_no_visitor_looks_at_it() -> None:
    module = cst.parse_module(CORNERS[4])
    expected, walked = _LibCSTRecorder(), _NonTriviaRecorder()
    module.visit(expected)
    walk = Walk([walked])
    assert walk.skip_trivia and not Walk([_WalkRecorder()]).skip_trivia
    walk(module)
    kept = [event for event in expected.events if event[0].split("_")[1] not in TRIVIA]
    assert walked.events == kept
    assert len(kept) < len(expected.events)


class _NodeRecorder:
    """A ``visit_``/``leave_`` method for every node type but trivia, none for fields (as the
    rules have): the walk then looks in no field that can hold only trivia."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []


for _kind in NODE_CLASSES:
    if _kind.__name__ not in TRIVIA:
        for _event in ("visit", "leave"):
            _name = f"{_event}_{_kind.__name__}"
            setattr(
                _NodeRecorder, _name, lambda self, node, n=_name: self.events.append((n, id(node)))
            )


def test_the_fields_that_hold_only_trivia_are_not_looked_in_and_nothing_is_missed() -> None:
    for _, _, module in parsed(FILES):
        expected, walked = _LibCSTRecorder(), _NodeRecorder()
        module.visit(expected)
        Walk([walked])(module)
        kept = [
            event
            for event in expected.events
            if event[0].count("_") == 1 and event[0].split("_")[1] not in TRIVIA
        ]
        assert walked.events == kept
    assert holds_only_trivia(cst.Call, "whitespace_after_func")
    assert holds_only_trivia(cst.Name, "lpar") and holds_only_trivia(cst.Arg, "comma")
    assert not holds_only_trivia(cst.Call, "args") and not holds_only_trivia(cst.Arg, "value")


def test_a_visitor_that_prunes_skips_the_subtree_for_itself_alone() -> None:
    """``visit_FunctionDef`` returning False: its visitor sees nothing inside (as a lone LibCST
    visit would) but still its ``leave_FunctionDef``; the other visitor of the batch sees all."""

    class Recorder(cst.CSTVisitor):
        def __init__(self, prune: bool) -> None:
            super().__init__()
            self.prune, self.events = prune, []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            self.events.append(f"visit {node.name.value}")
            return not self.prune

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            self.events.append(f"leave {original_node.name.value}")

        def visit_Name(self, node: cst.Name) -> None:
            self.events.append(node.value)

    module = cst.parse_module("a = b\ndef f(x):\n    return y\nc\n")
    pruning, other = Recorder(prune=True), Recorder(prune=False)
    Walk([pruning, other])(module)
    lone = Recorder(prune=True)
    module.visit(lone)
    assert pruning.events == lone.events == ["a", "b", "visit f", "leave f", "c"]
    assert other.events == ["a", "b", "visit f", "f", "x", "y", "leave f", "c"]
