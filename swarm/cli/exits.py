"""How a `swarm` command ends, shared by the quick entry point (`swarm.cli.quick`) and click's
(`swarm.cli.main`): Ctrl-C's exit status and a failed file operation in one line."""

from __future__ import annotations

import errno

INTERRUPTED = 130  # the exit status of a command ended by Ctrl-C, as a shell gives it


def os_error_text(exc: OSError) -> str:
    """One line for a failed file operation: what failed, where, and what can be done."""
    where = f": {exc.filename}" if exc.filename else ""
    what = exc.strerror or str(exc)
    hint = {
        errno.ENOSPC: "free some space and try again; nothing was half written",
        errno.EDQUOT: "the disk quota is used up; free some space and try again",
        errno.EROFS: "the config root is on a read-only file system; set CLAUDE_CONFIG_DIR to a "
        "writable directory",
        errno.EACCES: "no permission; check the owner and mode of the config root "
        "(CLAUDE_CONFIG_DIR)",
        errno.EPERM: "not permitted; check the owner and mode of the config root "
        "(CLAUDE_CONFIG_DIR)",
    }.get(exc.errno or 0, "")
    return f"{what}{where}" + (f" ({hint})" if hint else "")
