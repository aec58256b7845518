"""A process's reusable spool files: a spooled send that allocates no inode.

A writer that finds an inbox's lock taken spools its send (`protocols.inbox.spool`). A new file per
send cost a new inode, and freeing it after the commit: on this project's machine (ext4 with no
journal, mounted ``discard``) that is ~130 µs of kernel CPU per send against ~10 µs to rewrite a
file in place, and the more was freed in the last minute, the more each allocation costs. So a
process keeps one file per spool folder it sends into, its *slot*, and reuses it:

- Between sends the slot is ``.idle-<id>`` (hidden: a committer passes it by). The writer
  writes its whole send into it there, then renames it to ``<ns>-<id>.slot``: a committer sees
  the send only whole, in one rename (``<ns>`` orders sends by time, as spool files are).
- The committer, once the inbox write that carries the send is durable, renames it back to
  ``.idle-<id>``. A writer taking its send back (its wait timed out) does the same.
- The writer knows it was carried when the pending name is gone *and* the idle name holds its
  file again (`Slot.carried`): a pending file removed by anything else (a hostile process, a
  committer that refused it) does not pass for a commit, and its writer commits the send itself.
  It looks between waits (`Slot.pause`) that the committer cuts short by ringing the slot's
  bell right after the hand-back (`protocols.inbox.spool_wake`).

Content: one header line ``swarm-spool 1 <kind> <len>,<len>,...`` (kind ``e``: inbox entries as
the inbox holds them; ``m``: a reader's read marks, a JSON list of identities), then the parts,
each exactly its length in bytes. A file that does not say so is refused like any hostile file.

A process keeps at most `KEPT` slots open (two descriptors each); one not used for a while is
closed and its file left idle. Whoever makes a new slot removes idle slots whose process is
gone and that were not written for `IDLE_SWEEP_S`. A slot is never shared by two sends at
once: a thread that finds its process's slot busy takes another. A forked child makes its own.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from protocols.errors import ProtocolsError
from protocols.inbox import spool_wake

SLOT_SUFFIX = ".slot"
IDLE_PREFIX = ".idle-"
MAGIC = "swarm-spool 1"
ENTRIES = "e"
MARKS = "m"
IDLE_SWEEP_S = 600.0
KEPT = 32
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class SlotLost(ProtocolsError, OSError):
    """The slot's idle file is gone (swept, or removed by another process): make a new one."""


