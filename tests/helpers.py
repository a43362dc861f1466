"""Shared helpers for the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from portlint.engine import lint_source
from portlint.rule import Violation
from portlint.settings import Settings

REPO = Path(__file__).resolve().parent.parent


def lint(source: str, *codes: str, path: str = "case.py", **settings) -> list[Violation]:
    from portlint.registry import all_rules

    selected = frozenset(codes) if codes else frozenset(all_rules())
    return lint_source(path, source, Settings(select=selected, **settings))


def run_cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "portlint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )
