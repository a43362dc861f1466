"""A seeded random sample of the fix hunks of one fix_check run, with context, to read and judge.

    python scripts/sample_fix_hunks.py SCRATCH [--count 20] [--seed 20]

SCRATCH is a scratch repository that ``scripts/fix_check.py --keep`` left (its commit ``HEAD~1``
is the original tree, ``HEAD`` the fixed one). Prints each sampled hunk of ``git diff -U0
HEAD~1 HEAD`` (numbered), with the original lines around it, for the verdicts in docs/fixes.md.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
from pathlib import Path

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
CONTEXT = 12  # original lines shown before a hunk (the function's head, mostly)


def hunks(scratch: Path) -> list[tuple[str, int, str]]:
    """(path, first original line, hunk text) for each hunk of the fix."""
    diff = subprocess.run(
        ["git", "diff", "-U0", "HEAD~1", "HEAD"], cwd=scratch, capture_output=True, text=True
    ).stdout
    found: list[tuple[str, int, str]] = []
    path = ""
    for line in diff.splitlines():
        if line.startswith("+++ b/"):
            path = line[6:]
        elif m := HUNK.match(line):
            found.append((path, int(m.group(1)), line + "\n"))
        elif found and line[:1] in "+-" and not line.startswith(("+++", "---")):
            found[-1] = (found[-1][0], found[-1][1], found[-1][2] + line + "\n")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    every = hunks(args.scratch)
    sample = sorted(random.Random(args.seed).sample(every, min(args.count, len(every))))
    print(f"{len(every)} hunks; {len(sample)} sampled with seed {args.seed}\n")
    for number, (path, line, text) in enumerate(sample, 1):
        original = subprocess.run(
            ["git", "show", f"HEAD~1:{path}"], cwd=args.scratch, capture_output=True, text=True
        ).stdout.splitlines()
        start = max(line - CONTEXT, 1)
        print(f"=== {number}. {path}:{line}")
        for at in range(start, line):
            print(f"  {at:5} {original[at - 1]}")
        print(text)


if __name__ == "__main__":
    main()
