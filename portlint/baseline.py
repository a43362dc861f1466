"""Baselines: adopt portlint in a big tree by failing only on findings that are new.

A baseline file lists the findings of a run by file, code and a fingerprint of the code they sit
on (the text of their lines, whitespace removed), never by line number: code moved up or down by
an edit elsewhere in the file still matches. Identical findings are counted, so a second copy of
a baselined line is new.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

from portlint.atomic import write_atomically
from portlint.findings import Violation, split_lines

FORMAT = "portlint-baseline"
VERSION = 1

Key = tuple[str, str, str]  # path relative to the baseline's folder, code, fingerprint


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the CLI prints it and exits 2."""


def fingerprint(violation: Violation, lines: list[str]) -> str:
    span = lines[violation.line - 1 : max(violation.end_line, violation.line)]
    text = "".join("".join(line.split()) for line in span)
    payload = f"{violation.code}\0{text}" if violation.code else violation.message
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _keys(violations: list[Violation], folder: Path, sources: dict[str, str]) -> list[Key]:
    keys = []
    for v in violations:
        text = sources[v.path] if v.path in sources else _read_text(v.path)
        lines = split_lines(text)
        relative = Path(os.path.relpath(os.path.abspath(v.path), folder)).as_posix()
        keys.append((relative, v.code or "syntax-error", fingerprint(v, lines)))
    return keys


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def write_baseline(
    file: Path, violations: list[Violation], sources: dict[str, str] | None = None
) -> int:
    """Write the baseline of ``violations`` to ``file``; return how many findings it holds."""
    folder = file.resolve().parent
    entries = [
        {"path": path, "code": code, "fingerprint": print_, "line": v.line, "message": v.message}
        for (path, code, print_), v in zip(
            _keys(violations, folder, sources or {}), violations, strict=True
        )
    ]
    document = {"format": FORMAT, "version": VERSION, "findings": entries}
    try:
        write_atomically(str(file), (json.dumps(document, indent=2) + "\n").encode("utf-8"))
    except OSError as error:  # (the file as it was: written atomically, or not at all)
        raise BaselineError(f"cannot write baseline {file}: {error.strerror or error}") from None
    return len(entries)


def new_findings(
    file: Path, violations: list[Violation], sources: dict[str, str] | None = None
) -> list[Violation]:
    """The findings of ``violations`` that the baseline in ``file`` does not hold."""
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT:
            raise ValueError("not a portlint baseline")
        known = Counter(
            (entry["path"], entry["code"], entry["fingerprint"]) for entry in document["findings"]
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise BaselineError(f"cannot read baseline {file}: {error}") from None
    folder = file.resolve().parent
    fresh = []
    for key, v in zip(_keys(violations, folder, sources or {}), violations, strict=True):
        if known[key]:
            known[key] -= 1
        else:
            fresh.append(v)
    return fresh
