"""The project index's facts per file, kept beside the lint cache between runs.

A module's facts (:func:`portlint.index.reading.read_module`) depend only on its text and on which
top-level packages the run's tree holds (uses of other libraries are not kept), never on the
settings: one table per (portlint build, packages), with per file the stamp and the digest of the
bytes the facts were read from, as in :mod:`portlint.cache`. A table that cannot be read is empty.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from portlint.cache import build_stamp, file_stamp, load_table, save_table, table_name


class IndexStore:
    def __init__(self, folder: Path, packages: frozenset[str]) -> None:
        """The table for ``packages`` in ``folder`` (the lint cache's)."""
        self.folder = folder
        self.file = folder / f"index-{table_name([build_stamp(), sorted(packages)])}.json"
        self.entries: dict[str, list] = load_table(self.file)
        self.changed = False

    def lookup(self, path: str, data_digest: str | None = None) -> dict[str, Any] | None:
        """The facts kept for ``path``, if its stamp (or, given, its digest) is theirs."""
        entry = self.entries.get(os.path.abspath(path))
        if not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[2], dict):
            return None
        if data_digest is not None:
            return entry[2] if entry[1] == data_digest else None
        try:
            stamp = file_stamp(os.stat(path))
        except OSError:
            return None
        return entry[2] if entry[0] == stamp else None

    def store(self, path: str, data_digest: str, facts: dict[str, Any]) -> None:
        try:
            stamp = file_stamp(os.stat(path))
        except OSError:
            return
        self.entries[os.path.abspath(path)] = [stamp, data_digest, facts]
        self.changed = True

    def update(self, path: str, facts: dict[str, Any]) -> None:
        """``path``'s facts, completed after they were stored (for the same content)."""
        entry = self.entries.get(os.path.abspath(path))
        if isinstance(entry, list) and len(entry) == 3:
            entry[2] = facts
            self.changed = True

    def save(self) -> None:
        """Write the table atomically; a table that cannot be written is no error."""
        if self.changed:
            save_table(self.folder, self.file, self.entries)
