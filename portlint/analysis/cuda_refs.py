"""References to CUDA-only torch APIs, found once per file for the whole PORT4xx family.

``CudaReferenceProvider`` marks each outermost name or attribute chain that resolves under
``torch.cuda`` (``torch.cuda.synchronize``, ``t.cuda.Stream`` after ``import torch as t``,
``cuda.graph`` after ``from torch import cuda``, ``synchronize`` after ``from torch.cuda import
synchronize``; not the import statements, annotations, or assignments to ``torch.cuda``
attributes), each uncalled ``x.is_cuda``, and each
``backend="nccl"`` given to ``init_process_group``/``new_group``. ``CudaApiRule`` is the base of
the family: each rule reports the references of its family and builds fixes from the table in
:mod:`portlint.cuda_api`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import libcst as cst
from libcst.metadata import BatchableMetadataProvider

from portlint.analysis.device_scope import (
    ScopeDevice,
    backend_device,
    device_module,
    device_type,
    fix_device,
    message_device,
)
from portlint.analysis.names import argument, dotted_name, qualified_names
from portlint.analysis.object_uses import made_by, uses_only
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.streams import makes_stream
from portlint.cuda_api import (
    APIS,
    BY_NAME,
    DEVICE_MODULE,
    DISTRIBUTED,
    IS_CUDA,
    MEMBERS,
    NEWEST_KNOWN,
    CudaApi,
    format_version,
    lookup,
    since,
    suggestion,
)
from portlint.evidence import CUDA_REFERENCE
from portlint.findings import MESSAGE_WIDTH, Fix
from portlint.fix import Rewrite
from portlint.rule import Quiet, Rule

GROUP_FUNCTIONS = {  # qualified name -> position of `backend`
    "torch.distributed.init_process_group": 0,
    "torch.distributed.distributed_c10d.init_process_group": 0,
    "torch.distributed.new_group": 2,
    "torch.distributed.distributed_c10d.new_group": 2,
}
NCCL_CONSTANTS = {
    "torch.distributed.Backend.NCCL",
    "torch.distributed.distributed_c10d.Backend.NCCL",
}


@dataclass(frozen=True, eq=False)
class CudaReference:
    api: CudaApi
    qualified: str  # the name as resolved, e.g. "torch.cuda.memory.empty_cache"
    call: cst.Call | None = None  # the call whose callee the reference is
    with_item: bool = False  # that call is an item of a `with` statement


class CudaReferenceProvider(BatchableMetadataProvider[CudaReference]):
    METADATA_DEPENDENCIES = (NameProvider, ParentProvider)

    def __init__(self) -> None:
        super().__init__()
        self.import_depth = 0

    def visit_Import(self, node: cst.Import) -> None:
        self.import_depth += 1

    def leave_Import(self, original_node: cst.Import) -> None:
        self.import_depth -= 1

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.import_depth += 1

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self.import_depth -= 1

    def visit_Name(self, node: cst.Name) -> None:
        self._reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._reference(node)

    def visit_Call(self, node: cst.Call) -> None:
        for name in qualified_names(self, node.func):
            if name in GROUP_FUNCTIONS:
                backend = argument(node, "backend", GROUP_FUNCTIONS[name])
                if backend is not None and self._is_nccl(backend.value):
                    api = BY_NAME["backend=nccl"]
                    self.set_metadata(backend.value, CudaReference(api, api.name))
                return

    def _in_annotation(self, node: cst.CSTNode) -> bool:
        """In an annotation, or in a type built for one (``IndexType = Union[int,
        torch.cuda.LongTensor]``): a class named there runs nothing on a device."""
        current = self.get_metadata(ParentProvider, node, None)
        while current is not None and not isinstance(current, cst.BaseStatement):
            if isinstance(current, cst.Annotation) or (
                isinstance(current, cst.Subscript)
                and bool(qualified_names(self, current.value) & TYPE_CONSTRUCTORS)
            ):
                return True
            if isinstance(current, cst.Arg):  # `typing.cast(torch.cuda.Event, x)`: its type
                call = self.get_metadata(ParentProvider, current, None)
                if (
                    isinstance(call, cst.Call)
                    and call.args[0] is current
                    and qualified_names(self, call.func) & CASTS
                ):
                    return True
            current = self.get_metadata(ParentProvider, current, None)
        return False

    def _decorator_argument(self, parent: cst.CSTNode | None) -> bool:
        """Named, not called, as an argument of a decorator (``@delegates(torch.cuda.amp.
        GradScaler)``, ``@functools.wraps(torch.cuda.synchronize)``): a source of a signature
        or a key of a registry, which runs nothing on a device there."""
        if not isinstance(parent, cst.Arg):
            return False
        call = self.get_metadata(ParentProvider, parent, None)
        return isinstance(call, cst.Call) and isinstance(
            self.get_metadata(ParentProvider, call, None), cst.Decorator
        )

    def _is_nccl(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.SimpleString):
            return value.evaluated_value == "nccl"
        return bool(qualified_names(self, value) & NCCL_CONSTANTS)

    def _reference(self, node: cst.Name | cst.Attribute) -> None:
        if self.import_depth:
            return
        parent = self.get_metadata(ParentProvider, node, None)
        text = dotted_name(node)
        if isinstance(parent, cst.Attribute) or text is None:
            return  # part of a longer chain, the attribute's name, or an attribute of a value
        is_cuda = isinstance(node, cst.Attribute) and node.attr.value == "is_cuda"
        found = None if is_cuda else self._api(node, text)
        if not (is_cuda or found):
            return  # most names: checked before the costlier questions below
        call = parent if isinstance(parent, cst.Call) and parent.func is node else None
        if isinstance(parent, cst.AssignTarget) or self._in_annotation(node):
            return  # monkeypatching torch.cuda, or a type: nothing runs on a device there
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param)) and parent.name is node:
            return  # a name being bound (`def autocast(...)` beside an import of CUDA's)
        if call is None and self._decorator_argument(parent):
            return
        if is_cuda:
            if call is None and not (
                isinstance(node.value, cst.Name) and node.value.value == "self"
            ):
                self.set_metadata(node, CudaReference(IS_CUDA, IS_CUDA.name))
            return
        assert found is not None  # not `is_cuda`: found, or returned above
        api, qualified = found
        grandparent = self.get_metadata(ParentProvider, call, None) if call else None
        with_item = isinstance(grandparent, cst.WithItem)
        self.set_metadata(node, CudaReference(api, qualified, call, with_item))

    def _api(self, node: cst.Name | cst.Attribute, text: str) -> tuple[CudaApi, str] | None:
        """The CUDA-only API ``node`` (written ``text``) names, with the qualified name it is
        known by. A name under ``torch.cuda`` says ``cuda`` itself (``torch.cuda.x``), or starts
        with a name an import binds to something under it (``nvtx.x`` after ``from torch.cuda
        import nvtx``): other names are not resolved at all (most names: resolving is the cost).
        A name also bound to the portable replacement (``from torch.amp import GradScaler``
        where torch has it, ``from torch.cuda.amp import GradScaler`` where it has not) is the
        replacement where torch has it: no CUDA reference. (Bound to another device's API in a
        dispatch's other arms, it is still CUDA's in the ``else`` that every other device takes.)"""
        names = self.get_metadata(NameProvider, node, None)
        if names is None or (
            "cuda" not in text and text.partition(".")[0] not in names.names_imported_from("cuda")
        ):
            return None
        bound = qualified_names(self, node)
        for qualified in sorted(bound):
            api = lookup(qualified)
            if api is not None:
                return None if suggestion(qualified) in bound else (api, qualified)
        return None


# The typing constructs whose subscripts are types (`Union[int, torch.cuda.LongTensor]`).
TYPE_CONSTRUCTORS = frozenset(
    f"{module}.{name}"
    for module in ("typing", "typing_extensions")
    for name in ("Union", "Optional", "Type", "Sequence", "List", "Tuple", "Dict", "Callable")
)


# The functions whose first argument is a type, never run (`typing.cast(torch.cuda.Event, x)`).
CASTS = frozenset({"typing.cast", "typing_extensions.cast"})


def device_type_first(rule: Rule, call: cst.Call, args: list[cst.Arg]) -> list[cst.Arg]:
    """``args`` after the type of the device in scope: the first parameter of ``torch.autocast``
    and ``torch.amp.GradScaler``."""
    device = cst.parse_expression(device_type(fix_device(rule, call)))
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [cst.Arg(device, comma=comma if args else cst.MaybeSentinel.DEFAULT), *args]


def _as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    return arg.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


# How the names of device indices end (`local_rank`, `device_id`, `gpu_idx`, `x.index`).
INDEX_WORDS = ("index", "idx", "_id", "rank")


def _is_index(value: cst.BaseExpression) -> bool:
    """Whether ``value`` is certainly a device index: an integer, or a name that says so."""
    if isinstance(value, cst.Integer):
        return True
    name = dotted_name(value)
    return name is not None and name.rsplit(".", 1)[-1].endswith(INDEX_WORDS)


def _in_test(rule, node: cst.CSTNode) -> bool:
    """Whether ``node`` is part of a condition: the test of an ``if``, ``while``, conditional
    expression or ``assert``, or an operand of ``and``/``or``/``not``."""
    child, current = node, rule.get_metadata(ParentProvider, node, None)
    while current is not None and not isinstance(current, cst.BaseSuite):
        if isinstance(current, (cst.BooleanOperation, cst.UnaryOperation)):
            return True
        if (
            isinstance(current, (cst.If, cst.While, cst.IfExp, cst.Assert))
            and child is current.test
        ):
            return True
        child, current = current, rule.get_metadata(ParentProvider, current, None)
    return False


def _same_object(reference: CudaReference, node: cst.CSTNode) -> Quiet:
    """Why a name that is the portable object itself under another name is no finding:
    ``except torch.cuda.OutOfMemoryError`` catches what every device's allocator raises."""
    api = reference.api
    if not api.alias:
        return None
    return f"`{reference.qualified}` is `{api.replacement}` by another name, on every device", node


