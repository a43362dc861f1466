import re

import libcst as cst

from portlint.analysis.dtypes import Int64Origin, Int64Provider
from portlint.analysis.names import (
    dotted_name,
    imported_names,
    keyword,
    method_name,
    qualified_names,
)
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import walk
from portlint.evidence import INT64_ORIGIN, NEW_TENSOR_CALL
from portlint.facts import INT32_DTYPES, NEW_METHODS
from portlint.findings import UNSAFE
from portlint.fix import Rewrite
from portlint.index.int64 import CALL_NOTES, CONSUMER_NOTES, RETURN_NOTES, STORE_NOTES
from portlint.rule import Invalid, Rule

# Words naming what an integer tensor holds: a buffer of the same kind as its source (token ids
# from token ids, offsets from offsets) inherits the dtype on purpose.
KIND_WORDS = {"token", "id", "offset", "position", "pos", "index", "indice", "idx", "loc", "slot"}
CONCATENATE = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"}
COUNT_NAME = re.compile(r"(^|_)(num_\w+|\w*count\w*|\w+_lens?)$")


def kinds(name: str) -> set[str]:
    words = re.split(r"[._]", name.lower())
    return {w[:-1] if w.endswith("s") else w for w in words} & KIND_WORDS


def _is_new_without_dtype(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and method_name(node) in NEW_METHODS
        and keyword(node, "dtype") is None
    )


def describe(origin: Int64Origin) -> str:
    text = f"`{origin.name}` (int64 by {origin.how} at line {origin.line}"
    root = origin.root
    if root is not origin:
        text += f", from `{root.name}`: {root.how} at line {root.line}"
    return text + ")"


