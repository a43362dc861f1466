"""What the text gate and the configuration know of every rule, without importing LibCST.

A run over files that mention no trigger string never parses anything, so it must not pay for
importing LibCST and the rules either. Each rule class takes its name, triggers and
``guardable`` from here (``Rule.__init_subclass__``); a test checks that every rule module has an
entry and every entry a rule.
"""

from __future__ import annotations

from dataclasses import dataclass

CUDA_API_TRIGGERS = ("torch.cuda", "import cuda", ".cuda.", ".is_cuda", "nccl", "NCCL")


@dataclass(frozen=True)
class Entry:
    name: str
    # Strings of which at least one must occur in a file's text for the rule to run on it.
    triggers: tuple[str, ...]
    # A device rule: silent inside CUDA-only guards and in the configured cuda-only-paths.
    guardable: bool = False


def _cuda_api(name: str) -> Entry:
    return Entry(name, CUDA_API_TRIGGERS, guardable=True)


CATALOG: dict[str, Entry] = {
    "PORT001": Entry("unused-noqa", ("noqa", "NOQA", "NoQA")),
    "PORT101": Entry("hardcoded-cuda-device", ('"cuda', "'cuda"), guardable=True),
    "PORT102": Entry("cuda-method-call", (".cuda(",), guardable=True),
    "PORT201": Entry(
        "new-tensor-inherits-int64", ("new_empty", "new_full", "new_ones", "new_zeros")
    ),
    "PORT202": Entry("implicit-int64-into-triton", ("triton.jit", "import jit")),
    "PORT301": Entry("capture-stream-not-warmed", ("graph(", "cuda import")),
    "PORT302": Entry("stream-switch-in-capture", ("graph(", "capture_begin")),
    "PORT401": _cuda_api("cuda-device-api"),
    "PORT402": _cuda_api("cuda-stream-api"),
    "PORT403": _cuda_api("cuda-memory-api"),
    "PORT404": _cuda_api("cuda-rng-api"),
    "PORT405": _cuda_api("cuda-amp-api"),
    "PORT406": _cuda_api("nccl-backend"),
    "PORT407": _cuda_api("cuda-graph-api"),
    "PORT408": _cuda_api("nvtx-range"),
    "PORT409": _cuda_api("other-cuda-api"),
}
GUARDABLE = frozenset(code for code, entry in CATALOG.items() if entry.guardable)


# Every trigger contains one of these: a file with none of them triggers nothing, which takes a
# few scans of its text instead of one per trigger (most files of a tree are such files).
NEEDLES = ("cuda", "noqa", "NOQA", "NoQA", "nccl", "NCCL", "new_", "jit", "graph(", "capture_begin")


# The codes by their triggers: the nine PORT4xx rules share theirs, which are looked for once.
_GROUPS: dict[tuple[str, ...], frozenset[str]] = {
    triggers: frozenset(code for code, entry in CATALOG.items() if entry.triggers == triggers)
    for triggers in {entry.triggers: None for entry in CATALOG.values()}
}


def codes_with_triggers_in(source: str, codes: frozenset[str]) -> list[str]:
    """The text gate: the enabled codes with at least one trigger string in ``source``."""
    if not any(needle in source for needle in NEEDLES):
        return []
    found: set[str] = set()
    for triggers, group in _GROUPS.items():
        if not group.isdisjoint(codes) and any(trigger in source for trigger in triggers):
            found |= group
    return [code for code in CATALOG if code in codes and code in found]
