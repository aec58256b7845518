"""`PgWatcher`: `protocols.watch.InboxWatcher`'s methods on a PostgreSQL team's channel.

It wakes on a notification for one of its members' inboxes, or for the task board (a change of
any task: `protocols.pg.notify.TASKS`), or (`everything`) on any notification of the team, and
at least every `rescan_s` seconds whatever it heard, as the file watcher's rescan does.
Notifications that come while nobody waits queue on its connection, so the usual
``clear(); look(); wait()`` loses none of them.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from protocols.errors import Error
from protocols.pg.database import Database
from protocols.pg.notify import TASKS, Listener, notify

DEFAULT_RESCAN_S = 30.0


class PgWatcher:
    """Context manager: ``with store.watcher(["alice"], board=True) as w: w.wait(1.0)``."""

    def __init__(
        self,
        db: Database,
        team: str,
        inboxes: Sequence[str] = (),
        board: bool = False,
        rescan_s: float | None = None,
        everything: bool = False,
    ) -> None:
        self.db = db
        self.team = team
        self._token = f"@wake-{secrets.token_hex(6)}"
        names = set(inboxes) | ({TASKS} if board or everything else set()) | {self._token}
        self.names: set[str] | None = None if everything else names  # None: every notification
        self.rescan_s = DEFAULT_RESCAN_S if rescan_s is None else rescan_s
        self.changed = _Waking(self._wake)
        self.degraded: str | None = None
        self._listener: Listener | None = None
        self._board_touched = False

    def start(self) -> PgWatcher:
        if self._listener is None:
            self._listener = Listener(self.db, self.team)
        return self

    @property
    def listener(self) -> Listener:
        """Its listening connection (`PgMailbox.wait` and `await_message` take it)."""
        self.start()
        assert self._listener is not None
        return self._listener

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self.db.close()

    def __enter__(self) -> PgWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def clear(self) -> None:
        """Forget earlier changes; call before looking, then `wait`."""
        self.changed.clear()

    def take_touched(self, directory: Path) -> bool:
        """Whether the task board changed since the last call (and forget it)."""
        touched, self._board_touched = self._board_touched, False
        return touched

    def take_changed(self, directory: Path) -> set[str] | None:
        return None  # which tasks is not known: look at the board

    def wait(self, timeout: float) -> bool:
        """Block until a notification for a watched name, or `min(timeout, rescan_s)` passes.
        True on a notification (or a lost connection made again: look)."""
        if self.changed.is_set():  # woken already (`changed.set()` from another thread)
            return True
        heard = self.listener.heard(self.names, max(0.0, min(timeout, self.rescan_s)))
        if heard is None or TASKS in heard:
            self._board_touched = True
        if heard is None or heard:
            threading.Event.set(self.changed)
            return True
        return False

    def _wake(self) -> None:
        """End a wait in progress (in another thread) with a notification of its own."""
        with Database(self.db.conninfo, reconnect_s=5.0) as db:
            db.run(lambda conn: notify(conn, self.team, self._token), "wake a watcher")


class _Waking(threading.Event):
    """`changed` of a `PgWatcher`: setting it from outside also ends a wait in progress."""

    def __init__(self, wake: Callable[[], None]) -> None:
        super().__init__()
        self._wake_up = wake

    def set(self) -> None:
        super().set()
        with contextlib.suppress(Error):  # the rescan catches it
            self._wake_up()
