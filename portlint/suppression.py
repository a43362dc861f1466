"""``# noqa`` comments, as ruff reads them: per line, and ``# portlint: noqa`` for a whole file.

Also what suppression hygiene needs: which line directives suppressed nothing (PORT001) and
where a new directive can go (``--add-noqa``).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from portlint.findings import Violation, split_lines

_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
LINE_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
FILE_NOQA = re.compile(rf"#\s*portlint\s*:\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
PORTLINT_CODE = re.compile(r"PORT\d+", re.IGNORECASE)
# Every directive says "noqa": where no line that does can matter, nothing is tokenized.
NOQA = re.compile("noqa", re.IGNORECASE)
PORTLINT_NOQA = re.compile(r"noqa\s*:[^\r\n]*PORT\d", re.IGNORECASE)  # one that names our codes

ALL = None  # a suppression without codes: every code


# What begins the reason given for an exemption after its codes (`noqa: PORT401 -- profiler`).
REASON_MARKERS = ("--", "\u2014", "\u2013")


@dataclass(frozen=True)
class Directive:
    """A line's ``# noqa`` directive: its codes (None: all), and where it is (1-based column)."""

    line: int
    col: int
    end_col: int
    codes: tuple[str, ...] | None

    def rewrite(self, body: str, codes: list[str]) -> str:
        """``body`` (its line, without the ending) with this directive naming ``codes``; with
        none, the directive removed, and the reason given for it (``# noqa: X -- why``) too;
        other text after it in the comment stays a comment."""
        before, after = body[: self.col - 1], body[self.end_col - 1 :]
        if codes:
            return f"{before}# noqa: {', '.join(codes)}{after}"
        if after.lstrip().startswith(REASON_MARKERS):
            after = ""
        return f"{before}#{after}" if after.strip() else before.rstrip()


