"""File fixtures, annotated in place: a line ending ``# error: CODE[, CODE]`` must be flagged
with exactly those codes, and no other line may be flagged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO, lint

ANNOTATION = re.compile(r"#\s*error:\s*(?P<codes>PORT\d+(?:\s*,\s*PORT\d+)*)")
FIXTURES = sorted((REPO / "tests" / "fixtures").glob("*.py")) + sorted(
    (REPO / "tests" / "seeds").glob("*.py")
)


def expected_findings(source: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        match = ANNOTATION.search(line)
        if match:
            found += [(number, code.strip()) for code in match.group("codes").split(",")]
    return sorted(found)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_findings_match_annotations(fixture: Path):
    source = fixture.read_text()
    actual = sorted((v.line, v.code) for v in lint(source, path=str(fixture)))
    assert actual == expected_findings(source)


@pytest.mark.parametrize(
    ("seed", "line", "code"),
    [
        ("warmup_buggy.py", 8, "PORT101"),
        ("sampler_buggy.py", 12, "PORT201"),
        ("capture_buggy.py", 17, "PORT301"),
        ("capture_legacy_buggy.py", 16, "PORT301"),
    ],
)
def test_seed_bug_is_flagged_at_its_line_and_fixed_form_is_clean(seed, line, code):
    buggy = REPO / "tests" / "seeds" / seed
    assert [(v.line, v.code) for v in lint(buggy.read_text())] == [(line, code)]
    fixed = REPO / "tests" / "seeds" / (seed.split("_")[0] + "_fixed.py")
    assert lint(fixed.read_text()) == []


def test_seed2_message_names_the_int64_source():
    source = (REPO / "tests" / "seeds" / "sampler_buggy.py").read_text()
    (finding,) = lint(source)
    assert "`sampled`" in finding.message and "line 11" in finding.message
