"""How a person sees the teammates' tmux panes: the ``tmux`` command line that shows them, for
`swarm status` (a footer line, and ``panes`` in its JSON), `swarm attach`, and where a
teammate was just started (`placement`, `watch_hint`: `swarm spawn`).

Outside tmux, a team's panes are on a private tmux server, ``tmux -L swarm-<team>``, which a
plain ``tmux ls`` (tmux's default server) does not list: the command names that server
(``tmux -L swarm-t attach -t %3``). A member spawned from inside tmux has its pane in the
server it was spawned from, whose socket its entry does not record: ``swarm attach NAME`` finds
it. Sockets and names come from the team file (anyone may have written it): a command line is
quoted for a shell (`shlex.join`) and a pane id that is not ``%N`` is never shown.
Click-free and light (``swarm status`` loads it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

PANE_ID = re.compile(r"%[0-9]+")
GONE = ("dead", "stopped", "failed")  # states whose pane is gone


class PaneMember(Protocol):
    """What is needed of a member: `swarm.views.snapshot.MemberView` is one."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def pane(self) -> str | None: ...
    @property
    def socket(self) -> str | None: ...


class PaneServer(NamedTuple):
    """A tmux server holding teammates' panes, and the command that shows them."""

    socket: str | None  # its ``-L`` name; None: the tmux server they were spawned from
    members: list[str]
    command: list[str]  # tmux attach to the first member's pane, or `swarm attach NAME`

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)

    def line(self) -> str:
        """One line for a person (not escaped: the caller escapes it for the terminal)."""
        who = ", ".join(self.members)
        if self.socket is None:
            return f"{who}: in the tmux session they were spawned from: {self.command_line}"
        return (
            f"{who}: on the private tmux server {self.socket!r} (plain `tmux ls` does not "
            f"list it): {self.command_line}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "socket": self.socket,
            "members": list(self.members),
            "command": list(self.command),
            "command_line": self.command_line,
        }


class Placed(Protocol):
    """Where a teammate was just started: `swarm.backends.base.Spawned` is one."""

    @property
    def pane_id(self) -> str: ...
    @property
    def socket_name(self) -> str | None: ...
    @property
    def own_window(self) -> bool: ...


def placement(spawned: Placed) -> str:
    """Where a teammate was started, for `swarm spawn` and `swarm up`: ``pane %3``, a pane in a
    tmux window of its own (a split would have been too small), or a subprocess."""
    if not spawned.pane_id:
        return "a subprocess"
    if spawned.own_window:
        from swarm.backends.base import MIN_PANE_SIZE  # not for `swarm status`

        columns, lines = MIN_PANE_SIZE
        return (
            f"pane {spawned.pane_id}, in a tmux window of its own (a split pane would have been "
            f"smaller than {columns}x{lines})"
        )
    return f"pane {spawned.pane_id}"


def watch_hint(spawned: Placed) -> str:
    """`` (watch: tmux -L swarm-t attach -t %3)`` for a pane on a private tmux server (which a
    plain ``tmux ls`` does not list); "" for any other."""
    if not spawned.socket_name or not spawned.pane_id:
        return ""
    return f" (watch: {attach_line(spawned.socket_name, spawned.pane_id)})"


def attach_argv(socket: str | None, pane: str) -> list[str]:
    """``tmux -L SOCKET attach -t PANE``: a terminal attached to `pane`'s session, with that
    pane's window and the pane itself selected."""
    return ["tmux", *(["-L", socket] if socket else []), "attach", "-t", pane]


def attach_line(socket: str | None, pane: str) -> str:
    """`attach_argv` as a shell command line."""
    return shlex.join(attach_argv(socket, pane))


def pane_servers(team: str, members: Iterable[PaneMember]) -> list[PaneServer]:
    """The tmux servers of `team`'s live tmux members, in the order of their first member."""
    servers: dict[str | None, PaneServer] = {}
    for member in members:
        pane = member.pane
        if member.backend != "tmux" or not pane or not PANE_ID.fullmatch(pane):
            continue
        if member.state in GONE:
            continue
        socket = member.socket or None
        server = servers.get(socket)
        if server is None:
            if socket is None:
                command = ["swarm", "attach", member.name, "--team", team]
            else:
                command = attach_argv(socket, pane)
            servers[socket] = PaneServer(socket, [member.name], command)
        else:
            server.members.append(member.name)
    return list(servers.values())
