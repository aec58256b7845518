"""What `swarm watch` does to a member (`swarm.views.member_keys` says which keys): its recent
log lines, and a restart or a shutdown run in the background.

`MemberLog` is what `swarm logs NAME` shows (`swarm.views.logs.ActivityLog`; on a PostgreSQL
team the lines its process shipped, `swarm.views.store_logs`), read incrementally: each redraw
adds only what is new, and the last `LOG_LINES` are kept. `Chores` runs a restart
(`swarm.team.resume.restart_member`) or a shutdown (`swarm.team.lifecycle.request_shutdown`,
which waits for the member's answer) on a thread of its own, so the screen and its keys stay
live meanwhile, one at a time; what became of it comes back as a note (`take_said`), and
`done` is called to wake the dashboard. Quitting waits for one under way (`finish`): a restart
cut in half would leave the member stopped and not started again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from protocols.errors import Error
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from swarm.views.log_lines import LogEvent
from swarm.views.logs import ActivityLog

LOG_LINES = 2000  # a member's log lines kept for its page
STOP_WAIT_S = 30.0  # how long a restart or shutdown waits for the member's answer


class MemberLog:
    """Member `name`'s log lines as `swarm logs NAME` prints them, the newest last."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.source: ActivityLog | None = None
        try:
            if paths.store is not None:
                from swarm.views.store_logs import StoreActivityLog

                self.source = StoreActivityLog(paths, name)
            else:
                self.source = ActivityLog(paths, name)
        except (Error, OSError) as exc:
            self.lines = [printable_line(str(exc))]
            return
        if self.source.note:
            self.lines.append(printable_line(self.source.note))

    def poll(self) -> list[str]:
        """Every line kept, with what was written since the last look."""
        if self.source is not None:
            try:
                events: list[LogEvent] = self.source.poll()
            except (Error, OSError) as exc:  # a file being rewritten: the next look reads it
                events = [LogEvent("", "log", f"cannot read the log right now: {exc}")]
            self.lines += [event.line() for event in events]
            del self.lines[:-LOG_LINES]
        return self.lines


class Chores:
    """A restart or a shutdown of one member at a time, in the background."""

    def __init__(self, paths: TeamPaths, done: Callable[[], None]) -> None:
        self.paths = paths
        self.done = done
        self.thread: threading.Thread | None = None
        self.what = ""  # what the running one does, for the person
        self._said: list[str] = []
        self._lock = threading.Lock()

    @property
    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, action: str, name: str) -> str:
        """Start `action` ("restart" or "shut down") of `name`; the note to show now."""
        if self.busy:
            return printable_line(f"still {self.what}; one at a time")
        verb = "restarting" if action == "restart" else "shutting down"
        self.what = f"{verb} {name}"
        work = self._restart if action == "restart" else self._shut_down
        self.thread = threading.Thread(target=self._run, args=(work, name), daemon=True)
        self.thread.start()
        return printable_line(f"{self.what}… (waiting up to {STOP_WAIT_S:g} s for its answer)")

    def take_said(self) -> str | None:
        """What the last finished one became (once), else None."""
        with self._lock:
            said, self._said = self._said, []
        return said[-1] if said else None

    def finish(self, say: Callable[[str], None]) -> str | None:
        """On quitting: wait for one under way (saying so first); what it became."""
        if self.thread is not None and self.thread.is_alive():
            say(f"swarm watch: still {self.what}; waiting for that to finish")
            self.thread.join()
        return self.take_said()

    def _run(self, work: Callable[[str], str], name: str) -> None:
        try:
            said = work(name)
        except (Error, OSError) as exc:
            said = f"{self.what} failed: {exc}"
        with self._lock:
            self._said.append(printable_line(said))
        self.done()

    def _restart(self, name: str) -> str:
        from swarm.team.restart import restart_member  # loads the spawn backends: only now

        member, spawned = restart_member(self.paths, name, wait_s=STOP_WAIT_S)
        where = f"pane {spawned.pane_id}" if spawned.pane_id else f"pid {spawned.pid}"
        return f"restarted {member.name} ({where})"

    def _shut_down(self, name: str) -> str:
        from swarm.team.lifecycle import request_shutdown  # loads the spawn backends: only now

        result = request_shutdown(self.paths, name, "asked from swarm watch", STOP_WAIT_S)
        if not result.stopped:
            return f"{name} did not shut down ({result.outcome}: {result.reason})"
        released = ", ".join(f"#{i}" for i in result.released) or "none"
        return f"{name} shut down and was removed; tasks returned to the board: {released}"
