"""The errors that stop every run: portlint's own rules are broken (no libcst here: a run that
parses nothing imports none)."""

from __future__ import annotations


class BrokenRules(Exception):
    """portlint's rules cannot be used as they are: no run may go on (nor report a file as
    clean), whatever file it was checking."""


class RuleDefinitionError(BrokenRules, TypeError):
    """A rule class that lacks a piece or declares one wrongly: raised when its module is
    imported."""
