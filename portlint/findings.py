"""Findings and their fixes as plain data: what the engine, the cache and the reporters pass
around. Nothing here imports LibCST, so a run that parses nothing never loads it."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

SAFE, UNSAFE = "safe", "unsafe"
# What a finding's message fits in (the concise format's one line), but where it quotes the
# user's code: the reasoning goes to its detail.
MESSAGE_WIDTH = 90


@dataclass(frozen=True, order=True)
class Edit:
    """Replace lines ``line`` .. ``end_line - 1`` (1-based, whole lines) with ``content``."""

    line: int
    col: int
    end_line: int
    end_col: int
    content: str


@dataclass(frozen=True, order=True)
class Fix:
    applicability: str  # SAFE or UNSAFE
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True, order=True)
class Violation:
    """One finding. Lines are 1-based, columns 1-based (as ruff prints them).

    ``code`` is None for a file that could not be read or parsed; ``message`` then says why.
    ``message`` is short: the rule's point and the replacement; ``detail`` is the reasoning (the
    torch release needed, caveats, why), shown by ``--output-format full``, JSON and editors.
    ``confidence`` is "certain" where the rule can tell, "likely" where the finding needs a look.
    """

    path: str
    line: int
    col: int
    code: str | None
    message: str
    end_line: int = 0
    end_col: int = 0
    confidence: str = "certain"
    fix: Fix | None = None
    detail: str = ""


@dataclass(frozen=True, order=True)
class Silenced:
    """A finding that the code's own account of its platform silenced: the finding, the kind of
    reason (``guard``, an inference of ``portlint.platform.INFERENCES``, ``waiver``,
    ``duplicate`` or ``rule``: what the rule itself holds back), what says so, and the line that says so (0: the module's path)."""

    violation: Violation
    kind: str
    why: str
    line: int


def applicable(violation: Violation, unsafe_fixes: bool) -> Fix | None:
    """The finding's fix, where ``--fix`` applies it: a safe one, or any with
    ``--unsafe-fixes``."""
    fix = violation.fix
    return fix if fix is not None and (fix.applicability == SAFE or unsafe_fixes) else None


# A line as Python and LibCST count them: ended by \r\n, \r or \n (``str.splitlines`` also ends
# one at a form feed and other separators, which puts everything after on the wrong line).
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their ends, as Python numbers them."""
    if "\r" in text:
        return LINE.findall(text)
    lines = [line + "\n" for line in text.split("\n")]  # (the same, three times as fast)
    last = lines.pop()
    if last != "\n":  # (a last line without its end)
        lines.append(last[:-1])
    return lines


def line_edits(old: str, new: str) -> tuple[Edit, ...]:
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    # Only the lines between the common head and tail are diffed: the diff is quadratic in the
    # lines it is given where many are alike (a long table of numbers).
    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old_lines), len(new_lines)) - head
        and old_lines[-1 - tail] == new_lines[-1 - tail]
    ):
        tail += 1
    a, b = old_lines[head : len(old_lines) - tail], new_lines[head : len(new_lines) - tail]
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return tuple(
        Edit(head + i1 + 1, 1, head + i2 + 1, 1, "".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Apply non-overlapping line edits (as made by :func:`line_edits` on ``source``)."""
    lines = split_lines(source)
    for edit in sorted(edits, reverse=True):
        lines[edit.line - 1 : edit.end_line - 1] = [edit.content] if edit.content else []
    return "".join(lines)
