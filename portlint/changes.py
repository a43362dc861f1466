"""``--since REV``: the lines a git revision's diff adds or changes, per file."""

from __future__ import annotations

import os
import re
from pathlib import Path

from portlint.findings import Violation

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
WHOLE_FILE = None  # an untracked file: every line is new


class ChangesError(Exception):
    """Not a git repository, or an unknown revision; the CLI prints it and exits 2."""


def _git(args: list[str], cwd: Path) -> str:
    import subprocess  # here: every run imports this module, few use --since (4 ms of start-up)

    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as error:
        raise ChangesError(f"cannot run git: {error}") from None
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()
        raise ChangesError(message[-1] if message else f"git {args[0]} failed")
    return done.stdout


def changed_lines_of(revision: str, targets: list[Path]) -> dict[str, set[int] | None]:
    """:func:`changed_lines` in the git repository of each of ``targets`` (files or folders,
    wherever portlint runs from)."""
    changed: dict[str, set[int] | None] = {}
    tops: set[str] = set()
    for target in targets:
        folder = target if target.is_dir() else target.parent
        top = _git(["rev-parse", "--show-toplevel"], folder if folder.is_dir() else Path.cwd())
        if top.strip() not in tops:
            tops.add(top.strip())
            changed.update(changed_lines(revision, Path(top.strip())))
    return changed


def changed_lines(revision: str, cwd: Path) -> dict[str, set[int] | None]:
    """Absolute path -> lines added or changed since ``revision`` (None: an untracked file), in
    the git repository of ``cwd``."""
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd)
    except ChangesError:
        raise ChangesError(f"unknown git revision {revision!r}") from None
    diff = _git(["diff", "--unified=0", "--no-color", "--no-ext-diff", revision, "--"], top)
    changed: dict[str, set[int] | None] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            current = None
            if name != "/dev/null":
                current = changed.setdefault(os.path.realpath(top / name[2:]), set())
        elif (match := HUNK.match(line)) and current is not None:
            start, count = int(match.group(1)), int(match.group(2) or 1)
            current.update(range(start, start + count))
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], top)
    for name in filter(None, untracked.split("\0")):
        changed[os.path.realpath(top / name)] = WHOLE_FILE
    return changed


def on_changed_lines(
    violations: list[Violation], changed: dict[str, set[int] | None]
) -> list[Violation]:
    """The findings that touch a changed line (any line of their span)."""
    kept = []
    for v in violations:
        key = os.path.realpath(v.path)
        if key not in changed:
            continue
        lines = changed[key]
        span = range(v.line, max(v.end_line, v.line) + 1)
        if lines is WHOLE_FILE or any(n in lines for n in span):
            kept.append(v)
    return kept
