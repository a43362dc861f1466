from __future__ import annotations

import libcst as cst

from portlint.analysis.dtypes import Int64Origin, Int64Provider
from portlint.analysis.names import qualified_names
from portlint.analysis.scopes import NameProvider
from portlint.evidence import INT64_ORIGIN, LAUNCH
from portlint.facts import TRITON_KERNEL_DECORATORS
from portlint.rule import Invalid, Rule
from portlint.rules.port201_new_inherits_int64 import describe


class ImplicitInt64IntoTriton(Rule):
    """Implicitly int64 tensor passed to a Triton kernel.

    ## What it does
    Reports an argument of a Triton kernel launch (`kernel[grid](...)`, where `kernel` is a
    `@triton.jit` function of the same module) that is an int64 tensor nobody asked to be int64:
    made by one of torch's int64 defaults (`torch.arange`, `torch.tensor` of integers,
    `torch.full` with an integer, `argmax`, `nonzero`, `sum`/`cumsum` of an integer tensor, ...) or
    inherited through `new_*`/`*_like` without `dtype=`. Tensors made int64 on purpose
    (`dtype=torch.int64`, `.long()`) are not reported.

    ## Why is this bad?
    A Triton kernel is specialised on its arguments' dtypes. An int64 count or index turns the
    arithmetic it touches into int64; a loop variable or a value later rebound as int32 then fails
    to compile (`initial value for `i` is of type int64[], but the then block redefines it as
    int32[]`), or the kernel runs on 64-bit integer arithmetic where the backend is slow at it.
    vLLM #39951 broke `_prepare_eagle_inputs_kernel` this way.

    ## Example
    ```python
    num_sampled = sampled.new_empty(num_reqs)       # int64, inherited from `sampled`
    num_rejected = torch.empty_like(num_sampled)
    _prepare_eagle_inputs_kernel[(num_reqs,)](num_rejected, ...)
    ```

    Use instead:
    ```python
    num_sampled = sampled.new_empty(num_reqs, dtype=torch.int32)
    num_rejected = torch.empty_like(num_sampled)
    _prepare_eagle_inputs_kernel[(num_reqs,)](num_rejected, ...)
    ```

    ## Fix safety
    No fix yet: the dtype the kernel expects is in the kernel, not at the launch.

    ## References
    - vLLM #39951
    - https://triton-lang.org/main/python-api/generated/triton.jit.html
    """

    code = "PORT202"
    name = "implicit-int64-into-triton"
    triggers = ("triton.jit", "import jit")
    evidence = (LAUNCH, INT64_ORIGIN)
    at_launches = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, NameProvider, Int64Provider)

    KERNEL = "import torch\nimport triton\n@triton.jit\ndef k(x_ptr, n):\n    pass\n"
    VALID = [
        KERNEL + "def f(n):\n    x = torch.arange(n, dtype=torch.int32)\n    k[(1,)](x, n)\n",
        KERNEL + "def f(n):\n    x = torch.arange(n).long()\n    k[(1,)](x, n)\n",
        KERNEL + "def f(s):\n    x = s.new_empty(4)\n    k[(1,)](x, 4)\n",
        KERNEL + "def f(n):\n    x = torch.arange(n)\n    other[(1,)](x, n)\n",
        KERNEL
        + "def f(n):\n    x = torch.arange(n)\n    x = x.to(torch.int32)\n    k[(1,)](x, n)\n",
    ]
    INVALID = [
        Invalid(KERNEL + "def f(n):\n    x = torch.arange(n)\n    k[(1,)](x, n)\n", 8, 13),
        Invalid(
            KERNEL + "def f(s):\n    c = torch.empty(3, dtype=torch.int64)\n"
            "    n = c.new_empty(3)\n    r = torch.empty_like(n)\n    k[(3,)](r, 3)\n",
            10,
            13,
        ),
        Invalid(
            KERNEL + "def f(mask):\n    m = mask > 0\n    c = m.sum(0)\n    k[(1,)](c, 1)\n", 9, 13
        ),
        Invalid(
            KERNEL
            + "def f(lens):\n    x = lens.int()\n    loc = x.cumsum(0)\n    k[(1,)](x_ptr=loc, n=1)\n",
            9,
            19,
        ),
        Invalid(
            "import torch\nimport triton\ndef f(n):\n    x = torch.full((n,), 0)\n    k[(1,)](x, n)\n"
            "@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k(x_ptr, n):\n    pass\n",
            5,
            13,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.kernels: set[str] = set()
        self.launches: list[tuple[str, cst.BaseExpression, Int64Origin]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expression = decorator.decorator
            target = expression.func if isinstance(expression, cst.Call) else expression
            if qualified_names(self, target) & TRITON_KERNEL_DECORATORS:
                self.kernels.add(node.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Subscript) and isinstance(node.func.value, cst.Name):
            for arg in node.args:
                origin = self.get_metadata(Int64Provider, arg.value, None)
                if origin is not None and origin.implicit:
                    self.launches.append((node.func.value.value, arg.value, origin))

    def leave_Module(self, original_node: cst.Module) -> None:
        for kernel, argument, origin in self.launches:
            if kernel in self.kernels:
                self.report(
                    argument,
                    f"Triton kernel `{kernel}` gets an implicitly int64 tensor: {describe(origin)}; "
                    "give it an explicit `dtype=` (usually `torch.int32`)",
                    confidence="likely",
                )
