"""Rule discovery: every ``Rule`` subclass in ``portlint.rules`` is a rule; none is listed by hand.

The generated catalog (``portlint/catalog.py``) must agree with the rules: :func:`all_rules`
raises :class:`StaleCatalog` where it does not, and :func:`check_catalog_lists_every_rule` tells,
without importing a rule, whether a rule module was added or removed since it was generated.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TYPE_CHECKING

from portlint.errors import BrokenRules

if TYPE_CHECKING:
    from portlint.rule import Rule


class StaleCatalog(BrokenRules):
    """``portlint/catalog.py`` no longer says what the rules declare."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"portlint/catalog.py is stale ({detail}): run `python -m portlint.generate`"
        )
        self.detail = detail

    def __reduce__(self):  # (raised in a worker process, it comes back as it was raised)
        return type(self), (self.detail,)


def _rule_modules() -> list[str]:
    import portlint.rules

    return [info.name for info in pkgutil.iter_modules(portlint.rules.__path__)]


def discover_rules() -> dict[str, type[Rule]]:
    """Every rule, by code, in code order, as the rule modules define them (this imports LibCST
    and every rule module)."""
    from portlint.rule import Rule

    found: dict[str, type[Rule]] = {}
    for name in _rule_modules():
        module = importlib.import_module(f"portlint.rules.{name}")
        rules = [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, Rule)
            and value.__module__ == module.__name__
            and "code" in value.__dict__
        ]
        if len(rules) != 1:
            raise StaleCatalog(
                f"portlint.rules.{name} must define exactly one rule, not {len(rules)}"
            )
        rule = rules[0]
        if rule.code in found:
            raise StaleCatalog(f"two rules claim {rule.code}")
        found[rule.code] = rule
    return dict(sorted(found.items()))


@functools.cache
def all_rules() -> dict[str, type[Rule]]:
    """Every rule, by code, checked against the catalog the gate and the configuration use."""
    from portlint.catalog import CATALOG

    rules = discover_rules()
    for code in sorted(set(rules) | set(CATALOG)):
        if code not in CATALOG:
            raise StaleCatalog(f"it has no entry for {code}")
        if code not in rules:
            raise StaleCatalog(f"it lists {code}, which no rule declares")
        if rules[code].entry() != CATALOG[code]:
            raise StaleCatalog(f"{code}'s declarations changed")
    return rules


def check_catalog_lists_every_rule() -> None:
    """Raise :class:`StaleCatalog` where a rule module is not in the catalog or a catalog entry
    has no module (cheap: lists a folder, imports nothing)."""
    from portlint.catalog import CATALOG

    listed = {entry.module for entry in CATALOG.values()}
    present = set(_rule_modules())
    if listed != present:
        added, gone = sorted(present - listed), sorted(listed - present)
        raise StaleCatalog(", ".join([*(f"new rule module {m}" for m in added),
                                      *(f"no module {m}" for m in gone)]))  # fmt: skip


def expand_selector(selector: str) -> set[str]:
    """The codes a selector names: ``ALL``, a full code, or a code prefix such as ``PORT1``.

    Raises ``KeyError`` for a selector that names no rule.
    """
    from portlint.catalog import CATALOG

    if selector.upper() == "ALL":
        return set(CATALOG)
    matched = {code for code in CATALOG if code.startswith(selector.upper())}
    if not matched or not selector.upper().startswith("PORT"):
        raise KeyError(selector)
    return matched
