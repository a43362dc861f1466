from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import AUTOCAST
from portlint.rule import Invalid


class CudaAmpApi(CudaApiRule):
    """CUDA-only mixed precision: `torch.cuda.amp.autocast` and `torch.cuda.amp.GradScaler`.

    ## What it does
    Reports `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)` (deprecated since
    torch 2.4), however they are imported. Silent inside CUDA-only platform guards and in
    `cuda-only-paths`.

    ## Why is this bad?
    `torch.cuda.amp.autocast` autocasts CUDA operations only: on any other device the model runs
    in full precision, slower and with other numerics, and nothing says so. `torch.autocast` and
    `torch.amp.GradScaler` take the device type.

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
    `device` parameter, `worker.device`, `self.device`, a tensor parameter's `.device`, else
    `torch.accelerator.current_accelerator()`), and arguments given by position are passed by
    keyword since their positions differ. On a device other than CUDA autocast then takes effect,
    with that device's default dtype where none is given.

    ## References
    - https://pytorch.org/docs/stable/amp.html
    """

    code = "PORT405"
    name = "cuda-amp-api"
    family = AUTOCAST

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    scaler = torch.cuda.amp.GradScaler()\n",
        "import torch\nwith torch.autocast(device.type):\n    pass\n",
        "import torch\nscaler = torch.amp.GradScaler(device.type)\n",
        "from contextlib import nullcontext\nwith nullcontext():\n    pass\n",
    ]
    INVALID = [
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
            "torch.accelerator.current_accelerator().type, init_scale=1024.0)\n",
        ),
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast(True):\n    pass\n",
            2,
            6,
            fixed="import torch\n"
            "with torch.autocast(torch.accelerator.current_accelerator().type, enabled=True):\n"
            "    pass\n",
        ),
        Invalid("from torch.cuda.amp import autocast\nwith autocast(True):\n    pass\n", 2, 6),
    ]
