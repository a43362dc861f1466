"""Count an audit's read rows against a later output: which are still reported, and how many of
those were read real.

    python scripts/audit_recount.py AUDIT.md FINDINGS.txt [FINDINGS.txt ...]

``AUDIT.md`` holds the tables an audit filled in (``| # | path:line:col | CODE | verdict | ... |``,
as ``scripts/audit_sample.py`` prints them); each ``FINDINGS.txt`` is a concise output of
``portlint check`` run as the audit ran it. A row counts as still reported where some output
holds its path, line, column and code. Prints, per verdict, the rows read and the rows still
reported, and the share of real among them.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

ROW = re.compile(r"^\|\s*\d+\s*\|\s*([^|\s]+:\d+:\d+)\s*\|\s*(PORT\d+)\s*\|\s*([^|]*?)\s*\|")
FINDING = re.compile(r"^([^:\s]+:\d+:\d+): (PORT\d+) ")
VERDICTS = ("real", "by design", "misread")


def verdict_of(text: str) -> str | None:
    """The verdict a cell names first (``real (MUSA)``, ``**by design**``), if it names one."""
    cleaned = text.replace("*", "").strip().lower()
    return next((v for v in VERDICTS if cleaned.startswith(v)), None)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    reported = set()
    for output in argv[1:]:
        for line in Path(output).read_text().splitlines():
            match = FINDING.match(line)
            if match:
                reported.add(match.groups())
    read, kept = Counter(), Counter()
    for line in Path(argv[0]).read_text().splitlines():
        match = ROW.match(line)
        verdict = verdict_of(match.group(3)) if match else None
        if match is None or verdict is None:
            continue
        read[verdict] += 1
        kept[verdict] += (match.group(1), match.group(2)) in reported
    for verdict in VERDICTS:
        print(f"{verdict}: {read[verdict]} read, {kept[verdict]} still reported")
    total = sum(kept.values())
    share = f"{kept['real'] / total:.0%}" if total else "-"
    print(
        f"still reported: {total} of {sum(read.values())}; real among them: {kept['real']} ({share})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
