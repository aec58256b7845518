"""What `swarm attach NAME` opens: a tmux teammate's pane, or a subprocess teammate's log.

`attach_target` reads the member's entry and says where it is and what to run. For a tmux
teammate that is one ``tmux`` command line (its parts joined by ``;`` arguments, no shell):
select the pane's window and the pane, then either attach a terminal to its session
(``attach-session``, run from outside tmux, on the member's server: its private socket, which
``$SWARM_TMUX_SOCKET`` chose when it was spawned) or move the tmux client you are in to it
(``switch-client``, when you run it inside tmux on that same server). From inside tmux on
another server the attach is nested: ``$TMUX`` is cleared for it, as tmux requires. A
subprocess teammate's target is its output log, ``teams/<team>/logs/<name>.log``, which the
command follows until Ctrl-C.

A dead member (its process is gone) has nothing to attach to: the error says how to start it
again. A member of a PostgreSQL team whose last shipped log line came from another host
(`protocols.pg.member_log`) runs there: the error says so, and how to follow it from here
(``swarm logs NAME --follow``). A name that is not a member gets the members and the likely one.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.fs import safefs
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import MemberState
from swarm.errors import SwarmError
from swarm.team.liveness import is_mcp, member_state

if TYPE_CHECKING:
    from protocols.store.contract import StoreContract

PANE_ID = re.compile(r"%[0-9]+")


@dataclass(frozen=True)
class AttachTarget:
    name: str
    backend: str  # tmux | subprocess
    pane: str | None
    socket: str | None  # the member's private tmux server; None: the server $TMUX names
    log: Path | None
    how: str  # attach | switch-client | nested-attach | follow-log
    command: list[str]  # for tmux: what runs; for a log: the swarm command that follows it
    clear_tmux: bool  # run `command` with $TMUX unset (a nested attach)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": self.backend,
            "pane": self.pane,
            "socket": self.socket,
            "log": str(self.log) if self.log is not None else None,
            "how": self.how,
            "command": self.command,
            "command_line": shlex.join(self.command),  # the same, for a shell
        }


def attach_target(paths: TeamPaths, name: str, environ: Mapping[str, str]) -> AttachTarget:
    """Where member `name` can be watched, and how, seen from a process with `environ`."""
    store = open_store(paths)
    config = store.team_file().load()
    if name == LEAD_NAME:
        raise SwarmError(
            f"{LEAD_NAME!r} is the lead, not a teammate: it has no pane or log of swarm's; "
            "attach to a teammate (`swarm status` lists them)"
        )
    member = config.require(name)
    if is_mcp(member):
        raise SwarmError(
            f"{name!r} is an MCP session: it runs in its MCP client, with no pane or log of "
            f"its own; `swarm logs {name}` shows what it did"
        )
    _not_elsewhere(store, paths.team, name)
    state = member_state(member)
    if state == MemberState.STOPPED:
        raise SwarmError(
            f"{name!r} is stopped (swarm stop), so there is nothing to attach to; start the team "
            f"again with `swarm start`, or see what it did with `swarm logs {name}`"
        )
    if state == MemberState.DEAD:
        raise SwarmError(
            f"{name!r} is dead (its process is gone), so there is nothing to attach to; start "
            f"it again with `swarm restart {name}` (add --resume to keep a Claude teammate's "
            "conversation), or see what it did with `swarm logs " + name + "`"
        )
    extra = member.model_extra or {}
    pane = member.tmuxPaneId
    if member.backendType == "tmux" and pane:
        if not PANE_ID.fullmatch(pane):
            raise SwarmError(f"{name!r} records tmux pane {pane!r}, which is not a pane id (%N)")
        socket = extra.get("tmuxSocket")
        return _tmux_target(name, pane, socket if isinstance(socket, str) else None, environ)
    log = paths.log(name)
    if member.backendType == "subprocess" or safefs.exists(log):
        command = ["swarm", "logs", name, "--process", "--follow", "--team", paths.team]
        return AttachTarget(name, "subprocess", None, None, log, "follow-log", command, False)
    raise SwarmError(
        f"{name!r} has no tmux pane and no process log to attach to (backend "
        f"{member.backendType or 'unknown'}); `swarm logs {name}` shows what it did"
    )


def _not_elsewhere(store: StoreContract, team: str, name: str) -> None:
    """`SwarmError` when `name` runs on another host (as its last log line in a PostgreSQL
    store says): its pane and log are there; here its shipped log can be followed."""
    found = store.member_host(name)
    here = socket.gethostname()
    if found is None or found[0] == here:
        return
    host, pid = found
    raise SwarmError(
        f"{name!r} runs on another host, {host!r} (pid {pid}), not on this one ({here!r}): "
        "its pane or log is there. Follow what it does from here with "
        f"`{shlex.join(['swarm', 'logs', name, '--follow', '--team', team])}`, or attach on "
        f"{host}"
    )


def _tmux_target(
    name: str, pane: str, socket: str | None, environ: Mapping[str, str]
) -> AttachTarget:
    server = ["tmux", "-L", socket] if socket else ["tmux"]
    select = ["select-window", "-t", pane, ";", "select-pane", "-t", pane, ";"]
    inside = bool(environ.get("TMUX"))
    if inside and (socket is None or _same_server(socket, environ)):
        command = [*server, *select, "switch-client", "-t", pane]
        return AttachTarget(name, "tmux", pane, socket, None, "switch-client", command, False)
    command = [*server, *select, "attach-session", "-t", pane]
    how = "nested-attach" if inside else "attach"
    return AttachTarget(name, "tmux", pane, socket, None, how, command, inside)


def _same_server(socket: str, environ: Mapping[str, str]) -> bool:
    """Whether ``tmux -L socket`` is the server ``$TMUX`` (the one we run inside) names."""
    inside = environ.get("TMUX", "").split(",", 1)[0]
    folder = environ.get("TMUX_TMPDIR") or "/tmp"
    path = os.path.join(folder, f"tmux-{os.getuid()}", socket)
    return bool(inside) and os.path.realpath(inside) == os.path.realpath(path)
