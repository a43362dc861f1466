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
    torch.manual_seed(seed)  # seeds the CPU and every device
    ```

    ## Fix safety
    Unsafe: `torch.manual_seed` also reseeds the CPU generator (and, for `manual_seed`, every
    device, not only the current one), which changes the random streams that follow. No fix for
    `get_rng_state`/`set_rng_state`: use `torch.get_device_module(device)` and its functions.

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
            fixed="import torch\ntorch.manual_seed(0)\n",
        ),
        Invalid(
            "import torch\ntorch.cuda.manual_seed_all(seed)\n",
            2,
            1,
            fixed="import torch\ntorch.manual_seed(seed)\n",
        ),
        Invalid("import torch\nstate = torch.cuda.get_rng_state()\n", 2, 9),
    ]
