"""A read-only traversal of a LibCST tree, in LibCST's order, several times faster than ``visit``.

``CSTNode.visit`` rebuilds every node it passes (``_visit_and_replace_children`` constructs and
validates a copy, even for a visitor that changes nothing); that is most of the cost of each
pass over a file. :class:`Walk` calls the same ``visit_<Node>``, ``leave_<Node>``,
``visit_<Node>_<field>`` and ``leave_<Node>_<field>`` methods in the same order and builds
nothing. The order of a node type's fields is LibCST's own: it is read once per type, by letting
``_visit_and_replace_children`` report the fields it visits to a visitor that does not descend.
``tests/test_walk.py`` checks the order against ``CSTNode.visit`` on real files.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Iterable, Iterator

import libcst as cst
from libcst._nodes import op, whitespace  # LibCST's own grouping of its node classes


class _FieldOrder(cst.CSTVisitor):
    """Records which fields ``_visit_and_replace_children`` visits, without descending."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if attribute not in self.fields:
            self.fields.append(attribute)


def _node_classes(module) -> frozenset[type]:
    """The concrete node classes one of LibCST's node modules defines."""
    return frozenset(
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, cst.CSTNode)
        and value.__module__ == module.__name__
        and not value.__name__.startswith(("Base", "_"))
    )


