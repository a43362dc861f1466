"""The floor of any LibCST linter: parse every file of a tree, two processes, nothing else."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst


def parse(path: Path) -> int:
    try:
        cst.parse_module(path.read_bytes())
    except cst.ParserSyntaxError:
        return 0
    return 1


if __name__ == "__main__":
    files = sorted(Path(sys.argv[1]).rglob("*.py"))
    with ProcessPoolExecutor(max_workers=2) as pool:
        parsed = sum(pool.map(parse, files, chunksize=16))
    print(f"{parsed} of {len(files)} files parsed")
