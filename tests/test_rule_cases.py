"""One test per inline case of every rule: the cases are the rules' specification."""

from __future__ import annotations

import pytest

from portlint.registry import all_rules
from tests.helpers import lint

VALID = [
    pytest.param(code, source, id=f"{code}-valid-{i}")
    for code, rule in all_rules().items()
    for i, source in enumerate(rule.VALID)
]
INVALID = [
    pytest.param(code, case, id=f"{code}-invalid-{i}")
    for code, rule in all_rules().items()
    for i, case in enumerate(rule.INVALID)
]


@pytest.mark.parametrize(("code", "source"), VALID)
def test_valid_case_is_not_flagged(code, source):
    assert lint(source, code, *all_rules()[code].CASES_ALSO_SELECT) == []


@pytest.mark.parametrize(("code", "case"), INVALID)
def test_invalid_case_is_flagged_once_at_its_position(code, case):
    found = [
        (v.code, v.line, v.col)
        for v in lint(case.source, code, *all_rules()[code].CASES_ALSO_SELECT)
    ]
    assert found == [(code, case.line, case.col)]


@pytest.mark.parametrize("code", list(all_rules()))
def test_every_rule_has_cases_and_documentation(code):
    rule = all_rules()[code]
    assert len(rule.VALID) >= 3 and len(rule.INVALID) >= 3
    docs = rule.documentation()
    for section in (
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "Use instead:",
        "## Fix safety",
        "## References",
    ):
        assert section in docs, f"{code} docs lack {section!r}"


FIXED = [
    pytest.param(code, case, id=f"{code}-fix-{i}")
    for code, rule in all_rules().items()
    for i, case in enumerate(rule.INVALID)
    if case.fixed is not None
]


@pytest.mark.parametrize(("code", "case"), FIXED)
def test_fix_turns_the_invalid_case_into_its_fixed_form(code, case):
    from portlint.engine import fix_source
    from portlint.settings import Settings

    settings = Settings(select=frozenset({code, *all_rules()[code].CASES_ALSO_SELECT}))
    result = fix_source("case.py", case.source, settings, unsafe=True)
    assert result.source == case.fixed
    assert not fix_source("case.py", result.source, settings, unsafe=True).applied
