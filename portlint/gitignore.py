"""A small reader of .gitignore files, enough to skip what git would not track."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pattern:
    base: Path  # the folder whose .gitignore holds the pattern
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _glob_to_regex(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 1 :]:
            end = glob.index("]", i + 1)
            body = glob[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def parse(path: Path) -> list[Pattern]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    patterns = []
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        line = line[1:] if line.startswith("\\") else line
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = _glob_to_regex(line.lstrip("/"))
        regex = re.compile(body if anchored else "(?:.*/)?" + body)
        patterns.append(Pattern(path.parent.resolve(), regex, negated, dir_only))
    return patterns


def is_ignored(path: str, is_dir: bool, patterns: list[Pattern]) -> bool:
    """Whether the last pattern that matches ``path`` (absolute, resolved) ignores it (git's rule)."""
    ignored = False
    for pattern in patterns:
        if pattern.dir_only and not is_dir:
            continue
        base = os.path.join(str(pattern.base), "")
        if not path.startswith(base):
            continue
        relative = path[len(base) :].replace(os.sep, "/")
        if pattern.regex.fullmatch(relative):
            ignored = not pattern.negated
    return ignored


def ancestor_patterns(folder: Path) -> list[Pattern]:
    """Patterns of the .gitignore files from the enclosing git work tree's root down to ``folder``."""
    folder = folder.resolve()
    chain = [folder, *folder.parents]
    root_index = next((i for i, f in enumerate(chain) if (f / ".git").exists()), None)
    chain = [folder] if root_index is None else chain[: root_index + 1]
    patterns: list[Pattern] = []
    for ancestor in reversed(chain[1:]):
        patterns += parse(ancestor / ".gitignore")
    return patterns
