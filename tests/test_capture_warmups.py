"""PORT301's confidence and reason where the warm-up question is settled by what is captured:
an earlier capture warms nothing, and a capture of code with no matrix multiply creates no BLAS
state during capture (issue #48)."""

from __future__ import annotations

from tests.helpers import REPO, lint

FIXTURE = (REPO / "tests" / "fixtures" / "capture_warmups.py").read_text()


def _port301() -> dict[int, tuple[str, str]]:
    return {v.line: (v.confidence, v.detail) for v in lint(FIXTURE, "PORT301")}


def test_a_capture_of_code_without_a_matrix_multiply_is_likely_and_says_why():
    found = _port301()
    line = FIXTURE.splitlines().index("def no_matrix_multiply(w, x, out, g):") + 3
    confidence, detail = found[line]
    assert confidence == "likely"
    assert "matrix multiply" in detail
    with_matmul = FIXTURE.splitlines().index("def matrix_multiply(w, x, out, g):") + 3
    assert found[with_matmul][0] == "certain"


def test_a_capture_after_a_capture_names_the_earlier_one_and_has_no_fix():
    lines = FIXTURE.splitlines()
    start = lines.index("def earlier_capture_is_not_a_warm_up(model, x):") + 1
    second = start + 5
    (violation,) = [v for v in lint(FIXTURE, "PORT301", fix_edits=True) if v.line == second]
    assert violation.message.startswith(
        f"`model` ran earlier only inside the capture at line {start + 3};"
    )
    assert violation.fix is None
