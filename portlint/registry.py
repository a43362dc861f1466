"""Rule discovery: every ``Rule`` subclass in ``portlint.rules`` is a rule; none is listed by hand."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TYPE_CHECKING

from portlint.catalog import CATALOG

if TYPE_CHECKING:
    from portlint.rule import Rule


@functools.cache
def all_rules() -> dict[str, type[Rule]]:
    """Every rule, by code, in code order (this imports LibCST and every rule module)."""
    import portlint.rules
    from portlint.rule import Rule

    found: dict[str, type[Rule]] = {}
    for module_info in pkgutil.iter_modules(portlint.rules.__path__):
        module = importlib.import_module(f"portlint.rules.{module_info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value.__module__ == module.__name__
            ):
                if value.code in found:
                    raise RuntimeError(f"two rules claim {value.code}")
                found[value.code] = value
    return dict(sorted(found.items()))


def expand_selector(selector: str) -> set[str]:
    """The codes a selector names: ``ALL``, a full code, or a code prefix such as ``PORT1``.

    Raises ``KeyError`` for a selector that names no rule.
    """
    codes = CATALOG
    if selector.upper() == "ALL":
        return set(codes)
    matched = {code for code in codes if code.startswith(selector.upper())}
    if not matched or not selector.upper().startswith("PORT"):
        raise KeyError(selector)
    return matched
