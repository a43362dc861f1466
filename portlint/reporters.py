"""Turning results into text for people and JSON for tools (ruff's JSON field names)."""

from __future__ import annotations

import json
import os
from collections import Counter

from portlint.registry import all_rules
from portlint.rule import Violation


def _label(violation: Violation) -> str:
    if violation.code is None:
        return violation.message
    marker = " [likely]" if violation.confidence == "likely" else ""
    return f"{violation.code} {violation.message}{marker}"


def text_report(violations: list[Violation], *, fixable_hint: bool = False) -> str:
    lines = [f"{v.path}:{v.line}:{v.col}: {_label(v)}" for v in violations]
    return "\n".join(lines) + ("\n" if lines else "")


def summary(violations: list[Violation]) -> str:
    count = len(violations)
    if not count:
        return "All checks passed!"
    return f"Found {count} error{'s' if count != 1 else ''}."


def statistics(violations: list[Violation]) -> str:
    counts = Counter(v.code or "syntax-error" for v in violations)
    rules = all_rules()
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        name = rules[code].name if code in rules else "file could not be parsed or read"
        rows.append(f"{count:>6}  {code:<12} {name}")
    return "\n".join(rows) + ("\n" if rows else "")


def json_report(violations: list[Violation]) -> str:
    items = [
        {
            "cell": None,
            "code": v.code,
            "confidence": v.confidence,
            "end_location": {"column": v.end_col or v.col, "row": v.end_line or v.line},
            "filename": os.path.abspath(v.path),
            "fix": None,
            "location": {"column": v.col, "row": v.line},
            "message": v.message,
            "noqa_row": v.line,
            "url": None,
        }
        for v in violations
    ]
    return json.dumps(items, indent=2) + "\n"
