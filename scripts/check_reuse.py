"""Check the editor's reuse (parsing in parts, :mod:`portlint.speed.reuse`; Python's verdict by
parts, :class:`portlint.bounds.Known`) against LibCST's whole parse and Python's whole verdict.

Usage: ``python scripts/check_reuse.py TREE [TREE ...]``

For every Python file under the trees that Python parses, as tests/reuse_checks.py checks the
repository's own: its text and its cut parsed in parts are the trees of the whole parse, node
for node; and so is the text with a line typed into its middle, parsed after the text, and
Python's verdict on it. Prints each file where anything differs, and the counts; exits 1 if any
file differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reuse_checks import differences


def main(trees: list[str]) -> int:
    files = in_parts = differing = 0
    for tree in trees:
        for path in sorted(Path(tree).rglob("*.py")):
            files += 1
            found, parted = differences(path.read_text(encoding="utf-8", errors="replace"))
            in_parts += parted
            if found:
                differing += 1
                print(f"{path}: differs: {', '.join(found)}")
    print(f"{files} files: {in_parts} parsed in parts, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
