"""The effective settings of a run: plain, picklable data built by :mod:`portlint.config`."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field

from portlint.catalog import GUARDABLE
from portlint.facts import CUDA_ONLY_LIBRARIES
from portlint.platform import INFERENCES


@dataclass(frozen=True)
class Settings:
    root: str = "."
    select: frozenset[str] = frozenset()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    stream_functions: tuple[str, ...] = field(default=())
    guard_functions: tuple[str, ...] = field(default=())
    cuda_only_paths: tuple[str, ...] = field(default=())
    device_expression: str = ""
    # What the platform inference reads (portlint.platform): the kinds it draws on, the libraries
    # that exist only for NVIDIA or AMD GPUs, and comments that mark a line as CUDA-only.
    platform_inferences: frozenset[str] = frozenset(INFERENCES)
    cuda_only_imports: tuple[str, ...] = tuple(CUDA_ONLY_LIBRARIES)
    noqa_markers: tuple[str, ...] = ()
    # The oldest torch the code must run on, as (major, minor); None: every version portlint knows.
    target_torch_version: tuple[int, int] | None = None
    # Report findings that noqa comments suppress too (--ignore-noqa).
    ignore_noqa: bool = False
    # Parse only the parts of a file a rule can report on (portlint/speed/cut.py); off for tests
    # that compare, and never used when fixes must carry their edits.
    partial_parse: bool = True

    def codes_for(self, path: str) -> frozenset[str]:
        """The codes enabled for ``path``: ``per-file-ignores`` and ``cuda-only-paths`` applied."""
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if matches_glob(path, pattern, self.root):
                ignored |= codes
        if matches_any(path, self.cuda_only_paths, self.root):
            ignored |= GUARDABLE
        return self.select - ignored


def matches_glob(path: str, pattern: str, root: str) -> bool:
    """Match as ruff does: against the file's name, or its path relative to ``root``."""
    return matches_any(path, (pattern,), root)


@functools.cache
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def matches_any(
    path: str, patterns: tuple[str, ...], root: str, relative: str | None = None
) -> bool:
    """Whether any of ``patterns`` matches ``path``'s name or its path relative to ``root``
    (``relative``, where the caller knows it)."""
    if not patterns:
        return False
    regex = _compiled(patterns)
    if regex.match(os.path.basename(path)):
        return True
    if relative is None:
        relative = os.path.relpath(path, root) if os.path.isabs(path) else path
    if relative.startswith(".."):
        relative = path
    return regex.match(relative.replace(os.sep, "/")) is not None
