"""A rule is one file: what the gate and the configuration know of it is generated from it, and a
rule that lacks a piece, or a catalog that no longer says what the rules declare, stops
everything loudly (never a crash per file, never "All checks passed!")."""

from __future__ import annotations

import pytest

from portlint import registry
from portlint.catalog import CATALOG
from portlint.evidence import Evidence
from portlint.generate import CATALOG_FILE, catalog_text
from portlint.registry import all_rules
from portlint.rule import Invalid, Rule, RuleDefinitionError
from portlint.speed import gate
from tests.helpers import BUGGY, run_cli


def test_the_catalog_is_what_the_rules_declare():
    assert CATALOG_FILE.read_text(encoding="utf-8") == catalog_text(), (
        "portlint/catalog.py is stale: run `python -m portlint.generate`"
    )
    assert {code: rule.entry() for code, rule in all_rules().items()} == CATALOG


DOCS = """Summary.

## What it does
x
## Why is this bad?
x
## Example
x
Use instead:
x
## Fix safety
x
## References
x
"""
COMPLETE = {
    "__doc__": DOCS,
    "code": "PORT999",
    "name": "a-new-rule",
    "triggers": ("zzz",),
    "VALID": ["x = 1\n"],
    "INVALID": [Invalid("zzz()\n", 1, 1)],
}


def test_a_complete_rule_class_is_accepted():
    rule = type("NewRule", (Rule,), dict(COMPLETE))
    assert rule.entry().name == "a-new-rule" and rule.entry().evidence == ()


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"code": "P999"}, "`code` must be a string like 'PORT123'"),
        ({"name": None}, "`name` must be a kebab-case string"),
        ({"name": "Not_Kebab"}, "`name` must be a kebab-case string"),
        ({"triggers": ()}, "`triggers` must be a non-empty tuple"),
        ({"triggers": "zzz"}, "`triggers` must be a non-empty tuple"),
        ({"evidence": ("zzz",)}, "`evidence` must be a tuple of portlint.evidence.Evidence"),
        ({"evidence": (Evidence(("zzz",)),), "guardable": "yes"}, "`guardable` must be True"),
        ({"VALID": []}, "it needs inline `VALID` and `INVALID` cases"),
        ({"INVALID": [("zzz()\n", 1, 1)]}, "each `INVALID` case must be an `Invalid"),
        (
            {"__doc__": "Summary.\n\n## What it does\nx\n"},
            "its docstring lacks '## Why is this bad?'",
        ),
    ],
)
def test_a_rule_class_lacking_a_piece_fails_where_it_is_defined(changes, problem):
    namespace = {**COMPLETE, **changes}
    if namespace["name"] is None:
        del namespace["name"]
    with pytest.raises(RuleDefinitionError, match=f"rule .*NewRule: {problem[:30]}"):
        type("NewRule", (Rule,), namespace)


@pytest.fixture
def computed_from_the_catalog():
    """Forgets what was computed from the catalog during the test, once the test's own
    monkeypatch has put the catalog back (requested before ``monkeypatch``: torn down after)."""
    all_rules.cache_clear()
    yield
    for cached in (all_rules, gate._by_needle, gate._needles_for):
        cached.cache_clear()


def test_a_stale_catalog_stops_the_run_with_one_line_and_exit_2(
    computed_from_the_catalog, tmp_path, monkeypatch
):
    """A rule's declarations changed but the catalog was not regenerated: the gate would select
    by the old triggers, so no file may be reported on (nor called clean)."""
    entry = CATALOG["PORT101"]
    monkeypatch.setitem(CATALOG, "PORT101", entry._replace(triggers=("device(",)))
    (tmp_path / "m.py").write_text(BUGGY)
    result = run_cli("check", "m.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "portlint: error: portlint/catalog.py is stale (PORT101's declarations changed): "
        "run `python -m portlint.generate`\n"
    )
    assert "All checks passed!" not in result.stdout


def test_a_rule_module_the_catalog_does_not_list_stops_every_run(tmp_path, monkeypatch):
    """Even a run that parses nothing (where no rule is imported) says so."""
    real = registry._rule_modules
    monkeypatch.setattr(registry, "_rule_modules", lambda: [*real(), "port999_new_rule"])
    (tmp_path / "plain.py").write_text("x = 1\n")
    result = run_cli("check", "plain.py", "--no-cache", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert "stale (new rule module port999_new_rule)" in result.stderr


def test_a_rule_that_crashes_is_reported_and_the_summary_does_not_say_all_passed(
    tmp_path, monkeypatch
):
    rule = all_rules()["PORT101"]

    def crash(self, *args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(rule, "report", crash)  # (called as it reports: a crash mid-visit)
    (tmp_path / "m.py").write_text(BUGGY)
    result = run_cli("check", "m.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == "No findings, but 1 path could not be checked.\n"
    assert result.stderr == "portlint: error: m.py: internal error: ValueError: boom\n"
