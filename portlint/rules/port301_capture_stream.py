from __future__ import annotations

import libcst as cst

from portlint.analysis.capture import CaptureRegionProvider
from portlint.analysis.names import (
    dotted_name,
)
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.streams import StreamSource
from portlint.analysis.warmups import (
    CallSite,
    Capture,
    Frame,
    WarmupRule,
    earlier_runs,
    successive,
)
from portlint.evidence import CAPTURE
from portlint.findings import Fix
from portlint.index.matmul import CAPTURE_NOTES
from portlint.rule import Invalid, Rule

# Why a capture on a stream the warm-up did not run on fails: the end of each finding's detail.
WHY = (
    "Per-stream state made lazily (cuBLAS's workspace, hipBLASLt's handles) is then made during"
    " the capture: on ROCm the capture fails."
)


class CaptureStreamNotWarmed(WarmupRule):
    """Graph captured on a stream the warm-up did not run on.

    ## What it does
    Reports a graph capture that follows a warm-up in the same function (a call made before the
    capture to something the captured code calls too) when the capture does not run on the stream
    the warm-up ran on. Captures are `with torch.cuda.graph(...)` (alone or among other items),
    `stack.enter_context(torch.cuda.graph(...))`, and `g.capture_begin()` ... `g.capture_end()`:
    - `stream=` is a call such as `current_stream()`, fetching the stream at the capture site;
    - `stream=` is left out, so PyTorch captures on its own private side stream;
    - `stream=s` where the warm-up ran under another stream, or `s` is a new stream
      (`torch.cuda.Stream()`) or was fetched only after the warm-up;
    - `g.capture_begin()` runs under another `torch.cuda.stream(...)` than the warm-up did.
    Functions named `current_stream` and those listed in `stream-functions` count as fetching
    the ambient stream. The module's `@contextmanager` with `graph` in its name that gives its
    `*args, **kwargs` to `torch.cuda.graph` and yields inside it captures as that does. A call
    of a function of the module (not a method) runs what it calls: the callables it is given and
    calls (`run_warmup(i, func)` runs `func`), and names it does not bind (`torch.autograd.backward`).

    Neither a call of one of Python's builtins (`range(n)`, `len(x)`), nor a getter, an
    allocation or a synchronisation, is a warm-up: none runs the captured work.

    A call inside an earlier capture is not a warm-up: a capture records work and runs none. A
    capture whose code ran before it only inside earlier captures is reported as unwarmed:
    `likely` on PyTorch's private side stream or a stream of unknown origin, `certain` on a
    stream fetched or made in the function. A capture in a loop is not the warm-up of the next
    iteration's either; with no warm-up before it, it is the case of no warm-up (not reported:
    its caller may warm up), as the first of two captures is.

    A call in the other arm of an `if` that tests what the function itself counts on `self`
    (`if self.warmup_steps <= 0:` capture, `else:` `self.warmup_steps -= 1` and run) ran on
    earlier calls: it is the capture's warm-up, wherever it is in the source (no fix: a stream
    made in one call is gone in the next). Arms of any other test never run before each other.

    A capture whose code runs no matrix multiply is not reported (`--show-silenced` shows it,
    with what was followed). The captured code is followed into the project's own code: its
    functions and classes, in any module; methods (`self.m(...)`); local functions; instances,
    a name bound to `Cls(...)` (also `Cls(...).cuda().eval()`) or an attribute of `self` that
    the class assigns one, whose `__call__` or `forward` runs; a `functools.partial` of a
    function; up to six calls deep. It runs none where every call it reaches is one of the few
    listed in `portlint/analysis/blas.py` (convolutions, normalisations, activations,
    elementwise arithmetic, views, copies, allocations, stream calls, and torch.nn modules of
    these) and it has no `@`. Any other call (a parameter called, another library's function
    or module) can run one.

    ## Why is this bad?
    Libraries create per-stream state lazily: cuBLAS its workspace, hipBLASLt its handles. A
    warm-up on one stream and a capture on another creates that state during capture. On CUDA
    this allocates cuBLAS's 32 MiB workspace inside the graph's pool; on ROCm creating the
    hipBLASLt state during capture fails (vLLM #53399, Gemma4's `_setup_centroids_cuda_graphs`).
    That state is the BLAS handle's: captured code without a matrix multiply creates none of
    it.
    An earlier capture of the same code does not create it outside the graph: the capture
    stream is only warmed by work that runs on it.

    ## Example
    ```python
    for _ in range(3):
        model(static_input)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=current_stream()):
        static_output = model(static_input)
    ```

    Use instead:
    ```python
    capture_stream = current_stream()
    for _ in range(3):
        model(static_input)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=capture_stream):
        static_output = model(static_input)
    ```

    ## Fix safety
    Unsafe, as it moves code across the warm-up. Where `stream=` fetches the stream at the
    capture site, the fix hoists that call — `capture_stream = current_stream()` — to just before
    the warm-up, in the block that holds both, and passes `stream=capture_stream` (vLLM's fix of
    #53399). Where `stream=` is left out, it creates the stream before the warm-up
    (`capture_stream = torch.Stream()`, ordered after the current stream with `wait_stream`),
    runs the warm-up statements under `with capture_stream:`, makes the current stream wait for
    them (PyTorch's documented pattern) and passes `stream=capture_stream`. It writes the portable
    forms the target torch has (`torch.Stream`, `torch.accelerator.current_stream()`, `with
    stream:` from 2.7), so that PORT402 has nothing to report in them. Where the warm-up ran under
    one stream context (`with torch.cuda.stream(s):`) and the capture left `stream=` out, the fix
    passes `stream=s`. The fix moves only warm-up calls that run: an earlier capture is never
    wrapped, and a capture whose only earlier runs are inside earlier captures has no fix (there
    is no warm-up to move onto its stream). Other cases, and `capture_begin()`, have no fix.

    ## References
    - vLLM #53399 and #53818: Gemma4 centroids graph capture on ROCm
    - https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs
    """

    code = "PORT301"
    name = "capture-stream-not-warmed"
    triggers = ("graph(", "cuda import")
    evidence = (CAPTURE,)
    METADATA_DEPENDENCIES = (
        *Rule.METADATA_DEPENDENCIES,
        NameProvider,
        CaptureRegionProvider,
        ParentProvider,
    )

    VALID = [
        # PyTorch's documented pattern: warm up under `with torch.cuda.stream(s):`, capture on
        # `s`; fetching the current stream and `wait_stream` before the capture warm nothing up.
        "import torch\ndef f(m, x):\n    s = torch.cuda.Stream()\n"
        "    s.wait_stream(torch.cuda.current_stream())\n    with torch.cuda.stream(s):\n"
        "        m(x)\n    torch.cuda.current_stream().wait_stream(s)\n"
        "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g, stream=s):\n"
        "        m(x)\n        torch.cuda.current_stream()\n",
        # The same, portable (what PORT301's and PORT402's fixes write): `with s:` on a stream.
        "import torch\ndef f(m, x, g):\n    s = torch.Stream()\n"
        "    s.wait_stream(torch.accelerator.current_stream())\n    with s:\n        m(x)\n"
        "    with torch.cuda.graph(g, stream=s):\n        m(x)\n",
        # A copy made outside the stream context too: the model was warmed on `s`.
        "import torch\ndef f(m, x, buf):\n    s = torch.cuda.Stream()\n    with torch.cuda.stream(s):\n"
        "        buf.copy_(x)\n        m(buf)\n    buf.copy_(x)\n    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g, stream=s):\n        buf.copy_(x)\n        m(buf)\n",
        # vLLM 0.33's fixed form: the stream is fetched once, before the warm-up.
        "import torch\nfrom vllm.utils.torch_utils import current_stream\n"
        "def f(m, x):\n    s = current_stream()\n    for _ in range(3):\n        m(x)\n"
        "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n",
        # Warm-up under the stream that is then captured on.
        "import torch\ndef f(m, x):\n    s = torch.cuda.Stream()\n    with torch.cuda.stream(s):\n"
        "        m(x)\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g, stream=s):\n        m(x)\n",
        # No warm-up in the function: nothing to compare against.
        "import torch\ndef f(m, x):\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n        m(x)\n",
        # The warm-up calls something else than the capture.
        "import torch\ndef f(m, x):\n    prepare(x)\n    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g, stream=torch.cuda.current_stream()):\n        m(x)\n",
        # A local `graph` is not torch.cuda.graph.
        "def f(m, x, graph):\n    m(x)\n    with graph(g):\n        m(x)\n",
        # Getters and allocations called on both sides are not a warm-up.
        "import torch\ndef f(m, x):\n    get_offloader().sync()\n    y = torch.zeros(3)\n"
        "    with torch.cuda.graph(g):\n        get_offloader().join()\n        y = torch.zeros(3)\n",
        # A builtin called on both sides (`range(n)`) runs no device work: no warm-up.
        "import torch\ndef f(run, n, g):\n    steps = list(range(n))\n    with torch.cuda.graph(g):\n"
        "        for i in range(n):\n            run(i)\n",
        # The earlier call is on a path that returns before the capture.
        "import torch\ndef f(m, x, eager):\n    if eager:\n        return m(x)\n"
        "    with torch.cuda.graph(g):\n        m(x)\n",
        # A stream of unknown origin, warm-up on the ambient stream: not known to differ.
        "import torch\ndef f(self, m, x):\n    m(x)\n    with torch.cuda.graph(g, stream=self.stream):\n        m(x)\n",
        # A capture in a loop is not the warm-up of the next iteration's: with none before it in
        # the function, it is the case of no warm-up (its caller may warm up).
        "import torch\ndef f(m, x, graphs):\n    for g in graphs:\n        with torch.cuda.graph(g):\n"
        "            m(x)\n",
        # Two captures on a warmed stream: the warm-up before the first covers the second too.
        "import torch\ndef f(m, x, g1, g2):\n    s = torch.cuda.Stream()\n    with torch.cuda.stream(s):\n"
        "        m(x)\n    with torch.cuda.graph(g1, stream=s):\n        m(x)\n"
        "    with torch.cuda.graph(g2, stream=s):\n        m(x)\n",
        # The captured code runs no matrix multiply (a convolution, an activation, arithmetic,
        # a copy): it makes no BLAS state.
        "import torch\nimport torch.nn.functional as F\ndef f(w, x, out, g):\n    F.conv2d(x, w)\n"
        "    with torch.cuda.graph(g, stream=torch.cuda.current_stream()):\n"
        "        out.copy_(torch.relu(F.conv2d(x, w)) * 2)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch.cuda import current_stream\ndef f(m, x, g):\n    m(x)\n"
            "    with torch.cuda.graph(g, stream=current_stream()):\n        m(x)\n",
            5,
            10,
            fixed="import torch\nfrom torch.cuda import current_stream\ndef f(m, x, g):\n"
            "    capture_stream = current_stream()\n    m(x)\n"
            "    with torch.cuda.graph(g, stream=capture_stream):\n        m(x)\n",
        ),
        Invalid(
            "import torch\ndef f(m, x, g, capture_stream):\n    m(x)\n    with torch.cuda.graph(g):\n"
            "        m(x)\n",
            4,
            10,
            fixed="import torch\ndef f(m, x, g, capture_stream):\n"
            "    capture_stream_2 = torch.Stream()\n"
            "    capture_stream_2.wait_stream(torch.accelerator.current_stream())\n"
            "    with capture_stream_2:\n        m(x)\n"
            "    torch.accelerator.current_stream().wait_stream(capture_stream_2)\n"
            "    with torch.cuda.graph(g, stream=capture_stream_2):\n        m(x)\n",
        ),
        # The warm-up ran under a stream of its own: the capture goes on it.
        Invalid(
            "import torch\ndef f(m, x, g, side):\n    with torch.cuda.stream(side):\n        m(x)\n"
            "    with torch.cuda.graph(g, stream=None):\n        m(x)\n",
            5,
            10,
            fixed="import torch\ndef f(m, x, g, side):\n    with torch.cuda.stream(side):\n"
            "        m(x)\n    with torch.cuda.graph(g, stream=side):\n        m(x)\n",
        ),
        # A parameter named like a builtin is the caller's function, not the builtin.
        Invalid(
            "import torch\ndef f(len, x, g):\n    len(x)\n    with torch.cuda.graph(g):\n"
            "        len(x)\n",
            4,
            10,
        ),
        # A warm-up in a branch that does not leave the function still reaches the capture.
        Invalid(
            "import torch\ndef f(m, x, warm):\n    if warm:\n        m(x)\n"
            "    with torch.cuda.graph(g):\n        m(x)\n",
            5,
            10,
        ),
        Invalid(
            "import torch\nfrom torch.cuda import current_stream\ndef f(m, x):\n    for _ in range(3):\n"
            "        m(x)\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g, stream=current_stream()):\n"
            "        y = m(x)\n",
            7,
            10,
        ),
        Invalid(
            "import torch\ndef f(m, x):\n    m(x)\n    g = torch.cuda.CUDAGraph()\n"
            "    with torch.cuda.graph(g):\n        y = m(x)\n",
            5,
            10,
        ),
        Invalid(
            "from torch import cuda\ndef f(m, x):\n    m(x)\n    g = cuda.CUDAGraph()\n"
            "    with cuda.graph(g, None, cuda.current_stream()):\n        y = m(x)\n",
            5,
            10,
        ),
        Invalid(
            "import torch\ndef f(m, x):\n    s = torch.cuda.Stream()\n    m(x)\n"
            "    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n",
            5,
            10,
        ),
        Invalid(
            "import torch\ndef f(m, x, other):\n    s = torch.cuda.current_stream()\n"
            "    with torch.cuda.stream(other):\n        m(x)\n"
            "    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n",
            6,
            10,
        ),
        Invalid(
            "import torch\ndef f(m, x):\n    m(x)\n    s = torch.cuda.current_stream()\n"
            "    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n",
            5,
            10,
        ),
        # An earlier capture is not a warm-up: it records `model(x)` and runs nothing (the first
        # capture has no warm-up in the function, the second has only that one). No fix: there
        # is no warm-up to move onto the capture stream.
        Invalid(
            "import torch\ndef f(model, x):\n    g1 = torch.cuda.CUDAGraph(); g2 = torch.cuda.CUDAGraph()\n"
            "    with torch.cuda.graph(g1):\n        out = model(x)\n"
            "    with torch.cuda.graph(g2):\n        out2 = model(x)\n",
            6,
            10,
        ),
        # The same in a loop, on a stream made here: each iteration's second capture.
        Invalid(
            "import torch\ndef f(m, x, pairs):\n    s = torch.cuda.Stream()\n    for g1, g2 in pairs:\n"
            "        with torch.cuda.graph(g1, stream=s):\n            m(x)\n"
            "        with torch.cuda.graph(g2, stream=s):\n            m(x)\n",
            7,
            14,
        ),
        # The warm-up ran under `side`; the first capture (on `side` too) is not a second warm-up
        # on the ambient stream, so the fix captures on `side`.
        Invalid(
            "import torch\ndef f(m, x, g1, g2, side):\n    with torch.cuda.stream(side):\n        m(x)\n"
            "    with torch.cuda.graph(g1, stream=side):\n        m(x)\n"
            "    with torch.cuda.graph(g2):\n        m(x)\n",
            7,
            10,
            fixed="import torch\ndef f(m, x, g1, g2, side):\n    with torch.cuda.stream(side):\n"
            "        m(x)\n    with torch.cuda.graph(g1, stream=side):\n        m(x)\n"
            "    with torch.cuda.graph(g2, stream=side):\n        m(x)\n",
        ),
        # The fix wraps the warm-up alone, not the earlier capture: that runs on its own stream.
        Invalid(
            "import torch\ndef f(m, x, g1, g2, s):\n    m(x)\n"
            "    with torch.cuda.graph(g1, stream=s):\n        m(x)\n"
            "    with torch.cuda.graph(g2):\n        m(x)\n",
            6,
            10,
            fixed="import torch\ndef f(m, x, g1, g2, s):\n    capture_stream = torch.Stream()\n"
            "    capture_stream.wait_stream(torch.accelerator.current_stream())\n"
            "    with capture_stream:\n        m(x)\n"
            "    torch.accelerator.current_stream().wait_stream(capture_stream)\n"
            "    with torch.cuda.graph(g1, stream=s):\n        m(x)\n"
            "    with torch.cuda.graph(g2, stream=capture_stream):\n        m(x)\n",
        ),
        # The warm-up's result is used (`model(x).logits`): `model(x)` is the work.
        Invalid(
            "import torch\ndef f(model, x, g):\n    s = torch.cuda.Stream()\n"
            "    with torch.cuda.stream(s):\n        y = model(x).logits\n"
            "    with torch.cuda.graph(g):\n        y = model(x).float()\n",
            6,
            10,
        ),
        # `@` is a matrix multiply: `certain`, as an unknown call (`m(x)`) is.
        Invalid(
            "import torch\ndef f(w, x, out, g):\n    torch.relu(x)\n"
            "    with torch.cuda.graph(g, stream=torch.cuda.current_stream()):\n"
            "        out.copy_(torch.relu(x) @ w)\n",
            4,
            10,
        ),
    ]

    def _check_frame(self, frame: Frame) -> None:
        for capture in frame.captures:
            earlier = earlier_runs(frame, capture, self._start(capture.region.call))
            # A capture records the work in it and runs none: it warms nothing up.
            warmups = [c for c in earlier if c.region is None]
            if warmups:
                self._check_capture(frame, capture, warmups)
            elif earlier:
                self._check_recorded(frame, capture, earlier[-1])

    def _flag(
        self,
        capture: Capture,
        message: str,
        detail: str,
        confidence: str = "certain",
        fix: Fix | None = None,
    ) -> None:
        """Report ``capture`` (``detail``: what happened, before :data:`WHY`), with a note of
        the code it captures: the project index holds the finding back where that code runs no
        matrix multiply (:mod:`portlint.index.matmul`)."""
        call = capture.region.call
        self.report(call, message, confidence=confidence, fix=fix, detail=f"{detail} {WHY}")
        body = [
            statement
            for part in capture.region.body
            for statement in (part.body if isinstance(part, cst.BaseSuite) else [part])
        ]
        if body:
            self.context.notes.setdefault(CAPTURE_NOTES, []).append([call, body[0], body[-1]])

    def _check_recorded(self, frame: Frame, capture: Capture, recorded: CallSite) -> None:
        """A capture whose only earlier runs of its code are inside earlier captures: unwarmed.
        As sure as the rule is of an unwarmed capture's stream: `likely` on PyTorch's private
        side stream or a stream of unknown origin, `certain` on one fetched or made here."""
        stream = capture.region.stream
        key = dotted_name(stream) if stream is not None else None
        made_here = (isinstance(stream, cst.Call) and self._source(stream) is not None) or any(
            b.source is not None for b in frame.bindings.get(key or "", [])
        )
        assert recorded.region is not None  # (a recorded call is in a capture)
        line = self._start(recorded.region.call)[0]
        self._flag(
            capture,
            f"`{recorded.callee}` ran earlier only inside the capture at line {line}; warm up on the capture stream",
            "That capture records it and runs nothing: it warms nothing up.",
            "certain" if made_here else "likely",
        )

    def _check_capture(self, frame: Frame, capture: Capture, warmups: list[CallSite]) -> None:
        line = warmups[0].start[0]
        # A warm-up of an earlier call (another arm on a counter) cannot be moved onto the stream.
        moved = not any(successive(frame, w.arms, capture.arms) for w in warmups)
        if capture.region.kind == "capture_begin":
            other = next((w for w in warmups if w.stream != capture.stream), None)
            if other is not None:
                where = f"under `{capture.stream}`" if capture.stream else "on the ambient stream"
                ran = f"under `{other.stream}`" if other.stream else "on the ambient stream"
                self._flag(
                    capture,
                    f"captures on another stream than the warm-up at line {other.start[0]}; warm up on the capture stream",
                    f"`capture_begin()` captures {where}; the warm-up ran {ran}.",
                )
            return
        stream = capture.region.stream
        if stream is None or (isinstance(stream, cst.Name) and stream.value == "None"):
            self._flag(
                capture,
                f"captures on PyTorch's side stream, not the warm-up's (line {line}); pass a warmed `stream=`",
                "Without `stream=`, PyTorch captures on a private side stream of its own. Fetch the capture stream once before the warm-up, warm up on it and pass it as `stream=`.",
                "likely",
                self._fix(capture, warmups, None) if moved else None,
            )
            return
        if isinstance(stream, cst.Call):
            if self._source(stream) is not None:
                self._flag(
                    capture,
                    f"capture stream is fetched after the warm-up at line {line}; fetch it before, warm up on it",
                    "It is fetched at the capture site. Fetch it once before the warm-up, warm up on it and pass it here.",
                    fix=self._fix(capture, warmups, stream) if moved else None,
                )
            return
        key = dotted_name(stream)
        problem = self._stream_problem(frame, key, warmups) if key else None
        if problem:
            self._flag(
                capture,
                f"captures on `{key}`, which the warm-up at line {problem[0]} did not run on; warm up on it",
                f"{problem[1]}.",
            )

    def _stream_problem(
        self, frame: Frame, key: str, warmups: list[CallSite]
    ) -> tuple[int, str] | None:
        """The line of a warm-up that did not run on the capture stream ``key``, and why not."""
        if any(warmup.stream == key for warmup in warmups):
            return None  # warmed up under `with torch.cuda.stream(key):`: the state is there
        bindings = frame.bindings.get(key, [])
        for warmup in warmups:
            line = warmup.start[0]
            if warmup.stream is not None:
                if warmup.stream != key:
                    return line, f"The warm-up ran under `{warmup.stream}`"
                continue
            before = [b for b in bindings if b.start < warmup.start]
            if not before and bindings:
                if bindings[-1].source is not None:
                    return line, f"It is fetched at line {bindings[-1].start[0]}, after the warm-up"
            elif before and before[-1].source is StreamSource.OTHER:
                return line, "It is not the ambient stream, on which the warm-up ran"
        return None
