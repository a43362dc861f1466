from portlint.analysis.cuda_refs import CudaApiRule
from portlint.cuda_api import GRAPHS
from portlint.rule import Invalid


class CudaGraphApi(CudaApiRule):
    """CUDA-only graph capture: `torch.cuda.CUDAGraph` and `torch.cuda.graph(...)`.

    ## What it does
    Reports `torch.cuda.CUDAGraph` and `torch.cuda.graph` when `target-torch-version` is 2.12 or
    later, where `torch.accelerator.Graph` exists. Silent inside CUDA-only platform guards and in
    `cuda-only-paths`.

    ## Why is this bad?
    Graph capture and replay are what make decoding fast on every accelerator that has them; with
    `torch.cuda` they are written once per vendor. `torch.accelerator.Graph` has the same
    `capture_begin`/`capture_end`/`replay` for whichever accelerator is present.

    ## Example
    ```python
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture_stream):
        out = step(batch)
    ```

    Use instead:
    ```python
    graph = torch.accelerator.Graph()
    with capture_stream:
        graph.capture_begin()
        out = step(batch)
        graph.capture_end()
    ```

    ## Fix safety
    No fix: the context manager and its `pool=`/`stream=` arguments map onto
    `torch.accelerator.Graph` differently per use.

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs
    - torch 2.12: `torch.accelerator.Graph`
    """

    code = "PORT407"
    name = "cuda-graph-api"
    family = GRAPHS

    VALID = [
        "import torch\ngraph = torch.accelerator.Graph()\n",
        "class CUDAGraph:\n    pass\ngraph = CUDAGraph()\n",
        "import torch\nif torch.cuda.is_available():\n    graph = torch.cuda.CUDAGraph()\n",
    ]
    INVALID = [
        Invalid("import torch\ngraph = torch.cuda.CUDAGraph()\n", 2, 9),
        Invalid("import torch\nwith torch.cuda.graph(g):\n    pass\n", 2, 6),
        Invalid("from torch.cuda import graphs\ngraph = graphs.CUDAGraph()\n", 2, 9),
    ]
