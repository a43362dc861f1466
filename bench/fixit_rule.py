"""The peer to portlint's PORT4xx in Fixit: one LibCST rule reporting calls under torch.cuda,
with names resolved by LibCST's QualifiedNameProvider (what an exact Fixit rule has to do)."""

from __future__ import annotations

import libcst as cst
from fixit import LintRule
from libcst.metadata import QualifiedNameProvider


class TorchCudaCall(LintRule):
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)
    VALID = ["import torch\ntorch.accelerator.synchronize()\n"]
    INVALID = ["import torch\ntorch.cuda.synchronize()\n"]

    def visit_Call(self, node: cst.Call) -> None:
        names = self.get_metadata(QualifiedNameProvider, node.func, set())
        if any(q.name.startswith("torch.cuda.") for q in names):
            self.report(node, "torch.cuda call: use torch.accelerator")
