from __future__ import annotations

import libcst as cst

from portlint.analysis.dtypes import Int64Origin, Int64Provider
from portlint.analysis.names import dotted_name, imported_names, qualified_names
from portlint.analysis.scopes import NameProvider
from portlint.evidence import INT64_ORIGIN, LAUNCH
from portlint.facts import TRITON_KERNEL_DECORATORS
from portlint.index.int64 import LAUNCH_NOTES
from portlint.rule import Invalid, Rule
from portlint.rules.port201_new_inherits_int64 import describe


class ImplicitInt64IntoTriton(Rule):
    """Implicitly int64 tensor passed to a Triton kernel.

    ## What it does
    Reports an argument of a Triton kernel launch (`kernel[grid](...)`) that is an int64 tensor
    nobody asked to be int64 — made by one of torch's int64 defaults (`torch.arange`,
    `torch.tensor` of integers, `torch.full` with an integer, `argmax`, `nonzero`, `sum`/`cumsum`
    of an integer tensor, integer arithmetic with one, ...) or inherited through `new_*`/`*_like`
    without `dtype=` — where the kernel needs int32 for that parameter. The kernel may be defined
    in the same module or anywhere in the project (imported under any name, through a package's
    `__init__`). Its contract is read from its body: a pointer parameter needs int32 where a
    value loaded through it meets an int32 value (a literal, `tl.program_id`, `tl.arange`, an
    integer parameter) where Triton merges types — an `if` that rebinds it, a loop that carries
    it. The finding's detail names the kernel's line that needs int32. A kernel that takes any width
    there (it loads and stores, compares, casts with `.to(...)`), or one portlint cannot see, is
    given the tensor silently; so is a tensor made int64 on purpose (`dtype=torch.int64`,
    `.long()`).

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
    # (A launch, `kernel[grid](...)`, of a kernel of this module or of another one.)
    triggers = ("triton.jit", "import jit", "](")
    evidence = (LAUNCH, INT64_ORIGIN)
    at_launches = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, NameProvider, Int64Provider)

    # A kernel that needs int32 for `x_ptr` (a loaded value rebound to the program id), and one
    # that takes any integer width (it only loads and stores).
    KERNEL = (
        "import torch\nimport triton\nimport triton.language as tl\n@triton.jit\n"
        "def k(x_ptr, n):\n    i = tl.load(x_ptr)\n    if n > 0:\n        i = tl.program_id(0)\n"
        "    tl.store(x_ptr, i)\n"
    )
    ANY_WIDTH = (
        "import torch\nimport triton\nimport triton.language as tl\n@triton.jit\n"
        "def k(x_ptr, n):\n    tl.store(x_ptr, tl.load(x_ptr) + 1)\n"
    )
    VALID = [
        KERNEL + "def f(n):\n    x = torch.arange(n, dtype=torch.int32)\n    k[(1,)](x, n)\n",
        KERNEL + "def f(n):\n    x = torch.arange(n).long()\n    k[(1,)](x, n)\n",
        KERNEL + "def f(s):\n    x = s.new_empty(4)\n    k[(1,)](x, 4)\n",
        KERNEL + "def f(n):\n    x = torch.arange(n)\n    other[(1,)](x, n)\n",
        KERNEL
        + "def f(n):\n    x = torch.arange(n)\n    x = x.to(torch.int32)\n    k[(1,)](x, n)\n",
        # the kernel takes any integer width; the tensor goes to a parameter that is not a pointer
        ANY_WIDTH + "def f(n):\n    x = torch.arange(n)\n    k[(1,)](x, n)\n",
        KERNEL + "def f(n, y):\n    x = torch.arange(n)\n    k[(1,)](y, x)\n",
    ]
    INVALID = [
        Invalid(KERNEL + "def f(n):\n    x = torch.arange(n)\n    k[(1,)](x, n)\n", 12, 13),
        Invalid(
            KERNEL + "def f(s):\n    c = torch.empty(3, dtype=torch.int64)\n"
            "    n = c.new_empty(3)\n    r = torch.empty_like(n)\n    k[(3,)](r, 3)\n",
            14,
            13,
        ),
        Invalid(
            KERNEL + "def f(mask):\n    m = mask > 0\n    c = m.sum(0)\n    k[(1,)](c, 1)\n", 13, 13
        ),
        Invalid(
            KERNEL
            + "def f(lens):\n    x = lens.int()\n    loc = x.cumsum(0)\n    k[(1,)](x_ptr=loc, n=1)\n",
            13,
            19,
        ),
        # promotion: an int32 count plus a sum of a bool mask (int64) is int64
        Invalid(
            KERNEL + "def f(mask, lens):\n    total = lens.int() + (mask > 0).sum()\n"
            "    k[(1,)](total, 1)\n",
            12,
            13,
        ),
        Invalid(
            "import torch\nimport triton\nimport triton.language as tl\ndef f(n):\n"
            "    x = torch.full((n,), 0)\n    k[(1,)](x, n)\n"
            "@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k(x_ptr, n):\n"
            "    i = tl.load(x_ptr)\n    for j in range(n):\n        i = j\n    tl.store(x_ptr, i)\n",
            6,
            13,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.kernels: set[str] = set()
        self.launches: list[tuple[set[str], cst.Call, cst.Arg, int | str, Int64Origin]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expression = decorator.decorator
            target = expression.func if isinstance(expression, cst.Call) else expression
            if qualified_names(self, target) & TRITON_KERNEL_DECORATORS:
                self.kernels.add(node.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Subscript):
            return
        kernel = node.func.value
        if not isinstance(kernel, (cst.Name, cst.Attribute)):
            return
        names = qualified_names(self, kernel)
        for index, arg in enumerate(node.args):
            origin = self.get_metadata(Int64Provider, arg.value, None)
            if origin is not None and origin.implicit:
                where: int | str = arg.keyword.value if arg.keyword else index
                self.launches.append((names, node, arg, where, origin))

    def leave_Module(self, original_node: cst.Module) -> None:
        """Each int64 argument of a launch of a kernel of this module, or of one it imports: the
        kernel's contract (what the project index knows of it) decides which stand."""
        notes = self.context.notes.setdefault(LAUNCH_NOTES, [])
        for names, call, arg, where, origin in self.launches:
            kernel = dotted_name(call.func.value) or ""  # type: ignore[attr-defined]
            if not (names & self.kernels or imported_names(self, call.func.value)):  # type: ignore[attr-defined]
                continue
            chain = [o.at for o in _chain(origin)]
            notes.append([arg.value, sorted(names), where, chain, describe(origin)])
            self.report(
                arg.value,
                f"Triton kernel `{kernel}` gets an implicitly int64 tensor; give it `dtype=`",
                confidence="likely",
                detail=f"The tensor: {describe(origin)}. Kernels usually take `torch.int32` there.",
            )


def _chain(origin: Int64Origin | None):
    while origin is not None:
        yield origin
        origin = origin.parent
