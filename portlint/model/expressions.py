"""The flow pass's walk of expressions (:class:`portlint.model.flow.Flow` is one): the
conditional parts of an expression (``a if t else b``, ``and``/``or``, a comprehension's
``if``, a loop over ``range(<CUDA count>)``), each use of a function of the module, and each
flag read as data rather than as a condition."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from portlint.facts import CUDA_DEVICE_TYPES, OTHER_DEVICES
from portlint.model.conditions import (
    Conditions,
    Evidence,
    Meaning,
    is_pending,
    known,
    names_cuda,
)
from portlint.model.devices import (
    asks_torch_release,
    devices_named,
    names_cuda_api,
)
from portlint.model.places import (
    FIELDS,
    LEAVES,
    Check,
    Scope,
    Summaries,
    fields_of,
    ranged,
    span,
)
from portlint.platform import dotted

T = TypeVar("T")


class Expressions:
    """The walk of expressions, over what the flow pass keeps (declared here, made there)."""

    conditions: Conditions
    segment: Callable[[Any], str]
    generator: bool
    checks: list[Check]
    yielded: Evidence | None
    scope: Scope
    previous: Summaries
    summaries: Summaries
    module_classes: frozenset[str]  # (the module's classes, whose methods `A.m(y)` uses)
    functions: frozenset[str]  # (the module's functions and methods: `ModuleText.functions`)
    flag_names: set[str]  # (every name a flag was bound to: none other is one)

    def mark(self, start: tuple[int, int], end: tuple[int, int], evidence: Evidence) -> None:
        raise NotImplementedError

    def mark_node(self, node: ast.AST, evidence: Evidence) -> None:
        raise NotImplementedError

    def check(self, test: ast.expr, meaning: Meaning, cuda_arm: list, other_arm: list) -> None:
        raise NotImplementedError

    def test(
        self, test: ast.expr, place: Evidence | None, cuda_arm: list, other_arm: list
    ) -> Meaning:
        raise NotImplementedError

    def method(self, node: ast.AST) -> str | None:
        raise NotImplementedError

    def summary(self, callee: ast.expr, table: dict[str, T]) -> T | None:
        raise NotImplementedError

    def expressions(
        self, node: ast.AST, place: Evidence | None, decided: ast.AST | None = None
    ) -> None:
        """The conditional parts of the expressions of ``node`` (not of statements in it), each
        use of a name of a function of the module, and each flag read as data (not as a
        condition). ``decided``: a test, or a flag's value, whose ``and``/``or`` is checked as
        a whole elsewhere."""
        roots = [node] if isinstance(node, ast.expr) else list(expressions_of(node))
        # (Any: each node is told apart by its class, `kind is ast.Name`, which mypy does not
        # read as `isinstance`.)
        pending: list[tuple[Any, bool, Evidence | None]] = [
            (root, root is decided, place) for root in roots
        ]
        while pending:
            current, condition, here = pending.pop()
            kind = current.__class__
            if kind is ast.Name:
                if current.ctx.__class__ is ast.Load:
                    self._use(current.id, here)
                    flag = (
                        self.scope.flag(current.id)
                        if not condition and current.id in self.flag_names
                        else None
                    )
                    if flag is not None:
                        flag.reads.append(None)  # (its value is used: more than a check)
                continue
            if kind is ast.Attribute and (method := self.method(current)):
                self._use(method, here)
                held = None
                if not condition and (attribute := f"self.{current.attr}") in self.flag_names:
                    held = self.scope.flag(attribute)
                if held is not None and isinstance(current.ctx, ast.Load):
                    held.reads.append(None)  # (`nprocs=self.world`: read as data)
            elif (
                kind is ast.Attribute
                and current.value.__class__ is ast.Name
                and current.value.id in self.module_classes
            ):
                self._use(f"{current.value.id}.{current.attr}", here)  # (`A._forward(y)`)
            elif kind is ast.Yield or kind is ast.YieldFrom:
                self.yielded = self.yielded if self.generator else here  # (where it first gives)
                self.generator = True
            elif kind is ast.Call and not condition:
                for answer in self.summary(current.func, self.previous.answers) or ():
                    answer.reads.append(None)
            inner: dict[int, Evidence] = {}  # (the parts that run only on CUDA, by their test)
            if here is None and kind in _DECIDING:
                if kind is ast.IfExp:
                    inner = self._choice(current)
                elif kind is ast.BoolOp:
                    inner = self._boolean(current, current is not decided)
                elif kind is ast.Call:
                    inner = self._enabled(current)
                    self._mapped(current)
                elif kind in COMPREHENSIONS:
                    inner = self._comprehension(current)
                elif kind is ast.Dict:
                    inner = self._table(current)
            if kind is ast.IfExp or kind is ast.comprehension:
                pending.extend(
                    (child, test, inner.get(id(child), here))
                    for child, test in _conditions_in(current)
                )
                continue
            inherits = condition and (
                kind in _TESTS or (kind is ast.UnaryOp and current.op.__class__ is ast.Not)
            )
            for field in FIELDS.get(kind) or fields_of(kind):
                value = getattr(current, field, None)
                if value.__class__ is list:
                    for item in value:
                        if item.__class__ not in LEAVES and isinstance(item, ast.AST):
                            test = inherits or item is decided
                            pending.append(
                                (item, test, inner.get(id(item), here) if inner else here)
                            )
                elif value.__class__ not in LEAVES and isinstance(value, ast.AST):
                    test = inherits or value is decided
                    pending.append((value, test, inner.get(id(value), here) if inner else here))

    def _counted(
        self, iterable: ast.expr, body: list[ast.stmt], place: Evidence | None
    ) -> Evidence | None:
        """``range(n)``, where ``n`` is true only on CUDA (``torch.cuda.device_count()``): the
        loop's body runs only there, and ``n`` is its check."""
        if not ranged(iterable):
            return None
        return self.test(iterable.args[-1], place, body, []).if_true  # type: ignore[attr-defined]

    def _dispatched(self, tests: list[ast.expr], orelse: list) -> Evidence | None:
        """The ``else`` that ends a dispatch over devices with no CUDA arm (``if
        torch.xpu.is_available(): ...`` ``elif is_torch_npu_available(): ...`` ``else:
        torch.cuda.manual_seed_all(seed)``): the accelerators named before it are not there,
        so it is CUDA's. Not after one accelerator alone (``if _is_xpu: ...`` ``else:
        torch.cuda.synchronize()``: a project with a CPU engine, HPU or MPS takes that
        ``else`` there too), nor after Apple's MPS (XPU and NPU take the ``else``)."""
        if not orelse or (isinstance(orelse[0], (ast.If, ast.IfExp)) and len(orelse) == 1):
            return None  # (an `elif`: the chain goes on)
        if len(devices_named(tests, apple=False)) < 2 or any(
            names_cuda(node) for test in tests for node in ast.walk(test)
        ):
            return None  # (`d.type in ("cuda", "mtia")`: an arm of CUDA's)
        if any(
            meaning.known and not meaning.waits for meaning in map(self.conditions.meaning, tests)
        ):
            return None  # (a CUDA arm: the `else` is the rest, the CPU among them)
        first = self.segment(tests[0])
        why = f"the `else` of a dispatch over devices (`if {first}:` ...), with no CUDA arm"
        return Evidence("dispatch", why, tests[0].lineno)

    def _released(self, test: ast.expr, arms: list[list]) -> list[Evidence | None]:
        """Of the two arms of a test of the torch release (``if is_torch_version(">=", "2.3"):``
        ``torch.amp.GradScaler("cuda")`` ``else: torch.cuda.amp.GradScaler()``), the one that
        names CUDA where the other does not is the fallback for another release: the other
        arm is where the code already moved on."""
        if not asks_torch_release(test):
            return [None] * len(arms)
        uses = [names_cuda_api(arm) for arm in arms]
        if uses.count(True) != 1:
            return [None] * len(arms)
        why = f"the arm for another torch release of `{self.segment(test)}`"
        return [Evidence("torch-release", why, test.lineno) if use else None for use in uses]

    def _choice(self, node: ast.IfExp) -> dict[int, Evidence]:
        """``a if test else b``: each arm runs only where the test says."""
        meaning = self.conditions.meaning(node.test)
        arms = ([node.body], [node.orelse]) if meaning.if_true else ([node.orelse], [node.body])
        self.check(node.test, meaning, *arms)
        places = [meaning.if_true, meaning.if_false]
        if not meaning.known or meaning.waits:  # (`torch.xpu.device(d) if HAS_XPU else ...`)
            released = self._released(node.test, [[node.body], [node.orelse]])
            places = [known(p) or r for p, r in zip(places, released, strict=True)]  # (`branch`)
            chain = [node]
            while isinstance(chain[-1].orelse, ast.IfExp):
                chain.append(chain[-1].orelse)
            last = self._dispatched([arm.test for arm in chain], [chain[-1].orelse])
            if last is not None and len(chain) > 1:  # (the `else` of the chain's last choice)
                self.mark_node(chain[-1].orelse, last)
            places[1] = places[1] or (last if len(chain) == 1 else None) or meaning.if_false
            places[0] = places[0] or meaning.if_true
        inner = {}
        for arm, evidence in zip((node.body, node.orelse), places, strict=True):
            if evidence is not None:
                self.mark_node(arm, evidence)
                if not is_pending(evidence):
                    inner[id(arm)] = evidence
        return inner

    def _boolean(self, node: ast.BoolOp, checks: bool) -> dict[int, Evidence]:
        """``a and b``: ``b`` runs only where ``a`` holds; ``a or b``: only where it fails;
        ``a`` is then a check, where ``checks``. What follows ``or`` after a question of
        ``torch.accelerator`` runs only where there is no accelerator at all (``no-accelerator``:
        ``torch.accelerator.current_accelerator() or torch.device("cuda")``)."""
        first = node.values[0]
        asks = isinstance(first, ast.Call) and dotted(first.func) in ACCELERATOR_QUERIES
        if isinstance(node.op, ast.Or) and asks:
            why = f"`{self.segment(first)}` found no accelerator"
            found = Evidence("no-accelerator", why, first.lineno)
            self.mark(span(node.values[1])[0], span(node)[1], found)
            return {id(value): found for value in node.values[1:]}
        for index in range(1, len(node.values)):
            before = node.values[0]
            if index > 1:  # (the tests before this one, as one, placed where they are)
                last = node.values[index - 1]
                before = ast.BoolOp(
                    node.op, node.values[:index], lineno=node.lineno, col_offset=node.col_offset,
                    end_lineno=last.end_lineno, end_col_offset=last.end_col_offset,
                )  # fmt: skip
            meaning = self.conditions.meaning(before)
            evidence = meaning.if_true if isinstance(node.op, ast.And) else meaning.if_false
            if evidence is not None:
                self.mark(span(node.values[index])[0], span(node)[1], evidence)
                if checks:
                    self.check(before, meaning, node.values[index:], [])
                if not is_pending(evidence):  # (what waits may not hold: the next may)
                    return {id(value): evidence for value in node.values[index:]}
        return {}

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> dict[int, Evidence]:
        """A comprehension's results, where one of its ``if`` tests holds only on CUDA."""
        results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for generator in node.generators:
            for condition in generator.ifs:
                evidence = self.conditions.meaning(condition).if_true
                if evidence is not None:
                    for result in results:
                        self.mark_node(result, evidence)
                    if not is_pending(evidence):
                        return {id(result): evidence for result in results}
        return {}

    def _mapped(self, call: ast.Call) -> None:
        """``torch.load(path, map_location="cuda:0" if torch.cuda.is_available() else "cpu")``:
        the check chooses only where a checkpoint's storages restore, and CUDA's restore only
        where CUDA is (elsewhere they must be mapped): it is CUDA's own question."""
        if (dotted(call.func) or "").rsplit(".", 1)[-1] != "load":
            return
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg == "map_location" and isinstance(value, ast.IfExp):
                meaning = self.conditions.meaning(value.test)
                if meaning.known and not meaning.waits:
                    why = f"the check `{self.segment(value.test)}` chooses only the `map_location` of a load"
                    read = (value.test.lineno, True)
                    self.checks.append(
                        Check(*span(value.test), Evidence("check", why, read[0]), (read,))
                    )

    def _enabled(self, call: ast.Call) -> dict[int, Evidence]:
        """A call made disabled unless on CUDA (``GradScaler(enabled=use_amp)``, where
        ``use_amp`` holds only on CUDA): it does nothing elsewhere (the ``enabled-argument`` row
        of :mod:`portlint.model.recognisers`)."""
        enabled = next((k.value for k in call.keywords if k.arg == "enabled"), None)
        evidence = self.conditions.meaning(enabled).if_true if enabled is not None else None
        if evidence is None or is_pending(evidence):
            return {}
        why = f"`enabled={self.segment(enabled)}`, which holds only on CUDA"
        found = Evidence("enabled-argument", why, evidence.line)
        self.mark_node(call, found)
        return {id(child): found for child in ast.iter_child_nodes(call)}

    def _table(self, table: ast.Dict) -> dict[int, Evidence]:
        """``{"cuda": torch.cuda.synchronize, "xpu": torch.xpu.synchronize}``: a table keyed by
        device type, whose CUDA entries are used only on CUDA (the ``device-table`` row of
        :mod:`portlint.model.rows`)."""
        keys = [k.value if isinstance(k, ast.Constant) else None for k in table.keys]
        if not (CUDA_DEVICE_TYPES & set(keys) and DEVICE_KEYS & set(keys)):
            return {}
        why = "a CUDA entry of a table keyed by device type"
        inner = {}
        for key, value in zip(keys, table.values, strict=True):
            if key in CUDA_DEVICE_TYPES:
                found = Evidence("device-table", why, value.lineno)
                self.mark_node(value, found)
                inner[id(value)] = found
        return inner

    def _use(self, name: str, place: Evidence | None) -> None:
        if name in self.functions:
            self.summaries.uses.setdefault(name, []).append(place.line if place else None)


