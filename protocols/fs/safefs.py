"""Files of the team state, opened without ever following a symbolic link.

Everything under ``teams/``, ``tasks/`` and ``plans/`` of the config root may have been written by
another process, a hostile one included: a teammate whose model runs ``ln -s ~/.ssh/id_rsa
inboxes/alice.json`` must not make swarm read, truncate or append to that file. So every path of
the team state is resolved by the kernel with symbolic links refused anywhere in it, and the
operation itself is done relative to the directory so opened (the ``*at`` system calls), so no
rename of a directory between a check and the use can redirect it:

- ``openat2(..., RESOLVE_NO_SYMLINKS)`` where the kernel has it (Linux 5.6+): one system call;
- elsewhere, a walk from ``/`` that opens each directory with ``O_NOFOLLOW``.

A link in the way raises `LinkRefused`, naming the link and where it points: it is reported,
never followed, and nothing is read or written. The config root itself is resolved once, when it
is found (`protocols.paths.config_root`), so links *above* it (a home directory on another disk,
a ``~/.claude`` that is a link) are fine: they are the user's choice, made before swarm looked.

All functions take absolute paths. Errors other than a link (a missing file, a full disk, a
read-only file system) are the usual `OSError`s.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import stat
from collections.abc import Callable
from typing import Any

from protocols.errors import ProtocolsError

StrPath = str | os.PathLike[str]
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# a file's own status without opening it for reading (`lstat`): a link at the end is opened as
# the link itself
_PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_SYS_OPENAT2 = 437  # the same number on every architecture (a syscall added after the split)
_RESOLVE_NO_SYMLINKS = 0x04
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


class LinkRefused(ProtocolsError, OSError):
    """A symbolic link where swarm expected a file or directory of the team state."""

    def __init__(self, path: StrPath, link: StrPath | None = None) -> None:
        self.path = str(path)
        self.link = str(link or path)
        try:
            target = f" (pointing to {os.readlink(self.link)})"
        except OSError:
            target = ""
        super().__init__(
            f"refusing to follow the symbolic link {self.link}{target} on the way to "
            f"{self.path}: swarm never follows links in a team's files; remove the link"
        )


TEAM_FILES_ONLY = ": swarm reads and writes only regular files in a team's folders; remove it"


class NotRegularFile(ProtocolsError, OSError):
    """Something other than a regular file (a FIFO, a socket, a device) where a team file
    belongs. Opening a FIFO waits for a writer: one planted as an inbox or config.json would
    hang every reader, so it is refused instead (`open_path`)."""

    def __init__(self, path: StrPath, mode: int, why: str = TEAM_FILES_ONLY) -> None:
        self.path = str(path)
        kind = _KINDS.get(stat.S_IFMT(mode), "special file")
        super().__init__(errno.EINVAL, f"{self.path} is a {kind}, not a regular file{why}")

    def __str__(self) -> str:
        return str(self.args[1])


_KINDS = {
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFDIR: "directory",
}


class PathRefused(ProtocolsError, ValueError):
    """A path with ``..`` in it (a name read from a file that tries to climb out)."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_HOW_SIZE = ctypes.sizeof(_OpenHow)


@functools.cache
def _syscall() -> Callable[..., int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).syscall
    except (AttributeError, OSError):
        return None
    function.restype = ctypes.c_long
    return function


_openat2_works: bool | None = None  # None: not tried yet
_HOWS: dict[tuple[int, int], Any] = {}  # (flags, mode) -> byref(open_how), made once each


def _how(flags: int, mode: int) -> Any:
    key = (flags, mode)
    how = _HOWS.get(key)
    if how is None:
        # openat2 refuses a mode without O_CREAT (EINVAL), unlike open
        made = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE_NO_SYMLINKS)
        how = _HOWS[key] = (made, ctypes.byref(made))  # keep the struct alive with its pointer
    return how[1]


def _openat2(path: str, flags: int, mode: int) -> int | None:
    """openat2 with no links allowed; None when the kernel (or a seccomp filter) lacks it."""
    global _openat2_works
    syscall = _syscall()
    if _openat2_works is False or syscall is None:
        return None
    fd = syscall(_SYS_OPENAT2, _AT_FDCWD, os.fsencode(path), _how(flags, mode), _HOW_SIZE)
    if fd >= 0:
        _openat2_works = True
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM) and not _openat2_works:
        _openat2_works = False  # seccomp filters answer EPERM or ENOSYS
        return None
    raise OSError(code, os.strerror(code), path)


def _walk(path: str, flags: int, mode: int) -> int:
    """Open `path` by opening each directory from ``/`` with O_NOFOLLOW."""
    parts = [p for p in path.split("/") if p]
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return os.open(parts[-1] if parts else ".", flags, mode, dir_fd=fd)
    finally:
        os.close(fd)


def _link_on_the_way(path: str) -> str | None:
    """The first component of `path` that is a symbolic link (for the error message)."""
    current = "/"
    for part in (p for p in path.split("/") if p):
        current = os.path.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
        except OSError:
            return None
    return None


