"""Shared helpers for the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from portlint.catalog import CATALOG
from portlint.engine import judged_alone, lint_source
from portlint.findings import Violation
from portlint.settings import Settings

REPO = Path(__file__).resolve().parent.parent
# The repository's own Python files: what partial parsing and the editor's reuse are checked on.
OWN_CODE = sorted(
    path
    for folder in ("tests/fixtures", "tests/seeds", "reference_impl", "portlint")
    for path in (REPO / folder).rglob("*.py")
)
# The seed of the sampled checks: the default run checks a repository-wide equivalence on a
# seeded share of the files, the `slow` run (`.ci/run`) on every file.
SAMPLE_SEED = int(os.environ.get("PORTLINT_SAMPLE_SEED", "20261206"))


def sample(files: list[Path], share: float) -> list[Path]:
    """A seeded ``share`` of ``files`` (at least one), in their order."""
    import random

    chosen = set(
        random.Random(SAMPLE_SEED).sample(range(len(files)), max(1, round(len(files) * share)))
    )
    return [path for index, path in enumerate(files) if index in chosen]


BUGGY = 'import torch\nd = torch.device("cuda")\n'
# The nine PORT4xx rules: references to CUDA-only torch APIs.
CUDA_API = frozenset(code for code in CATALOG if code.startswith("PORT4"))


def lint(
    source: str,
    *codes: str,
    path: str = "case.py",
    settings: Settings | None = None,
    fix_edits: bool = False,
    **options,
) -> list[Violation]:
    """Lint ``source`` with ``codes`` (default: every rule), or with ``settings`` as they are, the
    way `portlint check` does by default (partial parsing; fixes described, not built)."""
    if settings is None:
        selected = frozenset(codes) if codes else frozenset(CATALOG)
        settings = Settings(select=selected, **options)
    return lint_source(path, source, settings, fix_edits=fix_edits)


def lint_all_ways(source: str, codes: frozenset[str]) -> dict[str, tuple[list, list]]:
    """Findings and guard-silenced findings of ``codes`` in ``source``, found three ways: as the
    command line does (the text gate, the evidence gate, partial parsing), with whole files
    (gates on), and with no gate at all (every rule runs on the whole file). They must agree: a
    gate that hid a finding, or a cut that lost a caller or a guard, would show here."""
    from portlint import visit
    from portlint.registry import all_rules
    from portlint.rules.port001_unused_noqa import UnusedNoqa
    from portlint.speed.cut import parse_ast
    from portlint.suppression import apply_suppressions

    found: dict[str, tuple[list, list]] = {}
    for way, partial in (("partial", True), ("whole", False)):
        silenced: list[Violation] = []
        settings = Settings(select=codes, partial_parse=partial)
        kept = lint_source("case.py", source, settings, fix_edits=False, silenced=silenced)
        found[way] = kept, sorted(silenced)
    rules = [all_rules()[code] for code in sorted(codes) if all_rules()[code] is not UnusedNoqa]
    silenced = []
    settings = Settings(select=codes, partial_parse=False)
    tree = parse_ast(source)
    notes: dict[str, list] = {}
    job = visit._Job("case.py", source, tree, settings, False, False, silenced, notes)
    found_by_rules = visit._violations(job, rules)
    violations = judged_alone("case.py", source, settings, found_by_rules, notes, silenced)
    kept, used = apply_suppressions(violations, source)
    if UnusedNoqa.code in codes:
        kept += UnusedNoqa.check("case.py", source, used, codes)
    found["ungated"] = sorted(kept), sorted(silenced)
    return found


def cut(source: str, *codes: str):
    """The cut of ``source`` for the rules ``codes`` (see ``portlint.speed.cut``)."""
    from portlint.registry import all_rules
    from portlint.speed.cut import parse_ast, slice_source

    return slice_source(source, parse_ast(source), [all_rules()[code].entry() for code in codes])


def in_place(sliced, source: str) -> bool:
    """Every line of a cut is the line of the source it says it is (or a ``pass`` put where a
    dropped block started), in order."""
    lines = source.splitlines()
    return sliced.lines == sorted(set(sliced.lines)) and all(
        text == lines[number - 1] or text.strip() == "pass"
        for text, number in zip(sliced.text.splitlines(), sliced.lines, strict=True)
    )


def tree(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def settings_for(root: Path, config: str | None = None) -> Settings:
    """The settings of a project at ``root`` whose pyproject.toml holds ``config`` (none: none)."""
    from portlint.config import Overrides, load_settings

    if config is not None:
        (root / "pyproject.toml").write_text(config)
        return load_settings(root / "pyproject.toml", Overrides(), root)
    return load_settings(None, Overrides(), root)


def project_settings() -> Settings:
    """The settings of this repository's own pyproject.toml, as `portlint check` uses them."""
    from portlint.config import Overrides, load_settings

    return load_settings(REPO / "pyproject.toml", Overrides(), REPO)


def run_cli(
    *args: str, cwd: Path, stdin: str | None = None, subprocess_: bool = False
) -> subprocess.CompletedProcess[str]:
    """`portlint ARGS` run from ``cwd``: in this process (click's runner) unless a real process
    is the point (``subprocess_``: what is imported, how the interpreter starts)."""
    if subprocess_:
        return subprocess.run(
            [sys.executable, "-m", "portlint", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            input=stdin,
            timeout=300,
        )
    from click.testing import CliRunner

    from portlint.cli import main

    before = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)
