"""Collect every `torch.cuda` attribute the audit corpora use, for tests/data/cuda_attributes.txt.

    python scripts/collect_cuda_attributes.py > tests/data/cuda_attributes.txt

Reads each project's package folder (``../shared/corpus/fetch_project.sh NAME`` prints it) with
Python's ``ast``: the names ``import torch [as t]``, ``import torch.cuda [as c]``, ``from torch
import cuda [as c]`` and ``from torch.cuda[.sub] import x [as y]`` bind, and every attribute
chain rooted at one of them that reaches under ``torch.cuda``. Prints the qualified names, one a
line, sorted (the test resolves portlint's suggestion for each against the installed torch).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from portlint.index.reading import dotted

CORPUS = Path.home() / ".cache" / "portlint-corpus"
PROJECTS = (
    "vllm-0.33.0/vllm",
    "sglang-0.5.23/sglang",
    "deepspeed-0.19.8/deepspeed",
    "transformers-5.23.0/transformers",
    "accelerate-1.15.0/accelerate",
)


def _under_torch(module: str | None) -> bool:
    return module is not None and (module == "torch" or module.startswith("torch."))


def bindings(tree: ast.Module) -> dict[str, str]:
    """Local name -> the qualified name it is bound to, for names bound to torch or under it."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _under_torch(node.module):
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def cuda_names(tree: ast.Module) -> set[str]:
    bound = bindings(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "torch.cuda" or node.module.startswith("torch.cuda."):
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            continue
        if not isinstance(node, (ast.Attribute, ast.Name)):
            continue
        name = dotted(node)
        parts = name.split(".") if name else None
        if parts is None or parts[0] not in bound:
            continue
        qualified = ".".join([bound[parts[0]], *parts[1:]])
        if qualified.startswith("torch.cuda."):
            found.add(qualified)
    # Keep the longest chains: `torch.cuda.nvtx.range_push`, not also `torch.cuda.nvtx`.
    return {name for name in found if not any(other.startswith(name + ".") for other in found)}


def main() -> int:
    names: set[str] = set()
    for project in PROJECTS:
        for path in sorted((CORPUS / project).rglob("*.py")):
            try:
                tree = ast.parse(path.read_bytes())
            except (SyntaxError, ValueError):
                continue
            names |= cuda_names(tree)
    print("\n".join(sorted(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
