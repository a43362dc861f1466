"""Where a device is data for a test double, not a device anything runs on: given to a mock, a
``patch`` or ``monkeypatch.setattr``, held in a local only mocks and assertions use, or made under
``FakeTensorMode`` (PORT101 holds its findings there back)."""

from __future__ import annotations

import libcst as cst

from portlint.analysis.names import dotted_name
from portlint.analysis.parents import parent_of
from portlint.rule import Quiet

# unittest.mock's makers of stand-ins (also through `mock.`, `mocker.`), pytest's
# `monkeypatch.setattr` (its value is the stand-in), and what a mock is told to return or asserted
# to have been called with: a device there is data, nothing runs on it.
MOCK_MAKERS = frozenset({
    "Mock", "MagicMock", "NonCallableMock", "NonCallableMagicMock", "AsyncMock", "PropertyMock",
    "create_autospec", "patch", "patch.object", "patch.dict", "patch.multiple", "mock.call",
    "monkeypatch.setattr",
    "assert_called_with", "assert_called_once_with", "assert_any_call", "assert_has_calls",
    "assert_awaited_with", "assert_awaited_once_with",
})  # fmt: skip
MOCK_ANSWERS = frozenset({"return_value", "side_effect"})
# torch's mode whose tensors are fake (`torch._subclasses.fake_tensor.FakeTensorMode`).
FAKE_MODE = "FakeTensorMode"


def mock_data(rule, node: cst.CSTNode) -> Quiet:
    """Where ``node`` (a call) is, or gives, data for a test double (:data:`MOCK_MAKERS`,
    :data:`MOCK_ANSWERS`): why its devices are held back, and the node that says so."""
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(current, cst.BaseSuite):
        if isinstance(current, cst.Arg) and current.keyword is not None:
            if current.keyword.value in MOCK_ANSWERS:
                return _test_double(f"{current.keyword.value}=", current)
        elif isinstance(current, cst.Call):
            callee = dotted_name(current.func) or ""
            if callee.endswith(tuple(MOCK_MAKERS)) and (
                callee in MOCK_MAKERS
                or callee.rpartition(".")[2] in MOCK_MAKERS
                or callee.endswith(
                    (
                        "patch.object",
                        "patch.dict",
                        "patch.multiple",
                        "mock.call",
                        "monkeypatch.setattr",
                    )
                )
            ):
                return _test_double(f"{callee}(...)", current)
        elif isinstance(current, cst.Assign):
            answer = next(
                (
                    t.target.attr.value
                    for t in current.targets
                    if isinstance(t.target, cst.Attribute) and t.target.attr.value in MOCK_ANSWERS
                ),
                None,
            )
            if answer:
                return _test_double(f".{answer} = ...", current)
            target = current.targets[0].target if len(current.targets) == 1 else None
            return _given_to_doubles(rule, target, current) if target else None
        current = parent_of(rule, current)
    return None


def _given_to_doubles(rule, target: cst.BaseAssignTargetExpression, at: cst.Assign) -> Quiet:
    """Where a local of a function holds the device only for test doubles: every use of it
    there is a mock's ``return_value=``/``side_effect=`` or in an assertion, and one at least
    a mock's (``device = torch.device("cuda", 3)``, then ``patch.object(m, "get_device",
    return_value=device)`` and ``assertEqual(model.device, device)``)."""
    function = _enclosing_function(rule, at)
    if not isinstance(target, cst.Name) or function is None:
        return None
    given: cst.Arg | None = None
    pending: list[cst.CSTNode] = [function.body]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Name) and node.value == target.value and node is not target:
            parent = parent_of(rule, node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue  # (`x.device`: another name)
            if isinstance(parent, cst.Arg) and parent.keyword is not None:
                if parent.keyword is node:
                    continue  # (`f(device=...)`: a keyword)
                if parent.value is node and parent.keyword.value in MOCK_ANSWERS:
                    given = parent
                    continue
            if not _asserted(rule, node):
                return None
        pending.extend(node.children)
    if given is None or given.keyword is None:
        return None
    return _test_double(f"{given.keyword.value}={target.value}", given)


def fake_tensors(rule, node: cst.CSTNode) -> Quiet:
    """Where ``node`` runs under ``with FakeTensorMode(...):`` (or a name the function binds
    to one): the tensors made there are fake, a device only their metadata (no CUDA is
    needed to make them)."""
    current = parent_of(rule, node)
    while current is not None:
        if isinstance(current, cst.With):
            for item in current.items:
                if _makes_fake_tensors(rule, item.item, current):
                    why = "tensors made under a `FakeTensorMode` are fake: the device is data"
                    return why, item
        current = parent_of(rule, current)
    return None


def _makes_fake_tensors(rule, entered: cst.BaseExpression, at: cst.With) -> bool:
    """Whether ``entered`` (what ``at`` enters) is ``FakeTensorMode(...)`` or a name the
    enclosing function binds to it."""
    value: cst.BaseExpression | None = entered
    if isinstance(entered, cst.Name):
        function = _enclosing_function(rule, at)
        value = _bound_in(function.body, entered.value) if function is not None else None
    return isinstance(value, cst.Call) and (
        (dotted_name(value.func) or "").rpartition(".")[2] == FAKE_MODE
    )


def _enclosing_function(rule, node: cst.CSTNode) -> cst.FunctionDef | None:
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(current, cst.FunctionDef):
        current = parent_of(rule, current)
    return current


def _asserted(rule, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in an ``assert`` or among the arguments of an assertion
    (``rule.assertEqual(...)``, ``mocked.assert_called_with(...)``)."""
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(current, cst.BaseStatement):
        parent = parent_of(rule, current)
        if isinstance(current, cst.Assert):
            return True
        if isinstance(parent, cst.Call) and current is not parent.func:
            callee = dotted_name(parent.func) or ""
            if callee.rpartition(".")[2].startswith("assert"):
                return True
        current = parent
    return False


def _bound_in(block: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value ``name`` is first bound to in ``block`` (not in functions or classes in it)."""
    pending: list[cst.CSTNode] = [block]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in current.targets
        ):
            return current.value
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(reversed(current.children))
    return None


def _test_double(what: str, node: cst.CSTNode) -> Quiet:
    return f"the device is data for a test double (`{what}`)", node