def _absolute(path: StrPath) -> str:
    text = os.fspath(path)
    if not text.startswith("/"):
        raise ValueError(f"{text!r} is not an absolute path")
    if ".." in text and ".." in text.split("/"):
        raise PathRefused(f"refusing the path {text!r}: '..' could lead out of the team's files")
    return text


def open_path(path: StrPath, flags: int, mode: int = 0o644) -> int:
    """`os.open` of `path` with no symbolic link followed anywhere in it.

    Raises `LinkRefused` for a link in the way (the final component included), and
    `NotRegularFile` for a FIFO, socket or device at `path` unless `flags` has O_NONBLOCK (the
    caller then checks what it opened; the descriptor is non-blocking either way, which changes
    nothing for a regular file).
    """
    text = _absolute(path)
    # a caller passing O_NONBLOCK checks what it opened itself; for any other a FIFO must not
    # hang the open (O_NONBLOCK, which changes nothing for a regular file) and is refused
    guarded = not flags & (os.O_NONBLOCK | os.O_DIRECTORY | os.O_PATH)
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = _openat2(text, flags, mode)
        fd = fd if fd is not None else _walk(text, flags, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV):
            link = _link_on_the_way(text)
            if link is not None:
                raise LinkRefused(text, link) from None
        if exc.errno == errno.ENXIO and guarded:  # a socket
            raise NotRegularFile(text, os.lstat(text).st_mode) from None
        raise
    return _regular(fd, text) if guarded else fd


def open_at(
    dir_fd: int,
    name: str,
    flags: int,
    mode: int = 0o644,
    shown: StrPath | None = None,
    why: str = TEAM_FILES_ONLY,
) -> int:
    """`os.open` of `name` in the directory `dir_fd` (opened safely by the caller): a link
    there is refused (`LinkRefused`), and so is anything but a regular file
    (`NotRegularFile`, its message ending with `why`), without waiting on a FIFO. `shown`: the
    path the errors name (`name` by default)."""
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    where = shown if shown is not None else name
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(where) from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a socket; a directory opened to write
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            raise NotRegularFile(where, st.st_mode, why) from None
        raise
    return _regular(fd, where, why)


def _regular(fd: int, path: StrPath, why: str = TEAM_FILES_ONLY) -> int:
    """`fd` if it is a regular file's; else it is closed and `NotRegularFile` raised."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(path, mode, why)
    return fd


def open_dir(path: StrPath) -> int:
    """A read-only descriptor of the directory `path` (usable as ``dir_fd`` and for fsync)."""
    return open_path(path, _DIR_FLAGS)


class parent_of:
    """``with parent_of(path) as (fd, name)``: the directory holding `path`, opened without
    following links, and the last component (a class, not a generator: it runs per operation)."""

    __slots__ = ("fd", "name")

    def __init__(self, path: StrPath) -> None:
        text = _absolute(path).rstrip("/")
        directory, self.name = os.path.split(text)
        self.fd = open_dir(directory or "/")

    def __enter__(self) -> tuple[int, str]:
        return self.fd, self.name

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def makedirs(path: StrPath) -> None:
    """``mkdir -p``, refusing a link in place of any directory."""
    text = _absolute(path).rstrip("/") or "/"
    try:
        os.close(open_dir(text))
        return
    except FileNotFoundError:
        pass
    makedirs(os.path.dirname(text))
    with parent_of(text) as (fd, name), contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=fd)
    os.close(open_dir(text))  # what exists there now must be a directory, not a link


def makedir_in(path: StrPath) -> None:
    """``mkdir`` of the last directory of `path` only: its parent must exist (FileNotFoundError
    otherwise). For the folders of a team, so a process writing late never makes a team again
    that was deleted under it (a Claude Code lead session deletes its team as it exits)."""
    text = _absolute(path).rstrip("/") or "/"
    with parent_of(text) as (fd, name), contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=fd)
    os.close(open_dir(text))  # what exists there now must be a directory, not a link


def read_fd(fd: int, size: int = 0, offset: int = 0) -> bytes:
    """What the open file `fd` holds from `offset` to its end, read with ``pread`` (the
    descriptor stays open, its position unmoved). `size`: the file's size if the caller has just
    stat'ed it, so one call usually reads it all. No Python file object: that would ask the
    terminal driver, seek and stat again, each a system call, on every read of a team file."""
    chunks = []
    want = max(size - offset + 1, 16384)  # one byte more than expected: a short read is the end
    while True:
        chunk = os.pread(fd, want, offset)
        chunks.append(chunk)
        offset += len(chunk)
        if len(chunk) < want:  # a regular file reads short only at its end
            return b"".join(chunks)


def read_bytes(path: StrPath) -> bytes:
    fd = open_path(path, os.O_RDONLY)
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def read_text(path: StrPath) -> str:
    return read_bytes(path).decode("utf-8")


def read_regular(path: StrPath) -> bytes:
    """What a file the user arranged holds (a CLAUDE.md, a skill, settings, a file a tool
    reads): links are followed, as Claude Code follows them, but anything other than a regular
    file is refused (`NotRegularFile`) rather than read: reading a FIFO waits for a writer
    for ever, and a device may never end."""
    try:
        fd = _regular(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), path, "")
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            raise NotRegularFile(path, os.stat(path).st_mode, "") from None
        raise
    try:
        return read_fd(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def listdir(path: StrPath) -> list[str]:
    """Names in the directory `path` (which must not be, or be under, a link)."""
    fd = open_dir(path)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def lstat(path: StrPath) -> os.stat_result:
    """The file's own status (a link is described, not followed). With openat2, one open of the
    file itself as a path (``O_PATH | O_NOFOLLOW``: a link at the end is opened as the link, a
    link on the way is refused) and an ``fstat``; else the parent opened link-free, then
    ``stat`` in it."""
    text = _absolute(path)
    try:
        fd = _openat2(text, _PATH_FLAGS, 0)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV):
            raise
        fd = None  # a link on the way, or a file where a directory should be: said below
    if fd is not None:
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)
    with parent_of(text) as (dir_fd, name):
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def stat_of(path: StrPath) -> os.stat_result:
    """`lstat`, refusing a link at `path` itself."""
    result = lstat(path)
    if stat.S_ISLNK(result.st_mode):
        raise LinkRefused(path)
    return result


def exists(path: StrPath) -> bool:
    """Whether anything is at `path`; a link there is refused, not followed."""
    try:
        stat_of(path)
    except FileNotFoundError:
        return False
    return True


def is_dir(path: StrPath) -> bool:
    try:
        return stat.S_ISDIR(stat_of(path).st_mode)
    except FileNotFoundError:
        return False


def mkdir(path: StrPath, mode: int = 0o755) -> None:
    with parent_of(path) as (fd, name):
        os.mkdir(name, mode, dir_fd=fd)


def rmdir(path: StrPath) -> None:
    with parent_of(path) as (fd, name):
        os.rmdir(name, dir_fd=fd)


def unlink(path: StrPath, missing_ok: bool = False) -> None:
    """Remove the file (a link at `path` is removed itself, never its target)."""
    try:
        with parent_of(path) as (fd, name):
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        if not missing_ok:
            raise


def utime(path: StrPath) -> None:
    """Set the file's times to now (a link is not followed)."""
    with parent_of(path) as (fd, name):
        os.utime(name, dir_fd=fd, follow_symlinks=False)


