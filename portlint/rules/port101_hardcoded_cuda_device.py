import libcst as cst
from libcst.metadata import QualifiedNameProvider

from portlint.analysis.names import (
    argument,
    is_cuda_device_literal,
    keyword,
    method_name,
    positional,
    resolves_to,
)
from portlint.rule import Invalid, Rule

TORCH_DEVICE = ("torch.device",)


class HardcodedCudaDevice(Rule):
    """Hardcoded CUDA device.

    ## What it does
    Reports a device written as the string `"cuda"` (or `"cuda:N"`, or `f"cuda:{i}"`):
    `torch.device("cuda")`, `torch.device("cuda", i)`, `device="cuda"` passed to any call, and
    `.to("cuda")`.
    Silent inside CUDA-only platform guards (`if torch.cuda.is_available():`,
    `if not current_platform.is_cuda(): return`, ...) and in `cuda-only-paths`.

    ## Why is this bad?
    The code then runs only where the accelerator is an NVIDIA (or ROCm) GPU. On Intel XPU,
    Ascend NPU, Apple MPS or a CPU worker the allocation fails, or lands on a device the rest of
    the program does not use. vLLM's rejection-sampler warmup did `device = torch.device("cuda")`
    and was skipped on every XPU worker (vLLM #55245); its regex check for `torch.cuda.*` calls
    could not see it, since `torch.device("cuda")` is not a `torch.cuda` call.

    ## Example
    ```python
    def spec_decode_rejection_warmup(worker):
        device = torch.device("cuda")
        draft = torch.zeros(8, dtype=torch.int32, device=device)
    ```

    Use instead:
    ```python
    def spec_decode_rejection_warmup(worker):
        device = worker.device
        draft = torch.zeros(8, dtype=torch.int32, device=device)
    ```
    Where no device is in scope, `torch.accelerator.current_accelerator()` names the build's
    accelerator.

    ## Fix safety
    No fix yet: which device the code meant depends on what is in scope.

    ## References
    - vLLM #55245: hardcoded device in `spec_decode_rejection_warmup`
    - https://pytorch.org/docs/stable/accelerator.html
    """

    code = "PORT101"
    name = "hardcoded-cuda-device"
    triggers = ('"cuda', "'cuda")
    guardable = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, QualifiedNameProvider)

    VALID = [
        "import torch\ndef f(worker):\n    return torch.device(worker.device)\n",
        "import torch\nx = torch.device('cpu')\n",
        "import torch\nx = torch.device(f'xpu:{0}')\n",
        "def device(kind):\n    return kind\nd = device('cuda')\n",
        "import torch\ndef f(device):\n    return device('cuda')\n",
        "import torch\ny = torch.zeros(3, device=dev)\n",
        "x = 'cuda'\n",
        "backend = {'cuda': 'nccl'}\n",
        "x.to('cpu')\n",
        "x.to(torch.float16)\n",
        "import torch\nx = torch.device('cudagraph')\n",
        "x = f(device='cuda_graph')\n",
    ]
    INVALID = [
        Invalid("import torch\ndevice = torch.device('cuda')\n", 2, 10),
        Invalid('import torch\ndevice = torch.device("cuda:0")\n', 2, 10),
        Invalid("import torch\ndef f(i):\n    return torch.device('cuda', i)\n", 3, 12),
        Invalid("import torch\ndef f(i):\n    return torch.device(f'cuda:{i}')\n", 3, 12),
        Invalid("import torch as t\nd = t.device('cuda')\n", 2, 5),
        Invalid("from torch import device\nd = device('cuda')\n", 2, 5),
        Invalid("import torch\nd = torch.device(type='cuda')\n", 2, 5),
        Invalid("import torch\ny = torch.zeros(3, device='cuda')\n", 2, 27),
        Invalid("y = make(device=f'cuda:{rank}')\n", 1, 17),
        Invalid("y = x.to('cuda')\n", 1, 10),
        Invalid("y = x.to('cuda:1', non_blocking=True)\n", 1, 10),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if resolves_to(self, node.func, TORCH_DEVICE):
            device_type = argument(node, "type", 0)
            if device_type and is_cuda_device_literal(device_type.value):
                self.report(
                    node,
                    "`torch.device` hardcodes CUDA; take the device from the caller (e.g. `worker.device`) or `torch.accelerator.current_accelerator()`",
                )
            return
        device = keyword(node, "device")
        if device and is_cuda_device_literal(device.value):
            self.report(device.value, "`device=` hardcodes CUDA; pass the device in use instead")
        if method_name(node) == "to":
            target = positional(node, 0)
            if target and is_cuda_device_literal(target.value):
                self.report(
                    target.value, "`.to()` hardcodes CUDA; move to the device in use instead"
                )
