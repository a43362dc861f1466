"""Turning results into text for people and JSON for tools (ruff's JSON field names)."""

from __future__ import annotations

import json
import os
from collections import Counter

from portlint.catalog import CATALOG
from portlint.findings import SAFE, Fix, Violation


def label(violation: Violation) -> str:
    if violation.code is None:
        return violation.message
    fixable = "[*] " if violation.fix and violation.fix.applicability == SAFE else ""
    likely = " [likely]" if violation.confidence == "likely" else ""
    return f"{violation.code} {fixable}{violation.message}{likely}"


def text_report(violations: list[Violation]) -> str:
    lines = [f"{v.path}:{v.line}:{v.col}: {label(v)}" for v in violations]
    return "\n".join(lines) + ("\n" if lines else "")


def summary(violations: list[Violation], fixed: int = 0, unsafe_fixes: bool = False) -> str:
    count = len(violations)
    if not count:
        return (
            f"Found {fixed} error{'s' if fixed != 1 else ''} ({fixed} fixed, 0 remaining)."
            if fixed
            else "All checks passed!"
        )
    found = count + fixed
    lines = [
        f"Found {found} error{'s' if found != 1 else ''}"
        + (f" ({fixed} fixed, {count} remaining)." if fixed else ".")
    ]
    safe = sum(1 for v in violations if v.fix and (v.fix.applicability == SAFE or unsafe_fixes))
    hidden = sum(
        1 for v in violations if v.fix and v.fix.applicability != SAFE and not unsafe_fixes
    )
    if safe:
        option = "`--fix --unsafe-fixes`" if unsafe_fixes else "`--fix`"
        lines.append(f"[*] {safe} fixable with {option}.")
    if hidden:
        fixes = "fix" if hidden == 1 else "fixes"
        lines.append(
            f"No fixes available ({hidden} hidden {fixes} can be enabled with the "
            "`--unsafe-fixes` option)."
        )
    return "\n".join(lines)


def fixes_report(applied: Counter[tuple[str, str]]) -> str:
    """What ``--show-fixes`` prints: per file, how many fixes of each code were applied."""
    if not applied:
        return "No errors fixed.\n"
    lines = [f"Fixed {sum(applied.values())} error{'s' if sum(applied.values()) != 1 else ''}:"]
    for path in sorted({p for p, _ in applied}):
        lines.append(f"- {path}:")
        for (p, code), count in sorted(applied.items()):
            if p == path:
                lines.append(f"    {count} × {code} ({CATALOG[code].name})")
    return "\n".join(lines) + "\n"


def statistics(violations: list[Violation]) -> str:
    counts = Counter(v.code or "syntax-error" for v in violations)
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        name = CATALOG[code].name if code in CATALOG else "file could not be parsed or read"
        rows.append(f"{count:>6}  {code:<12} {name}")
    return "\n".join(rows) + ("\n" if rows else "")


def _fix_json(fix: Fix | None) -> dict | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.message,
        "edits": [
            {
                "content": e.content,
                "location": {"row": e.line, "column": e.col},
                "end_location": {"row": e.end_line, "column": e.end_col},
            }
            for e in fix.edits
        ],
    }


def json_items(violations: list[Violation]) -> list[dict]:
    """The findings as ruff's JSON objects (plus ``confidence``)."""
    return [
        {
            "cell": None,
            "code": v.code,
            "confidence": v.confidence,
            "end_location": {"column": v.end_col or v.col, "row": v.end_line or v.line},
            "filename": os.path.abspath(v.path),
            "fix": _fix_json(v.fix),
            "location": {"column": v.col, "row": v.line},
            "message": v.message,
            "noqa_row": v.line,
            "url": None,
        }
        for v in violations
    ]


def json_report(violations: list[Violation]) -> str:
    return json.dumps(json_items(violations), indent=2) + "\n"
