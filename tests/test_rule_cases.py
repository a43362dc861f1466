"""One test per inline case of every rule: the cases are the rules' specification."""

from __future__ import annotations

import textwrap

import pytest

from portlint.registry import all_rules
from tests.helpers import lint

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
    from portlint.engine import fix_source
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
def test_partial_parsing_finds_what_whole_files_find_in_every_case(code, source):
    """Partial parsing keeps only the code that shows a rule's evidence (``catalog.Evidence``):
    on every case, as it is and inside a function, it must find what the whole file gives."""
    from portlint.engine import lint_source
    from portlint.settings import Settings

    codes = frozenset({code, *all_rules()[code].CASES_ALSO_SELECT})
    partial, whole = Settings(select=codes), Settings(select=codes, partial_parse=False)
    for text in _with_room_to_cut(source):
        assert lint_source("case.py", text, partial, fix_edits=False) == lint_source(
            "case.py", text, whole, fix_edits=False
        )
