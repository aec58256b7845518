"""`swarm watch`: the team at a glance, redrawn whenever one of its files changes or the
terminal is resized.

It watches the team's directory (config, inboxes, status files) and task directory with
inotify, or a PostgreSQL team's channel (`LISTEN`: a message, a task, a status), with a rescan
every `RESCAN_S` seconds either way; a change redraws the frame
(`swarm.views.dashboard_frame`, fitted to the terminal's size) from a fresh read-only
`snapshot` (nothing here writes a team file, except answers and messages the person sends on
purpose, and swarm's record of what members sent each other, kept before a reader that deletes
what it read takes it: `Mailbox.observe_team`). With a terminal on stdin, keys act on the
selected request (`swarm.views.dashboard_keys`) or member (`swarm.views.member_keys`: its log,
its pane, a restart or shutdown, `swarm.views.dashboard_member`), read by a thread that wakes
the loop at once (`swarm.views.keyboard`). The dashboard takes the terminal's alternate
screen, so quitting leaves the shell's screen as it was, and prints what a held answer became.
Attaching to a member's pane gives the terminal to tmux (the screen and the key reader step
aside) until you detach. Its screen is all it prints: with stdout not a terminal it refuses to
start (`--once` prints one frame).

`--once` prints one frame: as wide as ``--width``, else the terminal, else ``$COLUMNS``, else
`ONCE_WIDTH` (never rich's 80 columns for a pipe), and as long as it takes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live

from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.signal_relay import relayed
from swarm.team.approvals import answer, member_cwd
from swarm.team.attach import attach_target
from swarm.team.request_text import content_lines
from swarm.team.signatures import lead_mailbox
from swarm.views.dashboard_frame import frame
from swarm.views.dashboard_keys import Controls
from swarm.views.dashboard_member import Chores, MemberLog
from swarm.views.dashboard_pages import detail_body, detail_frame, page_frame
from swarm.views.keyboard import KeyReader, away, cbreak
from swarm.views.member_keys import ATTACH
from swarm.views.snapshot import RequestView, TeamView, snapshot

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract
    from swarm.team.approvals import Pending

RESCAN_S = 2.0  # a safety net for lost inotify events, and to age the "ago" columns
ONCE_WIDTH = 120  # `--once` into a pipe, with no --width and no $COLUMNS
MESSAGES = 8  # the last messages to the lead read at least (a tall screen reads more)
BY = "swarm watch"
NOT_A_TERMINAL = (
    "swarm watch draws a live screen, and its output is not a terminal: `swarm watch --once` "
    "prints one frame, `swarm status --json` gives the team to a script"
)


class Dashboard:
    def __init__(self, paths: TeamPaths, console: Console, width: int | None = None) -> None:
        self.paths = paths
        self.console = console
        self.width = width  # --width, else the terminal's
        self.view: TeamView | None = None
        self.problem = ""  # the team could not be read: the last frame is shown
        self.controls = Controls(self._answer, self._send, act=self._act)
        self._keys: list[str] = []
        self._lock = threading.Lock()
        self._mailbox: MailboxContract | None = None  # one, so it knows which inboxes it has seen
        self.watcher = open_store(paths).team_watcher(RESCAN_S)
        self.chores = Chores(paths, self.watcher.changed.set)
        self.log: MemberLog | None = None  # the log shown, read incrementally
        self.live: Live | None = None
        self.reader: KeyReader | None = None
        self.tty: list[Any] | None = None  # the terminal's own mode, while in cbreak

    def run(self, interactive: bool) -> int:
        watcher = self.watcher
        # Keys are read unbuffered from before the first frame: a key typed as soon as something
        # shows on screen is never lost in a line buffer that switching modes would flush.
        fd = sys.stdin.fileno()
        keys = cbreak(fd) if interactive else contextlib.nullcontext()
        resized = relayed({signal.SIGWINCH}, lambda _: watcher.changed.set())
        self.live = live = Live(self._draw(), console=self.console, auto_refresh=False, screen=True)
        reader = KeyReader(fd, self._typed) if interactive else contextlib.nullcontext()
        try:
            with keys as self.tty, resized, watcher, live, reader as self.reader:
                while True:
                    watcher.clear()
                    for key in self._take_keys():
                        self.controls.on_key(key, self.view)
                    if self.controls.quit:
                        break  # at once: no frame drawn, no wait
                    self.controls.note = self.chores.take_said() or self.controls.note
                    self.controls.tick()
                    live.update(self._draw(), refresh=True)
                    held = self.controls.wait_s()
                    watcher.wait(RESCAN_S if held is None else min(RESCAN_S, held))
        except KeyboardInterrupt:
            pass  # Ctrl-C quits as q does
        finally:
            said = self.controls.finish()  # an answer held for undo is written, not lost
        for line in (said, self.chores.finish(self._say)):
            if line:
                self._say(line)
        return 0

    def _say(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)

    def _size(self) -> tuple[int, int]:
        """The terminal's size now (it may have been resized); --width wins for the width."""
        try:
            width, height = os.get_terminal_size(self.console.file.fileno())
        except (OSError, ValueError, AttributeError):  # not a terminal
            width, height = self.console.size
        return self.width or width, height

    def _draw(self) -> Group:
        width, height = self._size()
        try:
            if self._mailbox is None:
                self._mailbox = lead_mailbox(self.paths)
            self._mailbox.observe_team()  # before a deleting reader takes it
            self.view = snapshot(self.paths, messages=max(MESSAGES, height))
            self.problem = ""
        except (ProtocolsError, OSError) as exc:  # a team file being rewritten, or broken
            if self.view is None:
                raise
            self.problem = printable_line(
                f"cannot read the team right now ({exc}); showing the last"
            )
        self.console.size = (width, height)
        controls = self.controls
        controls.selected = max(0, min(controls.selected, len(self.view.requests) - 1))
        shown = next((r for r in self.view.requests if r.id == controls.detail), None)
        if shown is not None and shown.pending is not None:
            return self._detail(shown, shown.pending, width, height)
        if controls.detail is not None:  # answered elsewhere meanwhile: back to the team
            controls.note = printable_line(f"{controls.detail} is no longer waiting")
            controls.detail = None
        if controls.members.log_of is not None:
            return self._log(controls.members.log_of, width, height)
        self.log = None
        return frame(
            self.view,
            width,
            height,
            selected=controls.selected,
            note=self.problem or controls.note,
            bottom=controls.bottom_line(),
            holding=controls.holding(),
            member=controls.members.current(self.view) if controls.on_members else None,
        )

    def _log(self, name: str, width: int, height: int) -> Group:
        """Member `name`'s recent log lines, the newest at the bottom unless scrolled up."""
        if self.log is None or self.log.name != name:
            self.log = MemberLog(self.paths, name)
        lines = self.log.poll()
        keys = self.controls.members
        bottom = self.controls.bottom_line()
        keys.page = detail_body(height, self.controls.note, bottom)
        keys.scroll = max(0, min(keys.scroll, len(lines) - keys.page))
        top = max(0, len(lines) - keys.page - keys.scroll)
        title = printable_line(f"{name} · its log, newest last (swarm logs {name})")
        return page_frame(
            title, lines, width, height, scroll=top, note=self.controls.note, bottom=bottom
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

    def _act(self, action: str, name: str) -> str:
        """A member key's work (`swarm.views.member_keys`); the note to show."""
        if action != ATTACH:
            return self.chores.start(action, name)
        try:
            target = attach_target(self.paths, name, os.environ)
        except (SwarmError, ProtocolsError) as exc:
            return printable_line(str(exc))
        if target.log is not None:
            return printable_line(f"{name} runs as a subprocess, with no pane: l shows its log")
        environ = dict(os.environ)
        if target.clear_tmux:  # tmux refuses to attach inside tmux unless $TMUX is cleared
            environ.pop("TMUX", None)
        try:
            if target.how == "switch-client":  # this tmux client shows the pane; we stay here
                done = subprocess.run(target.command, env=environ, capture_output=True, text=True)
                why = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
                said = f"tmux could not switch to {name}: {why}" if done.returncode else ""
                return printable_line(said or f"switched this tmux client to {name}'s pane")
            status = self._away(target.command, environ)
        except OSError as exc:
            return printable_line(f"cannot run tmux to attach to {name}: {exc}")
        why = f"tmux could not attach to {name} (exit status {status})" if status else ""
        return printable_line(why or f"back from {name}'s pane")

    def _away(self, command: list[str], environ: dict[str, str]) -> int:
        """Run `command` (tmux attaching) with the terminal its own: the screen given back,
        no key read here, the terminal in its own mode; everything back after. Its status."""
        assert self.live is not None and self.reader is not None and self.tty is not None
        self.reader.stop()
        self.live.stop()
        try:
            with away(sys.stdin.fileno(), self.tty):
                return subprocess.run(command, env=environ, check=False).returncode
        finally:
            self.live.vertical_overflow = "ellipsis"
            self.live.start()
            self.reader.start()
            self.watcher.changed.set()  # a frame at once, at whatever size it is now

    def _typed(self, keys: list[str]) -> None:
        """Keys typed (the key reader's thread): kept for the loop, which wakes now."""
        with self._lock:
            self._keys.extend(keys)
        self.watcher.changed.set()

    def _take_keys(self) -> list[str]:
        with self._lock:
            keys, self._keys = self._keys, []
        return keys


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
    """Run the dashboard (keys when stdin is a terminal); `once` prints one frame and returns.
    `SwarmError` when stdout is not a terminal and not `once`: nobody would see the screen."""
    if not once and not sys.stdout.isatty():
        raise SwarmError(NOT_A_TERMINAL)
    if once:
        lead_mailbox(paths).observe_team()
        columns = once_width(width, sys.stdout.isatty(), dict(os.environ))
        console = Console(width=columns)
        console.print(frame(snapshot(paths), columns, None, bottom=""))
        return 0
    return Dashboard(paths, Console(), width).run(interactive=sys.stdin.isatty())
