from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import PROFILING
from portlint.rule import Invalid


class NvtxRange(CudaApiRule):
    """NVTX ranges through `torch.cuda.nvtx`.

    ## What it does
    Reports `torch.cuda.nvtx.range(...)`, `range_push`, `range_pop`, `mark` and the module itself.
    Silent inside CUDA-only platform guards and in `cuda-only-paths`.

    ## Why is this bad?
    NVTX is NVIDIA's profiler annotation API: on a torch without CUDA the calls raise, and on other
    accelerators the ranges never reach a profiler. `torch.profiler.record_function` marks a range
    that torch's profiler records on any device (and that shows up as NVTX under `emit_nvtx`).

    ## Example
    ```python
    with torch.cuda.nvtx.range("decode"):
        step()
    ```

    Use instead:
    ```python
    with torch.profiler.record_function("decode"):
        step()
    ```

    ## Fix safety
    No fix: `range_push`/`range_pop` pairs become one `with` block, and Nsight users may want the
    NVTX ranges kept behind a CUDA guard instead.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.autograd.profiler.record_function.html
    """

    code = "PORT408"
    name = "nvtx-range"
    family = PROFILING

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.nvtx.range_push('step')\n",
        "import torch\nwith torch.profiler.record_function('step'):\n    pass\n",
        "import nvtx\nnvtx.push_range('step')\n",
        "def range_push(name):\n    pass\nrange_push('step')\n",
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.nvtx.range_push('step')\n", 2, 1),
        Invalid("import torch\nwith torch.cuda.nvtx.range('step'):\n    pass\n", 2, 6),
        Invalid("from torch.cuda import nvtx\nnvtx.mark('step')\n", 2, 1),
    ]
