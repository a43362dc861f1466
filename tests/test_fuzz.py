"""Fuzzing: generated programs (hypothesmith, from Python's grammar) with the strings the rules
look for put at statement boundaries must never crash portlint, must get CPython's verdict on
their validity, and must stay valid under `--fix --unsafe-fixes`, which a second time changes
nothing (see tests/fuzzing.py). Fixed seeds and a bounded number of examples keep it to seconds
here (150; `-m slow` adds 600 drawn from four other seeds, `python scripts/fuzz.py` many more for a
release). The minimised reproducers of what fuzzing found are kept in tests/fixtures/fuzz/ and
checked the same way."""

from __future__ import annotations

import random

import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from portlint.engine import lint_source  # noqa: E402
from portlint.sources import decode_source  # noqa: E402
from tests.fuzzing import FIXING, check, cpython_verdict, with_triggers  # noqa: E402
from tests.helpers import REPO  # noqa: E402

REPRODUCERS = sorted((REPO / "tests" / "fixtures" / "fuzz").glob("*.py.txt"))


def fuzz(examples: int, seed_value: int) -> None:
    """Check ``examples`` generated programs, drawn from ``seed_value`` (the same every run)."""

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(hypothesmith.from_grammar())
    def generated(program):
        # (Where the triggers go is drawn from the program itself: drawing it from hypothesis
        # as well makes each example ten times slower to generate.)
        check(with_triggers(program, random.Random(program)).encode("utf-8"))

    generated()


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # (hypothesmith's compile() of a program)
def test_generated_programs_with_triggers_get_cpythons_verdict_and_safe_fixes():
    fuzz(150, 1)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@pytest.mark.parametrize("seed_value", [0, 2, 3, 4])  # (four parts, for the test workers)
def test_many_more_generated_programs_get_cpythons_verdict_and_safe_fixes(seed_value):
    fuzz(150, seed_value)


@pytest.mark.parametrize("reproducer", REPRODUCERS, ids=lambda path: path.name[:-7])
def test_each_minimised_reproducer_gets_cpythons_verdict(reproducer):
    """Each once gave a false syntax error or missed one (a lone CR in a backslash continuation,
    a form feed before an indent, tabs after spaces, a CR-only file read as "unknown encoding",
    ...). Each holds a `torch.device("cuda")`: where the file is valid, it is found."""
    data = reproducer.read_bytes()
    outcome = check(data)
    assert outcome == ("valid" if cpython_verdict(data).valid else "refused")
    if outcome == "valid":
        source = decode_source("m.py", data)
        assert "PORT101" in {v.code for v in lint_source("m.py", source, FIXING)}


def test_the_reproducers_are_kept():
    valid = [path for path in REPRODUCERS if cpython_verdict(path.read_bytes()).valid]
    assert len(valid) >= 10 and len(REPRODUCERS) - len(valid) >= 5
