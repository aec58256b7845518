"""`swarm watch`: the team at a glance, redrawn whenever one of its files changes or the
terminal is resized.

It watches the team's directory (config, inboxes, status files) and task directory with
inotify, or a PostgreSQL team's channel (`LISTEN`: a message, a task, a status), with a rescan
every `RESCAN_S` seconds either way; a change redraws the frame
(`swarm.views.dashboard_frame`, fitted to the terminal's size) from a fresh read-only
`snapshot` (nothing here writes a team file, except answers and messages the person sends on
purpose, and swarm's record of what members sent each other, kept before a reader that deletes
what it read takes it: `Mailbox.observe_team`). With a terminal on stdin, keys act on the
selected request (`swarm.views.dashboard_keys`); the dashboard takes the terminal's alternate
screen, so quitting leaves the shell's screen as it was, and prints what a held answer became.

`--once` prints one frame: as wide as ``--width``, else the terminal, else ``$COLUMNS``, else
`ONCE_WIDTH` (never rich's 80 columns for a pipe), and as long as it takes.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import signal
import sys
import termios
import threading
import tty
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live

from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store import open_store
from swarm.signal_relay import relayed
from swarm.team.approvals import answer, member_cwd
from swarm.team.signatures import lead_mailbox
from swarm.views.dashboard_frame import detail_body, detail_frame, frame
from swarm.views.dashboard_keys import Controls, split_keys
from swarm.views.request_text import content_lines
from swarm.views.snapshot import RequestView, TeamView, snapshot

if TYPE_CHECKING:
    from protocols.pg.watch import PgWatcher
    from protocols.store import AnyMailbox
    from protocols.watch import InboxWatcher
    from swarm.team.approvals import Pending

    AnyWatcher = InboxWatcher | PgWatcher

RESCAN_S = 2.0  # a safety net for lost inotify events, and to age the "ago" columns
ONCE_WIDTH = 120  # `--once` into a pipe, with no --width and no $COLUMNS
BY = "swarm watch"


class Dashboard:
    def __init__(self, paths: TeamPaths, console: Console, width: int | None = None) -> None:
        self.paths = paths
        self.console = console
        self.width = width  # --width, else the terminal's
        self.view: TeamView | None = None
        self.problem = ""  # the team could not be read: the last frame is shown
        self.controls = Controls(self._answer, self._send)
        self._keys: list[str] = []
        self._lock = threading.Lock()
        self._mailbox: AnyMailbox | None = None  # one, so it knows which inboxes it has seen

    def run(self, interactive: bool) -> int:
        watcher = open_store(self.paths).team_watcher(RESCAN_S)
        # Keys are read unbuffered from before the first frame: a key typed as soon as something
        # shows on screen is never lost in a line buffer that switching modes would flush.
        keys = _cbreak(sys.stdin.fileno()) if interactive else contextlib.nullcontext()
        resized = relayed({signal.SIGWINCH}, lambda _: watcher.changed.set())
        live = Live(self._draw(), console=self.console, auto_refresh=False, screen=True)
        try:
            with keys, resized, watcher, live:
                if interactive:
                    threading.Thread(target=self._read_keys, args=(watcher,), daemon=True).start()
                while not self.controls.quit:
                    watcher.clear()
                    for key in self._take_keys():
                        self.controls.on_key(key, self.view)
                    self.controls.tick()
                    live.update(self._draw(), refresh=True)
                    held = self.controls.wait_s()
                    watcher.wait(RESCAN_S if held is None else min(RESCAN_S, held))
        except KeyboardInterrupt:
            pass  # Ctrl-C quits as q does
        finally:
            said = self.controls.finish()  # an answer held for undo is written, not lost
        if said:
            self.console.print(said, markup=False, highlight=False)
        return 0

    def _size(self) -> tuple[int, int]:
        """The terminal's size now (it may have been resized); --width wins for the width."""
        try:
            width, height = os.get_terminal_size(self.console.file.fileno())
        except (OSError, ValueError, AttributeError):  # not a terminal
            width, height = self.console.size
        return self.width or width, height

    def _draw(self) -> Group:
        try:
            if self._mailbox is None:
                self._mailbox = lead_mailbox(self.paths)
            self._mailbox.observe_team()  # before a deleting reader takes it
            self.view = snapshot(self.paths)
            self.problem = ""
        except (ProtocolsError, OSError) as exc:  # a team file being rewritten, or broken
            if self.view is None:
                raise
            self.problem = printable_line(
                f"cannot read the team right now ({exc}); showing the last"
            )
        width, height = self._size()
        self.console.size = (width, height)
        controls = self.controls
        controls.selected = max(0, min(controls.selected, len(self.view.requests) - 1))
        shown = next((r for r in self.view.requests if r.id == controls.detail), None)
        if shown is not None and shown.pending is not None:
            return self._detail(shown, shown.pending, width, height)
        if controls.detail is not None:  # answered elsewhere meanwhile: back to the team
            controls.note = printable_line(f"{controls.detail} is no longer waiting")
            controls.detail = None
        return frame(
            self.view,
            width,
            height,
            selected=controls.selected,
            note=self.problem or controls.note,
            bottom=controls.bottom_line(),
            holding=controls.holding(),
        )

    def _detail(self, shown: RequestView, pending: Pending, width: int, height: int) -> Group:
        """The request the person pressed Enter on, in full, scrolled to where they are."""
        content = content_lines(pending, member_cwd(self.paths, pending.teammate))
        controls = self.controls
        bottom = controls.bottom_line()
        controls.page = detail_body(height, controls.note, bottom)
        controls.scroll = max(0, min(controls.scroll, len(content) - controls.page))
        return detail_frame(
            shown,
            content,
            width,
            height,
            scroll=controls.scroll,
            note=self.problem or controls.note,
            bottom=bottom,
        )

    def _answer(self, request: RequestView, approve: bool, reason: str | None) -> None:
        answer(self.paths, request.id, approve=approve, text=reason, by=BY)

    def _send(self, to: str, text: str) -> None:
        mailbox = lead_mailbox(self.paths)
        if to == "*":
            mailbox.broadcast(text, sender=LEAD_NAME, summary=text[:60])
        else:
            mailbox.send(to, text, sender=LEAD_NAME, summary=text[:60])

    def _take_keys(self) -> list[str]:
        with self._lock:
            keys, self._keys = self._keys, []
        return keys

    def _read_keys(self, watcher: AnyWatcher) -> None:
        fd = sys.stdin.fileno()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # é is two bytes
        while not self.controls.quit:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                typed = decoder.decode(os.read(fd, 1024))
                with self._lock:
                    self._keys.extend(split_keys(typed))
                watcher.changed.set()


@contextlib.contextmanager
def _cbreak(fd: int) -> Iterator[None]:
    """The terminal in cbreak mode; TCSANOW keeps keys typed before (TCSAFLUSH drops them)."""
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def once_width(width: int | None, terminal: bool, environ: dict[str, str]) -> int:
    """The width of `--once`: `width`, else the terminal's, else a valid $COLUMNS, else
    `ONCE_WIDTH`."""
    if width:
        return width
    if terminal:
        with contextlib.suppress(OSError):
            return os.get_terminal_size(sys.stdout.fileno()).columns
    columns = environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else ONCE_WIDTH


def watch(paths: TeamPaths, once: bool = False, width: int | None = None) -> int:
    """Run the dashboard (keys when stdin is a terminal); `once` prints one frame and returns."""
    if once:
        lead_mailbox(paths).observe_team()
        columns = once_width(width, sys.stdout.isatty(), dict(os.environ))
        console = Console(width=columns)
        console.print(frame(snapshot(paths), columns, None, bottom=""))
        return 0
    return Dashboard(paths, Console(), width).run(interactive=sys.stdin.isatty())
