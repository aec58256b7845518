"""`swarm watch`: the team at a glance, redrawn whenever one of its files changes.

It watches the team's directory (config, inboxes, status files) and task directory with
inotify; a change redraws the frame from a fresh read-only `snapshot` (nothing here writes a
team file, except answers and messages the person sends on purpose, and swarm's record of what
members sent each other, kept before a reader that deletes what it read takes it:
`Mailbox.observe_team`). With a terminal, keys act
on the selected request: ``a`` approves, ``d`` denies, ``j``/``k`` move the selection, ``s``
sends a message, ``q`` quits.

Under each member, a row per running sub-agent (``alice \u203a Explore``, in its definition's
colour). What teammates wrote reaches rich only as `Text` (never parsed as markup), escaped with
`protocols.printable.printable_line`; a colour from a file is used only when it names a colour.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import sys
import termios
import threading
import tty
from collections.abc import Iterator

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.task import list_line
from protocols.watch import InboxWatcher
from swarm.team.approvals import answer
from swarm.team.signatures import lead_mailbox
from swarm.views.snapshot import TeamView, snapshot
from swarm.views.table import (
    HEADERS,
    NUMERIC,
    SUBAGENT_INDENT,
    ago,
    money,
    state_label,
    tokens,
    turns_and_calls,
)

STATE_STYLE = {
    "working": "bold green",
    "waiting": "bold yellow",
    "idle": "cyan",
    "dead": "bold red",
    "starting": "magenta",
    "lead": "bold",
}
COLOR = {"purple": "magenta", "orange": "dark_orange", "pink": "hot_pink"}
NAMED = frozenset({"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"})
RESCAN_S = 2.0  # a safety net for lost inotify events, and to age the "ago" columns


def _line(text: str, style: str = "") -> Text:
    """`text` from a file as a rich `Text`: escaped, never parsed as markup."""
    return Text(printable_line(text), style=style)


def _color(name: str | None) -> str:
    """A member's colour as a rich style, "" unless it names a colour (a style from a file
    could blink, or link the name to anywhere)."""
    style = COLOR.get(name or "", name or "")
    return style if style in NAMED or style in COLOR.values() else ""


def frame(view: TeamView, selected: int = 0, note: str = "") -> Group:
    """One frame of the dashboard for `view` (the `selected` request highlighted)."""
    members = Table(title=_line(f"team {view.team}"), expand=True, title_justify="left")
    flexible = {"task": 2, "activity": 3}  # the others take what they need
    for column in HEADERS:
        members.add_column(
            column,
            overflow="fold",
            ratio=flexible.get(column),
            justify="right" if column in NUMERIC else "left",
        )
    for m in view.members:
        members.add_row(
            _line(m.name, _color(m.color)),
            _line(state_label(m.state), STATE_STYLE.get(m.state, "")),
            _line(m.task or "-"),
            _line(f"{m.activity} ({ago(m.activity_age_s)})" if m.activity else "-"),
            str(m.turns),
            str(m.requests),
            tokens(m.usage),
            money(m.cost_usd),
        )
        for sub in m.running_subagents:  # its tokens are in the member's row already
            members.add_row(
                _line(SUBAGENT_INDENT + sub.label, _color(sub.color)),
                _line(sub.state, STATE_STYLE["working"]),
                _line(sub.description or "-"),
                _line(sub.activity or "-"),
                str(sub.turns),
                str(sub.requests),
                tokens(sub.usage),
                money(sub.cost_usd),
            )
    turns, calls = turns_and_calls(view)
    members.add_row(
        "total",
        "",
        "",
        "",
        str(turns),
        str(calls),
        tokens(view.usage),
        money(view.cost_usd),
        style="bold",
    )
    board = Table(title="tasks", expand=True, title_justify="left", show_header=False)
    board.add_column("status", no_wrap=True)
    board.add_column("tasks", overflow="fold", ratio=1)
    for status in ("in_progress", "pending", "completed"):
        listed = view.tasks.get(status, [])
        lines = [printable_line(list_line(t)) for t in listed[-12:]]
        if len(listed) > 12:
            lines.insert(0, f"... {len(listed) - 12} more")
        board.add_row(f"{status} ({len(listed)})", Text("\n".join(lines) or "-"))
    if view.failed:
        lines = [printable_line(f"{list_line(t)}: {t.failure}") for t in view.failed]
        board.add_row(f"failed ({len(view.failed)})", Text("\n".join(lines), style="red"))
    requests = Table(title="waiting for you", expand=True, title_justify="left")
    for column in ("", "id", "from", "asks", "age"):
        requests.add_column(column, overflow="fold", ratio=1 if column == "asks" else None)
    for index, r in enumerate(view.requests):
        mark = ">" if index == selected else ""
        style = "reverse" if index == selected else ""
        requests.add_row(
            mark,
            _line(r.id),
            _line(r.agent or r.teammate),
            _line(f"{r.tool}: {r.summary}"),
            ago(r.age_s),
            style=style,
        )
    if not view.requests:
        requests.add_row("", "-", "", "nothing is waiting", "")
    messages = Table(title=f"last messages to {LEAD_NAME}", expand=True, title_justify="left")
    for column in ("from", "message", "age"):
        messages.add_column(column, overflow="fold", ratio=1 if column == "message" else None)
    for msg in view.messages:
        messages.add_row(
            _line(msg.sender, _color(msg.color)),
            _line(msg.text),
            ago(msg.age_s),
        )
    keys = "keys: j/k select · a approve · d deny · s send · q quit" if note != "-" else ""
    return Group(
        members,
        board,
        requests,
        messages,
        _line(note if note not in ("", "-") else keys, "dim"),
    )


class Dashboard:
    def __init__(self, paths: TeamPaths, console: Console | None = None) -> None:
        self.paths = paths
        self.console = console or Console()
        self.selected = 0
        self.note = ""
        self.view: TeamView | None = None
        self.quit = False
        self._keys: list[str] = []
        self._lock = threading.Lock()
        self._compose: list[str] | None = None  # [to, text] while typing a message

    def run(self, interactive: bool) -> int:
        watcher = InboxWatcher(
            self.paths.config,
            directories=(self.paths.team_dir, self.paths.tasks_dir),
            rescan_s=RESCAN_S,
        )
        # Keys are read unbuffered from before the first frame: a key typed as soon as something
        # shows on screen is never lost in a line buffer that switching modes would flush.
        keys = _cbreak(sys.stdin.fileno()) if interactive else contextlib.nullcontext()
        with keys, watcher, Live(self._draw(), console=self.console, auto_refresh=False) as live:
            if interactive:
                threading.Thread(target=self._read_keys, args=(watcher,), daemon=True).start()
            while not self.quit:
                watcher.clear()
                for key in self._take_keys():
                    self._on_key(key)
                live.update(self._draw(), refresh=True)
                watcher.wait(RESCAN_S)
        return 0

    def _draw(self) -> Group:
        try:
            lead_mailbox(self.paths).observe_team()  # before a deleting reader takes it
            self.view = snapshot(self.paths)
        except (ProtocolsError, OSError) as exc:  # a team file being rewritten, or broken
            if self.view is None:
                raise
            self.note = printable_line(f"cannot read the team right now ({exc}); showing the last")
            return frame(self.view, self.selected, self.note)
        self.selected = max(0, min(self.selected, len(self.view.requests) - 1))
        return frame(self.view, self.selected, self.note)

    def _take_keys(self) -> list[str]:
        with self._lock:
            keys, self._keys = self._keys, []
        return keys

    def _read_keys(self, watcher: InboxWatcher) -> None:
        fd = sys.stdin.fileno()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # é is two bytes
        while not self.quit:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                typed = decoder.decode(os.read(fd, 64))
                with self._lock:
                    self._keys.extend(typed)
                watcher.changed.set()

    def _on_key(self, key: str) -> None:
        if self._compose is not None:
            self._type(key)
            return
        requests = self.view.requests if self.view else []
        if key == "q":
            self.quit = True
        elif key in ("j", "k") and requests:
            step = 1 if key == "j" else -1
            self.selected = (self.selected + step) % len(requests)
        elif key in ("a", "d") and requests:
            request = requests[self.selected]
            approve = key == "a"
            try:
                answer(
                    self.paths,
                    request.id,
                    approve=approve,
                    text=None if approve else "denied from swarm watch",
                    by="swarm watch",
                )
            except ProtocolsError as exc:  # answered elsewhere first, or gone
                self.note = printable_line(str(exc))
                return
            self.note = (
                f"{'approved' if approve else 'denied'} {request.id} from {request.teammate}"
            )
        elif key == "s":
            self._compose = ["", ""]
            self.note = "send to: (a name or *, Enter; Esc cancels)"

    def _type(self, key: str) -> None:
        """Typing a message: the recipient, Enter, the text, Enter sends; Esc cancels."""
        assert self._compose is not None
        field = 0 if "\n" not in self._compose[0] else 1
        if key == "\x1b":
            self._compose, self.note = None, "not sent"
            return
        if key in ("\r", "\n"):
            if field == 0:
                self._compose[0] += "\n"
            else:
                self._deliver(self._compose[0].strip(), self._compose[1].strip())
                return
        elif key in ("\x7f", "\b"):
            self._compose[field] = self._compose[field][:-1]
        else:
            self._compose[field] += key
        to, text = self._compose[0].strip(), self._compose[1]
        self.note = (
            f"send to: {to}"
            if field == 0 and "\n" not in self._compose[0]
            else (f"message to {to}: {text}")
        )

    def _deliver(self, to: str, text: str) -> None:
        self._compose = None
        if not to or not text:
            self.note = "not sent: give a name and a message"
            return
        mailbox = lead_mailbox(self.paths)
        try:
            if to == "*":
                mailbox.broadcast(text, sender=LEAD_NAME, summary=text[:60])
            else:
                mailbox.send(to, text, sender=LEAD_NAME, summary=text[:60])
        except ProtocolsError as exc:
            self.note = f"not sent: {exc}"
            return
        self.note = f"sent to {to}"


@contextlib.contextmanager
def _cbreak(fd: int) -> Iterator[None]:
    """The terminal in cbreak mode; TCSANOW keeps keys typed before (TCSAFLUSH drops them)."""
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def watch(paths: TeamPaths, once: bool = False, width: int | None = None) -> int:
    """Run the dashboard (keys when stdin is a terminal); `once` prints one frame and returns."""
    console = Console(width=width) if width else Console()
    if once:
        lead_mailbox(paths).observe_team()
        console.print(frame(snapshot(paths), note="-"))
        return 0
    return Dashboard(paths, console).run(interactive=sys.stdin.isatty())
