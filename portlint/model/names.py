"""The flow pass's names (:class:`portlint.model.flow.Flow` is one): what a name, or an
attribute of ``self``, is bound to (a test: a flag; a value made only on CUDA; an import made
only there), the module's functions a call or a name stands for, and which of them are
predicates (every return a test of CUDA)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, TypeVar

from portlint.facts import CUDA_DEVICE_TYPES, OTHER_DEVICES
from portlint.model.conditions import Conditions, Evidence, Meaning, is_pending, known
from portlint.model.places import (
    FALSY,
    NONE,
    Check,
    Flag,
    Scope,
    Summaries,
    exits_first,
    false,
    leaves,
    span,
)

T = TypeVar("T")
TESTS = (ast.BoolOp, ast.Compare, ast.UnaryOp)  # (a value that is a test)


class Names:
    """The names of the flow pass, over what it keeps (declared here, made there)."""

    conditions: Conditions
    scope: Scope
    owner: tuple[str, Scope] | None
    previous: Summaries
    flags: list[Flag]
    flag_names: set[str]
    devices: dict[str, frozenset[str]]
    device_lines: dict[str, int]
    rebound: frozenset[str]
    summaries: Summaries
    checks: list[Check]
    segment: Callable[[Any], str]

    def supported(self, test: ast.expr) -> None:
        raise NotImplementedError

    def assigned(
        self, node: ast.Assign | ast.AnnAssign | ast.AugAssign, place: Evidence | None
    ) -> None:
        """A plain name, or an attribute of ``self``, bound: to a test (a flag), to a value made
        here (on CUDA only or not; ``x if <CUDA> else None`` is made only on CUDA)."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if value is None:
            return
        meaning = Meaning()
        if not isinstance(node, ast.AugAssign):
            meaning = self.conditions.meaning(value)
            if meaning.waits:
                meaning = Meaning()  # (a name of another module: no flag of this one)
            if place is None and not meaning.known and isinstance(value, TESTS):
                self.supported(value)  # (`ok = torch.cuda.is_available() or is_xpu()`)
            if isinstance(value, ast.IfExp) and place is None:
                place = known(self._made_in_choice(value))
        for target in targets:
            name = target.id if isinstance(target, ast.Name) else None
            scope = self.scope
            if name is None and self.owner is not None and self.method(target) is not None:
                name, scope = f"self.{target.attr}", self.owner[1]  # type: ignore[attr-defined]
            if name is None:
                continue
            if isinstance(value, ast.Constant) and not value.value and scope.lookup(name):
                continue  # (a flag lowered to False still holds only where it held)
            scope.meanings.pop(name, None)
            scope.flags.pop(name, None)
            if scope.outer is None and "." not in name:
                self._top_level(name, value, node.lineno)
            if name in self.rebound:  # (a function sets it too, wherever it runs)
                scope.made[name] = None
            elif meaning.known:
                scope.meanings[name] = meaning
                scope.flags[name] = flag = Flag(value, meaning)
                self.flags.append(flag)
                self.flag_names.add(name)
            elif _is_none(value):
                scope.made.setdefault(name, NONE)
            elif isinstance(value, ast.Constant) and not value.value:
                scope.made.setdefault(name, FALSY)  # (true later only where it is set)
            else:
                _made(scope, name, place)

    def _top_level(self, name: str, value: ast.expr, line: int) -> None:
        """A name bound at the module's top level: a closed set of devices where it is bound
        once, to what a function of the module that returns only device strings returns."""
        if name in self.device_lines or name in self.rebound:
            self.devices.pop(name, None)  # (bound again: it may be anything)
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in self.summaries.devices
        ):
            self.devices[name] = self.summaries.devices[value.func.id]
        self.device_lines.setdefault(name, line)

    def bind_parameters(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The function's parameters, bound in its scope (new) to what its callers pass: values
        made anywhere (``if device_id is None and <CUDA>: device_id = 0`` leaves a caller's
        ``device_id`` as it was)."""
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        names = {a.arg for a in [*arguments, node.args.vararg, node.args.kwarg] if a is not None}
        self.scope.made.update(dict.fromkeys(names))
        return names

    def _predicate(
        self,
        name: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        returns: list[tuple[ast.Return, Evidence | None]],
    ) -> None:
        """Whether the function (which may run anywhere) gives a true value only on CUDA: each
        of its ``returns`` gives a false constant, or is a test that holds only on CUDA, or runs
        only on CUDA after the function's first statement, an exit (``if not
        torch.cuda.is_available(): return False``, then anything)."""
        evidence: Evidence | None = None
        answers = []
        exits = exits_first(node)
        for returned, place in returns:
            if place is not None and exits:
                evidence = evidence or place
                continue
            if returned.value is None or false(returned.value):
                continue
            meaning = self.conditions.meaning(returned.value)
            if meaning.if_true is None or is_pending(meaning.if_true):
                return
            evidence = evidence or meaning.if_true
            answers.append(Flag(returned.value, meaning))
            if self.conditions.tells_vendors_apart(returned.value):  # (NVIDIA's, not AMD's)
                why = f"the check `{self.segment(returned.value)}` asks for one vendor's GPU"
                read = (meaning.if_true.line, True)
                self.checks.append(
                    Check(*span(returned.value), Evidence("check", why, read[0]), (read,))
                )
        if evidence is not None:
            why = f"`{name}()` gives a true value only under {evidence.why}"
            self.summaries.predicates[name] = Evidence("predicate", why, node.lineno)
            self.summaries.answers[name] = answers

    def imported(self, node: ast.Import | ast.ImportFrom, place: Evidence | None) -> None:
        """The names an import binds: made only on CUDA where it runs only there (``if
        current_platform.is_cuda(): from .kernels import fused`` then ``if fused is not
        None:``)."""
        for alias in node.names:
            name = alias.asname or alias.name.partition(".")[0]
            if name != "*":
                self.scope.meanings.pop(name, None)
                self.scope.flags.pop(name, None)
                _made(self.scope, name, place)

    def _made_in_choice(self, value: ast.IfExp) -> Evidence | None:
        """Where ``x if <test> else None`` (or the reverse) makes ``x`` only on CUDA: why."""
        meaning = self.conditions.meaning(value.test)
        if _is_none(value.orelse):
            return meaning.if_true
        return meaning.if_false if _is_none(value.body) else None

    def _called(self, call: ast.Call) -> Meaning | None:
        found = self.summary(call.func, self.previous.predicates)
        return Meaning(if_true=found) if found is not None else None

    def summary(self, callee: ast.expr, table: dict[str, T]) -> T | None:
        """The entry of ``table`` for a call's callee: a function of the module, or a method of
        the class around the call (``self.m``)."""
        if isinstance(callee, ast.Name):
            return table.get(callee.id)
        method = self.method(callee)
        return table.get(method) if method else None

    def method(self, node: ast.AST) -> str | None:
        """``Class.name`` for ``self.name`` or ``cls.name`` in a method of ``Class``."""
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
            and self.owner is not None
        ):
            return f"{self.owner[0]}.{node.attr}"
        return None

    def required(self, node: ast.stmt) -> Evidence | None:
        """A call, as the statement's own value, of a function that cannot return unless on CUDA."""
        value = getattr(node, "value", None)
        if isinstance(value, ast.Await):
            value = value.value
        if not isinstance(value, ast.Call):
            return None
        found = self.summary(value.func, self.previous.requires)
        if found is None and isinstance(value.func, ast.Name):  # (another module's function?)
            return self.conditions.imported(value, value.func.id, "requires").if_true
        return found

    def _bound(self, name: str) -> Meaning | None:
        return self.scope.lookup(name)

    def _devices(self, name: str) -> frozenset[str] | None:
        """The closed set of devices the module's name ``name`` is (:attr:`devices`); None
        where the module binds no such name (an imported one waits for its module); empty
        where a function around the code binds the name itself."""
        return frozenset() if self.scope.binds(name, local=True) else self.devices.get(name)

    def _held(self, name: str) -> ast.expr | None:
        flag = self.scope.flag(name)
        return flag.value if flag is not None else None

    def _returns_devices(
        self, name: str, node: ast.FunctionDef | ast.AsyncFunctionDef, returns: list
    ) -> None:
        """A function of the module whose every return is a device string and which cannot
        fall through (``return "cuda"`` ... ``return "xpu"``, then ``raise
        NotImplementedError(...)``): the devices it can return (:attr:`Summaries.devices`)."""
        devices = [r.value.value if isinstance(r.value, ast.Constant) else None for r, _ in returns]
        if (
            devices
            and all(d in OTHER_DEVICES or d in CUDA_DEVICE_TYPES for d in devices)
            and leaves(node.body)
        ):
            self.summaries.devices[name] = frozenset(devices)  # type: ignore[arg-type]  # (strs)


