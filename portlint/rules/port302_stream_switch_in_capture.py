from functools import partial

import libcst as cst

from portlint.analysis.capture import CaptureRegionProvider
from portlint.analysis.names import (
    argument,
    dotted_name,
    imported_names,
    method_name,
    qualified_names,
)
from portlint.analysis.object_uses import made_by
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.streams import StreamSource, makes_stream, stream_source
from portlint.evidence import CAPTURE
from portlint.facts import CAPTURE_BEGIN, SET_STREAM_FUNCTIONS, STREAM_CONTEXTS
from portlint.rule import Invalid, Rule


class StreamSwitchInCapture(Rule):
    """Stream switched or fetched inside a graph capture.

    ## What it does
    Reports, inside a graph capture (`with torch.cuda.graph(...)`, after
    `stack.enter_context(torch.cuda.graph(...))`, between `g.capture_begin()` and
    `g.capture_end()`):
    - `with torch.cuda.stream(s)` (or, on a `torch.Stream`, `with s:`) for a stream other than
      the capture's;
    - `torch.cuda.set_stream(...)` and `torch.accelerator.set_stream(...)`;
    - a stream fetched by a call (`current_stream()`, `torch.cuda.Stream()`, ...) and passed to
      other work, as an argument or as the receiver of a method.

    Not the ordering a multi-stream capture needs: `torch.cuda.current_stream().wait_stream(side)`
    (the capture stream joins a side stream) and `side.wait_stream(torch.cuda.current_stream())`
    (the side stream forks from it).

    ## Why is this bad?
    Inside a capture the current stream is the capture stream. Work sent to another stream is
    captured only if that stream first waits on the capture stream and the capture stream joins it
    again before the capture ends; otherwise the capture fails ("operation not permitted when
    stream is capturing") or, worse, the work runs eagerly once and is missing from every replay.
    A stream fetched inside the capture and handed on (to `record_stream`, to a library that
    caches it) ties that work to the capture's private stream, which differs from the one replays
    run beside. Backends other than CUDA implement these fork/join rules differently, if at all.

    ## Example
    ```python
    with torch.cuda.graph(g):
        out = model(x)
        with torch.cuda.stream(side):
            extra = head(out)
    ```

    Use instead:
    ```python
    with torch.cuda.graph(g):
        out = model(x)
        extra = head(out)
    ```

    ## Fix safety
    No fix: which stream the work belongs on is a design decision.

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs (multistream capture)
    - vLLM #53399
    """

    code = "PORT302"
    name = "stream-switch-in-capture"
    triggers = ("graph(", CAPTURE_BEGIN)
    evidence = (CAPTURE,)
    METADATA_DEPENDENCIES = (
        *Rule.METADATA_DEPENDENCIES,
        NameProvider,
        ParentProvider,
        CaptureRegionProvider,
    )

    VALID = [
        "import torch\ndef f(g, m, x):\n    s = torch.Stream()\n    with torch.cuda.graph(g, stream=s):\n"
        "        with s:\n            y = m(x)\n",
        "def f(g, m, x, lock):\n    with torch.cuda.graph(g):\n        with lock:\n            y = m(x)\n",
        "import torch\ndef f(g, m, x):\n    with torch.cuda.graph(g):\n        y = m(x)\n"
        "    with torch.cuda.stream(s):\n        m(x)\n",
        "import torch\ndef f(g, m, x, s):\n    with torch.cuda.graph(g, stream=s):\n"
        "        with torch.cuda.stream(s):\n            y = m(x)\n",
        "import torch\ndef f(g, m, x):\n    s = torch.cuda.current_stream()\n    with torch.cuda.graph(g):\n"
        "        y = m(x)\n",
        "import torch\ndef f(g, m, x, s):\n    with torch.cuda.graph(g, stream=torch.cuda.current_stream()):\n"
        "        y = m(x)\n",
        # the capture stream joins a side stream, and a side stream forks from it
        "import torch\ndef f(g, m, x, side):\n    with torch.cuda.graph(g):\n"
        "        torch.cuda.current_stream().wait_stream(side)\n"
        "        side.wait_stream(torch.cuda.current_stream())\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ndef f(g, m, x, side):\n    with torch.cuda.graph(g):\n"
            "        with torch.cuda.stream(side):\n            y = m(x)\n",
            4,
            14,
        ),
        # The portable form: `with side:` on a `torch.Stream`.
        Invalid(
            "import torch\ndef f(g, m, x):\n    side = torch.Stream()\n    with torch.cuda.graph(g):\n"
            "        with side:\n            y = m(x)\n",
            5,
            14,
        ),
        Invalid(
            "import torch\ndef f(g, x):\n    with torch.cuda.graph(g):\n"
            "        x.record_stream(torch.cuda.current_stream())\n",
            4,
            25,
        ),
        Invalid(
            "import torch\ndef f(g, m, x, s):\n    g.capture_begin()\n    torch.cuda.set_stream(s)\n"
            "    m(x)\n    g.capture_end()\n",
            4,
            5,
        ),
        Invalid(
            "import torch\nfrom contextlib import ExitStack\ndef f(g, m, x, s):\n"
            "    with ExitStack() as stack:\n        stack.enter_context(torch.cuda.graph(g))\n"
            "        x.record_stream(torch.cuda.current_stream())\n",
            6,
            25,
        ),
    ]

    def _switch(self, node: cst.CSTNode, target: cst.BaseExpression | None, region) -> None:
        """A stream context on ``target`` inside ``region``: reported unless it is the capture's
        own stream."""
        if target is not None and region.stream is not None and target.deep_equals(region.stream):
            return
        self.report(
            node,
            "switches stream inside a graph capture; fork from the capture stream and join back",
            confidence="likely",
            detail="The work is captured only if that stream waits on the capture stream first "
            "and the capture stream joins it before the capture ends; otherwise the capture fails "
            "or the work runs once, eagerly, and is missing from every replay.",
        )

    def visit_With(self, node: cst.With) -> None:
        """``with side:`` on a ``torch.Stream``: the portable ``with torch.cuda.stream(side):``."""
        region = self.get_metadata(CaptureRegionProvider, node, None)
        if region is None:
            return
        for item in node.items:
            if dotted_name(item.item) and made_by(self, item.item, partial(makes_stream, self)):
                self._switch(item.item, item.item, region)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.get_metadata(CaptureRegionProvider, node, None)
        if region is None or region.call is node:
            return
        names = qualified_names(self, node.func)
        if names & STREAM_CONTEXTS:
            target = argument(node, "stream", 0)
            self._switch(node, target.value if target else None, region)
        elif names & SET_STREAM_FUNCTIONS:
            self.report(
                node,
                "sets the current stream inside a graph capture; keep the work on the capture stream",
                confidence="likely",
                detail="Inside a capture the current stream is the capture stream: work sent to "
                "another is captured only if that stream forks from it and joins it again.",
            )
        elif source := stream_source(
            names, imported_names(self, node.func), self.settings.stream_functions
        ):
            parent = self.get_metadata(ParentProvider, node, None)
            if source is StreamSource.AMBIENT and self._joins_or_forks(node, parent):
                return
            if isinstance(parent, (cst.Arg, cst.Attribute)):
                self.report(
                    node,
                    "fetches a stream inside a graph capture and hands it on: the capture's private stream",
                    confidence="likely",
                    detail="Inside the capture the stream fetched is the capture's private one, "
                    "not the one replays run beside: the work it is handed to is tied to it.",
                )

    def _joins_or_forks(self, node: cst.Call, parent: cst.CSTNode | None) -> bool:
        """``torch.cuda.current_stream().wait_stream(side)`` (the capture stream joins a side
        stream) and ``side.wait_stream(torch.cuda.current_stream())`` (the side stream forks from
        it): the ordering a multi-stream capture requires, not a stream handed to other work."""
        if isinstance(parent, cst.Attribute):
            return parent.value is node and parent.attr.value == "wait_stream"
        if isinstance(parent, cst.Arg):
            call = self.get_metadata(ParentProvider, parent, None)
            return isinstance(call, cst.Call) and method_name(call) == "wait_stream"
        return False
