import libcst as cst

from portlint.analysis.cuda_refs import CudaApiRule, CudaReference, device_type_first
from portlint.analysis.device_scope import device_type, message_device
from portlint.analysis.names import code_of, dotted_name, is_none, keyword, resolves_to
from portlint.analysis.parents import ParentProvider
from portlint.cuda_api import AUTOCAST
from portlint.evidence import CUDA_REFERENCE_OR_SCALER
from portlint.facts import CUDA_DEFAULT_SCALERS
from portlint.findings import UNSAFE
from portlint.fix import Rewrite
from portlint.rule import Invalid, Quiet


class CudaAmpApi(CudaApiRule):
    """CUDA-only mixed precision: `torch.cuda.amp.autocast` and `torch.cuda.amp.GradScaler`.

    ## What it does
    Reports `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)` (deprecated since
    torch 2.4), however they are imported, and a `torch.amp.GradScaler()` (or FSDP's
    `ShardedGradScaler()`) made with no device, which is CUDA's by default. Silent inside
    CUDA-only platform guards and in `cuda-only-paths`, and for `@custom_bwd` on the backward of
    a Function whose forward is `@custom_fwd(cast_inputs=...)`: that forward records that it ran
    with autocast off, so its backward runs with autocast off whatever device type its decorator
    names (the forward's decorator is reported: it casts only under CUDA's autocast).

    ## Why is this bad?
    `torch.cuda.amp.autocast` autocasts CUDA operations only: on any other device the model runs
    in full precision, slower and with other numerics, and nothing says so. `torch.autocast` and
    `torch.amp.GradScaler` take the device type; a `torch.amp.GradScaler` given none is made for
    CUDA, and off CUDA it warns that CUDA is not available and disables itself: float16
    gradients then go unscaled, and underflow.

    ## Example
    ```python
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(batch)
    ```

    Use instead:
    ```python
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = model(batch)
    ```

    ## Fix safety
    Unsafe: the device type becomes the first argument, taken from the device in scope (a
    `device` parameter, `worker.device`, `self.device`, a tensor parameter's `.device`, else the
    type of `torch.accelerator.current_accelerator()`, `"cpu"` on a build that has no
    accelerator), and arguments given by position are passed by keyword since their positions
    differ. On a device other than CUDA autocast then takes effect, with that device's default
    dtype where none is given (on a CPU-only build too, where `"cuda"` disabled it with a
    warning); a scaler made with no device gets the device type first the same way, and then
    scales there.

    ## References
    - https://pytorch.org/docs/stable/amp.html
    """

    code = "PORT405"
    name = "cuda-amp-api"
    family = AUTOCAST
    triggers = (*CudaApiRule.triggers, "GradScaler")
    evidence = (CUDA_REFERENCE_OR_SCALER,)

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    scaler = torch.cuda.amp.GradScaler()\n",
        "import torch\nwith torch.autocast(device.type):\n    pass\n",
        "import torch\nscaler = torch.amp.GradScaler(device.type)\n",
        "from contextlib import nullcontext\nwith nullcontext():\n    pass\n",
        # A scaler given its device, or arguments that may hold it.
        "import torch\nscaler = torch.amp.GradScaler(device=device.type, enabled=True)\n",
        "from torch.amp import GradScaler\ndef make(**kwargs):\n    return GradScaler(**kwargs)\n",
        "import torch\nif torch.cuda.is_available():\n    scaler = torch.amp.GradScaler()\n",
        # Enabled only on CUDA: elsewhere it is made disabled, on purpose.
        "import torch\ndef make(device):\n    use_amp = device.type == 'cuda'\n"
        "    return torch.amp.GradScaler(enabled=use_amp)\n",
        # A signature's source, named for a decorator and never called.
        "import torch\n@delegates(torch.cuda.amp.GradScaler)\ndef mixed(**kwargs):\n    pass\n",
        # The backward of a forward that casts its inputs: autocast is off there on any device.
        "import torch\nfrom torch.cuda.amp import custom_bwd\nclass Exp(torch.autograd.Function):\n"
        "    @staticmethod\n    @torch.amp.custom_fwd(device_type=dev, cast_inputs=torch.float32)\n"
        "    def forward(ctx, x):\n        return x.exp()\n"
        "    @staticmethod\n    @custom_bwd\n    def backward(ctx, g):\n        return g\n",
    ]
    INVALID = [
        # Made with no device: CUDA's, whatever device the step runs on.
        Invalid(
            "from torch.amp import GradScaler\ndef make(device):\n    return GradScaler(enabled=True)\n",
            3,
            12,
            fixed="import torch\nfrom torch.amp import GradScaler\ndef make(device):\n"
            "    return GradScaler(torch.device(device).type, enabled=True)\n",
        ),
        Invalid(
            "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
            "scaler = ShardedGradScaler()\n",
            2,
            10,
        ),
        # Made (called) for a decorator: a scaler of CUDA's.
        Invalid(
            "import torch\n@with_scaler(torch.cuda.amp.GradScaler())\ndef step(x):\n    pass\n",
            2,
            14,
        ),
        Invalid(
            "import torch\ndef step(model, x, device):\n"
            "    with torch.cuda.amp.autocast(dtype=torch.bfloat16):\n        return model(x)\n",
            3,
            10,
            fixed="import torch\ndef step(model, x, device):\n"
            "    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):\n"
            "        return model(x)\n",
        ),
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler(1024.0)\n",
            2,
            10,
            fixed="import torch\nscaler = torch.amp.GradScaler("
            'getattr(torch.accelerator.current_accelerator(), "type", "cpu"), '
            "init_scale=1024.0)\n",
        ),
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast(True):\n    pass\n",
            2,
            6,
            fixed="import torch\n"
            'with torch.autocast(getattr(torch.accelerator.current_accelerator(), "type", "cpu"), '
            "enabled=True):\n"
            "    pass\n",
        ),
        Invalid("from torch.cuda.amp import autocast\nwith autocast(True):\n    pass\n", 2, 6),
        # Both of CUDA's: the forward's cast is CUDA's alone (its backward's autocast is off).
        Invalid(
            "import torch\nfrom torch.cuda.amp import custom_bwd, custom_fwd\n"
            "class Exp(torch.autograd.Function):\n"
            "    @staticmethod\n    @custom_fwd(cast_inputs=torch.float32)\n"
            "    def forward(ctx, x):\n        return x.exp()\n"
            "    @staticmethod\n    @custom_bwd\n    def backward(ctx, g):\n        return g\n",
            5,
            6,
        ),
        # A forward that keeps autocast's state: its backward enters CUDA's autocast as it found it.
        Invalid(
            "import torch\nfrom torch.cuda.amp import custom_bwd\n"
            "class Exp(torch.autograd.Function):\n"
            "    @staticmethod\n    @torch.amp.custom_fwd(device_type=dev)\n"
            "    def forward(ctx, x):\n        return x.exp()\n"
            "    @staticmethod\n    @custom_bwd\n    def backward(ctx, g):\n        return g\n",
            9,
            6,
        ),
    ]

    def redundant(self, reference: CudaReference, node: cst.CSTNode) -> Quiet:
        """``@custom_bwd`` on the backward of a Function whose forward is ``@custom_fwd(...,
        cast_inputs=...)``: such a forward records that it ran with autocast off, and torch's
        ``custom_bwd`` enters autocast only as the forward found it, so the backward runs with
        it off on every device, and the device type it is given does nothing."""
        if reference.qualified.rpartition(".")[2] != "custom_bwd":
            return None
        decorator = self.get_metadata(ParentProvider, node, None)
        method = self.get_metadata(ParentProvider, decorator, None) if decorator else None
        block = self.get_metadata(ParentProvider, method, None) if method else None
        if not (isinstance(decorator, cst.Decorator) and isinstance(block, cst.IndentedBlock)):
            return None
        for member in block.body:
            for other in member.decorators if isinstance(member, cst.FunctionDef) else ():
                made = other.decorator
                if not isinstance(made, cst.Call):
                    continue
                cast_inputs = keyword(made, "cast_inputs")
                if (
                    (dotted_name(made.func) or "").rpartition(".")[2] == "custom_fwd"
                    and cast_inputs is not None
                    and not is_none(cast_inputs.value)
                ):
                    why = "its forward casts its inputs, so the backward runs with autocast off"
                    return f"{why} on every device (`{code_of(made)}`)", other
        return None

    def visit_Call(self, node: cst.Call) -> None:
        """A scaler made with no device: no argument by position (the first is the device), no
        ``device=`` and no ``**kwargs`` that may hold one."""
        if any(arg.keyword is None for arg in node.args) or keyword(node, "device"):
            return  # (also `*args` and `**kwargs`: their keyword is None)
        if not resolves_to(self, node.func, CUDA_DEFAULT_SCALERS):
            return
        kind = device_type(message_device(self, node))
        args = device_type_first(self, node, list(node.args))
        code = cst.Module([]).code_for_node(node.func)
        imports = {"torch"} if "torch." in cst.Module([]).code_for_node(args[0]) else set()
        rewrite = Rewrite(replace={id(node): node.with_changes(args=args)}, imports=imports)
        fix = self.build_fix(rewrite, UNSAFE, f"Pass the device type, `{kind}`")
        self.report(
            node,
            f"`{code}` without a device is CUDA's; pass the type of the device in use first",
            fix=fix,
            detail="CUDA is its default: off CUDA it disables itself and float16 gradients go "
            f"unscaled. The type of the device in use: `{kind}`.",
        )
