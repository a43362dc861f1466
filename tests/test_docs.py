"""The documents derived from the rules (docs/rules/, the README's rule table) are fresh, and the
links of the README and docs/ lead to files that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from portlint import generate
from portlint.docs import RULES_FOLDER, rule_page
from portlint.registry import all_rules
from tests.helpers import REPO, run_cli


def test_every_derived_file_is_fresh():
    stale = [
        str(path.relative_to(REPO))
        for path, text in generate.derived_files().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], "stale: run `python -m portlint.generate`"
    assert generate.stray_pages(generate.derived_files()) == []


def test_each_rule_has_its_page_with_its_documentation():
    pages = sorted(p.name for p in (REPO / RULES_FOLDER).glob("*.md"))
    assert pages == sorted(["README.md", *(f"{rule.name}.md" for rule in all_rules().values())])
    for code, rule in all_rules().items():
        text = (REPO / rule_page(rule.name)).read_text(encoding="utf-8")
        assert text.startswith(f"# {rule.name} ({code})\n")
        assert text.endswith(rule.documentation() + "\n")


def test_the_readme_table_has_a_row_per_rule_linking_to_its_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split(generate.TABLE_BEGIN, 1)[1].split(generate.TABLE_END, 1)[0]
    codes = re.findall(r"^\| \[(PORT\d+)\]\((docs/rules/[\w-]+\.md)\)", table, re.MULTILINE)
    assert codes == [(code, rule_page(rule.name)) for code, rule in all_rules().items()]


def test_check_reports_a_stale_page_and_writes_nothing(tmp_path, monkeypatch, capsys):
    page = tmp_path / "docs" / "rules" / "renamed.md"
    page.parent.mkdir(parents=True)
    page.write_text("# old\n")
    monkeypatch.setattr(generate, "REPOSITORY", tmp_path)
    monkeypatch.setattr(generate, "derived_files", lambda: {tmp_path / "new.md": "# new\n"})
    assert generate.main(["--check"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{tmp_path / 'new.md'} is stale: run `python -m portlint.generate`",
        f"{page} is stale: run `python -m portlint.generate`",
    ]
    assert page.exists() and not (tmp_path / "new.md").exists()
    assert generate.main([]) == 0
    assert not page.exists() and (tmp_path / "new.md").read_text() == "# new\n"


def _links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file, outside code."""
    text = re.sub(r"```.*?```|`[^`]*`", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in target]


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


DOCUMENTS = [
    REPO / "README.md",
    REPO / "reference_impl" / "README.md",
    *REPO.glob("docs/*.md"),
    *REPO.glob("docs/rules/*.md"),
]


@pytest.mark.parametrize("document", sorted(str(p.relative_to(REPO)) for p in DOCUMENTS))
def test_relative_links_lead_to_files_and_headings_that_exist(document):
    path = REPO / document
    broken = []
    for link in _links(path):
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
            broken.append(link)
    assert broken == []


def _console_examples() -> list[tuple[str, str]]:
    """Each `$ portlint ...` command of the README's console blocks, with the output shown."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    examples = []
    for block in re.findall(r"```console\n(.*?)```", readme, re.DOTALL):
        for chunk in re.split(r"^(?=\$ )", block, flags=re.MULTILINE):
            command, _, output = chunk.partition("\n")
            if command.startswith("$ portlint "):
                examples.append((command[2:], output.rstrip("\n") + "\n"))
    return examples


@pytest.mark.parametrize(("command", "shown"), _console_examples())
def test_the_readme_shows_real_output(command, shown):
    """Each console example, run on the repository's own files, prints what the README shows."""
    args = shlex.split(command)[1:]
    result = run_cli(*args, "--no-cache", cwd=REPO)
    assert result.stdout.rstrip("\n") + "\n" == shown


def test_the_readme_set_up_is_what_ci_runs():
    """The README's two set-up commands, as .ci/run runs them (there with --quiet)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").replace("--quiet ", "")
    first = "python3 -m venv .venv && . .venv/bin/activate && pip install . && portlint check tests/seeds"
    second = 'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest -q'
    assert first in readme and second in readme
    assert "pip install .\n" in ci and "portlint check tests/seeds" in ci and second in ci


def test_the_library_table_in_the_manual_is_the_one_portlint_uses():
    from portlint.facts import CUDA_ONLY_LIBRARIES

    text = (REPO / "docs" / "platform.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith(("| NVIDIA", "| AMD", "| both"))]
    listed = {name for row in rows for name in re.findall(r"`([\w.]+)`", row)}
    assert listed == set(CUDA_ONLY_LIBRARIES)
