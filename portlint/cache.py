"""Results per file, kept in ``.portlint_cache/`` between runs.

A file's own findings depend on its content, its path (``per-file-ignores``,
``cuda-only-paths``), the effective settings and portlint itself; nothing else. So the cache has
one table per (portlint build, settings, whether fixes carry edits), and in it, per file, the
findings, what they were computed from (the file's size, mtime and ctime: a hit needs no read at
all; a digest of its bytes: a file touched but unchanged is a hit after one read) and the notes
its rules left for the project index. What other modules say of a finding (their kernels, the
callers of its function) is never cached with it: a run that joins a project judges the cached
findings again, with those notes, against the project as it is now
(:meth:`portlint.index.project.Project.judge`). An entry says which it holds: findings as the
rules found them, with their notes (a project's run), or findings judged with the file alone
(``notes`` None); a run takes only its own kind.

Each run writes its table to a temporary file and renames it into place, so concurrent runs never
see a torn file: the last one to finish wins, and every entry it holds is still checked against
the file before use. A table that cannot be read is treated as empty.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import asdict, fields
from pathlib import Path
from typing import NamedTuple

import portlint
from portlint.atomic import write_atomically
from portlint.findings import Edit, Fix, Violation
from portlint.settings import Settings

CACHE_DIR = ".portlint_cache"


def build_stamp() -> str:
    """portlint's version and its source files (so a development checkout never reads a table
    that an older state of the code wrote)."""
    package = Path(portlint.__file__).parent
    stamp = [portlint.__version__]
    for path in sorted(package.rglob("*.py")):
        info = path.stat()
        stamp.append(f"{path.relative_to(package)}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:16]


def _settings_key(settings: Settings) -> object:
    values = {}
    for item in fields(settings):
        value = getattr(settings, item.name)
        values[item.name] = sorted(value) if isinstance(value, frozenset) else value
    return json.loads(json.dumps(values, default=sorted))


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_stamp(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _dump(violation: Violation) -> list:
    fix = violation.fix
    return [
        violation.line, violation.col, violation.code, violation.message, violation.end_line,
        violation.end_col, violation.confidence,
        None if fix is None else [fix.applicability, fix.message, [asdict(e) for e in fix.edits]],
        violation.detail,
    ]  # fmt: skip


def _load(path: str, row: list) -> Violation:
    """The finding a row holds; TypeError or ValueError where the row is not one (its positions
    are sorted against others', so they must be numbers; a row of a table written before
    findings had a detail has one item fewer: the file is linted again)."""
    line, col, code, message, end_line, end_col, confidence, fix, detail = row
    if not all(type(number) is int for number in (line, col, end_line, end_col)):
        raise TypeError("a position that is not a number")
    if not all(isinstance(text, str) for text in (message, detail)) or not isinstance(
        code, (str, type(None))
    ):
        raise TypeError("a code, message or detail that is not text")
    if fix is not None:
        applicability, fix_message, edits = fix
        fix = Fix(applicability, fix_message, tuple(Edit(**e) for e in edits))
    return Violation(path, line, col, code, message, end_line, end_col, confidence, fix, detail)


class Cached(NamedTuple):
    """A file's cached findings, and the notes its rules left for the project (None: the
    findings were judged with the file alone)."""

    findings: list[Violation]
    notes: dict | None


class Cache:
    def __init__(
        self, root: Path, settings: Settings, fix_edits: bool, folder: Path | None = None
    ) -> None:
        key = [build_stamp(), _settings_key(settings), fix_edits]
        self.folder = folder or root / CACHE_DIR  # (folder: --cache-dir)
        self.fix_edits = fix_edits
        self.file = self.folder / f"{table_name(key)}.json"
        self.entries: dict[str, list] = load_table(self.file)
        self.changed = False

    def run_lookup(self, key: str) -> list[Violation] | None:
        """The findings of the last whole run, if ``key`` (its files and their stamps) is that
        run's: a run where nothing changed is answered without joining the project again."""
        record = load_table(self._run_file())
        if record.get("key") != key:
            return None
        with contextlib.suppress(ValueError, TypeError, IndexError):
            return [_load(path, row) for path, row in record["violations"]]
        return None

    def run_store(self, key: str, violations: list[Violation]) -> None:
        record = {"key": key, "violations": [[v.path, _dump(v)] for v in violations]}
        save_table(self.folder, self._run_file(), record)

    def _run_file(self) -> Path:
        return self.folder / f"{self.file.stem}-run.json"

    def for_settings(self, settings: Settings) -> Cache:
        """The table of the same folder for other settings (what the project index adds)."""
        return Cache(self.folder.parent, settings, self.fix_edits, folder=self.folder)

    @staticmethod
    def _key(path: str) -> str:
        return os.path.abspath(path)

    def _entry(self, path: str, project: bool) -> list | None:
        """The entry for ``path`` of the kind a run asks for (``project``: with notes), where it
        has the shape :meth:`store` gives it (a table is written by any version of portlint, or
        by hand)."""
        entry = self.entries.get(self._key(path))
        if (
            isinstance(entry, list)
            and len(entry) == 4
            and isinstance(entry[0], list)
            and isinstance(entry[1], str)
            and isinstance(entry[2], list)
            and (isinstance(entry[3], dict) if project else entry[3] is None)
        ):
            return entry
        return None

    @staticmethod
    def _found(path: str, entry: list) -> Cached | None:
        try:
            return Cached([_load(path, row) for row in entry[2]], entry[3])
        except (TypeError, ValueError):  # a malformed row: the file is linted again
            return None

    def lookup(
        self, path: str, info: os.stat_result | None = None, project: bool = False
    ) -> Cached | None:
        """The cached findings, if the file's size and times (its status, ``info`` where it was
        taken already) are those they were computed for."""
        entry = self._entry(path, project)
        try:
            info = info or os.stat(path)
        except OSError:
            return None
        if entry is None or entry[0] != file_stamp(info):
            return None
        return self._found(path, entry)

    def lookup_content(
        self, path: str, data_digest: str, info: os.stat_result, project: bool = False
    ) -> Cached | None:
        """The cached findings for content with this digest (a touched, unchanged file), read
        when the file was as ``info`` says (its status before the read)."""
        entry = self._entry(path, project)
        if entry is None or entry[1] != data_digest:
            return None
        found = self._found(path, entry)
        if found is not None:
            entry[0] = file_stamp(info)
            self.changed = True
        return found

    def store(
        self,
        path: str,
        data_digest: str,
        violations: list[Violation],
        info: os.stat_result,
        notes: dict | None = None,
    ) -> None:
        """Keep the findings of the content read when the file was as ``info`` says (its status
        before the read: a file edited since has another, and is linted again next time), with
        the notes its rules left for the project (None: the findings are judged alone)."""
        rows = [_dump(v) for v in violations]
        self.entries[self._key(path)] = [file_stamp(info), data_digest, rows, notes]
        self.changed = True

    def save(self) -> None:
        """Write the table (:func:`save_table`)."""
        if not self.changed:
            return
        save_table(self.folder, self.file, self.entries)


def table_name(key: object) -> str:
    """The name of the table for ``key`` (what its contents depend on, as JSON)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def load_table(file: Path) -> dict:
    """A table as :func:`save_table` wrote it; empty where it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(file.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded
    return {}


def save_table(folder: Path, file: Path, entries: dict) -> None:
    """Write a table of ``folder`` (made, and git-ignored, where missing) atomically; a table
    that cannot be written is no error. Nothing is written through a symbolic link: a cache
    folder that is one (or a ``.gitignore`` in it that is one, dangling or not) could lead out
    of the project."""
    if os.path.islink(folder):
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not os.path.lexists(ignore):
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            with open(os.open(ignore, flags, 0o666), "w") as stream:
                stream.write("# Created by portlint.\n*\n")
        data = json.dumps(entries, separators=(",", ":")).encode("utf-8")
        write_atomically(str(file), data)


def clean(root: Path) -> bool:
    """Remove ``root/.portlint_cache`` (a link: the link, not what it leads to); whether there was
    one."""
    folder = root / CACHE_DIR
    if os.path.islink(folder):
        folder.unlink()
        return True
    if not folder.is_dir():
        return False
    shutil.rmtree(folder)
    return True
