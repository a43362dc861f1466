"""The effective settings of a run: plain, picklable data built by :mod:`portlint.config`."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import PurePath


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
    guardable_codes: frozenset[str] = frozenset()
    device_expression: str = ""
    # The oldest torch the code must run on, as (major, minor); None: every version portlint knows.
    target_torch_version: tuple[int, int] | None = None

    def codes_for(self, path: str) -> frozenset[str]:
        """The codes enabled for ``path``: ``per-file-ignores`` and ``cuda-only-paths`` applied."""
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if matches_glob(path, pattern, self.root):
                ignored |= codes
        if any(matches_glob(path, pattern, self.root) for pattern in self.cuda_only_paths):
            ignored |= self.guardable_codes
        return self.select - ignored


def matches_glob(path: str, pattern: str, root: str) -> bool:
    """Match as ruff does: against the file's name, or its path relative to ``root``."""
    pure = PurePath(path)
    if fnmatch(pure.name, pattern):
        return True
    try:
        relative = PurePath(path).relative_to(root) if pure.is_absolute() else pure
    except ValueError:
        relative = pure
    return fnmatch(relative.as_posix(), pattern)
