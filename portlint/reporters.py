"""What people read beside the findings: each finding's label, the summary, the fixes applied
and the counts of ``--statistics``. (The output formats are in :mod:`portlint.formats`.)"""

from __future__ import annotations

from collections import Counter

import click

from portlint.catalog import CATALOG
from portlint.findings import SAFE, Silenced, Violation

# The code of a diagnostic that is no rule's: a file that could not be read or parsed (ruff's).
INVALID_SYNTAX = "invalid-syntax"


def code_of(violation: Violation) -> str:
    return violation.code or INVALID_SYNTAX


def label(violation: Violation, color: bool = False) -> str:
    """``CODE [*] message [likely]`` (``[*]``: a safe fix), coloured as ruff's where asked."""
    if violation.code is None:
        return violation.message
    fixable = "[*] " if violation.fix and violation.fix.applicability == SAFE else ""
    likely = " [likely]" if violation.confidence == "likely" else ""
    if color:
        code = click.style(violation.code, fg="red", bold=True)
        fixable = click.style(fixable, fg="cyan") if fixable else ""
        likely = click.style(likely, fg="yellow") if likely else ""
        return f"{code} {fixable}{violation.message}{likely}"
    return f"{violation.code} {fixable}{violation.message}{likely}"


def location(violation: Violation, color: bool = False) -> str:
    """``path:line:col:``, the path in bold where coloured."""
    if not color:
        return f"{violation.path}:{violation.line}:{violation.col}:"
    colon = click.style(":", fg="cyan")
    path = click.style(violation.path, bold=True)
    return f"{path}{colon}{violation.line}{colon}{violation.col}{colon}"


def summary(
    violations: list[Violation], fixed: int = 0, unsafe_fixes: bool = False, unchecked: int = 0
) -> str:
    """The last lines for people: what was found and fixed, and what ``--fix`` can do.
    ``unchecked``: paths that could not be checked (missing, or an internal error): never then
    "All checks passed!"."""
    count = len(violations)
    if not count:
        if fixed:
            return f"Found {fixed} error{'s' if fixed != 1 else ''} ({fixed} fixed, 0 remaining)."
        if unchecked:
            return f"No findings, but {unchecked} path{'s' if unchecked != 1 else ''} could not be checked."
        return "All checks passed!"
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


def silenced_report(silenced: list[Silenced]) -> str:
    """What ``--show-silenced`` adds: each finding the code's account of its platform silenced,
    the reason and the line that gives it, then the count by kind of reason."""
    if not silenced:
        return ""
    lines = [f"Silenced ({len(silenced)}), with the reason and the line that gives it:"]
    for s in silenced:
        v = s.violation
        where = f"line {s.line}" if s.line else "the module"
        lines += [f"{v.path}:{v.line}:{v.col}: {label(v)}", f"    {s.kind}: {s.why} ({where})"]
    kinds = Counter(s.kind for s in silenced)
    lines.append("By kind: " + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()))
    return "\n".join(lines) + "\n"


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


def statistics_items(violations: list[Violation]) -> list[dict]:
    """Counts per code, most frequent first (as ruff's ``--statistics``: code, name, count, and how
    many have a safe fix)."""
    counts = Counter(code_of(v) for v in violations)
    fixable = Counter(v.code for v in violations if v.fix and v.fix.applicability == SAFE)
    return [
        {
            "code": code,
            "name": CATALOG[code].name if code in CATALOG else "file could not be parsed or read",
            "count": count,
            "fixable": fixable[code],
        }
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def statistics(violations: list[Violation]) -> str:
    rows = [
        f"{item['count']:>6}  {item['code']:<12} {item['name']}"
        for item in statistics_items(violations)
    ]
    return "\n".join(rows) + ("\n" if rows else "")
