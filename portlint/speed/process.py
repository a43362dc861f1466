"""Process-wide shortcuts for a run of the command line, each undone however it ends.

Both change the state of the whole process for as long as one file is parsed or analysed, which
a caller linting from several threads (an editor server, say) may not want: the engine uses them
only where its caller asks (``speedups=True``; the command line does).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (LibCST is imported where a file is parsed, not with this module)
    import libcst as cst


def _no_validation(self: object) -> None:
    pass


def parse_unvalidated(source: str) -> cst.Module:
    """``cst.parse_module`` without LibCST's validation of every node it builds.

    ``CSTNode.__post_init__`` checks each new node's fields (a ``Name`` is not empty, a
    ``Comparison`` has an operator...): checks for trees made by hand, which a tree parsed from
    text that Python's own parser accepts passes by construction; on vLLM they are 13% of the
    parse. They are off only while this parse runs, and on again after it, however it ends.
    """
    import libcst as cst
    from libcst._nodes.base import CSTNode  # private: LibCST's node base (libcst >=1.8,<1.10)

    validate = CSTNode.__post_init__
    CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(source)
    finally:
        CSTNode.__post_init__ = validate  # type: ignore[method-assign]


@contextmanager
def without_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while a file is parsed and analysed, on again after (where it
    was on). Parsing makes hundreds of thousands of objects that reference counting frees (trees
    hold no cycles), and the collector would look at them again and again: 12% of a cold run on
    vLLM. The few cycles the analysis makes are collected once the file is done. (The command
    line's main process runs with it off too, while it reads the cache's tables and joins the
    project: 40% of a join of vLLM's modules.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