class Slot:
    """One reusable spool file of this process in one spool folder (module doc)."""

    def __init__(self, dir_fd: int, slot_id: str, fd: int) -> None:
        self.dir_fd = dir_fd
        self.id = slot_id
        self.fd = fd
        self.idle = IDLE_PREFIX + slot_id
        self.pending: str | None = None  # its name while a send waits in it
        self.bell = spool_wake.Bell.make(slot_id)  # rung by the committer that hands it back

    @classmethod
    def make(cls, dir_fd: int) -> Slot:
        """A new slot in the spool folder `dir_fd` (the descriptor becomes the slot's)."""
        slot_id = f"{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(IDLE_PREFIX + slot_id, _FLAGS, 0o644, dir_fd=dir_fd)
        sweep_idle(dir_fd)
        return cls(dir_fd, slot_id, fd)

    def fill(self, kind: str, parts: list[bytes]) -> str:
        """Write `parts` while idle, then publish them under a pending name (returned)."""
        header = f"{MAGIC} {kind} {','.join(str(len(p)) for p in parts)}\n".encode("ascii")
        data = memoryview(header + b"".join(parts))
        offset = 0
        while offset < len(data):
            offset += os.pwrite(self.fd, data[offset:], offset)
        os.ftruncate(self.fd, len(data))  # after the write: a shorter send frees no block early
        if self.bell is not None:
            self.bell.drain()  # a ring about the last send, come after its writer had looked
        name = f"{time.time_ns():020d}-{self.id}{SLOT_SUFFIX}"
        try:
            os.rename(self.idle, name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except FileNotFoundError:
            raise SlotLost(errno.ENOENT, f"spool slot {self.idle} is gone") from None
        self.pending = name
        return name

    def waits(self) -> bool:
        """Whether the send is still under its pending name (not carried, not taken back)."""
        if self.pending is None:
            return False  # carried, as `carried` found
        try:
            os.stat(self.pending, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def carried(self) -> bool:
        """Whether a committer carried the send: gone from its pending name, and this slot's
        file back under its idle name (module doc). Once true, it stays true."""
        if self.pending is None:
            return True
        if self.waits():
            return False
        try:
            here = os.stat(self.idle, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(self.fd)
        if (here.st_dev, here.st_ino) != (mine.st_dev, mine.st_ino):
            return False
        self.pending = None  # free for the next send
        return True

    def pause(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the send to be carried: woken by the committer's
        ring (`protocols.inbox.spool_wake`), else at the end. A ring after which the send is not
        carried was about nothing: the rest of the wait is slept out without listening."""
        if self.bell is None:
            time.sleep(timeout)
            return
        started = time.monotonic()
        if self.bell.wait(timeout) and not self.carried():
            time.sleep(max(0.0, started + timeout - time.monotonic()))

    def take_back(self) -> None:
        """Withdraw the send (its writer gives up): idle again, unless already committed."""
        if self.pending is not None:
            with contextlib.suppress(FileNotFoundError):
                rename_back(self.dir_fd, self.pending)
                self.pending = None

    def free(self) -> bool:
        """Whether a new send can be written into it: its last one was carried (or taken
        back), and its file is its idle one again."""
        return self.carried()

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.dir_fd)
        if self.bell is not None:
            self.bell.close()


def idle_name_of(pending: str) -> str | None:
    """``.idle-<id>`` for a pending slot name ``<ns>-<id>.slot`` (None: not one)."""
    slot_id = slot_id_of(pending)
    return None if slot_id is None else IDLE_PREFIX + slot_id


def slot_id_of(pending: str) -> str | None:
    """``<id>`` of a pending slot name ``<ns>-<id>.slot`` (None: not one)."""
    stem, dash, slot_id = pending.removesuffix(SLOT_SUFFIX).partition("-")
    if not pending.endswith(SLOT_SUFFIX) or not dash or not stem.isdigit() or not slot_id:
        return None
    return slot_id


def rename_back(dir_fd: int, pending: str) -> str:
    """Make the pending slot `pending` idle again (after its commit, or taken back); its id."""
    slot_id = slot_id_of(pending)
    if slot_id is None:
        raise ValueError(f"not a pending spool slot: {pending!r}")
    os.rename(pending, IDLE_PREFIX + slot_id, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return slot_id


def hand_back(dir_fd: int, pending: str) -> None:
    """`rename_back` after the commit that carried it, and wake its writer
    (`protocols.inbox.spool_wake`)."""
    spool_wake.ring(rename_back(dir_fd, pending))


def parse(data: bytes) -> tuple[str, list[bytes]]:
    """(kind, parts) of a slot file's content; ValueError if it is not one whole."""
    header, newline, body = data.partition(b"\n")
    words = header.decode("ascii", "replace").split(" ")
    if not newline or len(words) != 4 or " ".join(words[:2]) != MAGIC:
        raise ValueError("no spool slot header")
    kind, lengths = words[2], words[3].split(",")
    if kind not in (ENTRIES, MARKS) or not all(n.isdigit() for n in lengths):
        raise ValueError(f"a spool slot header that does not parse: {header[:80]!r}")
    sizes = [int(n) for n in lengths]
    if sum(sizes) != len(body):
        raise ValueError(f"a spool slot of {len(body)} bytes that says {sum(sizes)}")
    parts, at = [], 0
    for size in sizes:
        parts.append(body[at : at + size])
        at += size
    return kind, parts


def sweep_idle(dir_fd: int, older_than_s: float = IDLE_SWEEP_S) -> None:
    """Remove idle slots (plain files) not written for `older_than_s` whose process is gone
    (a slot of a live process is left: its next send would only make a new one). A process
    whose pid was taken again is taken for alive: its slot goes once that one ends too."""
    limit = time.time() - older_than_s
    for name in os.listdir(dir_fd):
        if not name.startswith(IDLE_PREFIX) or _alive(name[len(IDLE_PREFIX) :]):
            continue
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if st.st_mtime < limit and stat.S_ISREG(st.st_mode):
                os.unlink(name, dir_fd=dir_fd)


def _alive(slot_id: str) -> bool:
    """Whether the process that made the slot `slot_id` (``<pid>-<hex>``) may still run."""
    pid = slot_id.partition("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (PermissionError), or not a pid we can ask
    return True


class SlotPool:
    """This process's slots, by spool folder: the free ones to reuse, at most `KEPT` in all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._free: OrderedDict[tuple[str, int], Slot] = OrderedDict()  # (folder, n) -> slot
        self._made = 0

    def take(self, folder: str, open_dir: Callable[[], int]) -> Slot:
        """A free slot of `folder` (`open_dir()` opens the folder for a new one)."""
        with self._lock:
            self._forked()
            for key in [k for k in self._free if k[0] == folder]:
                slot = self._free.pop(key)
                if slot.free() and _folder_alive(slot.dir_fd):
                    return slot
                if slot.pending is not None and slot.waits():
                    self._free[key] = slot  # still being committed: not free yet
                    continue
                slot.close()  # lost (swept, refused) or its folder deleted
        dir_fd = open_dir()
        try:
            return Slot.make(dir_fd)
        except BaseException:
            os.close(dir_fd)
            raise

    def give_back(self, folder: str, slot: Slot) -> None:
        """`slot` is done with (its send carried, taken back, or left to the lock holder)."""
        with self._lock:
            self._forked()
            self._made += 1
            self._free[(folder, self._made)] = slot
            while len(self._free) > KEPT:
                _, oldest = self._free.popitem(last=False)
                oldest.close()

    def _forked(self) -> None:
        if self._pid != os.getpid():  # a forked child: its parent's slots are not its own
            for slot in self._free.values():
                with contextlib.suppress(OSError):
                    slot.close()  # the child's copies of the descriptors
            self._free = OrderedDict()
            self._pid = os.getpid()


def _folder_alive(dir_fd: int) -> bool:
    """Whether the folder is still linked (a deleted team's spool folder is not written)."""
    return os.fstat(dir_fd).st_nlink > 0


POOL = SlotPool()
