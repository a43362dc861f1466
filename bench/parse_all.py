"""The floors: what parsing alone costs, two processes, nothing else.

``parse_all.py TREE``: LibCST parses every file (the floor of any linter built on LibCST that
reads every file). ``parse_all.py TREE --ast-gated CONFIG``: Python's own parser (``ast``), only
the files portlint's text gate lets through under ``CONFIG`` (the floor of any analysis of those
files written in Python, before it looks at a single node).
"""

from __future__ import annotations

import ast
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import libcst as cst

from portlint.config import Overrides, load_settings
from portlint.settings import Settings
from portlint.speed.gate import codes_with_triggers_in


def parse(path: Path) -> int:
    try:
        cst.parse_module(path.read_bytes())
    except cst.ParserSyntaxError:
        return 0
    return 1


def parse_gated(settings: Settings, path: Path) -> int:
    source = path.read_text(encoding="utf-8")
    if not codes_with_triggers_in(source, settings.codes_for(str(path))):
        return 0
    ast.parse(source)
    return 1


if __name__ == "__main__":
    tree = Path(sys.argv[1])
    function = parse
    if sys.argv[2:3] == ["--ast-gated"]:
        function = partial(parse_gated, load_settings(Path(sys.argv[3]), Overrides(), Path.cwd()))
    files = sorted(tree.rglob("*.py"))
    with ProcessPoolExecutor(max_workers=2) as pool:
        parsed = sum(pool.map(function, files, chunksize=16))
    print(f"{parsed} of {len(files)} files parsed")
