"""Reading a Python file's text as Python reads it: its bytes (a regular file only), their
encoding (PEP 263 declarations, as Python finds them), and a diagnostic where that fails; and
writing it back in the same encoding."""

from __future__ import annotations

import os
import re
import stat
import tokenize
from pathlib import Path

from portlint.atomic import write_atomically
from portlint.bounds import compile_quietly
from portlint.findings import Violation

# A line of a file's bytes, ended as Python ends one (see portlint.findings.LINE).
LINE_BYTES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class SourceError(Exception):
    """A file that cannot be read or decoded; carries the diagnostic to report."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.message)
        self.violation = violation


def read_source(path: str) -> str:
    """The decoded text of ``path`` (PEP 263 encoding declarations honoured)."""
    return decode_source(path, read_bytes(path))


def read_bytes(path: str) -> bytes:
    return read_file(path)[0]


def read_file(path: str) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path``, which must be a regular file (a FIFO is never waited on), and its
    status just before they were read."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(descriptor, "rb") as stream:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise SourceError(Violation(path, 1, 1, None, "IOError: not a regular file"))
            return stream.read(), info
    except OSError as error:
        raise SourceError(
            Violation(path, 1, 1, None, f"IOError: {error.strerror or error}")
        ) from None


def source_encoding(data: bytes) -> str:
    """The encoding of a Python file's bytes, as Python finds it: in a coding declaration on one
    of its first two lines, where a line ends at a carriage return too (``tokenize`` reads a file
    whose lines end in lone carriage returns as one line, and so finds declarations that Python
    does not see, or a cookie in a comment further down: "unknown encoding: str")."""
    lines = iter(LINE_BYTES.findall(data))
    encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    return encoding


def decode_source(path: str, data: bytes) -> str:
    if b"\x00" in data:
        line, col = _line_col(data, data.index(b"\x00"))
        raise SourceError(
            Violation(path, line, col, None, "SyntaxError: source contains a null byte")
        )
    try:
        return data.decode(source_encoding(data))
    except (SyntaxError, UnicodeDecodeError) as error:
        if _compiles(data):  # bytes that are not UTF-8 in a comment: Python never decodes them
            return data.decode("utf-8", errors="replace")
        if isinstance(error, SyntaxError):  # an unknown or conflicting coding declaration
            raise SourceError(Violation(path, 1, 1, None, f"SyntaxError: {error.msg}")) from None
        line, col = _line_col(data, error.start)
        message = (
            f"SyntaxError: source is not valid {error.encoding} (byte 0x{data[error.start]:02x})"
        )
        raise SourceError(Violation(path, line, col, None, message)) from None


def _compiles(data: bytes) -> bool:
    try:
        compile_quietly(data, "<source>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def write_source(path: str, text: str) -> None:
    """Replace ``path``'s text atomically, keeping its encoding (and BOM), its permissions and
    its owner.

    The new text goes to a temporary file in the same folder, which is then renamed over the file
    (the target of a symbolic link, not the link; see :func:`portlint.fix_rounds.fix_source` for a link that leads out
    of the project). Refused, with the file left as it is: a read-only file; a file with other
    hard links (a rename would split them, and writing in place could leave it half written);
    a file of another user (unless run as root, which gives the new file the old one's owner).
    """
    target = os.path.realpath(path)
    data = Path(target).read_bytes()
    info = os.stat(target)
    if not info.st_mode & stat.S_IWUSR:
        raise PermissionError(f"{path}: file is read-only; not fixed")
    if info.st_nlink > 1:
        raise PermissionError(f"{path}: file has {info.st_nlink} hard links; not fixed")
    try:
        encoding = source_encoding(data)
        data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError):  # (read with bytes replaced: see decode_source)
        raise OSError("not valid utf-8; not fixed") from None
    owner = None
    if hasattr(os, "geteuid") and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
        if os.geteuid() not in (0, info.st_uid):
            raise PermissionError(f"{path}: file is owned by another user; not fixed")
        owner = (info.st_uid, info.st_gid)
    # ("utf-8-sig" keeps a BOM.)
    write_atomically(target, text.encode(encoding), info.st_mode, owner)
