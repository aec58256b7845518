"""The send spool of one inbox: many writers, one lock hold and one fsync (group commit, issue 19).

A swarm sender that finds an inbox's lock free writes the inbox itself, as before. One that
finds it taken does not queue up for a write of its own: it drops its entry into the inbox's
spool, ``inboxes/.swarm-spool/<agent>.json/``, as one small file (`Spool.put`), and waits. The
lock holder, before it lets go, moves *every* spooled entry into the inbox in one durable write
(`protocols.inbox.InboxFile.commit_spool_locked`), a few rounds while more arrive, and only
then removes their spool files. A waiting sender whose file is gone was carried by that commit:
its message is in the inbox, on disk, and its send is done without a write of its own. With
eight writers the inbox is rewritten once per batch instead of once per message.

What stays true:

- **Acknowledged means committed.** A send returns only once its entry is in the inbox file and
  that write was synced (spool files are removed after the commit, never before).
- **Claude Code sees no difference.** Its readers and writers only know the inbox file and its
  ``.lock`` directory; the commit takes that lock like any write. A spool file is never read by
  Claude Code, and is in a hidden folder that inbox watchers do not look into.
- **Nothing twice.** A committer killed after its inbox write but before removing the spool
  files leaves entries that are in the inbox already; the next commit skips every spooled entry
  whose identity the inbox or its record holds.
- **A writer killed after `put`** leaves its entry in the spool, unacknowledged; the next commit
  to that inbox delivers it (as a send whose reply was lost). A writer that gives up (its lock
  wait timed out) takes its entry back first.
- **Half-written and hostile files.** An entry file is written under its final name in one
  ``write``; one that does not parse is left alone for `WRITING_S` (its writer may be writing
  it), then refused like any hostile file (a planted link, a directory, JSON that is not an
  object, a name that is not an entry's): moved to ``<spool>/.refused-<name>`` with an error
  logged, never delivered, never fatal.
- Entries are committed in the order they were spooled (names start with the time in ns), so
  one sender's messages keep their order: each send waits for its commit before the next.
- **Several entries in one send** (`Spool.put_many`: a teammate's answer and its idle
  notification) are spooled as one file each, named ``<ns>-<pid>-<random>-<k>of<n>.json``, and
  committed together, in that order: a committer that sees only some of them (it listed the
  folder while they were being written) leaves them all for its next round, unless they are
  older than `WRITING_S` (their writer died part way: the ones there are delivered, in order).
  Each file is an ordinary entry file, so a committer of an older swarm still delivers them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols import safefs
from protocols.jsonio import dumps_pretty

log = logging.getLogger(__name__)

SPOOL_DIR = ".swarm-spool"
ENTRY_SUFFIX = ".json"
MARKS_SUFFIX = ".read"
REFUSED_PREFIX = ".refused-"
WRITING_S = 10.0  # an entry file that does not parse and is younger may still be being written
_PART = re.compile(r"^(?P<ns>\d{20})-(?P<key>.+)-(?P<part>\d{3})of(?P<parts>\d{3})\.json$")
MAX_PARTS = 999


class Spool:
    """The spool of the inbox file `inbox` (which need not exist yet)."""

    def __init__(self, inbox: Path) -> None:
        self.inbox = inbox
        self.path = inbox.parent / SPOOL_DIR / inbox.name

    def put(self, item: dict[str, Any]) -> Waiting:
        """Spool one entry; what to ask whether it still waits. Not synced: the commit that
        carries it into the inbox is. Written straight under its final name with one
        ``write``: a committer that reads it before it is whole finds no JSON object (no
        strict prefix of one parses) and leaves it for the next round."""
        data = dumps_pretty(item, level=1).encode("utf-8")  # as the inbox will hold it
        return self._put(data, ENTRY_SUFFIX)

    def put_many(self, items: list[dict[str, Any]]) -> Waiting:
        """Spool several entries, to be committed together and in this order (module doc);
        what to ask whether any of them still waits."""
        if len(items) == 1:
            return self.put(items[0])
        if not 1 < len(items) <= MAX_PARTS:
            raise ValueError(f"spool 1 to {MAX_PARTS} entries at once, not {len(items)}")
        stem = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
        names = [f"{stem}-{k:03d}of{len(items):03d}" for k in range(1, len(items) + 1)]
        waiting = Waiting(self._open_dir(create=True), "")
        try:
            for name, item in zip(names, items, strict=True):
                data = dumps_pretty(item, level=1).encode("utf-8")
                waiting.names.append(self._write(waiting.fd, name + ENTRY_SUFFIX, data))
        except BaseException:
            self.remove(waiting.names)
            waiting.close()
            raise
        return waiting

    def put_marks(self, identities: set[str]) -> Waiting:
        """Spool a reader's read marks (the identities it has read): the holder sets ``read``
        on those entries in its next write, as `Mailbox.mark_read` would."""
        return self._put(json.dumps(sorted(identities)).encode("utf-8"), MARKS_SUFFIX)

    def _put(self, data: bytes, suffix: str) -> Waiting:
        name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}{suffix}"
        fd = self._open_dir(create=True)
        try:
            self._write(fd, name, data)
        except BaseException:
            os.close(fd)
            raise
        return Waiting(fd, name)

    @staticmethod
    def _write(fd: int, name: str, data: bytes) -> str:
        """Create `name` in the spool folder `fd` holding `data` (one ``write``); its name."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, 0o644, dir_fd=fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        except BaseException:
            os.close(out)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
            raise
        os.close(out)
        return name

    def pending(self) -> list[Spooled]:
        """The spooled entries, oldest first. Call with the inbox's lock held: the names are
        then removed with `remove` once their commit is durable."""
        try:
            fd = self._open_dir()
        except FileNotFoundError:
            return []
        try:
            found = []
            for name in sorted(os.listdir(fd)):
                if name.startswith(REFUSED_PREFIX):
                    continue
                if name.startswith(".") or not name.endswith((ENTRY_SUFFIX, MARKS_SUFFIX)):
                    _refuse(fd, name, self.path, "not a spooled entry's name")
                    continue
                spooled = _read_entry(fd, name, self.path)
                if spooled is not None:
                    found.append(spooled)
            return _whole_sends(found)
        finally:
            os.close(fd)

    def remove(self, names: list[str]) -> None:
        """Remove committed entries (call only after the inbox write that carries them)."""
        if not names:
            return
        try:
            fd = self._open_dir()
        except FileNotFoundError:
            return
        try:
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def _open_dir(self, create: bool = False) -> int:
        """The spool folder, opened without following a link; made on `create` (the inboxes
        folder must exist: a deleted team is never made again by a late writer)."""
        try:
            return safefs.open_dir(self.path)
        except FileNotFoundError:
            if not create:
                raise
        spools = self.path.parent
        if not safefs.exists(spools):
            safefs.makedir_in(spools)
        safefs.makedir_in(self.path)
        return safefs.open_dir(self.path)


