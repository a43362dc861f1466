"""The text gate: which rules can report in a file, decided from its text alone.

Two questions, both asked without parsing: does the file contain one of a rule's trigger strings
(:func:`codes_with_triggers_in`; a file with none is not even parsed, and LibCST is not imported),
and does its code show each piece of the rule's evidence (:func:`shows_evidence`; code: the text
without the lines that are only a comment, see :func:`code_of`). The cut
(:mod:`portlint.speed.cut`) asks the second question of each function. What a rule's triggers and
evidence are, the rule declares (``portlint.rule.Rule``); the catalog holds them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from portlint.evidence import Evidence
from portlint.facts import INT64_ONLY_AS_TORCH_OR_ON_INTEGERS

COMMENT_LINE = re.compile(r"\n(?<!\\\n)(?<!\\\r\n)[ \t]*#[^\r\n]*")


def _has_triple_quoted_f_string(source: str) -> bool:
    """Whether a triple-quoted f-string (``f'''``, ``Fr'''``...) is in ``source``
    (a line of it that starts with ``#`` may hold code: ``{...}``): each triple quote's prefix
    looked at (a dozen scans of the whole text cost four times as much)."""
    for quotes in ('"""', "'''"):
        at = source.find(quotes)
        while at != -1:
            if source[at - 1 : at] in ("f", "F") or source[at - 2 : at] in ("fr", "fR", "Fr", "FR"):
                return True
            at = source.find(quotes, at + 1)
    return False


@functools.lru_cache(maxsize=1)  # asked by the gate (:func:`shows_evidence`), then by the cut
def code_of(source: str) -> str:
    """The text evidence is sought in: ``source`` with the lines that are only a comment made
    empty (but where a triple-quoted f-string may make such a line code), and Triton's
    ``tl.arange``, ``tl.sum``, ``tl.int64``... written ``tl_arange`` (no int64 evidence: see
    :func:`_names_triton_only`) where ``tl`` can only be Triton's language module."""
    code = source
    if "#" in source and not _has_triple_quoted_f_string(source):
        code = COMMENT_LINE.sub("\n", source)
    if "tl." in code and _names_triton_only(code):
        code = TRITON_MAKER_DOT.sub(r"tl\1_", code)
    return code


# What comes before `import` in a line that is an import statement and nothing else.
IMPORT_START = re.compile(r"[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?")
# The name `tl` (not `x.tl` or `utl`), used otherwise than as `tl.<attribute>`.
BARE_TL = re.compile(r"tl(?<![\w.]tl)(?![\s\\]*\.)(?!\w)")
# The dot of `tl.sum`, `tl.arange`...: one of the int64 makers that make int64 only as torch's
# or on an integer tensor (``facts.INT64_ONLY_AS_TORCH_OR_ON_INTEGERS``).
TRITON_MAKER_DOT = re.compile(
    r"tl(?<![\w.]tl)([\s\\]*)\.(?=[\s\\]*(?:"
    + "|".join(INT64_ONLY_AS_TORCH_OR_ON_INTEGERS)
    + r")\b)"
)


def _names_triton_only(code: str) -> bool:
    """Whether ``tl`` in ``code`` is only ever bound by imports that do not mention torch
    (``import triton.language as tl``, ``from vllm.triton_utils import tl``) and used only as
    ``tl.<attribute>``: then ``tl.sum(...)`` is no int64 origin to the dtype flow
    (``portlint.analysis.dtypes``), which knows the makers by their torch names and a reduction
    by its receiver, and a receiver ``tl`` that nothing assigns holds no known tensor. Any other
    use (an assignment, a parameter, ``import torch as tl``, a mention in a string, an import
    sharing its line with other code) says no."""
    imports = []
    for line_start, match in import_statements(code):
        statement = code[line_start : match.end()]
        if IMPORT_START.fullmatch(code, line_start, match.start()) and not (
            "torch" in statement or ";" in statement
        ):
            imports.append((match.start(), match.end()))
    return all(
        any(start <= bare.start() < end for start, end in imports)
        for bare in BARE_TL.finditer(code)
    )


def words_pattern(names: set[str]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")


IMPORTED = re.compile(r"import\s+(?:\([^)]*\)|[^\r\n]*(?:\\\r?\n[^\r\n]*)*)")


def import_statements(text: str) -> Iterator[tuple[int, re.Match]]:
    """Each import in ``text`` (from its ``import``), with where its line starts."""
    for match in IMPORTED.finditer(text):
        yield text.rfind("\n", 0, match.start()) + 1, match


def imports_in(text: str) -> str:
    """The import statements in ``text``, each from the start of its line."""
    return "\n".join(text[start : match.end()] for start, match in import_statements(text))


@functools.cache
def compiled(patterns: tuple[str, ...]) -> list[re.Pattern]:
    return [re.compile(pattern) for pattern in patterns]


def found_in(source: str, patterns: tuple[str, ...]) -> list[re.Pattern]:
    """Those of ``patterns`` that match somewhere in ``source`` (the others cannot match a part
    of it)."""
    return [pattern for pattern in compiled(patterns) if pattern.search(source)]


def literally(strings: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(map(re.escape, strings)))


def shows_evidence(source: str, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``source`` has every piece of a rule's ``evidence`` somewhere in its code, or one of
    its words in an import: else the rule cannot report in it."""
    code = code_of(source)
    return all(
        any(pattern.search(code) for pattern in compiled(piece.patterns))
        or bool(piece.words and words_pattern(set(piece.words)).search(imports_in(code)))
        for piece in evidence
    )


# Strings that many triggers contain. A file holding none of a trigger's needle cannot hold the
# trigger, so a few scans of a text rule out most rules (most files of a tree are such files).
COMMON_NEEDLES = ("cuda", "noqa", "NOQA", "NoQA", "nccl", "NCCL", "new_", "jit", "graph(")


@functools.cache
def _by_needle() -> dict[str, list[tuple[str, frozenset[str]]]]:
    """By needle, the triggers that contain it, each with the codes it triggers (the nine PORT4xx
    rules share theirs): a trigger is looked for only where its needle is. A trigger that
    contains no common needle is a needle of its own."""
    from portlint.catalog import CATALOG  # (here: the catalog is generated from modules that
    # import this one)

    triggers = {t: None for entry in CATALOG.values() for t in entry.triggers}
    needles = (*COMMON_NEEDLES, *(t for t in triggers if not any(n in t for n in COMMON_NEEDLES)))
    return {
        needle: [
            (trigger, frozenset(code for code, e in CATALOG.items() if trigger in e.triggers))
            for trigger in triggers
            if needle in trigger
        ]
        for needle in needles
    }


@functools.lru_cache(maxsize=64)
def _needles_for(codes: frozenset[str]) -> list[tuple[str, list[tuple[str, frozenset[str]]]]]:
    """The needles of the triggers of ``codes``, each with those triggers and their codes."""
    needles = [
        (needle, [(trigger, group & codes) for trigger, group in by if group & codes])
        for needle, by in _by_needle().items()
    ]
    return [(needle, by) for needle, by in needles if by]


def codes_with_triggers_in(source: str, codes: frozenset[str]) -> list[str]:
    """The text gate: the enabled codes with at least one trigger string in ``source``, in code
    order."""
    found: set[str] = set()
    for needle, by in _needles_for(codes):
        if needle in source:
            for trigger, group in by:
                if not group <= found and trigger in source:
                    found |= group
    return sorted(found)
