"""One test per inline case of every rule: the cases are the rules' specification."""

from __future__ import annotations

import textwrap

import pytest

from portlint.registry import all_rules
from tests.helpers import lint, lint_all_ways

VALID = [
    pytest.param(code, source, id=f"{code}-valid-{i}")
    for code, rule in all_rules().items()
    for i, source in enumerate(rule.VALID)
]


def _cases():
    for code, rule in all_rules().items():
        for i, case in enumerate(rule.INVALID):
            yield code, case, i


INVALID = [pytest.param(code, case, id=f"{code}-invalid-{i}") for code, case, i in _cases()]


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
    from portlint.fix_rounds import fix_source
    from portlint.settings import Settings

    settings = Settings(select=frozenset({code, *all_rules()[code].CASES_ALSO_SELECT}))
    result = fix_source("case.py", case.source, settings, unsafe=True)
    assert result.source == case.fixed
    assert not fix_source("case.py", result.source, settings, unsafe=True).applied


def _with_room_to_cut(source: str) -> list[str]:
    """The case beside a function no rule concerns (so that partial parsing has something to
    cut), as it is and inside a function (where the cut looks at it as a unit)."""
    unrelated = "\n\ndef unrelated(y):\n    return y + 1\n"
    inside = "def case():\n" + textwrap.indent(source, "    ") + "\n    pass\n"
    return [source + unrelated, inside + unrelated]


@pytest.mark.parametrize(
    ("code", "source"),
    [
        *VALID,
        *(pytest.param(code, case.source, id=f"{code}-invalid-{i}") for code, case, i in _cases()),
    ],
)
def test_the_gates_and_the_cut_hide_nothing_in_any_case(code, source):
    """Each case, as written and inside a function beside one no rule concerns: the command
    line's way (text gate, evidence gate, partial parsing) finds what whole files find and what
    an ungated run (every rule on the whole file) finds, guard-silenced findings included. A
    rule whose triggers or evidence missed one of its own cases fails here, by name."""
    codes = frozenset({code, *all_rules()[code].CASES_ALSO_SELECT})
    for text in _with_room_to_cut(source):
        ways = lint_all_ways(text, codes)
        assert ways["partial"] == ways["whole"] == ways["ungated"], (
            f"{code}: its triggers, evidence or the cut hide a finding the rule makes here"
        )


@pytest.mark.parametrize("code", [c for c, rule in all_rules().items() if rule.guardable])
def test_every_guardable_rule_has_a_valid_case_that_a_guard_silences(code):
    """So that the comparison above compares something that can differ on valid cases too: a
    finding the guard silences must be silenced all three ways."""
    silenced = [
        lint_all_ways(source, frozenset({code}))["ungated"][1] for source in all_rules()[code].VALID
    ]
    assert any(silenced), f"{code} has no valid case that a platform guard silences"
