"""JSON text in Claude Code's byte format, and atomic, durable file writes.

Format: files are ``JSON.stringify(value, null, 2)`` (2-space indent, no trailing newline, non-ASCII
kept as UTF-8); structured messages inside an inbox entry's ``text`` are compact
``JSON.stringify(value)``. Python's `json` produces the same bytes for the values these files hold.

Writes: a temporary file in the same directory (hidden, under the target's lock; else in
``.swarm-tmp/`` beside the target), flushed and fsynced, `os.replace` over the target, then the
target's directory fsynced. A crash at any instant leaves the old file or the new one, never a
torn one. Writers hold the target's lock, so a temporary file of that target can only be left
by a holder that died: the next holder removes it (the "orphan" clean-up). Appends to line
files are whole lines or nothing. Every path goes through `protocols.fs.safefs`: no symbolic link
is followed.

Durability: ``power`` (default) fsyncs file and directory; ``process`` skips both fsyncs and still
survives kill -9, not power loss. Choose with the `durability` argument or ``SWARM_DURABILITY``.
A failed fsync raises; it is never ignored.

Reads: Claude Code writes its files in place, so a reader can catch one half-written;
`parse_patiently` tries a parse again for a short while before its error counts.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from protocols.errors import InvalidSetting
from protocols.fs import doorbell, safefs
from protocols.fs.locks import held_guard, open_to_keep
from protocols.logs import logger

Durability = Literal["power", "process"]
TEMP_DIR = ".swarm-tmp"
TEMP_MARKER = ".tmp-"
NEW_MARKER = ".new-"
NEW_TEMP_MAX_AGE_S = 60.0
T = TypeVar("T")
log = logger(__name__)


def parse_patiently(parse: Callable[[], T], wait_s: float) -> T:
    """`parse()`, tried again (5 ms, then doubling up to 50 ms apart) for up to `wait_s`
    seconds while it raises ValueError (a half-written file); then its last error propagates."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            return parse()
        except ValueError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


# the own printer (`_pretty`) only where it is faster than json's: Python 3.11 and 3.12 indent in
# pure Python (own/json 0.4-0.9); from 3.13 json indents in C and the own printer is 2-6 times
# slower (`bench/json_pretty.py` prints both, under whichever interpreter runs it)
OWN_PRINTER = sys.version_info < (3, 13)


def dumps_pretty(value: Any, level: int = 0) -> str:
    """``JSON.stringify(value, null, 2)``: the format of every team, inbox and task file.

    `level` indents the text as if it were nested that deep (the first line is not indented);
    JSON strings never hold a raw newline, so indenting every line is safe.
    """
    if OWN_PRINTER:
        try:
            text = _pretty(value, "  " * level)
            text.encode("utf-8")
            return text
        except (_NotPlain, UnicodeEncodeError):  # odd keys or values, lone surrogates
            pass
    text = _dumps(value, indent=2, separators=(",", ": "))
    return text.replace("\n", "\n" + "  " * level) if level else text


def plain_pretty(value: Any) -> str | None:
    """`dumps_pretty(value)` when `value` holds only strings, integers, booleans, nulls, lists
    and objects with string keys, and its text is valid UTF-8; None otherwise."""
    try:
        text = _pretty(value, "")
        text.encode("utf-8")
    except (_NotPlain, UnicodeEncodeError, RecursionError):
        return None
    return text


class _NotPlain(Exception):
    """A value `_pretty` leaves to `json.dumps` (a key that is not a string, a float, ...)."""


_encode_string = json.encoder.c_encode_basestring or json.encoder.py_encode_basestring  # type: ignore[attr-defined]


def _pretty(value: Any, indent: str) -> str:
    """`dumps_pretty` for strings, ints, booleans, null, lists and dicts with string keys:
    the C string encoder per leaf, rather than json's pure-Python indenting encoder (about
    twice as fast on an inbox file, which many writes re-serialise). Anything else raises
    `_NotPlain` and goes the general way; the output is byte for byte the same."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = indent + "  "
        parts = []
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            parts.append(f"{_encode_string(key)}: {_pretty(item, inner)}")
        return "{\n" + inner + (",\n" + inner).join(parts) + "\n" + indent + "}"
    if kind is list:
        if not value:
            return "[]"
        inner = indent + "  "
        return (
            "[\n"
            + inner
            + (",\n" + inner).join(_pretty(i, inner) for i in value)
            + "\n"
            + indent
            + "]"
        )
    raise _NotPlain


def dumps_compact(value: Any) -> str:
    """``JSON.stringify(value)``: the format of structured messages inside ``text``."""
    return _dumps(value, indent=None, separators=(",", ":"))


def _dumps(value: Any, indent: int | None, separators: tuple[str, str]) -> str:
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escape them, as JSON.stringify does
        text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=True)
    return text


def default_durability() -> Durability:
    value = os.environ.get("SWARM_DURABILITY", "power")
    if value not in ("power", "process"):
        raise InvalidSetting(f"SWARM_DURABILITY must be 'power' or 'process', got {value!r}")
    return value  # type: ignore[return-value]


def temp_dir(target: Path) -> Path:
    """Where temporary files for `target` are written: ``.swarm-tmp/`` in its directory.

    Same file system, so `os.replace` is atomic; a different directory, so writing and renaming
    temporary files does not wake watchers of `target`'s directory (and inotify reports the
    rename onto `target` as one event, not a from/to pair a watcher must match up).
    """
    return target.parent / TEMP_DIR


def temp_prefix(target: Path) -> str:
    """Name prefix of `target`'s temporary files inside `temp_dir(target)`."""
    return f"{target.name}{TEMP_MARKER}"


