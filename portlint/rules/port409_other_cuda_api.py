from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import OTHER
from portlint.rule import Invalid


class OtherCudaApi(CudaApiRule):
    """Any other `torch.cuda` API, and `Tensor.is_cuda`.

    ## What it does
    Reports every use of `torch.cuda` that PORT401-PORT408 do not cover
    (`torch.cuda.get_device_name()`, `torch.cuda.get_device_properties(...)`,
    `torch.cuda.is_current_stream_capturing()`, the module itself as a value, ...) and every
    `x.is_cuda` that is read rather than called. With PORT401-PORT408 and PORT102 (`.cuda()`) it
    reports all that DeepSpeed's `check-torchcuda.py` bans, but only in code. Silent inside
    CUDA-only platform guards and in `cuda-only-paths`. Not `torch.cuda._memory_viz`'s
    renderers of a memory snapshot (`trace_plot`, `segment_plot`, ...): they are Python that runs
    nothing on a device (taking the snapshot is the finding); nor a class named in an annotation
    or in a type built for one (`IndexType = Union[int, torch.cuda.LongTensor]`).

    ## Why is this bad?
    Everything under `torch.cuda` exists for CUDA only. Most of it has a counterpart on the
    device module of each accelerator, which `torch.get_device_module(device)` (torch 2.4) returns;
    `x.is_cuda` is false on every other accelerator, so code behind it takes the slow or wrong path
    there.

    ## Example
    ```python
    name = torch.cuda.get_device_name()
    if x.is_cuda:
        fast_path(x)
    ```

    Use instead:
    ```python
    name = torch.get_device_module(device).get_device_name()
    if x.device.type == device.type:
        fast_path(x)
    ```

    ## Fix safety
    No fix: whether the accelerator's module has the same function, and what `is_cuda` was meant
    to test, is for a person to decide.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.get_device_module.html
    """

    code = "PORT409"
    name = "other-cuda-api"
    family = OTHER

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    name = torch.cuda.get_device_name()\n",
        "import torch\nprops = torch.get_device_module(device).get_device_properties(0)\n",
        "import torch\nversion = torch.version.cuda\n",
        "class Platform:\n    def check(self):\n        return self.is_cuda\n",
        "if platform.is_cuda():\n    pass\n",
    ]
    INVALID = [
        Invalid("import torch\nname = torch.cuda.get_device_name()\n", 2, 8),
        Invalid("import torch\nif torch.cuda.is_current_stream_capturing():\n    pass\n", 2, 4),
        Invalid("def fast(x):\n    return x.is_cuda\n", 2, 12),
        Invalid("import torch\nmodule = torch.cuda\n", 2, 10),
    ]
