"""What one round of an inbox's group commit takes (`Committed`), and what one writer or reader
brings to it (`Carried`: its items or read marks, spooled only if the lock was taken when it came,
then waited on until the holder commits them). The commit itself is `InboxFile`'s
(`protocols.inbox.file`); the spool is `protocols.inbox.spool`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from protocols.inbox.spool import Spool, Waiting


class Committed(NamedTuple):
    """What one commit round took: spooled files and own entries, and own read marks set."""

    taken: int
    marked: int
    spooled: int = 0  # of `taken`, the spool's files


class Carried:
    """One writer's items, or one reader's read marks, in a group commit: spooled only if the
    lock was taken when it came (`spool_it`), and then waited on (`done`) until the holder
    commits it."""

    def __init__(
        self,
        spool: Spool,
        items: list[dict[str, Any]] | None = None,
        marks: set[str] | None = None,
    ) -> None:
        self.spool = spool
        self.items = items or []
        self.marks = marks
        self.names: list[str] | None = None  # its spool files, once spooled
        self._waiting: Waiting | None = None

    def spool_it(self) -> None:
        if self.items:
            self._waiting = self.spool.put_many(self.items)
        else:
            self._waiting = self.spool.put_marks(self.marks or set())
        self.names = list(self._waiting.names)

    def done(self) -> bool:
        return self._waiting is not None and self._waiting.done()

    def pause(self, timeout: float) -> None:
        """Wait between looks at `done`: woken as soon as a committer hands the send back."""
        if self._waiting is None:
            time.sleep(timeout)
        else:
            self._waiting.pause(timeout)

    def own(self) -> tuple[list[dict[str, Any]], set[str] | None]:
        """What the lock holder applies as its own besides the spool: its items and its marks,
        spooled or not. A spooled copy found in the spool goes in first and the own one is then
        a repeat (skipped by identity); one that is not there (its slot file removed by another
        process) is committed all the same. Setting ``read`` twice changes nothing, and the
        marks are counted as this call's."""
        return self.items, self.marks

    def withdraw(self) -> None:
        if self.names:
            self.spool.remove(self.names)

    def close(self) -> None:
        if self._waiting is not None:
            self._waiting.close()
            self._waiting = None
