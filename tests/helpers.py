"""Shared helpers for the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from portlint.engine import lint_source
from portlint.findings import Violation
from portlint.settings import Settings

REPO = Path(__file__).resolve().parent.parent


def lint(
    source: str, *codes: str, path: str = "case.py", settings: Settings | None = None, **options
) -> list[Violation]:
    """Lint ``source`` with ``codes`` (default: every rule), or with ``settings`` as they are."""
    from portlint.registry import all_rules

    if settings is None:
        selected = frozenset(codes) if codes else frozenset(all_rules())
        guardable = frozenset(code for code, rule in all_rules().items() if rule.guardable)
        settings = Settings(select=selected, guardable_codes=guardable, **options)
    return lint_source(path, source, settings)


def project_settings() -> Settings:
    """The settings of this repository's own pyproject.toml, as `portlint check` uses them."""
    from portlint.config import Overrides, load_settings

    return load_settings(REPO / "pyproject.toml", Overrides(), REPO)


def run_cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "portlint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )
