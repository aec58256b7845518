"""Replacing a file's contents in one step, as Write, Edit and NotebookEdit do (`atomic_write`)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path`'s contents with `data` in one step: readers see the old file or the new
    one, never half of it. An existing file keeps its mode; a symlink keeps pointing at the
    file it names, which is the one rewritten."""
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # 0o666 filtered by the umask, as for any new file; chmod below for an existing one
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
