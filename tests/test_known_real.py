"""Every finding that an audit read and classified real is still reported (tests/data/known_real.txt).

Precision work silences findings; this is what keeps it from silencing a real one. The releases
are linted as a new user runs portlint (the whole release, no configuration) by
``scripts/snapshot.py``, once each and in parallel; the test reads its output:
``PORTLINT_SNAPSHOT`` names a folder that ``python scripts/snapshot.py run CORPUS OUT`` wrote
(``.ci/run`` and ``scripts/check.py`` do so), else the test writes one from ``PORTLINT_CORPUS``
(a folder ``python scripts/fetch_corpus.py DIR`` filled). Marked ``corpus``: the default run
leaves it out; ``python -m pytest -m corpus`` runs it. A release missing from the snapshot fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import REPO

SILENCED = " ~ "  # (scripts/snapshot.py: what follows says why a finding was silenced)
pytestmark = pytest.mark.corpus


def _known() -> dict[str, set[str]]:
    """By release (``NAME-VERSION``): the known-real findings as ``path:line:col CODE``."""
    known: dict[str, set[str]] = defaultdict(set)
    for line in (REPO / "tests" / "data" / "known_real.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            project, version, where, code = line.split()
            known[f"{project}-{version}"].add(f"{where} {code}")
    return known


KNOWN = _known()


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory) -> Path:
    """The folder of the releases' snapshot files."""
    if os.environ.get("PORTLINT_SNAPSHOT"):
        return Path(os.environ["PORTLINT_SNAPSHOT"])
    corpus = os.environ.get("PORTLINT_CORPUS")
    if not corpus:
        pytest.skip("neither PORTLINT_SNAPSHOT nor PORTLINT_CORPUS names a folder")
    out = tmp_path_factory.mktemp("snapshot")
    script = REPO / "scripts" / "snapshot.py"
    subprocess.run(
        [sys.executable, str(script), "run", "--known-real", corpus, str(out)], check=True
    )
    return out


@pytest.mark.parametrize("release", sorted(KNOWN))
def test_every_known_real_finding_is_still_reported(snapshot, release):
    file = snapshot / f"{release}.txt"
    assert file.exists(), f"{file} is missing: python scripts/snapshot.py run CORPUS {snapshot}"
    reported = {
        line for line in file.read_text(encoding="utf-8").splitlines() if SILENCED not in line
    }
    assert sorted(KNOWN[release] - reported) == []
