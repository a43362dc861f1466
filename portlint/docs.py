"""Where portlint's documentation lives: the repository, and one page per rule in docs/rules/
(written by ``python -m portlint.generate``). SARIF's ``helpUri`` and JSON's ``url`` point there."""

from __future__ import annotations

REPOSITORY_URL = "https://github.com/portlint/portlint"
RULES_FOLDER = "docs/rules"


def rule_page(name: str) -> str:
    """The rule's page, relative to the repository root."""
    return f"{RULES_FOLDER}/{name}.md"


def rule_url(name: str) -> str:
    """The rule's page on the web."""
    return f"{REPOSITORY_URL}/blob/main/{rule_page(name)}"