@dataclass(frozen=True)
class Spooled:
    """One spooled file: its name, and either an entry (the item, and its text as the inbox
    holds it) or a reader's read marks (`marks`, identities; `item` is then None)."""

    name: str
    item: dict[str, Any] | None
    text: str
    marks: frozenset[str] = frozenset()


def _whole_sends(found: list[Spooled]) -> list[Spooled]:
    """`found` without the parts of a several-entry send that is not all there yet (module
    doc); a send older than `WRITING_S` is taken as it is."""
    seen: dict[str, set[int]] = {}
    for spooled in found:
        part = _PART.match(spooled.name)
        if part is not None:
            seen.setdefault(part["ns"] + part["key"], set()).add(int(part["part"]))
    if not seen:
        return found
    now_ns = time.time_ns()
    result = []
    for spooled in found:
        part = _PART.match(spooled.name)
        if part is not None:
            whole = seen[part["ns"] + part["key"]] == set(range(1, int(part["parts"]) + 1))
            young = now_ns - int(part["ns"]) < WRITING_S * 1e9
            if not whole and young:
                continue  # the rest is being written, or was missed by this listing
        result.append(spooled)
    return result


def _read_entry(fd: int, name: str, where: Path) -> Spooled | None:
    """The entry in spool file `name`, or None (refused and moved aside, or not whole yet)."""
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except FileNotFoundError:
        return None  # committed and removed by a holder that lost its lock meanwhile
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        _refuse(fd, name, where, "a symbolic link")
        return None
    try:
        try:
            data = safefs.read_fd(handle)
        finally:
            os.close(handle)
    except OSError as exc:  # a directory planted under an entry's name
        _refuse(fd, name, where, f"unreadable ({exc.strerror})")
        return None
    try:
        text = data.decode("utf-8")
        item = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        if _young(fd, name):
            return None  # its writer may be writing it still: the next round takes it
        _refuse(fd, name, where, "not JSON")
        return None
    if name.endswith(MARKS_SUFFIX):
        if not isinstance(item, list) or not all(isinstance(i, str) for i in item):
            _refuse(fd, name, where, "read marks that are not a list of identities")
            return None
        return Spooled(name, None, "", frozenset(item))
    if not isinstance(item, dict):
        _refuse(fd, name, where, "not a JSON object")
        return None
    return Spooled(name, item, text.strip())  # one JSON object: splicing it keeps the array valid


def _refuse(fd: int, name: str, where: Path, why: str) -> None:
    log.error("%s/%s: %s; moved aside, not delivered", where, name, why)
    with contextlib.suppress(OSError):
        os.rename(name, REFUSED_PREFIX + name, src_dir_fd=fd, dst_dir_fd=fd)


def _young(fd: int, name: str) -> bool:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    return st.st_mtime >= time.time() - WRITING_S


class Waiting:
    """An entry just spooled, asked about again and again while its writer waits for the lock:
    does it still wait? (No: it was committed.) It keeps the spool folder open, so each
    question is one ``stat``; close it when done."""

    def __init__(self, fd: int, name: str) -> None:
        self.names = [name] if name else []  # several, for `Spool.put_many`
        self._fd: int | None = fd

    @property
    def fd(self) -> int:
        assert self._fd is not None, "closed"
        return self._fd

    def __enter__(self) -> Waiting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __call__(self) -> bool:
        """True while the entry (any of the entries) is still in the spool."""
        for name in self.names:
            try:
                os.stat(name, dir_fd=self._fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            return True
        return False

    def done(self) -> bool:
        return not self()
