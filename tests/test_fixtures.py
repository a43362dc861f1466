"""File fixtures, annotated in place: a line ending ``# error: CODE[, CODE]`` must be flagged
with exactly those codes, and no other line may be flagged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from portlint.registry import all_rules
from tests.helpers import REPO, lint, project_settings

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


def seed_family(code: str) -> str:
    """A seed is vLLM's code in its real shape, which also calls torch.cuda APIs (PORT4xx, not
    reported at the project's target torch version, but under the default of every version);
    seed tests look at the family of the seeded bug."""
    return code[:5]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_findings_match_annotations(fixture: Path):
    source = fixture.read_text()
    expected = expected_findings(source)
    codes = (
        {c for c in all_rules() if c.startswith(seed_family(expected[0][1]))}
        if fixture.parent.name == "seeds" and expected
        else set()
    )
    actual = sorted((v.line, v.code) for v in lint(source, *codes, path=str(fixture)))
    assert actual == expected


@pytest.mark.parametrize(
    ("seed", "line", "code", "fixed"),
    [
        ("warmup_buggy.py", 13, "PORT101", "reference_impl/warmup.py"),
        ("sampler_buggy.py", 13, "PORT201", "reference_impl/eagle.py"),
        ("capture_buggy.py", 18, "PORT301", "reference_impl/graphs.py"),
        ("capture_legacy_buggy.py", 16, "PORT301", "reference_impl/graphs.py"),
    ],
)
def test_seed_bug_is_flagged_at_its_line_and_fixed_form_is_clean(seed, line, code, fixed):
    """The buggy seeds are the reference implementation's functions as they were before each fix."""
    buggy = REPO / "tests" / "seeds" / seed
    family = {c for c in all_rules() if c.startswith(seed_family(code))}
    assert [(v.line, v.code) for v in lint(buggy.read_text(), *family)] == [(line, code)]
    assert lint((REPO / fixed).read_text(), settings=project_settings()) == []


def test_seed2_message_names_the_int64_source():
    source = (REPO / "tests" / "seeds" / "sampler_buggy.py").read_text()
    (finding,) = lint(source)
    assert "`sampled`" in finding.message and "line 12" in finding.message
