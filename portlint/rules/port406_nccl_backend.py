from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import DISTRIBUTED
from portlint.rule import Invalid


class NcclBackend(CudaApiRule):
    """`backend="nccl"` given to `init_process_group` or `new_group`.

    ## What it does
    Reports `"nccl"` (or `Backend.NCCL`) passed as the backend of
    `torch.distributed.init_process_group` or `torch.distributed.new_group`, by keyword or by
    position. Silent inside CUDA-only platform guards and in `cuda-only-paths`.

    ## Why is this bad?
    NCCL exists for NVIDIA GPUs (RCCL poses as it on ROCm). On XPU the collective backend is
    XCCL, on Ascend HCCL, on CPU Gloo: a hardcoded `"nccl"` fails at start-up there.
    `torch.distributed.get_default_backend_for_device(device)` (torch 2.6) names the right one.

    ## Example
    ```python
    dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)
    ```

    Use instead:
    ```python
    dist.init_process_group(
        backend=dist.get_default_backend_for_device(device), rank=rank, world_size=world_size
    )
    ```

    ## Fix safety
    Unsafe: the device comes from the code in scope (a `device` parameter, `worker.device`,
    `self.device`, ...), else it is the accelerator that is available, or the CPU where none is
    (`torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"`):
    Gloo on a build without an accelerator and on a CUDA build of a machine without a GPU,
    where the build's accelerator alone would name CUDA and NCCL.

    ## References
    - https://pytorch.org/docs/stable/distributed.html#torch.distributed.get_default_backend_for_device
    """

    code = "PORT406"
    name = "nccl-backend"
    family = DISTRIBUTED

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nimport torch.distributed as dist\nif torch.cuda.is_available():\n    dist.init_process_group('nccl')\n",
        "import torch.distributed as dist\ndist.init_process_group(backend='gloo')\n",
        "import torch.distributed as dist\n"
        "dist.init_process_group(backend=dist.get_default_backend_for_device(device))\n",
        "options = dict(backend='nccl')\n",
        "import torch.distributed as dist\ndist.new_group([0, 1], None, 'gloo')\n",
    ]
    INVALID = [
        Invalid(
            "import torch.distributed as dist\ndef init(device):\n"
            '    dist.init_process_group(backend="nccl")\n',
            3,
            37,
            fixed="import torch\nimport torch.distributed as dist\ndef init(device):\n"
            "    dist.init_process_group(backend="
            "torch.distributed.get_default_backend_for_device(torch.device(device)))\n",
        ),
        Invalid(
            "import torch.distributed as dist\n"
            "dist.init_process_group('nccl', rank=0, world_size=1)\n",
            2,
            25,
        ),
        Invalid(
            "from torch.distributed import Backend, new_group\n"
            "group = new_group(ranks, backend=Backend.NCCL)\n",
            2,
            34,
        ),
    ]
