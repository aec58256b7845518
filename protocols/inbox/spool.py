"""The send spool of one inbox: many writers, one lock hold and one fsync (group commit).

A swarm sender that finds an inbox's lock free writes the inbox itself, as before. One that
finds it taken does not queue up for a write of its own: it drops its send into the inbox's
spool, ``inboxes/.swarm-spool/<agent>.json/``, through one of its process's reusable files there
(`Spool.put`; `protocols.inbox.spool_slot`: a send allocates no inode), and waits. The lock holder,
before it lets go, moves *every* spooled entry into the inbox in one durable write
(`protocols.inbox.file.InboxFile.commit_spool_locked`), a few rounds while more arrive, and only
then hands the spooled files back to their writers. A waiting sender whose file was handed back
was carried by that commit: its message is in the inbox, on disk, and its send is done without
a write of its own. With eight writers the inbox is rewritten once per batch instead of once
per message.

What stays true:

- **Acknowledged means committed.** A send returns only once its entry is in the inbox file and
  that write was synced (a spooled file is handed back after the commit, never before; a file
  that disappears otherwise is not taken for a commit: its writer commits the send itself).
- **Claude Code sees no difference.** Its readers and writers only know the inbox file and its
  ``.lock`` directory; the commit takes that lock like any write. A spool file is never read by
  Claude Code, and is in a hidden folder that inbox watchers do not look into.
- **Nothing twice.** A committer killed after its inbox write but before handing the spooled
  files back leaves entries that are in the inbox already; the next commit skips every spooled
  entry whose identity the inbox or its record holds.
- **A writer killed after `put`** leaves its send in the spool, unacknowledged; the next commit
  to that inbox delivers it (as a send whose reply was lost). A writer that gives up (its lock
  wait timed out) takes its send back first.
- **Half-written and hostile files.** A send is published whole, in one rename; a file that
  does not hold one (a planted link, a directory, bytes that are not what its header says, JSON
  that is not an object, a name that is not a spooled send's) is moved to
  ``<spool>/.refused-<name>`` with an error logged, never delivered, never fatal.
- Sends are committed in the order they were spooled (names start with the time in ns), so
  one sender's messages keep their order: each send waits for its commit before the next.
- **Several entries in one send** (`Spool.put_many`: a teammate's answer and its idle
  notification) are one spooled file, committed together, in that order.
- Spool files of one entry each, as swarm wrote them before (``<ns>-<pid>-<random>.json``,
  ``...-<k>of<n>.json`` for several, ``.read`` for read marks), are still delivered: one that does
  not parse is left alone for `WRITING_S` (its writer may be writing it), the parts of a send
  that are not all there are waited for as long.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.fs import safefs
from protocols.fs.jsonio import dumps_pretty
from protocols.inbox import spool_slot

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
        carries it into the inbox is."""
        return self.put_many([item])

    def put_many(self, items: list[dict[str, Any]]) -> Waiting:
        """Spool several entries, to be committed together and in this order (module doc);
        what to ask whether they still wait."""
        if not 1 <= len(items) <= MAX_PARTS:
            raise ValueError(f"spool 1 to {MAX_PARTS} entries at once, not {len(items)}")
        # stored as the inbox will hold them: the commit splices them in without rendering
        parts = [dumps_pretty(item, level=1).encode("utf-8") for item in items]
        return self._fill(spool_slot.ENTRIES, parts)

    def put_marks(self, identities: set[str]) -> Waiting:
        """Spool a reader's read marks (the identities it has read): the holder sets ``read``
        on those entries in its next write, as `Mailbox.mark_read` would."""
        return self._fill(spool_slot.MARKS, [json.dumps(sorted(identities)).encode("utf-8")])

    def _fill(self, kind: str, parts: list[bytes]) -> Waiting:
        """Write `parts` into one of this process's slots here (`protocols.inbox.spool_slot`)."""
        folder = str(self.path)
        for attempt in (1, 2):
            slot = spool_slot.POOL.take(folder, lambda: self._open_dir(create=True))
            try:
                slot.fill(kind, parts)
            except spool_slot.SlotLost:  # swept meanwhile: a new slot, once
                slot.close()
                if attempt == 2:
                    raise
                continue
            except BaseException:
                spool_slot.POOL.give_back(folder, slot)  # still idle: reusable
                raise
            return Waiting(slot, folder)
        raise AssertionError("unreachable")

    def pending(self) -> list[Spooled]:
        """The spooled entries, oldest first. Call with the inbox's lock held: the names are
        then removed with `remove` once their commit is durable."""
        try:
            fd = self._open_dir()
        except FileNotFoundError:
            return []
        try:
            found: list[Spooled] = []
            for name in sorted(os.listdir(fd)):
                if name.startswith((REFUSED_PREFIX, spool_slot.IDLE_PREFIX)):
                    continue
                if name.endswith(spool_slot.SLOT_SUFFIX) and spool_slot.idle_name_of(name):
                    found += _read_slot(fd, name, self.path)
                elif name.startswith(".") or not name.endswith((ENTRY_SUFFIX, MARKS_SUFFIX)):
                    _refuse(fd, name, self.path, "not a spooled entry's name")
                else:  # a spool file of one entry, as swarm wrote them before its slots
                    spooled = _read_entry(fd, name, self.path)
                    if spooled is not None:
                        found.append(spooled)
            return _whole_sends(found)
        finally:
            os.close(fd)

    def remove(self, names: list[str]) -> None:
        """Remove committed entries (call only after the inbox write that carries them): a
        slot is made idle again for its writer, a file of one entry removed."""
        if not names:
            return
        try:
            fd = self._open_dir()
        except FileNotFoundError:
            return
        try:
            for name in dict.fromkeys(names):  # a slot's entries share its name
                with contextlib.suppress(FileNotFoundError):
                    if name.endswith(spool_slot.SLOT_SUFFIX):
                        spool_slot.hand_back(fd, name)
                    else:
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
    handle = _open_spooled(fd, name, where)
    if handle is None:
        return None  # refused, or committed and removed by a holder that lost its lock since
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