# Whitespace and comments; with punctuation and operators, the trivia: nodes that have only such
# nodes under them, and that no rule looks at.
WHITESPACE_TYPES = _node_classes(whitespace)
TRIVIA_TYPES = WHITESPACE_TYPES | _node_classes(op) | {
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace,
}  # fmt: skip
TRIVIA = frozenset(kind.__name__ for kind in TRIVIA_TYPES)
# The one field LibCST does not visit at all (no field callbacks either) when it is None.
SKIPPED_WHEN_EMPTY = {"format_spec"}
_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def child_fields(node: cst.CSTNode) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields of ``node``'s type that hold children: those ``node`` reports, in LibCST's
    order, then a ``format_spec`` it did not report (LibCST skips it when it is None; it comes
    last).
    """
    fields = _FIELDS.get(type(node))
    if fields is None:
        recorder = _FieldOrder()
        node._visit_and_replace_children(recorder)
        rest = tuple(
            f.name
            for f in dataclasses.fields(node)
            if f.name in SKIPPED_WHEN_EMPTY and f.name not in recorder.fields
        )
        fields = _FIELDS[type(node)] = (tuple(recorder.fields), rest)
    return fields


_NODE, _SEQUENCE, _OTHER = 1, 2, 0
_KINDS: dict[type, int] = {tuple: _SEQUENCE, list: _SEQUENCE}


def _kind(value: object) -> int:
    """Whether ``value`` is a node, a sequence or neither; by type, once per type (an
    ``isinstance`` check against LibCST's abstract node class costs a call through ``abc``)."""
    kind = _KINDS.get(type(value))
    if kind is None:
        kind = _KINDS[type(value)] = _NODE if isinstance(value, cst.CSTNode) else _OTHER
    return kind


@functools.cache
def _hints(kind: type) -> dict[str, object]:
    return typing.get_type_hints(kind)


def _classes_in(annotation: object) -> list[object]:
    """The classes a field's annotation names (``Sequence[Union[A, B]]``: A and B)."""
    if typing.get_origin(annotation) is None:
        return [annotation]
    return [c for argument in typing.get_args(annotation) for c in _classes_in(argument)]


@functools.cache
def holds_only_trivia(kind: type, field: str) -> bool:
    """Whether a field of a node type can hold only trivia (or no node at all), by its annotation:
    ``lpar: Sequence[LeftParen]``, ``whitespace_after: BaseParenthesizableWhitespace``, ``comma:
    Comma | MaybeSentinel``. About two fields in three of the other node types are such."""
    return all(
        isinstance(c, type)
        and (
            not issubclass(c, cst.CSTNode)
            or c in TRIVIA_TYPES
            or c.__module__ in (op.__name__, whitespace.__name__)  # their base classes too
        )
        for c in _classes_in(_hints(kind)[field])
    )


_INNER_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node.children`` but trivia (in the same order), without rebuilding ``node``, and
    without looking in the fields that can hold only trivia."""
    fields = _INNER_FIELDS.get(type(node))
    if fields is None:
        visited, rest = child_fields(node)
        fields = _INNER_FIELDS[type(node)] = tuple(
            field for field in visited + rest if not holds_only_trivia(type(node), field)
        )
    for field in fields:
        value = getattr(node, field)
        kind = _KINDS.get(type(value)) or _kind(value)
        if kind == _NODE:
            if type(value) not in TRIVIA_TYPES:
                yield value
        elif kind == _SEQUENCE:
            for child in value:
                if (_KINDS.get(type(child)) or _kind(child)) == _NODE and (
                    type(child) not in TRIVIA_TYPES
                ):
                    yield child


# Per set of visitor classes, per node type: the methods to call (see ``Walk._class_plan``).
_CLASS_PLANS: dict[tuple[type, ...], dict[type, tuple]] = {}


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it but trivia, parents first, in the order of the source
    (without recursion: nested generators would pass each node up through every level)."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(children(node))))


def _real(method: object) -> typing.TypeGuard[Callable]:
    """A method that does something: not absent, and not one of the no-op methods LibCST's
    visitor classes define for every node type."""
    return method is not None and not getattr(method, "_is_no_op", False)


@functools.cache
def _looks_at_trivia(visitor: type) -> bool:
    """Whether the visitor class has a method for a trivia node or one of its fields."""
    return any(
        name.startswith(("visit_", "leave_"))
        and name.split("_")[1] in TRIVIA
        and _real(getattr(visitor, name))
        for name in dir(visitor)
    )


class Walk:
    """Calls the visitors' methods for every node under a root, as a batched LibCST visit does.

    A ``visit_<Node>`` method that returns False skips the node's children for its own visitor
    only (as ``CSTNode.visit`` does for a lone visitor: no field callbacks, no children, but its
    ``leave_<Node>``); the other visitors of the batch go on below. Whitespace, comments and
    punctuation (most of a tree's nodes) are not entered at all when no visitor has a method for
    any of them, nor are the fields that can hold only them looked in.
    """

    def __init__(self, visitors: Iterable[object]) -> None:
        self.visitors = list(visitors)
        classes: tuple[type, ...] = tuple(type(v) for v in self.visitors)
        self._classes = classes
        self._class_plans = _CLASS_PLANS.setdefault(classes, {})
        self.skip_trivia = not any(_looks_at_trivia(c) for c in classes)
        self._skipped = TRIVIA_TYPES if self.skip_trivia else frozenset()
        self.pruned: set[int] = set()

    def _functions(self, name: str) -> tuple[tuple[int, Callable], ...]:
        """The visitors' real methods called ``name``, unbound, with the visitor's index."""
        return tuple(
            (index, function)
            for index, kind in enumerate(self._classes)
            if _real(function := getattr(kind, name, None))
        )

    def _class_plan(self, node: cst.CSTNode) -> tuple:
        """What to call for a node type, by visitor class: made once per process for a set of
        visitor classes, not once per file."""
        kind = type(node).__name__
        visited, rest = child_fields(node)
        fields = tuple(
            (
                field,
                field in visited and field not in SKIPPED_WHEN_EMPTY,
                self._functions(f"visit_{kind}_{field}"),
                self._functions(f"leave_{kind}_{field}"),
            )
            for field in (*visited, *rest)
        )
        if self.skip_trivia:  # a field of trivia only, with no method of its own: nothing to do
            fields = tuple(
                (field, always, visits, leaves)
                for field, always, visits, leaves in fields
                if visits or leaves or not holds_only_trivia(type(node), field)
            )
        plan = (self._functions(f"visit_{kind}"), self._functions(f"leave_{kind}"), fields)
        self._class_plans[type(node)] = plan
        return plan

    def __call__(self, node: cst.CSTNode) -> None:
        # (The functions are called with their visitor: binding them would be done per file.)
        visits, leaves, fields = self._class_plans.get(type(node)) or self._class_plan(node)
        visitors = self.visitors
        skipped = self._skipped  # trivia no visitor looks at: not even entered
        pruned = self.pruned  # the visitors that do not descend here (empty nearly always)
        newly = None
        for index, function in visits:
            if not (pruned and index in pruned) and function(visitors[index], node) is False:
                newly = [*(newly or ()), index]
        if newly:
            pruned.update(newly)
        if len(pruned) < len(visitors):
            for field, always, visits_field, leaves_field in fields:
                value = getattr(node, field)
                kind = _KINDS.get(type(value)) or _kind(value)
                if not (always or kind):
                    continue  # not a child field (or an empty `format_spec`, as LibCST skips it)
                for index, function in visits_field:
                    if not (pruned and index in pruned):
                        function(visitors[index], node)
                if kind == _NODE:
                    if type(value) not in skipped:
                        self(value)
                elif kind == _SEQUENCE:
                    for child in value:
                        if (_KINDS.get(type(child)) or _kind(child)) == _NODE and (
                            type(child) not in skipped
                        ):
                            self(child)
                for index, function in leaves_field:
                    if not (pruned and index in pruned):
                        function(visitors[index], node)
        if newly:
            pruned.difference_update(newly)
        for index, function in leaves:
            if not (pruned and index in pruned):
                function(visitors[index], node)
