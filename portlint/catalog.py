"""What the text gate and the configuration know of every rule, without importing LibCST.

A run over files that mention no trigger string never parses anything, so it must not pay for
importing LibCST and the rules either. Each rule class takes its name, triggers and
``guardable`` from here (``Rule.__init_subclass__``); a test checks that every rule module has an
entry and every entry a rule.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from dataclasses import dataclass

CUDA_API_TRIGGERS = ("torch.cuda", "import cuda", ".cuda.", ".is_cuda", "nccl", "NCCL")


# (A named tuple, not a dataclass: this module is imported by every run, even one that parses
# nothing, and a frozen dataclass costs five times as much to define.)
class Evidence(namedtuple("Evidence", ["patterns", "words"], defaults=((),))):
    """What the code of a function holding one of a rule's findings must show: a match of one of
    ``patterns`` (regular expressions), or a name that a module-level import mentioning one of
    ``words`` defines (``from torch import arange as ar`` makes ``ar`` evidence of an ``arange``
    call), or one of ``words`` in an import of the function's own. (Only imports: a name bound
    otherwise resolves to nothing.) It may show where the rule reports nothing (partial parsing
    keeps more code then); it must show wherever the rule can report, which
    ``tests/test_rule_cases.py`` checks on every rule's cases, as written and inside a function.
    (Each pattern starts with a literal: Python's ``re`` then finds candidates as fast as
    ``str.find``; an alternation or a character class at the start costs ten times more.)
    """

    __slots__ = ()
    patterns: tuple[str, ...]
    words: tuple[str, ...]  # none: a name cannot carry it (a string literal, say)


@dataclass(frozen=True)
class Entry:
    name: str
    # Strings of which at least one must occur in a file's text for the rule to run on it.
    triggers: tuple[str, ...]
    # A device rule: silent inside CUDA-only guards and in the configured cuda-only-paths.
    guardable: bool = False
    # What partial parsing looks for: each must match where a finding can be (empty: a trigger).
    evidence: tuple[Evidence, ...] = ()
    # Its findings are at launches (`kernel[grid](...)`) of the functions its triggers mark.
    at_launches: bool = False


# A name or attribute under `torch.cuda` (however `torch` or `torch.cuda` is imported; torch has no
# `extra`), an uncalled `.is_cuda`, or a NCCL backend given as `"nccl"` or `Backend.NCCL`.
CUDA_REFERENCE = Evidence(
    (
        r"torch\.cuda",
        r"import\s+cuda",
        r"\.cuda\.(?<!\.extra\.cuda\.)",  # not Triton's `tl.extra.cuda`
        r"\.is_cuda\b(?![\s\\]*\()",
        '"nccl"',
        "'nccl'",
        r"\.NCCL\b",
    ),
    words=("cuda",),
)
# `"cuda"`, `"cuda:0"` or `f"cuda:{i}"` given to a call: positionally (first, or after a starred
# argument), or as `device=`/`type=`; parentheses, line breaks and comments may come between.
_CUDA_STRING = r"(?:[\s\\(]|#[^\r\n]*[\r\n])*[rRuUfF]{0,2}['\"]+cuda(?!\w)"
CUDA_DEVICE_ARGUMENT = Evidence(
    tuple(before + _CUDA_STRING for before in (r"\(", ",", r"device\s*=", r"type\s*="))
)
# `x.new_empty(...)` and the other `new_*` methods.
NEW_TENSOR_CALL = Evidence((r"\.[\s\\]*new_(?:empty|zeros|ones|full)[\s\\]*\(",))
# What makes a tensor int64 in `portlint.analysis.dtypes`: a call to one of torch's int64
# defaults or reductions, or `.int64`/`.long` (a `dtype=`, `.long()`, `.to(torch.long)`); each
# reached as an attribute (`torch.arange`, `x.sum`) or, imported, by its own name (the words).
_INT64_CALLS = (
    "arange", "tensor", "full", "randint", "randperm", "argmax", "argmin", "argsort", "nonzero",
    "multinomial", "searchsorted", "bucketize", "sum", "cumsum", "prod", "cumprod",
)  # fmt: skip
INT64_ORIGIN = Evidence(
    (rf"\.[\s\\]*(?:{'|'.join(_INT64_CALLS)})[\s\\)]*\(", r"\.[\s\\]*(?:int64|long)\b"),
    words=(*_INT64_CALLS, "int64", "long"),
)
# Those that make int64 only as torch's (`torch.arange`, `torch.int64`) or on an integer tensor
# (`x.sum()`): after Triton's `tl.` they are no evidence (see ``portlint.partial._code_of``). Not
# `argmax`, `argmin`, `argsort`, `nonzero` or `long`, which make int64 whatever they are called on.
INT64_BY_NAME_OR_RECEIVER = (
    *(c for c in _INT64_CALLS if c not in ("argmax", "argmin", "argsort", "nonzero")),
    "int64",
)
# A subscript called: `kernel[grid](...)`, the launch of a Triton kernel.
LAUNCH = Evidence((r"\](?:[\s\\]|#[^\r\n]*[\r\n])*\(",))
# `torch.cuda.graph(...)` (a capture; a bare `graph(...)` after `from torch.cuda import graph`) or
# `g.capture_begin()`.
CAPTURE = Evidence((r"\.graph[\s\\)]*\(", "capture_begin"), words=("graph",))


def _cuda_api(name: str) -> Entry:
    return Entry(name, CUDA_API_TRIGGERS, guardable=True, evidence=(CUDA_REFERENCE,))


CATALOG: dict[str, Entry] = {
    "PORT001": Entry("unused-noqa", ("noqa", "NOQA", "NoQA")),
    "PORT101": Entry(
        "hardcoded-cuda-device",
        ('"cuda', "'cuda"),
        guardable=True,
        evidence=(CUDA_DEVICE_ARGUMENT,),
    ),
    "PORT102": Entry("cuda-method-call", (".cuda(",), guardable=True),
    "PORT201": Entry(
        "new-tensor-inherits-int64",
        ("new_empty", "new_full", "new_ones", "new_zeros"),
        evidence=(NEW_TENSOR_CALL, INT64_ORIGIN),
    ),
    "PORT202": Entry(
        "implicit-int64-into-triton",
        ("triton.jit", "import jit"),
        evidence=(LAUNCH, INT64_ORIGIN),
        at_launches=True,
    ),
    "PORT301": Entry("capture-stream-not-warmed", ("graph(", "cuda import"), evidence=(CAPTURE,)),
    "PORT302": Entry("stream-switch-in-capture", ("graph(", "capture_begin"), evidence=(CAPTURE,)),
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


# By needle, the triggers that contain it, each with the codes it triggers (the nine PORT4xx
# rules share theirs): a trigger is looked for only where its needle is.
_BY_NEEDLE: dict[str, list[tuple[str, frozenset[str]]]] = {
    needle: [
        (trigger, frozenset(code for code, e in CATALOG.items() if trigger in e.triggers))
        for trigger in {t: None for entry in CATALOG.values() for t in entry.triggers}
        if needle in trigger
    ]
    for needle in NEEDLES
}


@functools.lru_cache(maxsize=64)
def _needles_for(codes: frozenset[str]) -> list[tuple[str, list[tuple[str, frozenset[str]]]]]:
    """The needles of the triggers of ``codes``, each with those triggers and their codes."""
    needles = [
        (needle, [(trigger, group & codes) for trigger, group in by if group & codes])
        for needle, by in _BY_NEEDLE.items()
    ]
    return [(needle, by) for needle, by in needles if by]


def codes_with_triggers_in(source: str, codes: frozenset[str]) -> list[str]:
    """The text gate: the enabled codes with at least one trigger string in ``source``."""
    found: set[str] = set()
    for needle, by in _needles_for(codes):
        if needle in source:
            for trigger, group in by:
                if not group <= found and trigger in source:
                    found |= group
    return [code for code in CATALOG if code in found] if found else []
