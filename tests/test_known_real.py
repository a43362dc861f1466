"""Every finding that an audit read and classified real is still reported (tests/data/known_real.txt).

Precision work silences findings; this is what keeps it from silencing a real one. The audited
releases are read from ``PORTLINT_CORPUS`` (``python scripts/fetch_corpus.py DIR`` fills one;
``../shared/corpus/fetch_project.sh`` lays its cache out the same way), with no configuration,
as a new user runs portlint. Where ``PORTLINT_CORPUS`` is unset the test is skipped; where it is
set, a missing release fails it (CI sets it).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from portlint.config import Overrides, load_settings
from portlint.discovery import discover
from portlint.engine import lint_files
from tests.helpers import REPO

CORPUS = os.environ.get("PORTLINT_CORPUS")


def _known() -> dict[tuple[str, str], set[tuple[str, int, int, str]]]:
    """By (project, version): the known-real findings as (path, line, col, code)."""
    known: dict[tuple[str, str], set[tuple[str, int, int, str]]] = defaultdict(set)
    for line in (REPO / "tests" / "data" / "known_real.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            project, version, where, code = line.split()
            path, row, col = where.rsplit(":", 2)
            known[project, version].add((path, int(row), int(col), code))
    return known


KNOWN = _known()


@pytest.mark.skipif(not CORPUS, reason="PORTLINT_CORPUS names no folder of audited releases")
@pytest.mark.parametrize(("project", "version"), sorted(KNOWN), ids=lambda v: v)
def test_every_known_real_finding_is_still_reported(project, version):
    root = Path(CORPUS or "") / f"{project}-{version}"
    assert (root / ".complete").exists(), f"{root} is missing: python scripts/fetch_corpus.py"
    wanted = KNOWN[project, version]
    packages = sorted({Path(path).parts[0] for path, _, _, _ in wanted})
    before = os.getcwd()
    os.chdir(root)  # paths as the audit printed them: `sglang/srt/...`
    try:
        # The whole release, as `portlint check PACKAGE` runs: the project index speaks too.
        settings = load_settings(None, Overrides(), root)
        files, _ = discover([Path(p) for p in packages], settings, False)
        found = lint_files(files, settings, fix_edits=False, speedups=True, project=True)
    finally:
        os.chdir(before)
    reported = {(v.path, v.line, v.col, v.code) for v in found.violations}
    assert sorted(wanted - reported) == []