def parameter_defaults(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[ast.arg, ast.expr | None]]:
    """Each parameter that has a default, with it (a keyword-only one may have None)."""
    arguments = [*node.args.posonlyargs, *node.args.args]
    positional = arguments[len(arguments) - len(node.args.defaults) :]
    return list(
        zip(
            [*positional, *node.args.kwonlyargs],
            [*node.args.defaults, *node.args.kw_defaults],
            strict=True,
        )
    )


def _made(scope: Scope, name: str, place: Evidence | None) -> None:
    """``name`` bound in ``scope`` to a value made at ``place`` (None: anywhere)."""
    before = scope.made.get(name, NONE)
    if place is None:
        scope.made[name] = None
    elif before is NONE:
        why = f"`{name}` is made only under {place.why}"
        scope.made[name] = Evidence("none-test", why, place.line)
    elif before is FALSY:  # (`symm_mem_available = False`, then `True` under a test of CUDA)
        why = f"`{name}` is set (else false) only under {place.why}"
        scope.made[name] = Evidence("set-flag", why, place.line)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def read_after(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, line: int) -> bool:
    """Whether ``function`` reads ``name`` only after ``line`` (its requirement of CUDA), or the
    requirement is its first statement (``assert device.startswith("cuda")``, then the rest)."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # (a docstring)
    reads = [
        node.lineno
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
    ]
    return min(reads, default=line + 1) > line or bool(body and body[0].lineno == line)
