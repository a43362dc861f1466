"""What a function does before each graph capture in it, in source order: the calls made (the
warm-ups, and those recorded inside earlier captures), the streams they ran under, the blocks
and the arms of an ``if`` around them, and the streams bound to names. PORT301 judges each
capture from this (:meth:`WarmupRule._check_frame`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import libcst as cst
from libcst.metadata import CodeRange

from portlint.analysis.blas import STREAM_METHODS, VALUE_METHODS
from portlint.analysis.capture import CaptureRegion, CaptureRegionProvider
from portlint.analysis.names import (
    LEAVES_FUNCTION,
    argument,
    block_ends_in,
    bound_in,
    dotted_name,
    imported_names,
    is_builtin,
    keyword,
    method_name,
    qualified_names,
)
from portlint.analysis.object_uses import made_by
from portlint.analysis.parents import ParentProvider
from portlint.analysis.positions import PositionProvider
from portlint.analysis.streams import StreamSource, makes_stream, stream_source
from portlint.analysis.walk import walk
from portlint.cuda_api import BY_NAME
from portlint.facts import NOT_WARMUPS, STREAM_CONTEXTS
from portlint.findings import UNSAFE
from portlint.fix import Rewrite
from portlint.rule import Rule

Position = tuple[int, int]


@dataclass(frozen=True)
class _Placed:
    """Something at a node, whose start is computed when a comparison or a message needs it
    (positions cost where asked; most call sites are never compared)."""

    node: cst.CSTNode = field(compare=False)
    positions: Mapping[cst.CSTNode, CodeRange] = field(compare=False, repr=False)

    @property
    def start(self) -> Position:
        position = self.positions[self.node].start
        return position.line, position.column


@dataclass(frozen=True)
class CallSite(_Placed):
    callee: str
    stream: str | None  # the stream of the innermost `with torch.cuda.stream(s)`, if any
    exits: frozenset[int]  # the enclosing blocks that end in `return` or `raise`
    region: CaptureRegion | None  # the capture region the call is in, if any
    arms: frozenset[tuple[int, int]] = frozenset()  # the `if` arms it is in (Frame.arms)


@dataclass(frozen=True)
class StreamBinding(_Placed):
    source: StreamSource | None


@dataclass(frozen=True)
class Capture:
    region: CaptureRegion
    blocks: frozenset[int]  # the blocks enclosing the capture
    stream: str | None  # the stream context the capture call runs under
    arms: frozenset[tuple[int, int]] = frozenset()  # the `if` arms it is in (Frame.arms)


@dataclass
class Frame:
    """What has been seen so far in one function (or the module body), in source order."""

    calls: list[CallSite] = field(default_factory=list)
    bindings: dict[str, list[StreamBinding]] = field(default_factory=dict)
    stream_contexts: list[str | None] = field(default_factory=list)
    blocks: list[tuple[int, bool]] = field(default_factory=list)  # (id, ends in return/raise)
    captures: list[Capture] = field(default_factory=list)
    # The `if` arms around what is seen now: (the `if`, 0 for its body, 1 for its `else`/`elif`).
    arms: list[tuple[int, int]] = field(default_factory=list)
    # The function (None: the module); the attributes of `self` it assigns, read the first time
    # an `if` tests one; and the `if`s whose test reads one: a counter of calls
    # (`self.warmup_steps -= 1`), whose arms run on successive calls.
    function: cst.FunctionDef | None = None
    state: frozenset[str] | None = None
    counters: set[int] = field(default_factory=set)

    def assigns(self, name: str) -> bool:
        """Whether the function assigns ``name`` (an attribute of ``self``)."""
        if self.state is None:
            targets = (
                target
                for n in (walk(self.function.body) if self.function is not None else ())
                if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign))
                for target in (
                    [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                )
            )
            self.state = frozenset(filter(None, map(dotted_name, targets)))
        return name in self.state


class WarmupRule(Rule):
    """A rule that reads each function's :class:`Frame` once the function (or the module) has
    been seen: :meth:`_check_frame`."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.frames: list[Frame] = [Frame()]
        self.receivers: set[int] = set()
        self._runs: dict[str, list[tuple[str, int | None, str]]] | None = None  # (by name)

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.frames.append(Frame(function=node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._check_frame(self.frames.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        self._check_frame(self.frame)

    def _start(self, node: cst.CSTNode) -> Position:
        position = self.get_metadata(PositionProvider, node).start
        return position.line, position.column

    def _source(self, value: cst.BaseExpression | None) -> StreamSource | None:
        if not isinstance(value, cst.Call):
            return None
        return stream_source(
            qualified_names(self, value.func),
            imported_names(self, value.func),
            self.settings.stream_functions,
        )

    # Blocks that end in `return` or `raise` hold calls on paths that never reach a later capture.
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.frame.blocks.append((id(node), block_ends_in(node, LEAVES_FUNCTION)))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.frame.blocks.pop()

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.frame.blocks.append((id(node), block_ends_in(node, LEAVES_FUNCTION)))

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self.frame.blocks.pop()

    # The arms of an `if`: what one runs, the other does not (no warm-up of each other).
    def visit_If_body(self, node: cst.If) -> None:
        self.frame.arms.append((id(node), 0))
        read = (dotted_name(n) for n in walk(node.test) if isinstance(n, cst.Attribute))
        if any(name and name.startswith("self.") and self.frame.assigns(name) for name in read):
            self.frame.counters.add(id(node))

    def leave_If_body(self, node: cst.If) -> None:
        self.frame.arms.pop()

    def visit_If_orelse(self, node: cst.If) -> None:
        self.frame.arms.append((id(node), 1))

    def leave_If_orelse(self, node: cst.If) -> None:
        self.frame.arms.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Call)
            and func.attr.value not in VALUE_METHODS
        ):
            # `get_x().method()`: a getter, not work. (`model(x).logits` and `model(x).float()`
            # are the work of `model(x)`.)
            self.receivers.add(id(func.value))
        region = self.get_metadata(CaptureRegionProvider, node, None)
        stream = self.frame.stream_contexts[-1] if self.frame.stream_contexts else None
        if region is not None and region.call is node:
            blocks = frozenset(block for block, _ in self.frame.blocks)
            self.frame.captures.append(Capture(region, blocks, stream, frozenset(self.frame.arms)))
            return
        callee = dotted_name(node.func)
        if callee and self._is_work(node):
            exits = frozenset(block for block, exits in self.frame.blocks if exits)
            # The ignore: LibCST types all metadata as object.
            positions: Mapping[cst.CSTNode, CodeRange] = self.metadata[PositionProvider]  # type: ignore[assignment]
            arms = frozenset(self.frame.arms)
            for name in [callee, *self._handed_on(node)]:
                self.frame.calls.append(
                    CallSite(node, positions, name, stream, exits, region, arms)
                )

    def _is_work(self, node: cst.Call) -> bool:
        """Whether a call can run device work: not a getter's receiver, an allocation, a
        builtin, a synchronisation, nor what fetches or makes a stream."""
        return (
            id(node) not in self.receivers
            and not qualified_names(self, node.func) & NOT_WARMUPS
            and not is_builtin(self, node.func)  # (`range(n)`, `len(x)`: no device work)
            and self._source(node) is None  # fetching or making a stream runs no kernel
            and method_name(node) not in STREAM_METHODS
        )

    def _handed_on(self, node: cst.Call) -> list[str]:
        """What a call of one of the module's functions (not a method) runs through it, as the
        caller names it: the arguments given to the parameters it calls (``run_warmup(i,
        func)``, where ``run_warmup`` calls ``func(...)``, runs ``func``; Transformer Engine's
        ``_run_warmup_forward``), and the calls it makes of names it does not bind itself (a
        module's import, a name of the function around it: ``torch.autograd.backward``)."""
        if not isinstance(node.func, cst.Name):
            return []
        if self._runs is None:
            self._runs = self._functions_run()
        runs = self._runs.get(node.func.value)
        if runs is None:
            return []
        names = []
        for parameter, position, rest in runs:
            if position is None:
                names.append(rest)  # (a name the function does not bind: the caller's too)
                continue
            given = (
                keyword(node, parameter) if position < 0 else argument(node, parameter, position)
            )
            value = dotted_name(given.value) if given is not None and not given.star else None
            if value is not None:
                names.append(value + rest)  # (`func.forward` as given)
        return names

    def _functions_run(self) -> dict[str, list[tuple[str, int | None, str]]]:
        """Of each module function (not a method; defined once), read once, its work calls:
        ``(parameter, position (-1: keyword-only), rest of the callee)`` for a call of a
        parameter (``func.forward(...)``), ``("", None, callee)`` of a name it does not bind."""
        nodes = list(walk(self.module))
        methods = {id(f) for c in nodes if isinstance(c, cst.ClassDef) for f in c.body.body}
        functions: dict[str, list[cst.FunctionDef]] = {}
        for function in nodes:
            if isinstance(function, cst.FunctionDef) and id(function) not in methods:
                functions.setdefault(function.name.value, []).append(function)
        runs = {}
        for name, defined in functions.items():
            if len(defined) != 1:
                continue  # (several of one name: which one runs is not known here)
            (function,) = defined
            params = function.params
            places: dict[str, int] = {
                p.name.value: i for i, p in enumerate([*params.posonly_params, *params.params])
            }
            places.update((p.name.value, -1) for p in params.kwonly_params)
            bound = bound_in(function)
            found: list[tuple[str, int | None, str]] = []
            calls = (n for n in walk(function.body) if isinstance(n, cst.Call))
            for call in calls:
                if (callee := dotted_name(call.func)) is None or not self._is_work(call):
                    continue
                root = callee.split(".")[0]
                if root in places:
                    found.append((root, places[root], callee[len(root) :]))
                elif root not in bound:
                    found.append(("", None, callee))
            runs[name] = found
        return runs

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            key = dotted_name(target.target)
            if key:
                # The ignore: LibCST types all metadata as object.
                positions: Mapping[cst.CSTNode, CodeRange] = self.metadata[PositionProvider]  # type: ignore[assignment]
                binding = StreamBinding(node, positions, self._source(node.value))
                self.frame.bindings.setdefault(key, []).append(binding)

    def _stream_context(self, node: cst.With) -> list[str | None]:
        """The streams ``node`` makes current: ``with torch.cuda.stream(s):`` and, on a
        ``torch.Stream``, ``with s:``."""
        contexts = []
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and qualified_names(self, call.func) & STREAM_CONTEXTS:
                target = argument(call, "stream", 0)
                contexts.append(self._context_key(target.value) if target else None)
            elif dotted_name(call) and made_by(self, call, partial(makes_stream, self)):
                contexts.append(dotted_name(call))
        return contexts

    def _context_key(self, stream: cst.BaseExpression) -> str | None:
        """What names the stream of ``torch.cuda.stream(stream)``: its dotted name, or the code
        of a call that makes a stream of its own there (`torch.cuda.Stream()`: unlike any other;
        None for the ambient stream, and for what portlint cannot name)."""
        if not isinstance(stream, cst.Call) or self._source(stream) is not StreamSource.OTHER:
            return dotted_name(stream)
        return self.module.code_for_node(stream)

    def visit_With_body(self, node: cst.With) -> None:
        self.frame.stream_contexts.extend(self._stream_context(node))

    def leave_With_body(self, node: cst.With) -> None:
        for _ in self._stream_context(node):
            self.frame.stream_contexts.pop()

    # The fix: warm up on the capture stream (fetch or make it once, before the warm-up).
    def _parents(self, node: cst.CSTNode | None) -> list[cst.CSTNode]:
        chain = []
        while node is not None:
            chain.append(node)
            node = self.get_metadata(ParentProvider, node, None)
        return chain

    def _fix(self, capture: Capture, warmups: list[CallSite], stream: cst.Call | None):
        """Hoist the capture stream before the warm-up (and run the warm-up on it)."""
        call = capture.region.call
        contexts = {warmup.stream for warmup in warmups}
        if any(context and "(" in context for context in contexts):
            return None  # (under a stream made in its `with`: no name to capture on, and
            # wrapping the warm-up would not move it off that stream)
        if stream is None and len(contexts) == 1 and None not in contexts:
            # The warm-up ran under one stream context: capture on that stream (PyTorch's
            # documented pattern); wrapping the warm-up again would not change its stream.
            (key,) = contexts
            assert key is not None  # (checked above)
            rewrite = Rewrite(replace={id(call): self._with_stream(call, key)})
            return self.build_fix(rewrite, UNSAFE, f"Capture on `{key}`")
        capture_chain = self._parents(call)
        first_chain, last_chain = self._parents(warmups[0].node), self._parents(warmups[-1].node)
        first_ids = {id(n) for n in first_chain}
        block = next(
            (
                n
                for n in capture_chain
                if isinstance(n, (cst.IndentedBlock, cst.Module)) and id(n) in first_ids
            ),
            None,
        )
        if block is None or capture.region.kind == "capture_begin":
            return None
        positions = {id(n): i for i, n in enumerate(block.body)}

        def statement(chain: list[cst.CSTNode]) -> cst.CSTNode:
            return next(n for n in chain if id(n) in positions)

        first, last, site = statement(first_chain), statement(last_chain), statement(capture_chain)
        if not positions[id(first)] <= positions[id(last)] < positions[id(site)]:
            return None
        function = next((n for n in capture_chain if isinstance(n, cst.FunctionDef)), self.module)
        taken = {n.value for n in walk(function) if isinstance(n, cst.Name)}
        name = next(
            n
            for n in ["capture_stream", *(f"capture_stream_{i}" for i in range(2, 100))]
            if n not in taken
        )
        portable = self._portable
        if stream is not None:
            fetched = portable("torch.cuda.current_stream") if self._is_torch_current(stream) else (
                self.module.code_for_node(stream)
            )  # fmt: skip
            fetch = cst.parse_statement(f"{name} = {fetched}\n")
            rewrite = Rewrite(
                insert_before={id(first): [fetch]},
                replace={id(stream): cst.Name(name)},
                imports={"torch"} if fetched.startswith("torch.") else set(),
            )
            return self.build_fix(rewrite, UNSAFE, f"Fetch `{name}` before the warm-up")
        hoisted: list[cst.BaseStatement] = [
            cst.parse_statement(f"{name} = {portable('torch.cuda.Stream')}\n"),
            cst.parse_statement(f"{name}.wait_stream({portable('torch.cuda.current_stream')})\n"),
        ]
        with_stream = self._with_stream(call, name)
        context = name if self._reports("torch.cuda.stream") else f"torch.cuda.stream({name})"
        # The ambient stream waits for the warm-up before the code after it reads its results.
        join = cst.parse_statement(f"{portable('torch.cuda.current_stream')}.wait_stream({name})\n")
        after = block.body[positions[id(last)] + 1]
        rewrite = Rewrite(
            insert_before={id(first): hoisted, id(after): [join]},
            wrap=(id(first), id(last), cst.parse_expression(context)),
            replace={id(call): with_stream},
            imports={"torch"},
        )
        return self.build_fix(rewrite, UNSAFE, f"Warm up and capture on `{name}`")

    @staticmethod
    def _with_stream(call: cst.Call, name: str) -> cst.Call:
        """The capture call with ``stream=name`` (in place of a ``stream=None`` it had)."""
        given = argument(call, "stream", 2)
        if given is not None:
            args = [a.with_changes(value=cst.Name(name)) if a is given else a for a in call.args]
            return call.with_changes(args=args)
        parsed = cst.parse_expression(f"f(stream={name})")
        assert isinstance(parsed, cst.Call)  # parsed from a call
        return call.with_changes(args=[*call.args, parsed.args[0]])

    def _reports(self, name: str) -> bool:
        """Whether PORT4xx reports the CUDA API ``name`` at the target torch: the fix then writes
        its replacement instead (a fix never writes what another rule reports)."""
        target = self.settings.target_torch_version
        return target is None or BY_NAME[name].since <= target

    def _portable(self, name: str) -> str:
        """A call of ``name`` (a stream API without arguments), as the target torch has it."""
        return f"{BY_NAME[name].replacement if self._reports(name) else name}()"

    def _is_torch_current(self, stream: cst.Call) -> bool:
        """``torch.cuda.current_stream()`` through the torch module (a name imported from
        torch.cuda is moved as it is: writing the replacement would leave its import unused)."""
        return (
            not stream.args
            and isinstance(stream.func, cst.Attribute)
            and "torch.cuda.current_stream" in qualified_names(self, stream.func)
        )

    def _check_frame(self, frame: Frame) -> None:
        """What the rule makes of one function's frame (its subclass says)."""
        raise NotImplementedError


def earlier_runs(frame: Frame, capture: Capture, start: Position) -> list[CallSite]:
    """Calls before the capture (which starts at ``start``), on a path that reaches it, to
    something the capture calls: its warm-ups, and those recorded by an earlier capture; and
    calls of an earlier call (another arm on a counter of calls)."""
    captured = {c.callee for c in frame.calls if c.region is capture.region}
    return [
        c
        for c in frame.calls
        if c.callee in captured
        and (
            (c.exits <= capture.blocks and c.start < start and not exclusive(c.arms, capture.arms))
            or (c.region is None and successive(frame, c.arms, capture.arms))
        )
    ]


def exclusive(arms: frozenset[tuple[int, int]], others: frozenset[tuple[int, int]]) -> bool:
    """Whether two places are in different arms of one `if` (one never runs before the other)."""
    return any((branch, 1 - arm) in others for branch, arm in arms)


def successive(frame: Frame, arms: frozenset, others: frozenset) -> bool:
    """Whether two places are in different arms of an `if` on a counter of calls (`if
    self.warmup_steps > 0:` ... `self.warmup_steps -= 1`): the first runs on earlier calls."""
    return any((branch, 1 - arm) in others and branch in frame.counters for branch, arm in arms)
