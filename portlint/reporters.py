"""What people read beside the findings: each finding's label, the summary, the fixes applied
and the counts of ``--statistics``. (The output formats are in :mod:`portlint.formats`.)"""

from __future__ import annotations

from collections import Counter

import click

from portlint.catalog import CATALOG
from portlint.findings import Silenced, Violation, applicable

# The code of a diagnostic that is no rule's: a file that could not be read or parsed (ruff's).
INVALID_SYNTAX = "invalid-syntax"
# From this many findings on, a run without a baseline says how to start from one.
BASELINE_HINT_AT = 100


def code_of(violation: Violation) -> str:
    return violation.code or INVALID_SYNTAX


def label(violation: Violation, color: bool = False, unsafe_fixes: bool = False) -> str:
    """``CODE [*] message [likely]`` (``[*]``: a fix that ``--fix`` applies, with
    ``--unsafe-fixes`` where given), coloured as ruff's where asked."""
    if violation.code is None:
        return violation.message
    fixable = "[*] " if applicable(violation, unsafe_fixes) else ""
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
    violations: list[Violation],
    fixed: int = 0,
    unsafe_fixes: bool = False,
    unchecked: int = 0,
    baseline: bool = False,
) -> str:
    """The last lines for people, as ruff's: what was found and fixed, and what ``--fix`` can do
    (with these options: the count of fixes that ``--fix`` with them applies, and the unsafe
    fixes it leaves). ``unchecked``: paths that could not be checked (missing, or an internal
    error): never then "All checks passed!". ``baseline``: a baseline is in use (else many
    findings bring a pointer to ``--write-baseline``)."""
    count = len(violations)
    if not count:
        if fixed:
            return f"Found {_errors(fixed)} ({fixed} fixed, 0 remaining)."
        if unchecked:
            return f"No findings, but {unchecked} path{'s' if unchecked != 1 else ''} could not be checked."
        return "All checks passed!"
    found = count + fixed
    lines = [
        f"Found {_errors(found)}" + (f" ({fixed} fixed, {count} remaining)." if fixed else ".")
    ]
    fixable = sum(1 for v in violations if applicable(v, unsafe_fixes))
    unsafe = _unsafe_fixes(violations, unsafe_fixes)
    hidden = (
        f"{unsafe} unsafe fix{'es' if unsafe != 1 else ''} available with `--fix --unsafe-fixes`"
    )
    if fixable:
        lines.append(f"[*] {fixable} fixable with `--fix`" + (f" ({hidden})." if unsafe else "."))
    elif unsafe:
        lines.append(f"{hidden}.")
    if count >= BASELINE_HINT_AT and not baseline:
        lines.append(
            "To adopt portlint on existing code: `--write-baseline FILE` records these findings "
            "and `--baseline FILE` reports only new ones; or `--since REV` checks only the lines "
            "changed since REV."
        )
    return "\n".join(lines)


def held_back(count: int) -> str:
    """What a run with ``--baseline`` leaves out: the findings the baseline holds."""
    return f"({count} {'finding' if count == 1 else 'findings'} that the baseline holds not shown.)"


def fixed_summary(fixed: int, violations: list[Violation], unsafe_fixes: bool) -> str:
    """What ``--fix-only`` says, as ruff's: the fixes applied, and the unsafe fixes left in
    ``violations`` (what remains)."""
    unsafe = _unsafe_fixes(violations, unsafe_fixes)
    more = f" ({unsafe} fix{'es' if unsafe != 1 else ''} available with `--unsafe-fixes`)"
    return (
        (f"Fixed {_errors(fixed)}" if fixed else "No errors fixed") + (more if unsafe else "") + "."
    )


def _errors(count: int) -> str:
    return f"{count} error{'s' if count != 1 else ''}"


def _unsafe_fixes(violations: list[Violation], unsafe_fixes: bool) -> int:
    """The fixes that only ``--unsafe-fixes`` would apply (none where it is given)."""
    return sum(1 for v in violations if v.fix and not applicable(v, unsafe_fixes))


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


def statistics_items(violations: list[Violation], unsafe_fixes: bool = False) -> list[dict]:
    """Counts per code, most frequent first, as ruff's ``--statistics``: code, name, count,
    whether ``--fix`` (with ``--unsafe-fixes`` where given) fixes some, and how many."""
    counts = Counter(code_of(v) for v in violations)
    fixable = Counter(code_of(v) for v in violations if applicable(v, unsafe_fixes))
    return [
        {
            "code": code,
            "name": CATALOG[code].name if code in CATALOG else "file could not be parsed or read",
            "count": count,
            "fixable": fixable[code] > 0,
            "fixable_count": fixable[code],
        }
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def statistics(violations: list[Violation], unsafe_fixes: bool = False) -> str:
    """The counts as text; marked ``[*]`` where ``--fix`` fixes some, where any is (as ruff's);
    then the total and what ``--fix`` can do (:func:`summary`'s lines)."""
    items = statistics_items(violations, unsafe_fixes)
    marks = {True: "[*] ", False: "[ ] "} if any(item["fixable"] for item in items) else None
    rows = [
        f"{item['count']:>6}  {item['code']:<12} {marks[item['fixable']] if marks else ''}"
        f"{item['name']}"
        for item in items
    ]
    if not rows:
        return ""
    # (The total and the fixes, without the pointer to a baseline: these counts are the overview.)
    total = summary(violations, unsafe_fixes=unsafe_fixes, baseline=True)
    return "\n".join([*rows, total]) + "\n"
