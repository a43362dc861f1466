import re

import libcst as cst

from portlint.analysis.device_scope import walk
from portlint.analysis.dtypes import Int64Origin, Int64Provider
from portlint.analysis.names import dotted_name, keyword, method_name, qualified_names
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.evidence import INT64_ORIGIN, NEW_TENSOR_CALL
from portlint.facts import NEW_METHODS
from portlint.findings import UNSAFE
from portlint.fix import Rewrite
from portlint.rule import Invalid, Rule

# Words naming what an integer tensor holds: a buffer of the same kind as its source (token ids
# from token ids, offsets from offsets) inherits the dtype on purpose.
KIND_WORDS = {"token", "id", "offset", "position", "pos", "index", "indice", "idx", "loc", "slot"}
CONCATENATE = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"}
INT32 = {"torch.int32", "torch.int"}
COUNT_NAME = re.compile(r"(^|_)(num_\w+|\w*count\w*|\w+_lens?)$")


def kinds(name: str) -> set[str]:
    words = re.split(r"[._]", name.lower())
    return {w[:-1] if w.endswith("s") else w for w in words} & KIND_WORDS


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
    without `dtype=` on a tensor `x` known, within the same function, to be int64: created with
    `dtype=torch.int64`/`torch.long`, by `torch.arange`, `torch.randint` or `torch.tensor` of
    integers, by `.long()` or `argmax`, or inherited from such a tensor through `new_*`/`*_like`.
    The message names the tensor the dtype comes from and where it became int64. Not reported
    where the int64 is evidently meant: the new tensor holds the same kind of values as its source
    (`lookback_token_ids = input_ids.new_full(...)`, `draft_tokens = sampled_tokens.new_empty(...)`),
    or is joined to it (`torch.cat([offsets.new_zeros(1), offsets])`).

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

    VALID = [
        "import torch\ns = torch.empty(4, dtype=torch.int64)\nn = s.new_empty(4, dtype=torch.int32)\n",
        "import torch\ns = torch.empty(4, dtype=torch.float32)\nn = s.new_empty(4)\n",
        "import torch\ns = torch.arange(0.0, 4.0)\nn = s.new_zeros(4)\n",
        "import torch\ns = torch.arange(4)\ns = s.float()\nn = s.new_zeros(4)\n",
        "import torch\ndef f():\n    s = torch.arange(4)\ndef g(s):\n    return s.new_ones(4)\n",
        "import torch\ns = torch.tensor([1.0, 2.0])\nn = s.new_full((2,), 0)\n",
        "def f(s):\n    return s.new_empty(4)\n",
        "import torch\ndef f(xs):\n    s = torch.arange(4)\n    for s in xs:\n        s.new_empty(2)\n",
        "import torch\ndef f():\n    int64 = torch.float16\n    s = torch.empty(3, dtype=int64)\n    return s.new_empty(3)\n",
        # The same kind of values as the source: the int64 is meant.
        "import torch\ndef f(n):\n    input_ids = torch.arange(n)\n    lookback_token_ids = input_ids.new_full((n,), -1)\n",
        "import torch\ndef f(n):\n    sampled_tokens = torch.empty(n, dtype=torch.int64)\n"
        "    draft_tokens = sampled_tokens.new_empty(n)\n",
        # Prepending a zero to the tensor itself.
        "import torch\ndef f(counts):\n    offsets = torch.cumsum(counts.long(), 0)\n"
        "    return torch.cat([offsets.new_zeros(1), offsets])\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ns = torch.empty(4, dtype=torch.int64)\nnum_sampled = s.new_empty(4)\n",
            3,
            15,
            fixed="import torch\ns = torch.empty(4, dtype=torch.int64)\n"
            "num_sampled = s.new_empty(4, dtype=torch.int32)\n",
        ),
        Invalid(
            "import torch\ndef f(n):\n    s = torch.arange(n)\n    out = s.new_zeros(n)\n"
            "    k[(1,)](out, n)\n",
            4,
            11,
            fixed="import torch\ndef f(n):\n    s = torch.arange(n)\n"
            "    out = s.new_zeros(n, dtype=torch.int32)\n    k[(1,)](out, n)\n",
        ),
        Invalid(
            "import torch\ndef f(n, lens):\n    s = torch.arange(n)\n    ends = s.new_zeros(n)\n"
            "    limits = lens.int()\n    return ends < limits\n",
            4,
            12,
            fixed="import torch\ndef f(n, lens):\n    s = torch.arange(n)\n"
            "    ends = s.new_zeros(n, dtype=torch.int32)\n    limits = lens.int()\n"
            "    return ends < limits\n",
        ),
        Invalid(
            "from torch import arange\ns = arange(4)\nt = s.new_ones(2)\n",
            3,
            5,
            fixed="import torch\nfrom torch import arange\ns = arange(4)\n"
            "t = s.new_ones(2, dtype=torch.int64)\n",
        ),
        Invalid("import torch\ns = torch.empty(4, dtype=torch.int64)\nn = s.new_empty(4)\n", 3, 5),
        Invalid("import torch\ns = torch.zeros(4, dtype=torch.long)\nn = s.new_zeros(4)\n", 3, 5),
        Invalid("import torch\ns = torch.arange(4)\nn = s.new_ones(4)\n", 3, 5),
        Invalid("import torch\ns = torch.randint(0, 9, (4,))\nn = s.new_full((4,), 1)\n", 3, 5),
        Invalid("import torch\ns = torch.tensor([1, 2])\nn = s.new_empty(2)\n", 3, 5),
        Invalid("def f(x):\n    s = x.long()\n    return s.new_empty(2)\n", 3, 12),
        Invalid(
            "def f(logits):\n    s = logits.argmax(dim=-1)\n    return s.new_empty(2)\n", 3, 12
        ),
        Invalid("import torch as t\ns = t.empty(4, dtype=t.int64)\nn = s.new_empty(4)\n", 3, 5),
        Invalid(
            "from torch import empty, int64\ns = empty(4, dtype=int64)\nn = s.new_empty(4)\n", 3, 5
        ),
        Invalid(
            "import torch\ns = torch.arange(4)\nn = torch.empty_like(s)\nm = n.new_zeros(2)\n", 4, 5
        ),
        Invalid(
            "import torch\nclass W:\n    def f(self):\n"
            "        self.ids = torch.arange(4)\n        return self.ids.new_empty(2)\n",
            5,
            16,
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
        if method_name(node) not in NEW_METHODS or keyword(node, "dtype") is not None:
            return
        assert isinstance(node.func, cst.Attribute)
        origin = self.get_metadata(Int64Provider, node.func.value, None)
        if origin is None or self._intended(node, node.func.value):
            return
        dtype = "torch.int32" if self._reaches_int32(node) else "torch.int64"
        parsed = cst.parse_expression(f"f(dtype={dtype})")
        assert isinstance(parsed, cst.Call)  # parsed from a call
        explicit = node.with_changes(args=[*node.args, parsed.args[0]])
        rewrite = Rewrite(replace={id(node): explicit}, imports={"torch"})
        self.report(
            node,
            f"`.{node.func.attr.value}()` without `dtype=` inherits int64 from {describe(origin)}; "
            "pass `dtype=` explicitly (kernels that take counts and indices usually expect "
            "`torch.int32`)",
            confidence="likely",
            fix=self.build_fix(rewrite, UNSAFE, f"Pass `dtype={dtype}`"),
        )

    def _int32_value(self, value: cst.BaseExpression) -> str | None:
        """ "allocated" for a call with ``dtype=torch.int32``, "cast" for ``.int()``/``.to(int32)``."""
        if not isinstance(value, cst.Call):
            return None
        dtype = keyword(value, "dtype")
        if dtype is not None and qualified_names(self, dtype.value) & INT32:
            return "allocated"
        method = method_name(value)
        if method == "int" or (
            method == "to" and value.args and qualified_names(self, value.args[0].value) & INT32
        ):
            return "cast"
        return None

    def _reaches_int32(self, node: cst.Call) -> bool:
        """A count's name, or in the same function: a sibling allocated as int32, a Triton launch
        taking the new tensor, or a comparison of it with an int32 tensor."""
        parent = self.get_metadata(ParentProvider, node, None)
        target = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)
        if target and COUNT_NAME.search(target.rsplit(".", 1)[-1]):
            return True
        scope = parent
        while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
            scope = self.get_metadata(ParentProvider, scope, None)
        nodes = list(walk(scope or self.module))
        int32_names: set[str | None] = set()
        for assign in (n for n in nodes if isinstance(n, cst.Assign)):
            kind = self._int32_value(assign.value)
            if kind == "allocated":
                return True
            if kind == "cast":
                int32_names.update(dotted_name(t.target) for t in assign.targets)
        for other in nodes:
            if (
                isinstance(other, cst.Call)
                and isinstance(other.func, cst.Subscript)
                and target
                and any(dotted_name(a.value) == target for a in other.args)
            ):
                return True
            if isinstance(other, cst.Comparison):
                names = {
                    dotted_name(other.left),
                    *(dotted_name(c.comparator) for c in other.comparisons),
                }
                if target in names and names & (int32_names - {None}):
                    return True
        return False