class NewTensorInheritsInt64(Rule):
    """`new_*` without `dtype=` inherits int64.

    ## What it does
    Reports `x.new_empty(...)`, `x.new_zeros(...)`, `x.new_ones(...)` and `x.new_full(...)` called
    without `dtype=` on a tensor `x` known, within the same function, to be int64 (created with
    `dtype=torch.int64`/`torch.long`, by `torch.arange`, `torch.randint` or `torch.tensor` of
    integers, by `.long()` or `argmax`, or inherited through `new_*`/`*_like`), where the new
    tensor meets something that needs int32: it reaches a Triton kernel parameter whose contract
    needs int32 (directly, through `*_like`, or through project functions that pass it on: see
    PORT202), or an int32 tensor of its function is compared with it, copied from it or
    concatenated with it. Where it is given to a
    function after which portlint cannot follow it (another library's function, or a project
    function that puts it in a container or an attribute), it is reported as likely, naming the
    function. Where its function returns it, it is followed to the callers that bind the result
    (`sampled, num_sampled = sample(...)`, in any module of the project) and on to their kernels;
    where a method stores it on `self`, to the methods of the class that read the attribute. A
    kernel there that needs int32 makes the finding certain, naming the caller or the method;
    where it reached a kernel before it left and not every use after can be seen (no caller in
    the project, a use that cannot be followed, no other method reading the attribute), it is
    likely, saying where it went. Where a sibling of its function (the function of the same name
    in another module of the package, or the method of the same name in another class there)
    returns an int32 tensor in the same place, it is likely too: the callers of either expect
    int32. The message names the tensor the dtype comes from; its detail, how
    that tensor is int64 and the consumer. Inherited int64
    that nothing needing int32 consumes is what the code works with, and is not reported; nor
    where the int64 is evidently meant: the new tensor holds the same kind of values as its
    source (`lookback_token_ids = input_ids.new_full(...)`), or is joined to it
    (`torch.cat([offsets.new_zeros(1), offsets])`), or what it is given to requires int64 (a
    `torch.ops` binding, or a function that checks `x.dtype == torch.int64` first).

    ## Why is this bad?
    `new_*` copies the receiver's dtype. A count or index buffer made this way from token ids is
    int64 where the kernels that consume it expect int32. In vLLM #39951,
    `num_sampled = sampled.new_empty(num_reqs)` inherited int64 from `sampled`;
    `num_rejected = torch.empty_like(num_sampled)` inherited it again; inside the Triton kernel
    `_prepare_eagle_inputs_kernel`, `query_len -= num_rejected` turned a loop variable int64 and a
    later loop rebinding it as int32 failed to compile:
    `initial value for `i` is of type int64[], but the then block redefines it as int32[]`.
    Whether such code compiles then depends on the backend's integer promotion rules.

    ## Example
    ```python
    sampled = torch.empty(num_reqs, num_steps + 1, dtype=torch.int64, device=device)
    num_sampled = sampled.new_empty(num_reqs)
    ```

    Use instead:
    ```python
    sampled = torch.empty(num_reqs, num_steps + 1, dtype=torch.int64, device=device)
    num_sampled = sampled.new_empty(num_reqs, dtype=torch.int32)
    ```

    ## Fix safety
    Unsafe: the fix adds `dtype=torch.int32` where the new tensor reaches an int32 context — it is
    passed to a Triton launch (`kernel[grid](...)`) in the same function, compared there with an
    int32 tensor (`.int()`, `.to(torch.int32)`), a sibling in the function is allocated with
    `dtype=torch.int32`, or its name says it holds a count or a length
    (`num_*`, `*_count`, `*_len`, `*_lens`), which kernels take as int32 — and
    `dtype=torch.int64` otherwise, which keeps today's dtype and only makes it explicit. Either
    way it is unsafe: int32 changes the dtype, and the explicit int64 is only as right as the
    dtype flow that found the receiver to be int64. `import torch` is added where needed.

    ## References
    - vLLM #39951: `new_empty` inherits int64 into `_prepare_eagle_inputs_kernel`
    - https://pytorch.org/docs/stable/generated/torch.Tensor.new_empty.html
    """

    code = "PORT201"
    name = "new-tensor-inherits-int64"
    triggers = tuple(sorted(NEW_METHODS))
    evidence = (NEW_TENSOR_CALL, INT64_ORIGIN)
    METADATA_DEPENDENCIES = (
        *Rule.METADATA_DEPENDENCIES,
        Int64Provider,
        ParentProvider,
        NameProvider,
    )

    # A kernel that needs int32 for `n_ptr` (a loaded count rebound to the program id).
    KERNEL = (
        "import torch\nimport triton\nimport triton.language as tl\n@triton.jit\n"
        "def k(n_ptr, n):\n    i = tl.load(n_ptr)\n    if n > 0:\n        i = tl.program_id(0)\n"
        "    tl.store(n_ptr, i)\n"
    )
    VALID = [
        "import torch\ns = torch.empty(4, dtype=torch.int64)\nn = s.new_empty(4, dtype=torch.int32)\n",
        "import torch\ns = torch.empty(4, dtype=torch.float32)\nn = s.new_empty(4)\n",
        "import torch\ns = torch.arange(0.0, 4.0)\nn = s.new_zeros(4)\n",
        "import torch\ns = torch.arange(4)\ns = s.float()\nn = s.new_zeros(4)\n",
        "import torch\ndef f():\n    s = torch.arange(4)\ndef g(s):\n    return s.new_ones(4)\n",
        "def f(s):\n    return s.new_empty(4)\n",
        # The same kind of values as the source: the int64 is meant.
        "import torch\ndef f(n):\n    input_ids = torch.arange(n)\n    lookback_token_ids = input_ids.new_full((n,), -1)\n",
        # Prepending a zero to the tensor itself, or to anything: torch takes any width.
        "import torch\ndef f(counts):\n    offsets = torch.cumsum(counts.long(), 0)\n"
        "    return torch.cat([offsets.new_zeros(1), offsets])\n",
        "import torch\ndef f(lengths):\n    offsets = lengths.cumsum(0)\n"
        "    return torch.cat((offsets.new_zeros((1,)), lengths.cumsum(0)))\n",
        # int64 that nothing needing int32 consumes: the code works with it as it is.
        "import torch\ns = torch.empty(4, dtype=torch.int64)\nnum_sampled = s.new_empty(4)\n",
        "import torch\ns = torch.arange(4)\nn = torch.empty_like(s)\nm = n.new_zeros(2)\n",
        # a kernel that takes any integer width there
        "import torch\nimport triton\nimport triton.language as tl\n@triton.jit\n"
        "def k(n_ptr, n):\n    tl.store(n_ptr, tl.load(n_ptr) + 1)\n"
        "def f(s, n):\n    s = torch.empty(4, dtype=torch.int64)\n    num = s.new_empty(4)\n"
        "    k[(1,)](num, n)\n",
    ]
    INVALID = [
        # The seed (vLLM #39951): inherited into a kernel parameter that needs int32.
        Invalid(
            KERNEL + "def f(n):\n    s = torch.empty(4, dtype=torch.int64)\n"
            "    num_sampled = s.new_empty(4)\n    k[(1,)](num_sampled, n)\n",
            12,
            19,
            fixed=KERNEL + "def f(n):\n    s = torch.empty(4, dtype=torch.int64)\n"
            "    num_sampled = s.new_empty(4, dtype=torch.int32)\n    k[(1,)](num_sampled, n)\n",
        ),
        # ... and again through `empty_like`
        Invalid(
            KERNEL + "def f(n):\n    s = torch.empty(4, dtype=torch.int64)\n"
            "    num_sampled = s.new_empty(4)\n    num_rejected = torch.empty_like(num_sampled)\n"
            "    k[(1,)](n_ptr=num_rejected, n=n)\n",
            12,
            19,
        ),
        # compared with an int32 tensor of its own function
        Invalid(
            "import torch\ndef f(n, lens):\n    s = torch.arange(n)\n    ends = s.new_zeros(n)\n"
            "    limits = lens.int()\n    return ends < limits\n",
            4,
            12,
            fixed="import torch\ndef f(n, lens):\n    s = torch.arange(n)\n"
            "    ends = s.new_zeros(n, dtype=torch.int32)\n    limits = lens.int()\n"
            "    return ends < limits\n",
        ),
        # copied into, or concatenated with, an int32 tensor of its function
        Invalid(
            "import torch\ndef f(n, out):\n    s = torch.arange(n)\n    ends = s.new_zeros(n)\n"
            "    lens = torch.zeros(n, dtype=torch.int32)\n    lens.copy_(ends)\n",
            4,
            12,
        ),
        Invalid(
            "import torch\ndef f(n, lens):\n    s = torch.arange(n)\n    pad = s.new_zeros(2)\n"
            "    lens = lens.int()\n    return torch.cat([lens, pad])\n",
            4,
            11,
        ),
        # given to a function portlint cannot see into
        Invalid(
            "import torch\nfrom kernels import prepare\ns = torch.empty(4, dtype=torch.int64)\n"
            "n = s.new_empty(4)\nprepare(s, n)\n",
            4,
            5,
            fixed="import torch\nfrom kernels import prepare\ns = torch.empty(4, dtype=torch.int64)\n"
            "n = s.new_empty(4, dtype=torch.int64)\nprepare(s, n)\n",
        ),
        Invalid(
            "import torch\nclass W:\n    def f(self):\n"
            "        self.ids = torch.arange(4)\n        run(self.ids.new_empty(2))\n",
            5,
            13,
        ),
    ]

    def _intended(self, node: cst.Call, receiver: cst.BaseExpression) -> bool:
        """Whether the inherited int64 is meant: same kind of values, or joined to its source."""
        parent = self.get_metadata(ParentProvider, node, None)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)
            source = dotted_name(receiver)
            if target and source and kinds(target) & kinds(source):
                return True
        if isinstance(parent, cst.Element):
            sequence = self.get_metadata(ParentProvider, parent, None)
            assert isinstance(sequence, (cst.List, cst.Tuple, cst.Set))  # what holds an Element
            arg = self.get_metadata(ParentProvider, sequence, None)
            call = (
                self.get_metadata(ParentProvider, arg, None) if isinstance(arg, cst.Arg) else None
            )
            if isinstance(call, cst.Call) and qualified_names(self, call.func) & CONCATENATE:
                return any(e.value.deep_equals(receiver) for e in sequence.elements)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self._note_consumers(node)
        if not _is_new_without_dtype(node):
            return
        assert isinstance(node.func, cst.Attribute)
        origin = self.get_metadata(Int64Provider, node.func.value, None)
        if origin is None or self._intended(node, node.func.value):
            return
        context = self._int32_context(node)
        dtype = "torch.int32" if context else "torch.int64"
        parsed = cst.parse_expression(f"f(dtype={dtype})")
        assert isinstance(parsed, cst.Call)  # parsed from a call
        explicit = node.with_changes(args=[*node.args, parsed.args[0]])
        rewrite = Rewrite(replace={id(node): explicit}, imports={"torch"})
        message = (
            f"`.{node.func.attr.value}()` without `dtype=` inherits int64 from `{origin.name}` "
            f"(line {origin.line}); pass `dtype=`"
        )
        if context is not None and context[1]:
            self.context.notes.setdefault(CONSUMER_NOTES, []).append([node, context[0]])
        self.report(
            node, message, confidence="likely",
            fix=self.build_fix(rewrite, UNSAFE, f"Pass `dtype={dtype}`"),
            detail=f"Its source: {describe(origin)}. Kernels that take counts and indices usually "
            "expect `torch.int32`.",
        )  # fmt: skip

    def visit_Return(self, node: cst.Return) -> None:
        """For the project index: each returned value (each element of a returned tuple) that is,
        or comes from, a ``new_*`` without ``dtype=``, with the function that returns it (its
        callers, in any module, are where the tensor goes next)."""
        function = self._function_name(node)
        if node.value is None or function is None:
            return
        value = node.value
        elements = (
            [(i, e.value) for i, e in enumerate(value.elements)]
            if isinstance(value, cst.Tuple)
            else [(None, value)]
        )
        for index, element in elements:
            news = self._news_in(element)
            if news:
                self.context.notes.setdefault(RETURN_NOTES, []).append([news, index, function])

    def visit_Assign(self, node: cst.Assign) -> None:
        """For the project index: a ``new_*`` without ``dtype=`` (or a tensor that comes from one)
        stored on ``self`` in a method: the class's other methods that read it are where it goes
        next."""
        function = self._function_name(node)
        if function is None or "." not in function:
            return
        for target in node.targets:
            attribute = target.target
            if (
                isinstance(attribute, cst.Attribute)
                and isinstance(attribute.value, cst.Name)
                and attribute.value.value == "self"
            ):
                news = self._news_in(node.value)
                if news:
                    row = [news, function.split(".")[0], attribute.attr.value, function]
                    self.context.notes.setdefault(STORE_NOTES, []).append(row)

    def _function_name(self, node: cst.CSTNode) -> str | None:
        """The name of the module-level function (``f``) or method (``C.m``) ``node`` is in, as
        the project index names it (None: elsewhere, or in a nested function)."""
        scopes: list[cst.FunctionDef | cst.ClassDef] = []
        current = self.get_metadata(ParentProvider, node, None)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                scopes.insert(0, current)
            current = self.get_metadata(ParentProvider, current, None)
        kinds = [type(scope) for scope in scopes]
        if kinds in ([cst.FunctionDef], [cst.ClassDef, cst.FunctionDef]):
            return ".".join(scope.name.value for scope in scopes)
        return None

    def _news_in(self, value: cst.BaseExpression) -> list[cst.CSTNode]:
        """``value`` if it is a ``new_*`` without ``dtype=``, and those its int64 comes from."""
        news: list[cst.CSTNode] = [value] if _is_new_without_dtype(value) else []
        origin = self.get_metadata(Int64Provider, value, None)
        while origin is not None:
            if _is_new_without_dtype(origin.at):
                news.append(origin.at)
            origin = origin.parent
        return news

    def _note_consumers(self, call: cst.Call) -> None:
        """For the project index: each argument of ``call`` that is, or comes from, a ``new_*``
        without ``dtype=``, where the callee may need int32 (a launch, a function of this or
        another module; not a method of a value, which takes what it is given)."""
        callee = call.func.value if isinstance(call.func, cst.Subscript) else call.func
        if isinstance(callee, cst.Attribute) and not imported_names(self, callee):
            return
        if not isinstance(callee, (cst.Name, cst.Attribute)):
            return
        for index, arg in enumerate(call.args):
            news = self._news_in(arg.value)
            if news:
                where: int | str = arg.keyword.value if arg.keyword else index
                names = sorted(qualified_names(self, callee))
                row = [arg.value, names, where, news, dotted_name(callee) or ""]
                self.context.notes.setdefault(CALL_NOTES, []).append(row)

    def _int32_value(self, value: cst.BaseExpression) -> str | None:
        """ "allocated" for a call with ``dtype=torch.int32``, "cast" for ``.int()``/``.to(int32)``."""
        if not isinstance(value, cst.Call):
            return None
        dtype = keyword(value, "dtype")
        if dtype is not None and qualified_names(self, dtype.value) & INT32_DTYPES:
            return "allocated"
        method = method_name(value)
        if method == "int" or (
            method == "to"
            and value.args
            and qualified_names(self, value.args[0].value) & INT32_DTYPES
        ):
            return "cast"
        return None

    def _int32_context(self, node: cst.Call) -> tuple[str, bool] | None:
        """Where the new tensor meets int32, and whether that is a consumer that needs it (an
        int32 tensor of its function is compared with it, copied from it, or concatenated with
        it), or only a hint that int32 is meant (a count's name, a sibling allocated as int32, a
        Triton launch taking it: the kernel's contract decides)."""
        parent = self.get_metadata(ParentProvider, node, None)
        target = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)
        scope = parent
        while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
            scope = self.get_metadata(ParentProvider, scope, None)
        nodes = list(walk(scope or self.module))
        int32_names: set[str] = set()
        hint = None
        if target and COUNT_NAME.search(target.rsplit(".", 1)[-1]):
            hint = f"`{target}` is named as a count"
        for assign in (n for n in nodes if isinstance(n, cst.Assign)):
            kind = self._int32_value(assign.value)
            if kind == "allocated":
                hint = hint or "a tensor beside it is allocated as int32"
            if kind is not None:
                int32_names.update(n for t in assign.targets if (n := dotted_name(t.target)))
        if not target:
            return (hint, False) if hint else None
        for other in nodes:
            if (
                isinstance(other, cst.Call)
                and isinstance(other.func, cst.Subscript)
                and any(dotted_name(a.value) == target for a in other.args)
            ):
                hint = hint or "it is given to a Triton launch"
            consumer = self._int32_consumer(other, target, int32_names)
            if consumer is not None:
                return consumer, True
        return (hint, False) if hint else None

    def _int32_consumer(self, node: cst.CSTNode, target: str, int32: set[str]) -> str | None:
        """How ``node`` makes an int32 tensor meet ``target``, if it does."""
        if isinstance(node, cst.Comparison):
            names = {dotted_name(node.left), *(dotted_name(c.comparator) for c in node.comparisons)}
            found = sorted(n for n in names if n in int32)
            if target in names and found:
                return f"it is compared with `{found[0]}`, an int32 tensor"
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            into = dotted_name(node.func.value)
            copies = node.func.attr.value == "copy_" and into in int32 and bool(node.args)
            if copies and dotted_name(node.args[0].value) == target:
                return f"it is copied into `{into}`, an int32 tensor"
        if isinstance(node, cst.Call) and qualified_names(self, node.func) & CONCATENATE:
            sequence = node.args[0].value if node.args else None
            if isinstance(sequence, (cst.List, cst.Tuple)):
                names = {dotted_name(e.value) for e in sequence.elements}
                found = sorted(n for n in names if n in int32)
                if target in names and found:
                    return f"it is concatenated with `{found[0]}`, an int32 tensor"
        return None
