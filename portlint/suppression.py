"""``# noqa`` comments, as ruff reads them: per line, and ``# portlint: noqa`` for a whole file."""

from __future__ import annotations

import io
import re
import tokenize

from portlint.rule import Violation

_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
LINE_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
FILE_NOQA = re.compile(rf"#\s*portlint\s*:\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)

ALL = None  # a suppression without codes: every code


def _codes(match: re.Match[str]) -> frozenset[str] | None:
    codes = match.group("codes")
    return ALL if codes is None else frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)


def _comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment; tokenize never sees ``#`` inside a string as a comment."""
    try:
        return [
            (token.start[0], token.string)
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return [
            (n, line[line.index("#") :])
            for n, line in enumerate(source.splitlines(), 1)
            if "#" in line
        ]


def _covers(codes: frozenset[str] | None, code: str | None) -> bool:
    return codes is ALL or code in codes


def apply_suppressions(violations: list[Violation], source: str) -> list[Violation]:
    """Drop the violations a ``# noqa`` comment suppresses."""
    if not violations:
        return violations
    by_line: dict[int, frozenset[str] | None] = {}
    file_wide: list[frozenset[str] | None] = []
    for line, text in _comments(source):
        if match := FILE_NOQA.search(text):
            file_wide.append(_codes(match))
        elif match := LINE_NOQA.search(text):
            by_line[line] = _codes(match)
    return [
        v
        for v in violations
        if v.code is None
        or not (
            any(_covers(codes, v.code) for codes in file_wide)
            or (v.line in by_line and _covers(by_line[v.line], v.code))
        )
    ]
