"""When a call counts as a call of one of a module's functions: the convention the cut on the
text (:mod:`portlint.speed.cut`) follows, so that it keeps every caller the platform model can
count.

A function ``f`` defined outside classes is called by ``f(...)``. A function ``f`` defined in a
class ``C`` (or nested in one of its methods) is called by ``C.f(...)`` anywhere, and by
``self.f(...)`` or ``cls.f(...)`` inside ``C``. A method named like a common word (``forward``)
then has its own class's callers, not every call of some ``forward``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RECEIVERS = ("self", "cls")


def definition_key(name: str, owner: str | None) -> str:
    """What calls of function ``name``, defined in class ``owner`` (None: outside classes), are
    counted under."""
    return f"{owner}.{name}" if owner else name


def _alternatives(names: Iterable[str]) -> str:
    return "|".join(map(re.escape, sorted(names)))


_WORD = re.compile(r"\w+")


def words_of(text: str) -> frozenset[str]:
    """The words of ``text``: a text matches the patterns below only where it holds the name
    each key ends with as one of them (a set test that spares most searches)."""
    return frozenset(_WORD.findall(text))


def callers_anywhere(keys: Iterable[str]) -> re.Pattern[str]:
    """A text that may call one of these definition keys from anywhere (``f``, ``C.f``)."""
    return re.compile(rf"\b(?:{_alternatives(keys)})\b")


def callers_in_class(names: Iterable[str]) -> re.Pattern[str]:
    """A text in the class that defines these functions that may call one (``self.f``)."""
    return re.compile(rf"\b(?:{'|'.join(RECEIVERS)})\.(?:{_alternatives(names)})\b")
