"""Which files a run lints: directories recursively, excludes and .gitignore applied."""

from __future__ import annotations

import os
from pathlib import Path

from portlint import gitignore
from portlint.settings import Settings, matches_any

PYTHON_SUFFIXES = (".py", ".pyi")


def discover(
    paths: list[Path], settings: Settings, force_exclude: bool = False
) -> tuple[list[Path], list[Path]]:
    """Return (files to lint, paths that do not exist).

    A file named explicitly is linted unless ``force_exclude`` (what a pre-commit hook, which
    names every staged file, wants) and an exclude pattern matches it or a folder above it;
    files found by walking a folder are skipped when an exclude pattern or a .gitignore says so.
    """
    files: list[Path] = []
    missing: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(_walk(path, settings))
        elif path.exists():  # a file, or something else that reading it will diagnose (a FIFO)
            if not (force_exclude and is_excluded(path, settings)):
                files.append(path)
        else:
            missing.append(path)
    unique = list(dict.fromkeys(files))
    return unique, missing


def is_excluded(path: Path, settings: Settings) -> bool:
    """Whether an exclude pattern matches ``path`` or a folder above it (up to the root)."""
    resolved = path.resolve()
    root = Path(settings.root).resolve()
    chain = [resolved, *(p for p in resolved.parents if p == root or root in p.parents)]
    return any(matches_any(str(p), settings.exclude, settings.root) for p in chain)


def _kept(
    path: str, relative: str, is_dir: bool, settings: Settings, patterns: list[gitignore.Pattern]
) -> bool:
    """``path``: absolute and resolved; ``relative``: relative to the settings' root."""
    if matches_any(path, settings.exclude, settings.root, relative):
        return False
    return not (patterns and gitignore.is_ignored(path, is_dir, patterns))


def _walk(top: Path, settings: Settings) -> list[Path]:
    """The Python files under ``top``, as paths under ``top`` (matched in their resolved form)."""
    found: list[Path] = []
    from_root = os.path.relpath(top.resolve(), settings.root)
    # Per folder still to walk: its resolved form and its path from the root, each ending in a
    # separator (joined by hand: ``os.path.join`` and ``relpath`` per entry are most of a walk),
    # and the .gitignore patterns of the folders above it.
    base_patterns = gitignore.ancestor_patterns(top) if settings.respect_gitignore else []
    pending = {
        os.fspath(top): (
            os.path.join(str(top.resolve()), ""),
            "" if from_root == "." else os.path.join(from_root, ""),
            base_patterns,
        )
    }
    for folder, dirnames, filenames in os.walk(top):
        here = Path(folder)
        inside, under_root, patterns = pending.pop(folder)
        if settings.respect_gitignore:
            patterns = patterns + gitignore.parse(here / ".gitignore")
        dirnames[:] = sorted(
            d for d in dirnames if _kept(inside + d, under_root + d, True, settings, patterns)
        )
        for name in dirnames:
            pending[os.path.join(folder, name)] = (
                inside + name + os.sep,
                under_root + name + os.sep,
                patterns,
            )
        found.extend(
            here / name
            for name in sorted(filenames)
            if name.endswith(PYTHON_SUFFIXES)
            and _kept(inside + name, under_root + name, False, settings, patterns)
        )
    return found
