"""Interface siblings (issue #48): functions that play the same part in the project, whose
callers expect the same dtypes of what they return. Where one returns an implicitly int64 count
or index tensor and a sibling returns int32 in the same place, the int64 is the odd one: vLLM
#39951's fix gave the probabilistic sampler's count `dtype=torch.int32` because "the strict
sampler returns int32, so every caller expects int32".

Siblings are read from structure, not names alone: a module-level function and one of the same
name in another module of the same package (``samplers/strict.py: sample``, ``samplers/
probabilistic.py: sample``), or a method and one of the same name in another class of those
modules (implementations of one method of a base class).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from portlint.index.project import Project


def int32_sibling(
    project: Project, path: str, function: str, element: int | None
) -> tuple[str, str] | None:
    """A sibling of ``function`` of ``path`` that returns an int32 tensor as its ``element``
    (None: the whole value): its name and where it is."""
    folder = os.path.dirname(path)
    method = function.count(".") == 1
    last = function.rsplit(".", 1)[-1]
    for other in sorted(project.facts):
        if os.path.dirname(other) != folder:
            continue
        for unit, *_ in project.facts[other].get("units", []):
            same_part = (
                unit.count(".") == 1 and unit.endswith(f".{last}") if method else unit == function
            )
            if not same_part or (other == path and unit == function):
                continue
            summary = project.functions(other).get(unit)
            if summary is not None and element in summary.get("int32_returns", []):
                return unit, project.shown(other)
    return None
