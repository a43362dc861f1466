import libcst as cst

from portlint.analysis.cuda_refs import CudaApiRule, CudaReference
from portlint.analysis.names import code_of, qualified_names
from portlint.analysis.parents import ParentProvider
from portlint.cuda_api import RNG
from portlint.rule import Invalid, Quiet

CUDA_SEEDS = frozenset({
    "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
    "torch.cuda.random.manual_seed", "torch.cuda.random.manual_seed_all",
})  # fmt: skip
# Seeds every device's generators: CUDA's, MPS's, XPU's, and a PrivateUse1 backend's (NPU).
EVERY_DEVICE_SEED = frozenset({"torch.manual_seed", "torch.random.manual_seed"})


class CudaRngApi(CudaApiRule):
    """CUDA-only random-number state: `torch.cuda.manual_seed()`, `get_rng_state()`, ...

    ## What it does
    Reports `torch.cuda.manual_seed`, `manual_seed_all`, `get_rng_state` and `set_rng_state`.
    Silent inside CUDA-only platform guards and in `cuda-only-paths`, and where the same block
    also calls `torch.manual_seed` with the same seed: that seeds every device's generators
    (CUDA's, XPU's, MPS's, an NPU's), so the CUDA call repeats it and changes nothing anywhere.

    ## Why is this bad?
    On another accelerator the CUDA generator is never used: the run is not seeded, and results
    that are reproducible on NVIDIA are not on XPU or NPU.

    ## Example
    ```python
    torch.cuda.manual_seed_all(seed)
    ```

    Use instead:
    ```python
    torch.get_device_module().manual_seed_all(seed)  # the accelerator's generators
    ```

    ## Fix safety
    Unsafe: each call becomes the same function of the device's module —
    `torch.get_device_module(device)` for a device in scope, else `torch.get_device_module()`, the
    accelerator's — which on CUDA is torch.cuda's own, so the random streams stay as they were
    (`torch.manual_seed` would reseed the CPU generator too). Elsewhere it is the device's
    function, where the device module has one (`torch.mps` has no `manual_seed_all`, and a
    CPU-only build's `torch.cpu` no `manual_seed`).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.manual_seed.html
    - https://pytorch.org/docs/stable/generated/torch.get_device_module.html
    """

    code = "PORT404"
    name = "cuda-rng-api"
    family = RNG

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.manual_seed(0)\n",
        "import torch\ntorch.manual_seed(0)\n",
        "import random\nrandom.seed(0)\n",
        "import torch\ng = torch.Generator().manual_seed(0)\n",
        # `torch.manual_seed` has seeded every device with the same seed already.
        "import torch\ndef seed_all(seed):\n    torch.manual_seed(seed)\n"
        "    torch.cuda.manual_seed_all(seed)\n",
        "import torch\ntorch.cuda.manual_seed(7)\ntorch.manual_seed(7)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.cuda.manual_seed(0)\n",
            2,
            1,
            fixed="import torch\ntorch.get_device_module().manual_seed(0)\n",
        ),
        Invalid(
            "import torch\ntorch.cuda.manual_seed_all(seed)\n",
            2,
            1,
            fixed="import torch\ntorch.get_device_module().manual_seed_all(seed)\n",
        ),
        Invalid(
            "import torch\ndef save(device: torch.device):\n    return torch.cuda.get_rng_state()\n",
            3,
            12,
            fixed="import torch\ndef save(device: torch.device):\n"
            "    return torch.get_device_module(device).get_rng_state()\n",
        ),
        Invalid("from torch.cuda import manual_seed\nmanual_seed(0)\n", 2, 1),
        # Another seed, or a seed in another block: on XPU the device is not seeded so.
        Invalid(
            "import torch\ndef seed_all(seed, rank):\n    torch.manual_seed(seed)\n"
            "    torch.cuda.manual_seed_all(seed + rank)\n",
            4,
            5,
        ),
        Invalid(
            "import torch\ndef seed_all(seed, gpu):\n    torch.manual_seed(seed)\n"
            "    if gpu:\n        torch.cuda.manual_seed_all(seed)\n",
            5,
            9,
        ),
    ]

    def redundant(self, reference: CudaReference, node: cst.CSTNode) -> Quiet:
        """A CUDA seed that a `torch.manual_seed` of the same seed in the same block repeats."""
        call = reference.call
        if call is None or reference.qualified not in CUDA_SEEDS or len(call.args) != 1:
            return None
        statement = self.get_metadata(ParentProvider, call, None)
        line = self.get_metadata(ParentProvider, statement, None) if statement else None
        block = self.get_metadata(ParentProvider, line, None) if line else None
        if not (
            isinstance(statement, cst.Expr) and isinstance(block, (cst.IndentedBlock, cst.Module))
        ):
            return None
        seed = code_of(call.args[0].value)
        every = next(
            (
                small.value
                for other in block.body
                if isinstance(other, cst.SimpleStatementLine)
                for small in other.body
                if isinstance(small, cst.Expr)
                and isinstance(small.value, cst.Call)
                and len(small.value.args) == 1
                and code_of(small.value.args[0].value) == seed
                and bool(qualified_names(self, small.value.func) & EVERY_DEVICE_SEED)
            ),
            None,
        )
        if every is None:
            return None
        return f"the same block seeds every device with `{code_of(every)}`", every
