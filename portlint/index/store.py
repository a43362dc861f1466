"""The project index's facts per file, and the joins' last verdicts, kept beside the lint cache
between runs.

A module's facts (:func:`portlint.index.reading.read_module`) depend only on its text and on which
top-level packages the run's tree holds (uses of other libraries are not kept), never on the
settings: one store per (portlint build, packages). Its table holds, per file, the stamp and the
digest of the bytes the facts were read from (as in :mod:`portlint.cache`), where its facts are,
and what every run asks of every module without reading its facts: their
:func:`~portlint.index.joins.join_shape` and the module's stream helpers.

The facts themselves are appended, as JSON, to a pack file in the store's folder
(``facts-<generation>.pack``), and read from it (offset, length) only where a run asks for that
module: a finding in it, a name resolved through it, or joins made again. A run after an edit that
kept every module's shape reads a few of them, not the 18 MB of vLLM's. Appends are single writes
to a file opened for appending, so concurrent runs never overwrite each other's; what an entry
names is checked against the digest it records, and facts that do not match (lost, torn, or in a
pack rewritten since) are read again from the source, and stored again. A pack holding more than
twice what the table names is rewritten as a new generation; a pack that no entry names is
removed once no run can still be reading it.

Beside them, the verdicts of the last joins and the :func:`~portlint.index.joins.join_key`
they were made for. A table or verdict that cannot be read is empty.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import time
import weakref
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any, BinaryIO

from portlint.atomic import write_atomically
from portlint.cache import build_stamp, digest, file_stamp, load_table, save_table, table_name
from portlint.index.joins import join_shape
from portlint.settings import Settings
from portlint.sources import SourceError, read_source

STAMP, DATA, FACTS, SHAPE, STREAM_HELPERS = range(5)  # the fields of an entry of the table
PACK, OFFSET, LENGTH, DIGEST = range(4)  # where an entry's facts are
STALE_SECONDS = 3600  # a pack no entry names is removed once it is this old
# Bytes of a pack that no entry names, beyond as many as are named, before it is rewritten.
SLACK = 4 << 20


class IndexStore:
    def __init__(
        self, folder: Path, packages: frozenset[str], settings: Settings | None = None
    ) -> None:
        """The store for ``packages`` in ``folder`` (the lint cache's), of facts with the
        platform model's places (:func:`~portlint.index.reading.facts_of`: the libraries and
        guard functions of ``settings`` that it reads are the store's too)."""
        self.folder = folder
        model = (
            [sorted(settings.cuda_only_imports), sorted(settings.guard_functions)]
            if settings is not None
            else False
        )
        name = f"index-{table_name([build_stamp(), sorted(packages), model])}"
        self.file = folder / f"{name}.json"
        self.facts_folder = folder / name
        self.entries: dict[str, list] = load_table(self.file)
        self.changed = False
        self._absolute: dict[str, str] = {}  # (a run asks for each path more than once)
        generations = [e[FACTS][PACK] for e in self.entries.values() if _is_entry(e)]
        self.generation = max(generations, default=0)  # the pack appended to
        self._appending: dict[int, int] = {}  # per pack, a descriptor open for appending
        self._reading: dict[int, BinaryIO] = {}  # per pack, a file open for reading
        weakref.finalize(self, _close_all, self._appending, self._reading)

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
        if not _is_entry(entry):
            return None
        assert entry is not None
        if data_digest is not None:
            return entry if entry[DATA] == data_digest else None
        try:
            stamp = file_stamp(info or os.stat(path))
        except OSError:
            return None
        return entry if entry[STAMP] == stamp else None

    def read(self, entry: list) -> dict[str, Any] | None:
        """The facts an entry names (None: they are not there as it says)."""
        where = entry[FACTS]
        with contextlib.suppress(OSError, ValueError):
            data = self._bytes(where)
            if digest(data) == where[DIGEST]:
                facts = json.loads(data)
                if isinstance(facts, dict):
                    return facts
        return None

    def store(self, path: str, data_digest: str, facts: dict[str, Any]) -> None:
        try:
            stamp = file_stamp(os.stat(path))
        except OSError:
            return
        fields = self._written(facts)
        if fields is not None:
            self.entries[self._key(path)] = [stamp, data_digest, *fields]
            self.changed = True

    def update(self, path: str, facts: dict[str, Any]) -> None:
        """``path``'s facts, completed or read again after they were stored (the same content)."""
        entry = self.entries.get(self._key(path))
        fields = self._written(facts) if _is_entry(entry) else None
        if entry is not None and fields is not None:
            entry[FACTS:] = fields
            self.changed = True

    def _written(self, facts: dict[str, Any]) -> list | None:
        """The fields of an entry for ``facts``, appended to the pack (None: they cannot be).
        The rules' notes are left out: they depend on the settings, and the lint cache keeps
        them with the findings they explain."""
        kept = {name: value for name, value in facts.items() if name != "notes"}
        data = json.dumps(kept, separators=(",", ":")).encode()
        try:
            descriptor = self._appender(self.generation)
            if os.write(descriptor, data) != len(data):
                return None
            end = os.lseek(descriptor, 0, os.SEEK_CUR)  # (after this write, appended as one)
        except OSError:
            return None
        where = [self.generation, end - len(data), len(data), digest(data)]
        return [where, join_shape(facts), facts.get("stream_helpers", [])]

    def _appender(self, generation: int) -> int:
        """A descriptor of a pack open for appending (made where missing; never through a link)."""
        if generation not in self._appending:
            self._no_link()
            self.facts_folder.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            self._appending[generation] = os.open(self._pack(generation), flags, 0o666)
        return self._appending[generation]

    def _bytes(self, where: list) -> bytes:
        """What a pack holds at an entry's offset, as long as it says."""
        if where[PACK] not in self._reading:
            self._no_link()
            self._reading[where[PACK]] = open(self._pack(where[PACK]), "rb", buffering=0)  # noqa: SIM115
        stream = self._reading[where[PACK]]
        stream.seek(where[OFFSET])
        return stream.read(where[LENGTH])

    def _no_link(self) -> None:
        if os.path.islink(self.folder) or os.path.islink(self.facts_folder):
            raise OSError(f"{self.facts_folder}: a symbolic link")

    def _pack(self, generation: int) -> str:
        return str(self.facts_folder / f"facts-{generation}.pack")

    def shapes(self, paths: Iterator[str]) -> list[tuple[str, str]] | None:
        """The join shape of each of ``paths`` (None: one has no entry)."""
        found = []
        for path in paths:
            entry = self.entries.get(self._key(path))
            if not _is_entry(entry):
                return None
            assert entry is not None
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
        """Write the table atomically (the pack rewritten first where most of it is dead), and
        remove the packs that no entry names and no run can still be reading; a store that
        cannot be written is no error."""
        if not self.changed:
            return
        with contextlib.suppress(OSError):
            named = sum(e[FACTS][LENGTH] for e in self.entries.values() if _is_entry(e))
            if os.path.getsize(self._pack(self.generation)) > 2 * named + SLACK:
                self._rewrite()
        save_table(self.folder, self.file, self.entries)
        kept = {f"facts-{e[FACTS][PACK]}.pack" for e in self.entries.values() if _is_entry(e)}
        with contextlib.suppress(OSError):
            for item in os.scandir(self.facts_folder):
                if item.name.endswith(".pack") and item.name not in kept and _stale(item):
                    os.unlink(item.path)

    def _rewrite(self) -> None:
        """Every entry's facts, and nothing else, in a pack of the next generation."""
        entries = [e for e in self.entries.values() if _is_entry(e)]
        parts, offset = [], 0
        for entry in entries:
            data = self._bytes(entry[FACTS])
            parts.append((entry, data, offset))
            offset += len(data)
        generation = self.generation + 1
        write_atomically(self._pack(generation), b"".join(d for _, d, _ in parts), durable=False)
        for entry, data, start in parts:
            entry[FACTS] = [generation, start, len(data), entry[FACTS][DIGEST]]
        self.generation = generation


def _is_entry(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 5
        and isinstance(entry[FACTS], list)
        and len(entry[FACTS]) == 4
    )


def _stale(item: os.DirEntry) -> bool:
    with contextlib.suppress(OSError):
        return time.time() - item.stat().st_mtime > STALE_SECONDS
    return False


def _close_all(appending: dict[int, int], reading: dict[int, BinaryIO]) -> None:
    for descriptor in appending.values():
        with contextlib.suppress(OSError):
            os.close(descriptor)
    for stream in reading.values():
        stream.close()


class Facts(MutableMapping[str, dict[str, Any]]):
    """Per path, a module's facts for the project index: those given, and those the store holds,
    read when first asked for (in the order the paths came)."""

    def __init__(
        self, store: IndexStore | None, packages: frozenset[str], settings: Settings | None = None
    ) -> None:
        self.store = store
        self.packages = packages
        self.settings = settings  # (facts_of's)
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
        """The facts of ``path`` from its source, where the store's are not as its entry says
        (its text is the entry's: the entry's stamp or digest matched it this run), and stored
        again."""
        from portlint.index.reading import facts_of
        from portlint.speed.cut import parse_ast

        empty = ast.Module(body=[], type_ignores=[])
        try:
            source = read_source(path)
        except SourceError:  # (gone since: a module that says nothing)
            return facts_of(empty, "", path, self.packages, self.settings)
        facts = facts_of(parse_ast(source) or empty, source, path, self.packages, self.settings)
        assert self.store is not None
        self.store.update(path, facts)
        return facts

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
