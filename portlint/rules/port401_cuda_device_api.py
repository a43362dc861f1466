from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import DEVICE
from portlint.rule import Invalid


class CudaDeviceApi(CudaApiRule):
    """CUDA-only device management: `torch.cuda.synchronize()`, `device_count()`, `set_device()`, ...

    ## What it does
    Reports uses of `torch.cuda`'s device-management functions that `torch.accelerator` replaces:
    `synchronize`, `device_count`, `is_available`, `current_device`, `set_device`, `device(...)`
    and `get_device_capability`, however they are imported (`import torch as t`,
    `from torch import cuda`, `from torch.cuda import synchronize`). Comments and strings are not
    code and are never reported. Only APIs whose replacement exists in `target-torch-version`
    are reported; the message names the replacement, its detail the torch release that added it.
    Silent inside CUDA-only platform guards and in `cuda-only-paths`.

    ## Why is this bad?
    `torch.cuda.*` raises on a torch built without CUDA and does nothing for an XPU, NPU or MPS
    device: the program either fails or quietly skips the work (a missing `synchronize` makes
    timings and memory readings wrong). `torch.accelerator` does the same for whichever
    accelerator the build has.

    ## Example
    ```python
    torch.cuda.synchronize()
    torch.cuda.set_device(local_rank)
    ```

    Use instead:
    ```python
    torch.accelerator.synchronize()
    torch.accelerator.set_device_index(local_rank)
    ```

    ## Fix safety
    Safe for `synchronize`, `current_device` and `set_device`: on CUDA the replacement does the
    same, and `device=` is passed positionally as the replacement requires. Unsafe for
    `device_count` (non-zero on other accelerators) and for `device(...)`, fixed only where its
    argument is an integer or named as an index (`local_rank`, `device_id`): `device_index`
    takes an index only. No fix for `is_available`, nor for `device_count` in a condition: rewritten alone,
    a check that guards CUDA-only code would let that code run on XPU, NPU and MPS. None for
    `get_device_capability`: `torch.accelerator.get_device_capability` returns the supported
    dtypes, not a (major, minor) pair. No fix, in the whole family, where the name was imported
    from torch.cuda (`from torch import cuda`): the import would be left unused.

    ## References
    - https://pytorch.org/docs/stable/accelerator.html
    - vLLM's `tools/pre_commit/check_torch_cuda.py`, DeepSpeed's `scripts/check-torchcuda.py`
    """

    code = "PORT401"
    name = "cuda-device-api"
    family = DEVICE

    VALID = [
        "import torch\ntorch.accelerator.synchronize()\n",
        "import torch\nif current_platform.is_cuda():\n    torch.cuda.synchronize()\n",
        "def synchronize():\n    pass\nsynchronize()\n",
        "# torch.cuda.synchronize()\ncall = 'torch.cuda.synchronize()'\n",
        "from torch.cuda import synchronize\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.cuda.synchronize()\n",
            2,
            1,
            fixed="import torch\ntorch.accelerator.synchronize()\n",
        ),
        Invalid(
            "import torch as t\nt.cuda.synchronize(device=0)\n",
            2,
            1,
            fixed="import torch as t\nt.accelerator.synchronize(0)\n",
        ),
        Invalid(
            "import torch\nn = torch.cuda.device_count()\n",
            2,
            5,
            fixed="import torch\nn = torch.accelerator.device_count()\n",
        ),
        # A name imported from torch.cuda: a fix would leave the import unused.
        Invalid("from torch import cuda\nn = cuda.device_count()\n", 2, 5),
        Invalid("from torch.cuda import current_device\ni = current_device()\n", 2, 5),
        # `device_index` takes an index only: not fixed where the argument may be a device.
        Invalid(
            "import torch\ndef f(x):\n    with torch.cuda.device(x.device):\n        pass\n", 3, 10
        ),
        # A check: the code behind it is what must become portable.
        Invalid("import torch\nif not torch.cuda.is_available():\n    pass\n", 2, 8),
        Invalid(
            "import torch\nwith torch.cuda.device(1):\n    pass\n",
            2,
            6,
            fixed="import torch\nwith torch.accelerator.device_index(1):\n    pass\n",
        ),
        Invalid("import torch\nmajor, minor = torch.cuda.get_device_capability()\n", 2, 16),
    ]
