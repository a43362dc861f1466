"""What a rule declares for the text gate and the cut, and the pieces of evidence rules share.

A rule class declares its ``triggers`` (strings one of which must be in a file for the rule to
run on it) and its ``evidence`` (what the code of a function must show for the rule to report
there: see :class:`Evidence`). ``portlint/catalog.py`` holds them for every rule as
:class:`Entry` values, generated from the rules (``python -m portlint.generate``), so that the
gate and the configuration know every rule without importing LibCST. Nothing here imports it.
"""

from __future__ import annotations

from collections import namedtuple

from portlint import facts


# (Named tuples, not dataclasses: this module is imported by every run, even one that parses
# nothing, and a frozen dataclass costs five times as much to define.)
class Evidence(namedtuple("Evidence", ["patterns", "words"], defaults=((),))):
    """What the code of a function holding one of a rule's findings must show: a match of one of
    ``patterns`` (regular expressions), or a name that a module-level import mentioning one of
    ``words`` defines (``from torch import arange as ar`` makes ``ar`` evidence of an ``arange``
    call), or one of ``words`` in an import of the function's own. (Only imports: a name bound
    otherwise resolves to nothing.) It may show where the rule reports nothing (partial parsing
    keeps more code then); it must show wherever the rule can report, which the generated tests
    check on every rule's cases. (Each pattern starts with a literal: Python's ``re`` then finds
    candidates as fast as ``str.find``; an alternation or a character class at the start costs
    ten times more.)
    """

    __slots__ = ()
    patterns: tuple[str, ...]
    words: tuple[str, ...]  # none: a name cannot carry it (a string literal, say)


class Entry(
    namedtuple(
        "Entry",
        ["module", "name", "triggers", "guardable", "evidence", "at_launches", "reads_class"],
        defaults=(False, (), False, False),
    )
):
    """What the gate, the cut and the configuration know of one rule (see ``Rule``)."""

    __slots__ = ()
    module: str  # the rule's module in portlint.rules
    name: str
    triggers: tuple[str, ...]
    guardable: bool
    evidence: tuple[Evidence, ...]
    at_launches: bool
    reads_class: bool


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
# That, or a gradient scaler made (`torch.amp.GradScaler(...)`, FSDP's `ShardedGradScaler(...)`),
# or imported under another name: what PORT405 reports.
# (And the forward beside a `custom_bwd`, which tells whether that backward's autocast is off.)
CUDA_REFERENCE_OR_SCALER = Evidence(
    (*CUDA_REFERENCE.patterns, r"GradScaler[\s\\)]*\(", r"custom_fwd\b"),
    words=(*CUDA_REFERENCE.words, "GradScaler"),
)
# `"cuda"`, `"cuda:0"` or `f"cuda:{i}"` given to a call: positionally (first, or after a starred
# argument), or as `device=`/`type=`/`device_type=`/`map_location=`/`default=`; or the default of
# a parameter, or the value of a name, named for a device (`device: str = "cuda"`, `DEVICE =
# "cuda"`), or the `else` of a choice given so (`torch.device("cpu" if no_gpu else "cuda")`);
# parentheses, line breaks and comments may come between.
_CUDA_STRING = r"(?:[\s\\(]|#[^\r\n]*[\r\n])*[rRuUfF]{0,2}['\"]+cuda(?!\w)"
CUDA_DEVICE_ARGUMENT = Evidence(
    tuple(
        before + _CUDA_STRING
        # (Not from a parenthesis after another: the first of a run matches where a later one
        # does, and searching from each of a long run would take time quadratic in its length.)
        for before in (
            r"(?<!\()\(",
            ",",
            r"device\w*\s*(?::[^=\r\n]*)?=",
            r"DEVICE\w*\s*(?::[^=\r\n]*)?=",
            r"default\s*=",
            r"type\s*=",
            r"map_location\s*=",
            r"else\b",
        )
    )
)
# `x.new_empty(...)` and the other `new_*` methods.
NEW_TENSOR_CALL = Evidence(
    (rf"\.[\s\\]*(?:{'|'.join(sorted(facts.NEW_METHODS))})[\s\\]*\(",),
)
# What makes a tensor int64 in `portlint.analysis.dtypes`: a call to one of torch's int64
# makers, or `.int64`/`.long` (a `dtype=`, `.long()`, `.to(torch.long)`); each reached as an
# attribute (`torch.arange`, `x.sum`) or, imported, by its own name (the words).
INT64_ORIGIN = Evidence(
    (rf"\.[\s\\]*(?:{'|'.join(facts.INT64_CALLS)})[\s\\)]*\(", r"\.[\s\\]*(?:int64|long)\b"),
    words=(*facts.INT64_CALLS, "int64", "long"),
)
# A subscript called: `kernel[grid](...)`, the launch of a Triton kernel.
LAUNCH = Evidence((r"\](?:[\s\\]|#[^\r\n]*[\r\n])*\(",))
# `torch.cuda.graph(...)` (a capture; a bare `graph(...)` after `from torch.cuda import graph`), a
# call of the module's own context manager around it (`graph_context(g)`: one with `graph` in its
# name; `portlint.analysis.capture`) or `g.capture_begin()`.
CAPTURE = Evidence((r"graph\w*[\s\\)]*\(", facts.CAPTURE_BEGIN), words=("graph",))
