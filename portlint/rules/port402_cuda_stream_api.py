from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import STREAMS
from portlint.rule import Invalid


class CudaStreamApi(CudaApiRule):
    """CUDA-only streams and events: `torch.cuda.Stream`, `Event`, `current_stream()`, `stream()`.

    ## What it does
    Reports `torch.cuda.Stream`, `torch.cuda.Event`, `torch.cuda.current_stream`,
    `torch.cuda.set_stream` and `torch.cuda.stream(...)`, however they are imported. Type
    annotations are not reported (nothing runs on a device there; the objects behind them are
    what the other findings change), nor assignments that patch `torch.cuda` itself. Only APIs whose replacement exists in `target-torch-version` are
    reported. Silent inside CUDA-only platform guards and in `cuda-only-paths`.

    ## Why is this bad?
    Streams and events are not CUDA things: every accelerator has them, and since torch 2.4
    `torch.Stream` and `torch.Event` are the device-generic types (`with stream:` since 2.7,
    `torch.accelerator.current_stream()`/`set_stream()` since 2.6). Code written against
    `torch.cuda` has to be duplicated for `torch.xpu`, `torch.npu`, ... or fails there.

    ## Example
    ```python
    side = torch.cuda.Stream()
    done = torch.cuda.Event()
    with torch.cuda.stream(side):
        work()
    ```

    Use instead:
    ```python
    side = torch.Stream()
    done = torch.Event()
    with side:
        work()
    ```

    ## Fix safety
    Unsafe throughout, and offered only where the result means the same on CUDA.
    `torch.Stream` and `torch.accelerator.current_stream()` have no `.cuda_stream`, and
    `torch.Event` no `.cuda_event`: a stream or event is replaced only where every use of it in
    the module (bound to a name, every use in its function; bound to `self.x`, every `.x`) is a
    member the portable type has, a `with`, a comparison, or an argument of a stream API — not
    where it goes to other code, which may ask it for the raw handle. `torch.Event` takes its
    flags by keyword (the fix names them). `torch.accelerator.set_stream` rejects `None`, and
    `with torch.cuda.stream(s):` becomes `with s:`, which raises on `None`: both are fixed only
    where `s` is made by a stream call in the function (or, for `self.s`, in the module).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Stream.html
    - https://pytorch.org/docs/stable/generated/torch.Event.html
    - https://pytorch.org/docs/stable/accelerator.html
    """

    code = "PORT402"
    name = "cuda-stream-api"
    family = STREAMS

    VALID = [
        "import torch\nside = torch.Stream()\n",
        "import torch\ns = torch.accelerator.current_stream()\n",
        "stream = get_stream()\nwith stream:\n    pass\n",
        "import torch\nif current_platform.is_cuda():\n    side = torch.cuda.Stream()\n",
        "import torch\ndef run(side: torch.cuda.Stream) -> torch.cuda.Event:\n    pass\n",
        "import torch\ntorch.cuda.Stream = torch.xpu.Stream\n",
        # The type argument of a cast is an annotation: nothing runs.
        "import typing\nimport torch\ndef f(x):\n    return typing.cast(torch.cuda.Stream, x)\n",
        "from typing import cast\nimport torch\ns = cast(torch.cuda.Stream, get())\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nside = torch.cuda.Stream()\n",
            2,
            8,
            fixed="import torch\nside = torch.Stream()\n",
        ),
        Invalid(
            "import torch\ndone = torch.cuda.Event(True)\n",
            2,
            8,
            fixed="import torch\ndone = torch.Event(enable_timing=True)\n",
        ),
        Invalid(
            "import torch\nside = torch.Stream()\nwith torch.cuda.stream(side):\n    pass\n",
            3,
            6,
            fixed="import torch\nside = torch.Stream()\nwith side:\n    pass\n",
        ),
        Invalid(
            "import torch\ns = torch.cuda.current_stream()\ns.synchronize()\n",
            2,
            5,
            fixed="import torch\ns = torch.accelerator.current_stream()\ns.synchronize()\n",
        ),
        # The raw handle for a CUDA library: `torch.Stream` has none.
        Invalid("import torch\ns = torch.cuda.current_stream()\nlib.run(s.cuda_stream)\n", 2, 5),
        Invalid(
            "import torch\nprev = torch.accelerator.current_stream()\ntorch.cuda.set_stream(prev)\n",
            3,
            1,
            fixed="import torch\nprev = torch.accelerator.current_stream()\n"
            "torch.accelerator.set_stream(prev)\n",
        ),
        Invalid("import torch\nok = isinstance(side, torch.cuda.Stream)\n", 2, 23),
    ]