def _read_slot(fd: int, name: str, where: Path) -> list[Spooled]:
    """The entries or read marks in the pending slot `name` ([]: refused, or gone). A slot is
    published whole (`protocols.inbox.spool_slot`): one that does not parse is refused at once."""
    handle = _open_spooled(fd, name, where)
    if handle is None:
        return []  # refused, or taken back by its writer
    try:
        try:
            data = safefs.read_fd(handle)
        finally:
            os.close(handle)
        kind, parts = spool_slot.parse(data)
        if kind == spool_slot.MARKS:
            marks = json.loads(parts[0].decode("utf-8")) if len(parts) == 1 else None
            if not isinstance(marks, list) or not all(isinstance(i, str) for i in marks):
                raise ValueError("read marks that are not a list of identities")
            return [Spooled(name, None, "", frozenset(marks))]
        found = []
        for part in parts:
            text = part.decode("utf-8")
            item = json.loads(text)
            if not isinstance(item, dict):
                raise ValueError("an entry that is not a JSON object")
            found.append(Spooled(name, item, text.strip()))
        return found
    except OSError as exc:  # a directory planted under a slot's name
        _refuse(fd, name, where, f"unreadable ({exc.strerror})")
    except (ValueError, UnicodeDecodeError) as exc:
        _refuse(fd, name, where, f"not a spool slot ({exc})")
    return []


def _open_spooled(fd: int, name: str, where: Path) -> int | None:
    """Spool file `name` opened for reading; None if it is gone, or was refused (a link, or
    not a regular file: a FIFO would keep the committer, which holds the inbox's lock,
    waiting for ever) and moved aside."""
    try:
        return safefs.open_at(fd, name, os.O_RDONLY, why="")
    except FileNotFoundError:
        return None
    except safefs.LinkRefused:
        _refuse(fd, name, where, "a symbolic link")
    except safefs.NotRegularFile as exc:
        _refuse(fd, name, where, str(exc))
    return None


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
    """A send just spooled in a slot, asked about again and again while its writer waits for
    the lock: was it carried? Close it when done (the slot goes back to the process's pool)."""

    def __init__(self, slot: spool_slot.Slot, folder: str) -> None:
        self.slot = slot
        self.folder = folder
        self.names = [slot.pending] if slot.pending else []
        self._open = True

    def __enter__(self) -> Waiting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            spool_slot.POOL.give_back(self.folder, self.slot)

    def __call__(self) -> bool:
        """True while the send is still under its pending name."""
        return self.slot.waits()

    def done(self) -> bool:
        """Carried: committed by a lock holder (not merely gone: `Slot.carried`)."""
        return self.slot.carried()

    def pause(self, timeout: float) -> None:
        """Wait up to `timeout` seconds, woken early when the send is handed back
        (`Slot.pause`)."""
        self.slot.pause(timeout)
