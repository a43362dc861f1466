"""One flow pass per scope: where each statement and expression of a module can run.

The pass walks the module once, carrying the evidence that the code it is in runs only on CUDA
(None: it may run anywhere), and records a :class:`Region` wherever that evidence begins:

- the arms of ``if``/``elif``/``else``, ``while``, ``a if test else b``, ``and``/``or`` and a
  comprehension's ``if``, by what their test means (:mod:`portlint.model.conditions`);
- the rest of a block after an early exit unless on CUDA (``if not <CUDA>: return``, ``raise``,
  ``continue``, ``break``, a skip), an ``assert <CUDA>``, an import of a library that exists only
  for NVIDIA or AMD GPUs, or a call of a function that cannot return unless on CUDA;
- what the recognisers of :mod:`portlint.model.recognisers` say of a function, a class or the
  whole module.

It also records the *checks* (:class:`~portlint.model.places.Check`): each test that decides
code, with what decides whether it confines CUDA-only code (then it is no finding) — the
evidence line that the code it decides carries (does that code need CUDA? known once the rules
have reported) and whether the other arm does something of its own. A test whose other arm
runs on the CPU (``"cuda" if torch.cuda.is_available() else "cpu"``) is no check: on any other
accelerator the code runs on the CPU, which is the finding.
"""

from __future__ import annotations

import ast

from portlint.model.conditions import Conditions, Evidence, Meaning, is_pending, known
from portlint.model.devices import (
    asks_another_device,
    devices_named,
    does_otherwise,
    falls_back_to_cpu,
    launches,
    names_another_device,
)
from portlint.model.expressions import Expressions
from portlint.model.markers import decides_skip, skip_condition, skip_deciders
from portlint.model.names import Names, parameter_defaults, read_after
from portlint.model.places import (
    END,
    FUNCTIONS,
    SET_UP,
    Check,
    Flag,
    Region,
    Scope,
    Summaries,
    asks_tensor,
    block_span,
    checks_value,
    leaves,
    may_leave,
    ranged,
    requires_it,
    span,
    unbound_off_cuda,
    walk,
)
from portlint.platform import TRY_STAR, suppresses


