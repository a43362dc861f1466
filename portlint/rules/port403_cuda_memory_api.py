from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import MEMORY
from portlint.rule import Invalid


class CudaMemoryApi(CudaApiRule):
    """CUDA-only memory queries: `torch.cuda.empty_cache()`, `memory_allocated()`, `mem_get_info()`.

    ## What it does
    Reports `torch.cuda`'s caching-allocator functions that `torch.accelerator.memory` (torch 2.9;
    `get_memory_info` 2.10) replaces: `empty_cache`, `memory_allocated`, `max_memory_allocated`,
    `memory_reserved`, `max_memory_reserved`, `memory_stats`, `reset_peak_memory_stats`,
    `reset_accumulated_memory_stats` and `mem_get_info`, also through `torch.cuda.memory`. Only
    reported when `target-torch-version` has the replacement. Silent inside CUDA-only platform
    guards and in `cuda-only-paths`; and on `torch.cuda.OutOfMemoryError`, which is
    `torch.OutOfMemoryError` by another name (torch 2.5): `except torch.cuda.OutOfMemoryError`
    catches the out-of-memory error of every device (`--show-silenced` shows it).

    ## Why is this bad?
    Memory profiling and KV-cache sizing written against `torch.cuda` read zero or raise on other
    accelerators, so the program sizes its caches wrong or fails at start-up.

    ## Example
    ```python
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    ```

    Use instead:
    ```python
    torch.accelerator.memory.empty_cache()
    free, total = torch.accelerator.memory.get_memory_info()
    ```

    ## Fix safety
    Safe: on CUDA the replacement reads the same allocator. The replacements take the device
    positionally only, so the fix turns `device=x` into `x`.

    ## References
    - https://pytorch.org/docs/stable/accelerator.html#memory-management
    """

    code = "PORT403"
    name = "cuda-memory-api"
    family = MEMORY

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n",
        "import torch\ntorch.accelerator.memory.empty_cache()\n",
        "import torch\nfree, total = torch.accelerator.memory.get_memory_info()\n",
        "def empty_cache():\n    pass\nempty_cache()\n",
        # The portable class by another name: it catches every device's out-of-memory error.
        "import torch\ntry:\n    pass\nexcept torch.cuda.OutOfMemoryError:\n    pass\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.cuda.empty_cache()\n",
            2,
            1,
            fixed="import torch\ntorch.accelerator.memory.empty_cache()\n",
        ),
        Invalid(
            "import torch\nused = torch.cuda.memory_allocated(device=0)\n",
            2,
            8,
            fixed="import torch\nused = torch.accelerator.memory.memory_allocated(0)\n",
        ),
        Invalid(
            "import torch\nfree, total = torch.cuda.mem_get_info()\n",
            2,
            15,
            fixed="import torch\nfree, total = torch.accelerator.memory.get_memory_info()\n",
        ),
        Invalid(
            "import torch\ntorch.cuda.memory.reset_peak_memory_stats()\n",
            2,
            1,
            fixed="import torch\ntorch.accelerator.memory.reset_peak_memory_stats()\n",
        ),
    ]