# The nodes a reference is reported on: a name or attribute chain, or a `backend="nccl"` string.
REFERENCE_NODES = (cst.Name, cst.Attribute, cst.SimpleString)


class CudaApiRule(Rule):
    """The PORT4xx family: one rule per ``family`` of :mod:`portlint.cuda_api`."""

    family: ClassVar[str]
    triggers: ClassVar[tuple[str, ...]] = (
        "torch.cuda",
        "import cuda",
        ".cuda.",
        ".is_cuda",
        "nccl",
        "NCCL",
    )
    evidence = (CUDA_REFERENCE,)
    guardable = reads_class = True
    METADATA_DEPENDENCIES = (
        *Rule.METADATA_DEPENDENCIES,
        CudaReferenceProvider,
        NameProvider,
        ParentProvider,
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        """Report the references the provider found, in the order it found them (looking up
        every name of the file in each of nine rules cost ~5% of a run)."""
        target = self.settings.target_torch_version
        # The ignore: LibCST types all metadata as object.
        references: Mapping[cst.CSTNode, CudaReference] = self.metadata[CudaReferenceProvider]  # type: ignore[assignment]
        for node, reference in references.items():
            if reference.api.family != self.family or not isinstance(node, REFERENCE_NODES):
                continue
            if target is not None and target < reference.api.since:
                continue
            quiet = _same_object(reference, node) or self.redundant(reference, node)
            message, detail = self.message(reference, message_device(self, node), node)
            fix = self._fix(reference, node) if quiet is None else None
            self.report(node, message, fix=fix, quiet=quiet, detail=detail)

    def redundant(self, reference: CudaReference, node: cst.CSTNode) -> Quiet:
        """Where the reference (at ``node``) does nothing that its surroundings have not done
        already on every device (a rule of the family says when: PORT404, PORT405): why, and
        what does it."""
        return None

    def message(
        self, reference: CudaReference, device: ScopeDevice, node: cst.CSTNode
    ) -> tuple[str, str]:
        """What to use instead, with the device in scope where the replacement takes one; and,
        as the detail, the torch release that added it and its caveat."""
        api, name = reference.api, reference.qualified
        target = self.settings.target_torch_version
        suggested = suggestion(name, target) if name.startswith("torch.cuda") else api.replacement
        if suggested is None:
            return f"CUDA-only `{name}`; torch has no portable equivalent", (
                f"No torch up to {format_version(target or NEWEST_KNOWN)} has one: keep it where "
                "only CUDA runs it (behind a check of the device, or in `cuda-only-paths`)."
            )
        replacement = suggested.replace(DEVICE_MODULE, device_module(device, fix=False))
        if api.family == DISTRIBUTED:
            name, called = 'backend="nccl"', f"{replacement}({backend_device(device, False)})"
        elif api is IS_CUDA and isinstance(node, cst.Attribute):  # the tensor's own name
            replacement = called = f"{cst.Module([]).code_for_node(node.value)}.device.type"
        else:
            called = replacement
        named = api.usage or f"`{replacement}`"
        message = f"CUDA-only `{name}`; use {named}"
        owner, _, member = replacement.rpartition(".")
        if len(message) > MESSAGE_WIDTH and member == name.rpartition(".")[2] and not api.usage:
            message = f"CUDA-only `{name}`; `{owner}` has it"  # (a member of that name)
        first = format_version(since(api, suggested))
        note = f" {api.note[:1].upper()}{api.note[1:]}." if api.note else ""
        return message, f"{api.usage or f'`{called}`'} needs torch ≥ {first}.{note}"

    def _fix(self, reference: CudaReference, node: cst.CSTNode) -> Fix | None:
        api, call = reference.api, reference.call
        if api.fix is None or (api.family != DISTRIBUTED and self._imported_from_cuda(node)):
            return None
        if api.guard and _in_test(self, node):
            return None  # the code it guards may be CUDA-only: true elsewhere, it would run there
        if api.family == DISTRIBUTED:
            device = backend_device(fix_device(self, node), True)
            new: cst.CSTNode = cst.parse_expression(f"{api.replacement}({device})")
            old: cst.CSTNode = node
        elif call is None or any(arg.star for arg in call.args):
            return None
        elif api.returns and not uses_only(self, call, MEMBERS[api.returns]):
            return None  # `.cuda_stream`, or the object goes where its type matters
        elif api.takes_index and not (len(call.args) == 1 and _is_index(call.args[0].value)):
            return None  # `torch.cuda.device(x.device)`: `device_index` would refuse it
        elif api.takes_stream and not (
            call.args and made_by(self, call.args[0].value, partial(makes_stream, self))
        ):
            return None  # it may be None, or no stream
        elif api.argument_is_context:
            if not reference.with_item or len(call.args) != 1 or call.args[0].keyword:
                return None
            old, new = call, call.args[0].value.with_changes(lpar=(), rpar=())
        else:
            args = self._arguments(api, call, node)
            if args is None:
                return None
            old = call
            module = device_module(fix_device(self, call), fix=True)
            new = call.with_changes(
                func=cst.parse_expression(api.replacement.replace(DEVICE_MODULE, module)), args=args
            )
        module = device_module(fix_device(self, node), fix=True)
        message = f"Use `{api.replacement.replace(DEVICE_MODULE, module)}`"
        return self.build_fix(Rewrite(replace={id(old): new}, imports={"torch"}), api.fix, message)

    def _imported_from_cuda(self, node: cst.CSTNode) -> bool:
        """Whether ``node``'s first name was imported from torch.cuda (``from torch import cuda``,
        ``from torch.cuda import synchronize``): a fix would leave that import unused."""
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        return any(q.startswith("torch.cuda") for q in qualified_names(self, root))

    def _arguments(self, api: CudaApi, call: cst.Call, node: cst.CSTNode) -> list[cst.Arg] | None:
        """The call's arguments as the replacement takes them; None if they cannot be mapped."""
        args: list[cst.Arg] = []
        position = 0
        for arg in call.args:
            if arg.keyword is None and api.keywords:
                if position >= len(api.keywords):
                    return None
                arg = _as_keyword(arg, api.keywords[position])
                position += 1
            elif api.device_positional and arg.keyword and arg.keyword.value == "device":
                arg = arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
            args.append(arg)
        return device_type_first(self, call, args) if api.device_first else args

    @classmethod
    def documentation(cls) -> str:
        """The docstring, then the family's rows of the mapping table."""
        rows = [
            f"| `{api.name}` | {api.usage or f'`{api.replacement}`'}"
            f" | {format_version(api.since)} | {api.fix or 'none'} |"
            for api in APIS
            if api.family == cls.family
        ]
        table = "\n".join(
            ["| CUDA-only | use instead | torch ≥ | fix |", "| --- | --- | --- | --- |"]
        )
        return f"{super().documentation()}\n\n## Mapping\n{table}\n" + "\n".join(rows)
