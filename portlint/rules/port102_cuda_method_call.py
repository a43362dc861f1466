import libcst as cst

from portlint.analysis.device_scope import fix_device, message_device
from portlint.analysis.names import argument, dotted_name, method_name, qualified_names
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import walk
from portlint.findings import UNSAFE, Fix
from portlint.fix import Rewrite
from portlint.rule import Invalid, Rule

# The keywords `Tensor.cuda` and `Module.cuda` take.
TENSOR_CUDA_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})


class CudaMethodCall(Rule):
    """`.cuda()` call on a tensor or module.

    ## What it does
    Reports `x.cuda()`, `x.cuda(i)` and `model.cuda()`: moving a tensor or a module to the CUDA
    device by name.
    Silent inside CUDA-only platform guards (`if torch.cuda.is_available():`,
    `if not current_platform.is_cuda(): return`, ...) and in `cuda-only-paths`.

    ## Why is this bad?
    `.cuda()` exists only for CUDA (and ROCm, which poses as CUDA). On XPU, NPU, MPS or CPU it
    raises, or the program needs a parallel `.xpu()`/`.npu()` path for every call.

    ## Example
    ```python
    def load(model, batch):
        return model.cuda()(batch.cuda())
    ```

    Use instead:
    ```python
    def load(model, batch, device):
        return model.to(device)(batch.to(device))
    ```

    ## Fix safety
    Unsafe: `.cuda(i)` becomes `.to(i)` (the same move on CUDA, index and all), `.cuda()` becomes
    `.to(<device in use>)`, keeping keyword arguments such as `non_blocking=True`. The device in
    use is chosen as for PORT101 (a `device` parameter, `worker.device`, `self.device`, else
    `torch.accelerator.current_accelerator()`): never the tensor's own `.device`, which would
    make the move a no-op, nor another tensor's. `.cuda(i, True)` has no fix (`.to` takes its
    positional arguments in another order), nor a receiver that an enclosing
    `if isinstance(x, C):` says is of a class not torch's, which may define its own `.cuda()`
    (transformers moves `HQQLinear` layers so).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.cuda.html
    - https://pytorch.org/docs/stable/accelerator.html
    """

    code = "PORT102"
    name = "cuda-method-call"
    triggers = (".cuda(",)
    guardable = reads_class = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, NameProvider, ParentProvider)

    VALID = [
        # Not torch's `.cuda()`: a keyword it does not take, a class's own method.
        "req = Requirement.cuda(min_sm=(9, 0))\n",
        "class Capability:\n    @classmethod\n    def cuda(cls):\n        return cls()\ncap = Capability.cuda()\n",
        # Behind a platform guard: silenced.
        "import torch\ndef f(x):\n    if torch.cuda.is_available():\n        return x.cuda()\n    return x\n",
        "y = x.to(device)\n",
        "import torch\nok = torch.cuda.is_available()\n",
        "y = x.cuda\n",
        "y = cuda()\n",
        "import torch\ntorch.cuda()\n",
        "import torch as t\nt.cuda()\n",
    ]
    INVALID = [
        Invalid(
            "def load(model, batch, device):\n    return model(batch.cuda(non_blocking=True))\n",
            2,
            24,
            fixed="def load(model, batch, device):\n"
            "    return model(batch.to(device, non_blocking=True))\n",
        ),
        Invalid(
            "y = x.cuda(0)\n",
            1,
            7,
            fixed="y = x.to(0)\n",
        ),
        Invalid(
            "y = x.cuda()\n",
            1,
            7,
            fixed="import torch\ny = x.to(torch.accelerator.current_accelerator())\n",
        ),
        Invalid("y = x.float().cuda(0)\n", 1, 15),
        Invalid("class M:\n    def setup(self):\n        self.cuda()\n", 3, 14),
        Invalid("y = model.cuda(non_blocking=True)\n", 1, 11),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "cuda":
            return
        assert isinstance(node.func, cst.Attribute)
        if "torch" in qualified_names(self, node.func.value):
            return  # `torch.cuda` is a module, not a method call
        if any(
            a.keyword is not None and a.keyword.value not in TENSOR_CUDA_KEYWORDS for a in node.args
        ):
            return  # not torch's `.cuda()`: a project's own API (`Requirement.cuda(min_sm=...)`)
        if self._is_class(node.func.value):
            return  # a classmethod (`Capability.cuda()`), not a tensor or module moved
        if self._of_own_class(node, node.func.value):
            # `if isinstance(module, HQQLinear): module.cuda(device)`: that class's own `.cuda()`.
            return self._report(node, None, message_device(self, node).expression)
        if sum(a.keyword is None for a in node.args) > 1:
            # `.cuda(i, True)`: `.to` takes its positional arguments in another order.
            return self._report(node, None, message_device(self, node).expression)
        given = argument(node, "device", 0)
        keywords = [a for a in node.args if a.keyword is not None and a.keyword.value != "device"]
        if given is not None:  # `.cuda(i)`: `.to(i)` is the same move on CUDA, index and all
            target = given.value
            suggested = cst.Module([]).code_for_node(target)
        else:
            target = cst.parse_expression(fix_device(self, node).expression)
            suggested = message_device(self, node).expression
        moved = node.with_changes(
            func=node.func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(target), *keywords],
        )
        code = cst.Module([]).code_for_node(target)
        rewrite = Rewrite(
            replace={id(node): moved}, imports={"torch"} if "torch." in code else set()
        )
        self._report(node, self.build_fix(rewrite, UNSAFE, f"Use `.to({code})`"), suggested)

    def _report(self, node: cst.Call, fix: Fix | None, suggested: str) -> None:
        assert isinstance(node.func, cst.Attribute)  # a method call: `<receiver>.cuda(...)`
        self.report(
            node,
            f"`.cuda()` moves to CUDA by name; use `.to({suggested})`",
            start=node.func.attr,
            fix=fix,
            detail="`.cuda()` exists only for CUDA (and ROCm): on XPU, NPU, MPS or CPU it raises.",
        )

    def _of_own_class(self, node: cst.Call, receiver: cst.BaseExpression) -> bool:
        """Whether an enclosing ``if isinstance(receiver, C):`` says the receiver is of a class
        that is not torch's: such a class may have a `.cuda()` of its own."""
        name = dotted_name(receiver)
        child: cst.CSTNode = node
        current = self.get_metadata(ParentProvider, node, None)
        while name and current is not None:
            if isinstance(current, cst.If) and child is current.body:
                for call in walk(current.test):
                    if (
                        isinstance(call, cst.Call)
                        and dotted_name(call.func) == "isinstance"
                        and len(call.args) == 2
                        and dotted_name(call.args[0].value) == name
                        and not any(
                            q.startswith("torch.")
                            for q in qualified_names(self, call.args[1].value)
                        )
                    ):
                        return True
            child, current = current, self.get_metadata(ParentProvider, current, None)
        return False

    def _is_class(self, receiver: cst.BaseExpression) -> bool:
        """Whether ``receiver`` names a class (by the convention that classes, and only they, are
        CamelCase): a class's `.cuda()` is a method of its own."""
        if not isinstance(receiver, (cst.Name, cst.Attribute)):
            return False
        last = receiver.value if isinstance(receiver, cst.Name) else receiver.attr.value
        return last[:1].isupper() and not last.isupper() and any(
            c.islower() for c in last
        )  # fmt: skip
