import libcst as cst
from libcst.metadata import QualifiedNameProvider

from portlint.analysis.names import method_name, qualified_names
from portlint.rule import Invalid, Rule


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
    No fix yet: the device to move to depends on what is in scope.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.cuda.html
    - https://pytorch.org/docs/stable/accelerator.html
    """

    code = "PORT102"
    name = "cuda-method-call"
    triggers = (".cuda(",)
    guardable = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, QualifiedNameProvider)

    VALID = [
        "y = x.to(device)\n",
        "import torch\nok = torch.cuda.is_available()\n",
        "y = x.cuda\n",
        "y = cuda()\n",
        "import torch\ntorch.cuda()\n",
        "import torch as t\nt.cuda()\n",
    ]
    INVALID = [
        Invalid("y = x.cuda()\n", 1, 7),
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
        self.report(
            node,
            "`.cuda()` moves to CUDA by name; use `.to(device)` with the device in use",
            start=node.func.attr,
        )