ACCELERATOR_QUERIES = frozenset(
    {"torch.accelerator.current_accelerator", "torch.accelerator.is_available"}
)


def _conditions_in(node: ast.AST) -> list[tuple[ast.AST, bool]]:
    """The children of ``a if t else b`` and of a comprehension, each with whether it is read
    as a condition (its test, its ``if``)."""
    if isinstance(node, ast.IfExp):
        return [(node.test, True), (node.body, False), (node.orelse, False)]
    assert isinstance(node, ast.comprehension)
    return [(node.target, False), (node.iter, False), *((i, True) for i in node.ifs)]


_TESTS = frozenset({ast.BoolOp, ast.Compare, ast.NamedExpr})  # (a test's parts are tests)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_DECIDING = frozenset({ast.IfExp, ast.BoolOp, ast.Call, ast.Dict, *COMPREHENSIONS})
# The keys beside a CUDA one that make a dict a table keyed by device type.
DEVICE_KEYS = OTHER_DEVICES | {"cpu", "meta", "default"}


def expressions_of(statement: ast.AST) -> Iterator[ast.AST]:
    """The expressions a statement holds itself (not those of the statements in its body)."""
    kind = statement.__class__
    fields = _EXPRESSION_FIELDS.get(kind)
    if fields is None:
        fields = _EXPRESSION_FIELDS[kind] = tuple(
            name for name in kind._fields if name not in _BLOCK_FIELDS
        )
    for name in fields:
        value = getattr(statement, name, None)
        for item in value if value.__class__ is list else (value,):
            if isinstance(
                item, (ast.expr, ast.withitem, ast.keyword, ast.arguments, ast.comprehension)
            ):
                yield item


_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases", "decorator_list"})
_EXPRESSION_FIELDS: dict[type, tuple[str, ...]] = {}  # (by statement class: filled as met)