def remove_orphan_temps(target: Path) -> int:
    """Remove temporary files of `target` left by killed writers: beside it (hidden, written
    under its lock) and in ``.swarm-tmp/``. Call only under its lock.

    Temporary files of `ensure_file` are written without the lock, so only old ones are removed.
    """
    removed = 0
    hidden = f".{target.name}{TEMP_MARKER}"
    try:
        here = safefs.open_dir(target.parent)
    except FileNotFoundError:
        return 0
    try:
        for name in os.listdir(here):
            if name.startswith(hidden):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=here)
                    removed += 1
        try:
            fd = os.open(
                TEMP_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=here
            )
        except (FileNotFoundError, NotADirectoryError):
            return removed
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise safefs.LinkRefused(temp_dir(target)) from None
            raise
    finally:
        os.close(here)
    try:
        return removed + _remove_orphans(fd, target.name)
    finally:
        os.close(fd)


def _remove_orphans(temp_fd: int, target_name: str) -> int:
    """`remove_orphan_temps` in ``.swarm-tmp/`` already open."""
    prefix = f"{target_name}{TEMP_MARKER}"
    new_prefix = f"{target_name}{NEW_MARKER}"
    old_enough = time.time() - NEW_TEMP_MAX_AGE_S
    removed = 0
    for name in os.listdir(temp_fd):
        if name.startswith(new_prefix):
            with contextlib.suppress(FileNotFoundError):
                if os.stat(name, dir_fd=temp_fd, follow_symlinks=False).st_mtime >= old_enough:
                    continue
        elif not name.startswith(prefix):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=temp_fd)
            removed += 1
    return removed


def _open_temp(target: Path, marker: str) -> tuple[int, Path]:
    # os.urandom(n).hex() is secrets.token_hex(n), without loading hmac and OpenSSL
    name = f"{target.name}{marker}{os.getpid()}-{os.urandom(4).hex()}"
    path = temp_dir(target) / name
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        return safefs.open_path(path, flags, 0o644), path
    except FileNotFoundError:
        safefs.makedirs(temp_dir(target))
        return safefs.open_path(path, flags, 0o644), path


def _write_all(fd: int, data: bytes, durable: bool) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    if durable:
        os.fsync(fd)


def atomic_write_bytes(
    target: Path, data: bytes, durability: Durability | None = None, sync_dir: bool = True
) -> None:
    """Replace `target` with `data` atomically. The caller holds the target's lock.

    With `sync_dir` False the directory is not fsynced after the rename: the caller does it
    (`fsync_dir`) before it reports the write done, after releasing its locks, so that the
    slow part of a durable write is not spent holding them. The new file's data is synced
    before the rename either way, so a crash leaves the old file or the new one, never a torn one.

    Just before the rename that commits, the lock is confirmed to still be this process's
    (`FileGuard.confirm`): a holder that was paused long enough for another writer to take the
    lock as stale raises `LockLost` instead of overwriting what that writer committed. Every
    step works on the target's directory (and ``.swarm-tmp/``) by name, opened without
    following links (the lock holds the first open already).

    Under the target's `FileGuard` the temporary file is written beside the target under a
    hidden name (``.<name>.tmp-<pid>-<hex>``), so the rename stays inside one directory: a
    rename between directories takes the file system's one rename lock, which every writer of
    every team then queues on (measured: 200 teammates answering a broadcast). A temporary file
    can only be left by a holder that never released its lock (killed), which the guard tells
    (`FileGuard.after_unclean_release`): only then is the directory searched for leftovers.
    Writes without the guard use ``.swarm-tmp/`` and tidy it every time, as before.
    """
    durable = (durability or default_durability()) == "power"
    guard = held_guard(target)
    if guard is not None:
        if guard.after_unclean_release:
            remove_orphan_temps(target)
            guard.after_unclean_release = False
        _commit(
            target, data, durable, guard, guard.dir_fd, guard.dir_fd, sync_dir, "." + target.name
        )
        return
    target_fd = safefs.open_dir(target.parent)
    try:
        temp_fd = _open_temp_dir(target, target_fd)
        try:
            _remove_orphans(temp_fd, target.name)
            _commit(target, data, durable, guard, target_fd, temp_fd, sync_dir, target.name)
        finally:
            os.close(temp_fd)
    finally:
        os.close(target_fd)