class Flow(Names, Expressions):
    """One pass over a module (see the module's docstring): ``module`` reads its text and
    names, ``recognisers`` say what a definition or a statement shows
    (:mod:`portlint.model.recognisers`), ``previous`` is what the last pass learnt of the
    module's functions."""

    def __init__(self, module, recognisers, previous: Summaries) -> None:
        self.tree: ast.Module = module.tree
        self.segment = module.segment
        self.kernels: frozenset[str] = module.kernels
        self.module_classes: frozenset[str] = module.classes
        self.functions: frozenset[str] = module.functions
        self.conditions = Conditions(
            module.resolve,
            self._bound,
            self._called,
            module.segment,
            module.guard_functions,
            module.origins,
            self._held,
            self._devices,
        )
        self.recognisers = recognisers
        self.previous = previous
        self.summaries = Summaries()
        self.regions: list[Region] = []
        self.pending: list[Region] = []  # (decided by what another module says: the project's)
        self.checks: list[Check] = []
        # The lines of tests whose evidence covers a use of a CUDA-only library.
        self.needed: set[int] = set()
        # The line of a `callers` evidence -> the lines of the evidence around the uses: where
        # the function needs CUDA, so does the code that calls it.
        self.implied: dict[int, frozenset] = {}
        self.flags: list[Flag] = []
        self.flag_names: set[str] = set()  # (every name a flag was bound to, in any scope)
        # The module's names bound once, at its top level, to a function's closed set of
        # devices (`DEVICE_TYPE = get_device_type()`: Summaries.devices), with the line.
        self.devices: dict[str, frozenset[str]] = {}
        self.device_lines: dict[str, int] = {}
        self.beside = False  # (the block walked tests another device in an `if` of its own)
        self.rest: list[ast.stmt] = []  # (what follows the statement walked in its block)
        self.chain: list[ast.expr] = []  # (the tests before the `elif` walked)
        self.parameters: frozenset[str] = frozenset()  # (of the functions around the code)
        self.scope = Scope()
        self.classes: list[str] = []  # the classes around the code walked
        self.class_nodes: list[ast.ClassDef] = []  # (and their nodes)
        self.class_scopes: list[Scope] = []
        self.nested = False  # (in a function: what it defines is its own)
        self.constructed: Evidence | None = None  # (the class's set-up cannot return off CUDA)
        # Whether the function walked has a `return` that runs off CUDA: then it can return there.
        self.returns_anywhere = False
        # Its own `return` statements, each with where it runs.
        self.returns: list[tuple[ast.Return, Evidence | None]] = []
        self.generator = False  # (whether it yields)
        self.yielded: Evidence | None = None  # (where it first yields: a fixture's value)
        # The class whose method is walked, and its scope (where `self.x` is bound).
        self.owner: tuple[str, Scope] | None = None
        self.siblings: list[frozenset[str]] = []  # the names of their methods
        self.fixtures: dict[str, str] = module.fixtures
        self.rebound: frozenset[str] = module.rebound
        self.autouse: tuple[str, ...] = module.autouse

    # --- regions --------------------------------------------------------------------------
    def mark(self, start: tuple[int, int], end: tuple[int, int], evidence: Evidence) -> None:
        """Code from ``start`` to ``end`` runs only on CUDA by ``evidence``; where that waits
        for another module's answer, the region waits too (:attr:`pending`)."""
        (self.pending if is_pending(evidence) else self.regions).append(
            Region(start, end, evidence)
        )

    def mark_node(self, node: ast.AST, evidence: Evidence) -> None:
        self.mark(*span(node), evidence)

    def check(self, test: ast.expr, meaning: Meaning, cuda_arm: list, other_arm: list) -> None:
        """``test`` decides code by ``meaning``: it is a check, unless the other arm falls back
        to the CPU (then a CUDA query in it stays a finding); so are the tests that the flags it
        reads were bound to, where every branch that reads them is a check."""
        if not meaning.known or meaning.waits:
            return
        decided = meaning.if_true or meaning.if_false
        assert decided is not None
        # (the line of the evidence that the code it decides has: what `needed` holds)
        vendor = self.conditions.tells_vendors_apart(test)
        otherwise = does_otherwise(other_arm) or self.beside or vendor  # (a dispatch; a vendor's)
        if not vendor and requires_it(other_arm) and launches(cuda_arm or self.rest, self.kernels):
            otherwise = False  # (a requirement of CUDA before a Triton kernel, which XPU runs)
        fallback = (  # (a requirement that picks CUDA by name is still a requirement)
            not self.beside
            and not requires_it(other_arm)
            and (
                falls_back_to_cpu(cuda_arm, other_arm)
                or (
                    self.nested
                    and unbound_off_cuda(cuda_arm, other_arm, self.rest, self.scope, self._decides)
                )
            )
        )
        read = None if fallback else (decided.line, otherwise)
        for node in walk(test):
            if isinstance(node, ast.Name):
                flag = self.scope.flag(node.id)
            elif self.method(node) is not None:
                flag = self.scope.flag(f"self.{node.attr}")  # type: ignore[attr-defined]
            elif isinstance(node, ast.Call):
                for answer in self.summary(node.func, self.previous.answers) or ():
                    answer.reads.append(read)
                continue
            else:
                continue
            if flag is not None:
                flag.reads.append(read)
        if read is not None:
            self.checks.append(Check(*span(test), _checked(meaning, test), (read,)))

    def _decides(self, test: ast.expr) -> bool:
        return self.conditions.meaning(test).known

    def finish(self) -> None:
        """The flags whose every reading is a check (the module's predicates' answers among
        them): their tests are checks too."""
        answers = [flag for flags in self.previous.answers.values() for flag in flags]
        for flag in [*self.flags, *answers]:
            reads = tuple(read for read in flag.reads if read is not None)
            if reads and len(reads) == len(flag.reads):
                checked = _checked(flag.meaning, flag.value)
                self.checks.append(Check(*span(flag.value), checked, reads))

    # --- statements -----------------------------------------------------------------------
    def module(self) -> None:
        evidence = self.recognisers.module(self.tree, self)
        if evidence is not None:
            self.mark(span(self.tree.body[0])[0] if self.tree.body else (1, 0), END, evidence)
        self.block(self.tree.body, evidence, whole=True)

    def block(
        self, body: list[ast.stmt], place: Evidence | None, whole: bool = False
    ) -> Evidence | None:
        """Walk ``body`` under ``place``; the place at its end (where it falls through). An
        ``if`` beside another that tests another device (``if torch.cuda.is_available(): ...``
        then ``if is_torch_npu_available(): ...``) is one arm of a dispatch over devices: not
        one beside a test of Apple's MPS only, which leaves XPU and NPU to the CPU, nor beside a
        device the caller named (``if str(d).startswith("xpu"): return d``)."""
        beside, self.beside = (
            self.beside,
            any(isinstance(s, ast.If) and asks_another_device(s.test) for s in body),
        )
        deciders = skip_deciders(body) if whole else frozenset()
        for index, statement in enumerate(body):
            self.rest = body[index + 1 :]
            free = whole and decides_skip(statement, deciders)
            after = self.statement(statement, None if free else place)
            if after is not None and place is not None and after.kind.startswith("library"):
                self.needed.add(place.line)
            if after is not None and place is None:
                if after.kind == "library-use":  # (its own statement fails off CUDA there too)
                    self.mark_node(statement, after)
                if index and checks_value(statement, body[index - 1]):
                    self.mark_node(body[index - 1], after)  # (made to be checked, loudly)
                rest = body[index + 1 :]
                if whole and after.kind == "library-import":
                    self.mark(span(body[0])[0], END, after)
                elif rest:
                    self.mark(*block_span(rest), after)
                place = known(after)
        self.beside = beside
        return place

    def statement(self, node: ast.stmt, place: Evidence | None) -> Evidence | None:
        """Walk ``node``; the evidence that what follows it in its block runs only on CUDA, where
        it gives some (an exit unless on CUDA, an ``assert``, an import, a required call)."""
        if isinstance(node, ast.Return):
            self.returns.append((node, place))
            self.returns_anywhere = self.returns_anywhere or place is None
        if isinstance(node, FUNCTIONS):
            self.function(node, place)
            return None
        if isinstance(node, ast.ClassDef):
            self.klass(node, place)
            return None
        if isinstance(node, ast.If):
            return self.branch(node, place)
        if isinstance(node, ast.While):
            meaning = self.test(node.test, place, node.body, node.orelse)
            self.arm(node.body, place, meaning.if_true)
            self.block(node.orelse, place)
            return None
        if isinstance(node, ast.Assert):
            meaning = self.test(node.test, place, [], [node])
            return meaning.if_true
        if isinstance(node, (ast.Try, *TRY_STAR)):
            return self.attempt(node, place)  # type: ignore[arg-type]
        flag = isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets)
        decided = getattr(node, "value", None) if flag else None
        if isinstance(node, (ast.For, ast.AsyncFor)) and ranged(node.iter):
            decided = node.iter.args[-1]  # type: ignore[attr-defined]  # (a count it tests)
        self.expressions(node, place, decided=decided)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assigned(node, place)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imported(node, place)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.arm(node.body, place, self._counted(node.iter, node.body, place))
            self.block(node.orelse, place)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            after = self.block(node.body, place)  # (what its body confines, so does its end:
            caught = any(suppresses(item.context_expr) for item in node.items)  # `with patch(...):
            if after is not None and place is None and not caught:  # import cupy`; not under
                return after  # `suppress(ImportError)`, which may end the block at the import)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                self.block(case.body, place)
        return self.recognisers.after(node, self)

    def branch(self, node: ast.If, place: Evidence | None) -> Evidence | None:
        """An ``if``. Where it asks a tensor's device and its body may leave, the rest of the
        block is the other path (``if x.is_cuda:`` ``return fused(x)``, then ``return
        portable(x)``): a choice of kernel by the tensor's device."""
        chain, self.chain = [*self.chain, node.test], []  # (the tests of its `elif` chain)
        rest = self.rest  # (what follows it in its block)
        other = node.orelse
        if not other and (asks_tensor(node.test) or requires_it(rest)) and may_leave(node.body):
            other = rest
        beside = self.beside  # (a test after others of other devices: an arm of a dispatch)
        self.beside = beside or bool(devices_named(chain[:-1], apple=False))
        meaning = self.test(node.test, place, node.body, other)
        self.beside = beside
        if not meaning.known:  # (`if __name__ == "__main__":` of a worker)
            meaning = Meaning(if_true=self.recognisers.main(node, self))
        places = [meaning.if_true, meaning.if_false]
        if not meaning.known or meaning.waits:  # (`is_xpu` of another module: not CUDA's)
            released = self._released(node.test, [node.body, node.orelse])
            # (Of the `else`, what the code shows first: what another module says may not
            # come. Not of the body: with no `else`, another release's arm is not known.)
            places = [
                places[0] or released[0],
                known(places[1])
                or released[1]
                or self._dispatched(chain, node.orelse)
                or places[1],
            ]
        self.arm(node.body, place, places[0])
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            self.chain = chain
        self.arm(node.orelse, place, places[1])
        self.chain = []
        older = None  # (`if <new enough torch>: return torch.amp...`, then the older torch's)
        returns = isinstance(node.body[-1], ast.Return) and node.body[-1].value is not None
        if returns and not node.orelse and (not meaning.known or meaning.waits):  # (not a skip)
            older = self._released(node.test, [node.body, rest])[1]
        if older is not None:
            return older
        if leaves(node.body) and not (node.orelse and leaves(node.orelse)):
            return _exit(meaning.if_false)
        if node.orelse and leaves(node.orelse):
            return _exit(meaning.if_true)
        return None

    def arm(self, body: list[ast.stmt], place: Evidence | None, evidence: Evidence | None) -> None:
        if body and place is None and evidence is not None:
            self.mark(*block_span(body), evidence)
        self.block(body, place or known(evidence))

    def test(
        self, test: ast.expr, place: Evidence | None, cuda_arm: list, other_arm: list
    ) -> Meaning:
        """What a branch's test means; the test recorded as a check where it decides."""
        self.expressions(test, place, decided=test)
        meaning = self.conditions.meaning(test)
        if place is None and not meaning.known:
            self.supported(test)
        if place is None:
            arms = (cuda_arm, other_arm) if meaning.if_true else (other_arm, cuda_arm)
            self.check(test, meaning, *arms)
        return meaning

    def supported(self, test: ast.expr) -> None:
        """A test of CUDA and of other devices alike (``torch.cuda.is_available() or
        torch.xpu.is_available()``) names the devices the code supports: a check."""
        if names_another_device([test]):
            why = f"the check `{self.segment(test)}` names the devices it supports"
            read = (test.lineno, True)
            self.checks.append(Check(*span(test), Evidence("check", why, test.lineno), (read,)))

    def attempt(self, node: ast.Try, place: Evidence | None) -> Evidence | None:
        """A ``try``: its body as a block; its ``else`` runs only where the body did not fail, so
        under what the body's imports said; its handlers and ``finally`` as they are."""
        after = self.block(node.body, place)
        self.arm(node.orelse, place, after if place is None else None)
        for handler in node.handlers:
            self.block(handler.body, place)
        self.block(node.finalbody, place)
        return None

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, place: Evidence | None
    ) -> None:
        name = ".".join([*self.classes[-1:], node.name])
        for decorator in node.decorator_list:  # (a skip's test is read as a test)
            marker = isinstance(decorator, ast.Call) and skip_condition(decorator)
            self.expressions(decorator, place, decided=marker or None)
        evidence = place or self.recognisers.definition(node, self, nested=self.nested)
        taken = evidence if place is None else None
        if evidence is None and self.classes and self.constructed and node.name not in SET_UP:
            evidence = self.constructed  # (an instance exists only where its set-up returned)
        if place is None and evidence is not None:  # (its decorators run where it is defined)
            self.mark((node.lineno, node.col_offset), span(node)[1], evidence)
        required = self.previous.requires.get(name) if place is None else None
        for argument, default in parameter_defaults(node):
            if default is not None:
                self.expressions(default, place)
                if required is not None and read_after(node, argument.arg, required.line):
                    self.mark_node(default, required)  # (read only once CUDA was required)
        outer, self.scope = self.scope, Scope(self.scope)
        parameters = self.parameters
        self.parameters = parameters | self.bind_parameters(node)
        owner = self.owner
        if self.classes:
            self.owner = self.classes[-1], self.class_scopes[-1]
        classes, self.classes, siblings, self.siblings = self.classes, [], self.siblings, []
        class_nodes, self.class_nodes = self.class_nodes, []
        scopes, self.class_scopes = self.class_scopes, []
        nested, self.nested = self.nested, True
        anywhere, self.returns_anywhere = self.returns_anywhere, False
        returns, self.returns, generator, self.generator = self.returns, [], self.generator, False
        outer_yielded = self.yielded
        evidence = known(evidence)
        end = self.block(node.body, evidence)
        own_returns, self.returns, yields = self.returns, returns, self.generator
        returned, self.returns_anywhere, self.generator = self.returns_anywhere, anywhere, generator
        yielded, self.yielded = self.yielded, outer_yielded
        self.scope, self.classes, self.siblings = outer, classes, siblings
        self.class_nodes = class_nodes
        self.class_scopes, self.owner, self.nested = scopes, owner, nested
        self.parameters = parameters
        # (A call of a generator runs none of its body; pytest runs a fixture's to its value.)
        gives = not yields or (node.name in self.fixtures.values() and yielded is not None)
        if taken is not None and taken.kind == "fixture" and node.name in self.fixtures.values():
            self.summaries.requires[name] = taken  # (a fixture that takes one: so do its tests)
        if evidence is None and end is not None and not returned and gives:
            why = f"`{name}` cannot return unless on CUDA: {end.why}"
            self.summaries.requires[name] = Evidence("requires", why, end.line)
        if own_returns and not yields and evidence is None:
            self._predicate(name, node, own_returns)
        if not (self.nested or self.classes or yields):  # (a function of the module's own)
            self._returns_devices(name, node, own_returns)

    def klass(self, node: ast.ClassDef, place: Evidence | None) -> None:
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            marker = isinstance(expression, ast.Call) and skip_condition(expression)
            self.expressions(expression, place, decided=marker or None)  # (a skip's test: a test)
        evidence = place or self.recognisers.definition(node, self)
        constructed = None
        if place is None and evidence is not None and evidence.kind == "constructor":
            constructed, evidence = evidence, None  # (its methods but the set-up: below)
        elif place is None and evidence is not None and evidence.kind == "world-size":
            for statement in node.body:  # (but the count: the harness could count any device)
                if not statement.lineno <= evidence.line <= (statement.end_lineno or 0):
                    self.mark_node(statement, evidence)
        elif place is None and evidence is not None:
            self.mark_node(node, evidence)
        self.classes.append(node.name)
        self.class_nodes.append(node)
        self.siblings.append(frozenset(s.name for s in node.body if isinstance(s, FUNCTIONS)))
        outer, self.scope = self.scope, Scope(self.scope)
        self.class_scopes.append(self.scope)
        constructing, self.constructed = self.constructed, constructed
        self.block(node.body, known(evidence))
        self.scope, self.constructed = outer, constructing
        self.classes.pop()
        self.class_nodes.pop()
        self.siblings.pop()
        self.class_scopes.pop()


def _checked(meaning: Meaning, test: ast.expr) -> Evidence:
    decided = meaning.if_true or meaning.if_false
    assert decided is not None
    return Evidence("check", f"the check {decided.why} decides CUDA-only code", test.lineno)


def _exit(evidence: Evidence | None) -> Evidence | None:
    """The rest of a block after an exit that leaves where the test said otherwise."""
    if evidence is None or is_pending(evidence):
        return evidence
    return Evidence("exit", f"an exit unless {evidence.why}", evidence.line)
