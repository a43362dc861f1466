"""The project index's facts per file, and the joins' last verdicts, kept beside the lint cache
between runs.

A module's facts (:func:`portlint.index.reading.read_module`) depend only on its text and on which
top-level packages the run's tree holds (uses of other libraries are not kept), never on the
settings: one store per (portlint build, packages). Its table holds, per file, the stamp and the
digest of the bytes the facts were read from (as in :mod:`portlint.cache`), and what every run
asks of every module without reading its facts: their :func:`~portlint.index.project.join_shape`
and the module's stream helpers. The facts themselves are a file each in the store's folder,
named by the digest of their JSON, read only where a run asks for that module (a finding in it,
a name resolved through it, or joins made again): a run after an edit that kept every module's
shape reads a few of them, not the 18 MB of vLLM's. Such a file is never rewritten, and one
whose bytes do not match its name (a crash while it was written) is read again from the source.

Beside them, the verdicts of the last joins and the :func:`~portlint.index.project.join_key`
they were made for. A table or verdict that cannot be read is empty.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

from portlint.atomic import write_atomically
from portlint.cache import build_stamp, digest, file_stamp, load_table, save_table, table_name
from portlint.index.project import join_shape

STAMP, DATA, FACTS, SHAPE, STREAM_HELPERS = range(5)  # the fields of an entry of the table
STALE_SECONDS = 3600  # a facts file no entry names is removed once it is this old


class IndexStore:
    def __init__(self, folder: Path, packages: frozenset[str]) -> None:
        """The store for ``packages`` in ``folder`` (the lint cache's)."""
        self.folder = folder
        name = f"index-{table_name([build_stamp(), sorted(packages)])}"
        self.file = folder / f"{name}.json"
        self.facts_folder = folder / name
        self.entries: dict[str, list] = load_table(self.file)
        self.changed = False
        self._absolute: dict[str, str] = {}  # (a run asks for each path more than once)

    def _key(self, path: str) -> str:
        if path not in self._absolute:
            self._absolute[path] = os.path.abspath(path)
        return self._absolute[path]

    def entry(
        self, path: str, data_digest: str | None = None, info: os.stat_result | None = None
    ) -> list | None:
        """The entry kept for ``path``, if its stamp (from ``info``, its status where it was
        taken already) or, given, its digest is the file's."""
        entry = self.entries.get(self._key(path))
        if not isinstance(entry, list) or len(entry) != 5:
            return None
        if data_digest is not None:
            return entry if entry[DATA] == data_digest else None
        try:
            stamp = file_stamp(info or os.stat(path))
        except OSError:
            return None
        return entry if entry[STAMP] == stamp else None

    def read(self, entry: list) -> dict[str, Any] | None:
        """The facts an entry names (None: their file is gone or torn)."""
        with contextlib.suppress(OSError, ValueError):
            data = (self.facts_folder / f"{entry[FACTS]}.json").read_bytes()
            if digest(data) == entry[FACTS]:
                facts = json.loads(data)
                if isinstance(facts, dict):
                    return facts
        return None

    def store(self, path: str, data_digest: str, facts: dict[str, Any]) -> None:
        try:
            stamp = file_stamp(os.stat(path))
        except OSError:
            return
        self.entries[self._key(path)] = [stamp, data_digest, *self._written(facts)]
        self.changed = True

    def update(self, path: str, facts: dict[str, Any]) -> None:
        """``path``'s facts, completed after they were stored (for the same content)."""
        entry = self.entries.get(self._key(path))
        if isinstance(entry, list) and len(entry) == 5:
            entry[FACTS:] = self._written(facts)
            self.changed = True

    def _written(self, facts: dict[str, Any]) -> list:
        """The fields of an entry for ``facts``, their file written where it is missing."""
        data = json.dumps(facts, separators=(",", ":")).encode()
        name = digest(data)
        target = self.facts_folder / f"{name}.json"
        if not os.path.islink(self.folder) and not os.path.islink(self.facts_folder):
            with contextlib.suppress(OSError):
                if not target.exists():
                    self.facts_folder.mkdir(parents=True, exist_ok=True)
                    write_atomically(str(target), data, durable=False)
        return [name, join_shape(facts), facts.get("stream_helpers", [])]

    def shapes(self, paths: Iterator[str]) -> list[tuple[str, str]] | None:
        """The join shape of each of ``paths`` (None: one has no entry)."""
        found = []
        for path in paths:
            entry = self.entries.get(self._key(path))
            if not isinstance(entry, list) or len(entry) != 5:
                return None
            found.append((path, entry[SHAPE]))
        return found

    def verdicts(self, key: str) -> dict[str, Any] | None:
        """The last joins' verdicts, if they were made for ``key``."""
        kept = load_table(self.facts_folder / "verdicts.json")
        return kept.get("verdicts") if kept.get("key") == key else None

    def keep_verdicts(self, key: str, verdicts: dict[str, Any]) -> None:
        if not os.path.islink(self.folder) and not os.path.islink(self.facts_folder):
            with contextlib.suppress(OSError):
                self.facts_folder.mkdir(parents=True, exist_ok=True)
                data = json.dumps({"key": key, "verdicts": verdicts}, separators=(",", ":"))
                write_atomically(str(self.facts_folder / "verdicts.json"), data.encode())

    def save(self) -> None:
        """Write the table atomically, and remove the facts files that no entry names and
        no run can still be reading; a store that cannot be written is no error."""
        if not self.changed:
            return
        save_table(self.folder, self.file, self.entries)
        named = {f"{entry[FACTS]}.json" for entry in self.entries.values() if len(entry) == 5}
        with contextlib.suppress(OSError):
            for item in os.scandir(self.facts_folder):
                lost = item.name not in named and item.name != "verdicts.json"
                if lost and item.name.endswith(".json") and self._stale(item):
                    os.unlink(item.path)

    @staticmethod
    def _stale(item: os.DirEntry) -> bool:
        with contextlib.suppress(OSError):
            return time.time() - item.stat().st_mtime > STALE_SECONDS
        return False


class Facts(MutableMapping[str, dict[str, Any]]):
    """Per path, a module's facts for the project index: those given, and those the store holds,
    read when first asked for (in the order the paths came)."""

    def __init__(self, store: IndexStore | None, packages: frozenset[str]) -> None:
        self.store = store
        self.packages = packages
        self.rows: dict[str, dict[str, Any] | list] = {}  # facts, or an entry not yet read

    def keep(self, path: str, entry: list) -> None:
        """``path``'s facts are those ``entry`` names."""
        self.rows[path] = entry

    def __getitem__(self, path: str) -> dict[str, Any]:
        row = self.rows[path]
        if isinstance(row, list):
            assert self.store is not None
            row = self.store.read(row) or self._read_again(path)
            self.rows[path] = row
        return row

    def _read_again(self, path: str) -> dict[str, Any]:
        """The facts of ``path`` from its source, where their file is lost (its text is the
        entry's: the entry's stamp or digest matched it this run)."""
        from portlint.engine import SourceError, read_source  # (the engine imports this module)
        from portlint.index.reading import read_module
        from portlint.speed.cut import parse_ast

        try:
            tree = parse_ast(read_source(path))
        except SourceError:  # (gone since: a module that says nothing)
            tree = None
        return read_module(tree or ast.Module(body=[], type_ignores=[]), self.packages)

    def __setitem__(self, path: str, facts: dict[str, Any]) -> None:
        self.rows[path] = facts

    def __delitem__(self, path: str) -> None:
        del self.rows[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, path: object) -> bool:
        return path in self.rows
