"""Writing a file so that no reader, crash or full disk ever sees it half written."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


def write_atomically(
    path: str,
    data: bytes,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    durable: bool = True,
) -> None:
    """Replace ``path`` with ``data``: written to a temporary file in the same folder, flushed to
    disk (not where ``durable`` is false: data whose reader checks it against a digest), given
    ``owner`` (user and group ids; None: whoever runs this) and ``mode`` (permission bits; None:
    what a new file gets), then renamed over ``path``. Where any step fails, ``path`` is as it
    was and the temporary file is gone."""
    folder = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".portlint-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        if owner is not None:
            os.chown(temporary, *owner)  # (before the mode: a change of owner may clear bits)
        os.chmod(temporary, stat.S_IMODE(mode))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