def replace(source: StrPath, target: StrPath) -> None:
    """`os.replace` within the team state; a link at `target` is refused, not replaced."""
    with parent_of(source) as (src_fd, src_name), parent_of(target) as (dst_fd, dst_name):
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False).st_mode):
                raise LinkRefused(target)
        os.replace(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)


def link(source: StrPath, target: StrPath) -> None:
    """A hard link `target` to `source` (FileExistsError if `target` exists, a link included)."""
    with parent_of(source) as (src_fd, src_name), parent_of(target) as (dst_fd, dst_name):
        os.link(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)


def rename_noreplace(source: StrPath, target: StrPath) -> None:
    """Rename `source` to `target` unless something is there (FileExistsError).

    Raises NotImplementedError where the C library or the file system lacks renameat2.
    """
    with parent_of(source) as (src_fd, src_name), parent_of(target) as (dst_fd, dst_name):
        rename_noreplace_at(src_fd, src_name, dst_fd, dst_name)


def rename_noreplace_at(src_fd: int, source: str, dst_fd: int, target: str) -> None:
    """`rename_noreplace` of names in two directories already open."""
    function = _renameat2()
    if function is None:
        raise NotImplementedError("renameat2 is not available")
    result = function(src_fd, os.fsencode(source), dst_fd, os.fsencode(target), _RENAME_NOREPLACE)
    if result == 0:
        return
    code = ctypes.get_errno()
    if code in (errno.EEXIST, errno.ENOTEMPTY):
        raise FileExistsError(code, os.strerror(code), target)
    if code in (errno.ENOSYS, errno.EINVAL):
        raise NotImplementedError(f"renameat2: {os.strerror(code)}")
    raise OSError(code, os.strerror(code), target)


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    return function


def fsync_dir(path: StrPath) -> None:
    fd = open_dir(path)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rmtree(path: StrPath, missing_ok: bool = False) -> None:
    """Remove the directory `path` and everything in it; links inside are removed, never
    followed, and a link at `path` (or above it) is refused."""
    try:
        with parent_of(path) as (fd, name):
            if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                raise LinkRefused(path)
            import shutil  # only here: a command that removes nothing need not load it

            shutil.rmtree(name, dir_fd=fd)
    except FileNotFoundError:
        if not missing_ok:
            raise


def entries(path: StrPath) -> list[tuple[str, os.stat_result]]:
    """``(name, lstat)`` of each entry of the directory `path` (entries that vanish are skipped)."""
    fd = open_dir(path)
    found = []
    try:
        for name in os.listdir(fd):
            with contextlib.suppress(FileNotFoundError):
                found.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
    finally:
        os.close(fd)
    return found
