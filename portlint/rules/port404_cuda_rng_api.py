from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import RNG
from portlint.rule import Invalid


class CudaRngApi(CudaApiRule):
    """CUDA-only random-number state: `torch.cuda.manual_seed()`, `get_rng_state()`, ...

    ## What it does
    Reports `torch.cuda.manual_seed`, `manual_seed_all`, `get_rng_state` and `set_rng_state`.
    Silent inside CUDA-only platform guards and in `cuda-only-paths`.

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
    ]