def _codes(match: re.Match[str]) -> tuple[str, ...] | None:
    codes = match.group("codes")
    return ALL if codes is None else tuple(c.upper() for c in re.split(r"[\s,]+", codes) if c)


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(line, 0-based column, text) of every comment; ``#`` inside a string is no comment."""
    try:
        return [
            (token.start[0], token.start[1], token.string)
            for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return [
            (n, line.index("#"), line[line.index("#") :])
            for n, line in enumerate(split_lines(source), 1)
            if "#" in line
        ]


def marker_lines(source: str, markers: tuple[str, ...]) -> dict[int, str]:
    """The lines whose comment holds one of ``markers`` (a project's own mark of sanctioned code,
    such as ``#ignore-cuda``; spaces do not count, so ``# ignore-cuda`` is one too), with it."""
    wanted = {"".join(marker.split()): marker for marker in markers}
    found: dict[int, str] = {}
    if not any(marker.lstrip("#").strip() in source for marker in markers):
        return found
    for line, _, text in _comments(source):
        compact = "".join(text.split())
        for key, marker in wanted.items():
            if key.lstrip("#") in compact:
                found[line] = marker
    return found


# A comment that waives CUDA by name, as projects that check their own `torch.cuda` uses write
# it: `#ignore-cuda`, `# allow-cuda`, `# cuda-ok`, `# CUDA only` (the whole comment, or its
# first words before punctuation: `# cuda-only: the NVLink path`).
CUDA_WAIVER = re.compile(
    r"#\s*(?P<marker>(?:ignore|allow)[-_ ]?cuda|cuda[-_ ]?(?:ok|only|allowed))\s*(?:$|[:;,.(])",
    re.IGNORECASE,
)
_WAIVER_TEXT = re.compile(r"(?:ignore|allow)[-_ ]?cuda|cuda[-_ ]?(?:ok|only|allowed)", re.I)


def cuda_waiver_lines(source: str, wanted: set[int]) -> dict[int, str]:
    """Those of the lines ``wanted`` whose comment waives CUDA by name (:data:`CUDA_WAIVER`),
    with the comment. (The file is tokenized only where one of those lines names a waiver.)"""
    lines = split_lines(source)
    if not any(_WAIVER_TEXT.search(lines[n - 1]) for n in wanted if 0 < n <= len(lines)):
        return {}
    return {
        line: text.strip()
        for line, _, text in _comments(source)
        if line in wanted and CUDA_WAIVER.match(text)
    }


def noqa_lines(source: str) -> set[int]:
    """The lines (1-based, as Python counts them) on which "noqa" occurs, in a comment or not."""
    return {n for n, line in enumerate(split_lines(source), 1) if NOQA.search(line)}


def directives(source: str) -> tuple[dict[int, Directive], list[tuple[str, ...] | None]]:
    """The line directives by line, and the codes of each file-wide directive."""
    by_line: dict[int, Directive] = {}
    file_wide: list[tuple[str, ...] | None] = []
    for line, col, text in _comments(source):
        if match := FILE_NOQA.search(text):
            file_wide.append(_codes(match))
        elif match := LINE_NOQA.search(text):
            by_line[line] = Directive(
                line, col + match.start() + 1, col + match.end() + 1, _codes(match)
            )
    return by_line, file_wide


def _covers(codes: tuple[str, ...] | None, code: str | None) -> bool:
    return codes is ALL or code in codes


def apply_suppressions(
    violations: list[Violation], source: str
) -> tuple[list[Violation], set[tuple[int, str]]]:
    """Drop the violations a ``# noqa`` comment suppresses.

    Returns what is left, and the (line, code) pairs that line directives suppressed.
    """
    if not violations:
        return violations, set()
    lines = noqa_lines(source)
    if not any(v.line in lines for v in violations) and not FILE_NOQA.search(source):
        return violations, set()  # no directive on their lines, none for the whole file
    by_line, file_wide = directives(source)
    kept: list[Violation] = []
    used: set[tuple[int, str]] = set()
    for v in violations:
        if v.code is None:
            kept.append(v)
            continue
        if any(_covers(codes, v.code) for codes in file_wide):
            continue
        directive = by_line.get(v.line)
        if directive is not None and _covers(directive.codes, v.code):
            used.add((v.line, v.code))
        else:
            kept.append(v)
    return kept, used


def commentable_lines(source: str) -> set[int] | None:
    """Lines at whose end a comment can be added: not inside a string, not continued with ``\\``.

    None when the source does not tokenize.
    """
    lines = [line.rstrip("\r\n") for line in split_lines(source)]
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None
    return {
        n for n, text in enumerate(lines, 1) if n not in inside and not text.rstrip().endswith("\\")
    }


UNUSED_NOQA = "PORT001"  # the rule that reports the codes of a directive that suppress nothing


def add_noqa(source: str, violations: list[Violation]) -> tuple[str, int, list[int]]:
    """``source`` with a ``# noqa: CODES`` for each finding on its first line.

    Existing directives are extended, and lose the codes that suppress nothing there (those an
    unused-noqa finding of the line names), as ruff's ``--add-noqa`` does; no directive gets the
    unused-noqa code itself. Returns the new source, how many lines were changed, and the lines
    where no comment can go (inside a multi-line string, or continued with ``\\``).
    """
    wanted: dict[int, list[str]] = {}
    stale: dict[int, set[str]] = {}
    for v in violations:
        if v.code == UNUSED_NOQA:  # (its message names, in backticks, the codes it found unused)
            stale.setdefault(v.line, set()).update(re.findall(r"`([A-Z]+[0-9]+)`", v.message))
            wanted.setdefault(v.line, [])
        elif v.code is not None and v.code not in wanted.setdefault(v.line, []):
            wanted[v.line].append(v.code)
    existing, _ = directives(source)
    commentable = commentable_lines(source) or set()
    lines = split_lines(source)
    changed, skipped = 0, []
    for number, codes in sorted(wanted.items()):
        body = lines[number - 1].rstrip("\r\n")
        ending = lines[number - 1][len(body) :]
        directive = existing.get(number)
        if directive is not None:
            if directive.codes is ALL:
                continue
            kept = [c for c in directive.codes if c not in stale.get(number, ())]
            merged = [*kept, *(c for c in codes if c not in kept)]
            new = directive.rewrite(body, merged)
        elif not codes:
            continue
        elif number in commentable:
            new = f"{body}  # noqa: {', '.join(codes)}"
        else:
            skipped.append(number)
            continue
        if new != body:
            lines[number - 1] = new + ending
            changed += 1
    return "".join(lines), changed, skipped