def _commit(
    target: Path,
    data: bytes,
    durable: bool,
    guard: Any,
    target_fd: int,
    temp_fd: int,
    sync_dir: bool,
    stem: str,
) -> None:
    name = f"{stem}{TEMP_MARKER}{os.getpid()}-{os.urandom(4).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o644, dir_fd=temp_fd)
    replaced = -1
    try:
        try:
            _write_all(fd, data, durable)
        finally:
            os.close(fd)
        now = guard.confirm() if guard is not None else _lstat_in(target_fd, target.name)
        if now is not None:
            if stat.S_ISLNK(now.st_mode):
                raise safefs.LinkRefused(target)
            if stat.S_ISREG(now.st_mode):  # freed at our close, not inside the rename's locks
                replaced = open_to_keep(target.name, target_fd)
        os.replace(name, target.name, src_dir_fd=temp_fd, dst_dir_fd=target_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=temp_fd)
        raise
    finally:
        if replaced >= 0:
            os.close(replaced)
    if guard is not None:
        guard.written()
    doorbell.ring(target_fd, target.name)  # readers without inotify (usually: one failed open)
    if durable and sync_dir:
        os.fsync(target_fd)


def _lstat_in(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_temp_dir(target: Path, target_fd: int) -> int:
    """``.swarm-tmp/`` beside `target`, opened (made if missing) without following a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            return os.open(TEMP_DIR, flags, dir_fd=target_fd)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(TEMP_DIR, 0o755, dir_fd=target_fd)
            return os.open(TEMP_DIR, flags, dir_fd=target_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise safefs.LinkRefused(temp_dir(target)) from None
        raise


def atomic_write_text(target: Path, text: str, durability: Durability | None = None) -> None:
    atomic_write_bytes(target, text.encode("utf-8"), durability)


def write_json(
    target: Path, value: Any, durability: Durability | None = None, sync_dir: bool = True
) -> None:
    """Write `value` to `target` in Claude Code's file format, atomically (`sync_dir`: see
    `atomic_write_bytes`)."""
    atomic_write_bytes(target, dumps_pretty(value).encode("utf-8"), durability, sync_dir)


def fsync_dir(directory: Path) -> None:
    safefs.fsync_dir(directory)


def append_durably(
    path: Path, data: bytes, durability: Durability | None = None, sync: bool = True
) -> None:
    """Append `data` (whole lines) to `path` (created if missing) and fsync it (unless `sync`
    is false: the caller syncs later, `sync_file`); for append-only line files (archives,
    transcripts). One writer at a time (the caller's lock or process).

    Each append is all or nothing for a reader of whole lines: a write that fails part way (a
    full disk) is cut off again at once, and a torn last line left by a writer that died is cut
    off before the next append, so it never swallows the entry written after it.
    """
    durable = (durability or default_durability()) == "power"
    created = False
    try:
        fd = safefs.open_path(path, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError:  # (made by another writer meanwhile: one more directory fsync)
        created = True
        fd = safefs.open_path(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    durable_now = durable and sync
    try:
        end = _cut_torn_tail(fd)
        try:
            _write_all(fd, data, durable_now)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)
    if durable and created:
        safefs.fsync_dir(path.parent)


def sync_file(path: Path, durability: Durability | None = None) -> None:
    """fsync `path` if it exists (with durability "power"): appends made with ``sync=False``
    reach the disk."""
    if (durability or default_durability()) != "power":
        return
    try:
        fd = safefs.open_path(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _cut_torn_tail(fd: int, chunk: int = 64 * 1024) -> int:
    """Truncate the file after its last newline (nothing if it ends with one); its new size."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - chunk)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            keep = start + cut + 1
            break
        end = start
    else:
        keep = 0
    os.ftruncate(fd, keep)
    log.warning("cut a torn last line (%d bytes) off %s", size - keep, _fd_name(fd))
    return keep


def _fd_name(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"descriptor {fd}"


def ensure_file(path: Path, initial: str, durability: Durability | None = None) -> bool:
    """Create `path` holding `initial` unless it exists (never overwrites). True if created.

    The content is written to a temporary file first and hard-linked into place, so no reader
    ever sees the file empty or half-written, and two creators cannot both win. A link planted
    at `path` is refused (`LinkRefused`), not taken for the file.
    """
    if safefs.exists(path):
        return False
    durable = (durability or default_durability()) == "power"
    safefs.makedirs(path.parent)
    fd, temp = _open_temp(path, NEW_MARKER)
    try:
        try:
            _write_all(fd, initial.encode("utf-8"), durable)
        finally:
            os.close(fd)
        try:
            safefs.link(temp, path)
        except FileExistsError:
            safefs.stat_of(path)  # a link planted meanwhile is reported, not taken for the file
            return False
    finally:
        _unlink_quietly(temp)
    if durable:
        safefs.fsync_dir(path.parent)
    return True


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        safefs.unlink(path)
