import libcst as cst

from portlint.analysis.device_scope import device_in_scope
from portlint.analysis.names import (
    argument,
    dotted_name,
    is_cuda_device_literal,
    keyword,
    method_name,
    positional,
    resolves_to,
)
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.evidence import CUDA_DEVICE_ARGUMENT
from portlint.findings import UNSAFE
from portlint.fix import Rewrite
from portlint.platform import words
from portlint.rule import Invalid, Rule

TORCH_DEVICE = ("torch.device",)
# Calls whose first parameter is a device type or a device: `torch.autocast("cuda")`.
DEVICE_TYPE_FIRST = (
    "torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast",
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.Generator",
    "torch.get_device_module",
)  # fmt: skip


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
    Unsafe: the fix replaces the hardcoded device with the device already in scope — a `device`
    parameter, `worker.device` for a `worker` parameter, `self.device` in a class that sets it,
    `x.device` for a parameter annotated as a tensor — and otherwise with
    `torch.accelerator.current_accelerator()` (or the configured `device-expression`), adding
    `import torch` where needed. That is what the code meant in the cases the rule was built from,
    but it changes where tensors live, and drops the index of `"cuda:1"`.

    ## References
    - vLLM #55245: hardcoded device in `spec_decode_rejection_warmup`
    - https://pytorch.org/docs/stable/accelerator.html
    """

    code = "PORT101"
    name = "hardcoded-cuda-device"
    triggers = ('"cuda', "'cuda")
    evidence = (CUDA_DEVICE_ARGUMENT,)
    guardable = reads_class = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, NameProvider, ParentProvider)

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    d = torch.device('cuda')\n",
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
        "def load(path, device='cpu', backend='cuda'):\n    pass\n",
        "import torch\nwith torch.autocast(device.type):\n    pass\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ndef warmup(worker):\n    device = torch.device('cuda')\n",
            3,
            14,
            fixed="import torch\ndef warmup(worker):\n    device = worker.device\n",
        ),
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    return torch.zeros(3, device='cuda') + x\n",
            3,
            34,
            fixed="import torch\ndef f(x: torch.Tensor):\n    return torch.zeros(3, device=x.device) + x\n",
        ),
        Invalid(
            "class M:\n    def __init__(self, device):\n        self.device = device\n"
            "    def g(self, y):\n        return y.to('cuda')\n",
            5,
            21,
            fixed="class M:\n    def __init__(self, device):\n        self.device = device\n"
            "    def g(self, y):\n        return y.to(self.device)\n",
        ),
        Invalid(
            '"""Doc."""\nfrom torch import device\nd = device("cuda")\n',
            3,
            5,
            fixed='"""Doc."""\nimport torch\nfrom torch import device\n'
            "d = torch.accelerator.current_accelerator()\n",
        ),
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
        # The device type given by name, and a device parameter that defaults to CUDA (latent).
        Invalid("import torch\nwith torch.autocast('cuda'):\n    pass\n", 2, 21),
        Invalid("import torch\nwith torch.amp.autocast(device_type='cuda'):\n    pass\n", 2, 37),
        Invalid("import torch\ng = torch.Generator('cuda')\n", 2, 21),
        Invalid("def load(path, device='cuda'):\n    pass\n", 1, 23),
        Invalid("def load(path, map_device: str = 'cuda:0'):\n    pass\n", 1, 34),
    ]

    def _fix(self, hardcoded: cst.CSTNode):
        expression = device_in_scope(self, hardcoded)
        rewrite = Rewrite(replace={id(hardcoded): cst.parse_expression(expression)})
        if expression.startswith("torch."):
            rewrite.imports.add("torch")
        return self.build_fix(rewrite, UNSAFE, f"Use `{expression}`")

    def visit_Call(self, node: cst.Call) -> None:
        if resolves_to(self, node.func, TORCH_DEVICE):
            device_type = argument(node, "type", 0)
            if device_type and is_cuda_device_literal(device_type.value):
                self.report(
                    node,
                    "`torch.device` hardcodes CUDA; take the device from the caller (e.g. `worker.device`) or `torch.accelerator.current_accelerator()`",
                    fix=self._fix(node),
                )
            return
        device = keyword(node, "device")
        if device and is_cuda_device_literal(device.value):
            self.report(
                device.value,
                "`device=` hardcodes CUDA; pass the device in use instead",
                fix=self._fix(device.value),
            )
        if method_name(node) == "to":
            target = positional(node, 0)
            if target and is_cuda_device_literal(target.value):
                self.report(
                    target.value,
                    "`.to()` hardcodes CUDA; move to the device in use instead",
                    fix=self._fix(target.value),
                )
        device_type = keyword(node, "device_type")
        if not device_type and resolves_to(self, node.func, DEVICE_TYPE_FIRST):
            device_type = positional(node, 0)
        if device_type and is_cuda_device_literal(device_type.value):
            callee = dotted_name(node.func) or "the call"
            self.report(
                device_type.value,
                f"`{callee}` is given the CUDA device type by name; pass the type of the device "
                "in use (`device.type`)",
            )

    def visit_Param(self, node: cst.Param) -> None:
        default = node.default
        if (
            default is not None
            and "device" in words(node.name.value)
            and is_cuda_device_literal(default)
        ):
            self.report(
                default,
                f"parameter `{node.name.value}` defaults to CUDA: every caller that leaves it out "
                "runs on CUDA; default to None and take the device in use",
                confidence="likely",
            )
