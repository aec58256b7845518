"""`swarm.views.panes`: the tmux command that shows a team's panes, from member entries anyone
may have written (issue 38: a private tmux server is not in `tmux ls`)."""

from __future__ import annotations

import shlex
from typing import NamedTuple

from protocols.printable import printable_line
from swarm.cli.common import tasks_text
from swarm.views.panes import attach_line, pane_servers, placement, watch_hint


class Member(NamedTuple):
    name: str
    state: str
    backend: str | None
    pane: str | None
    socket: str | None


def test_members_are_grouped_by_their_server() -> None:
    members = [
        Member("ann", "idle", "tmux", "%3", "swarm-t"),
        Member("ben", "working", "tmux", "%4", "swarm-t"),
        Member("cal", "idle", "tmux", "%9", None),  # spawned from inside the user's tmux
        Member("dee", "idle", "subprocess", None, None),
    ]
    private, own = pane_servers("t", members)
    assert private.socket == "swarm-t" and private.members == ["ann", "ben"]
    assert private.command == ["tmux", "-L", "swarm-t", "attach", "-t", "%3"]
    assert private.command_line == "tmux -L swarm-t attach -t %3"
    assert "plain `tmux ls` does not list it" in private.line()
    assert own.socket is None and own.members == ["cal"]
    assert own.command == ["swarm", "attach", "cal", "--team", "t"]
    assert own.to_json()["command_line"] == "swarm attach cal --team t"


def test_gone_members_and_forged_panes_give_no_command() -> None:
    members = [
        Member("ann", "dead", "tmux", "%3", "swarm-t"),
        Member("ben", "stopped", "tmux", "%4", "swarm-t"),
        Member("cal", "idle", "tmux", "%5; run-shell 'touch x'", "swarm-t"),
        Member("dee", "idle", "tmux", "", "swarm-t"),
    ]
    assert pane_servers("t", members) == []


def test_a_hostile_socket_is_quoted_for_the_shell_and_escaped_for_the_terminal() -> None:
    socket = "s $(touch pwned) `id`;\n\x1b[31m"
    [server] = pane_servers("t", [Member("ann", "idle", "tmux", "%3", socket)])
    assert shlex.split(server.command_line) == ["tmux", "-L", socket, "attach", "-t", "%3"]
    shown = printable_line(server.line())
    assert "\x1b" not in shown and "\n" not in shown
    assert attach_line(socket, "%3") == server.command_line


def test_tasks_text() -> None:
    assert tasks_text([]) == "no tasks"
    assert tasks_text(["3"]) == "task #3"
    assert tasks_text(["3", "4"]) == "tasks #3, #4"


def test_where_a_teammate_was_started() -> None:
    from swarm.backends.base import Spawned

    private = Spawned("tmux", "%3", 42, "swarm-t")
    assert placement(private) == "pane %3"
    assert watch_hint(private) == " (watch: tmux -L swarm-t attach -t %3)"
    alone = Spawned("tmux", "%4", 43, None, own_window=True)
    assert placement(alone) == (
        "pane %4, in a tmux window of its own (a split pane would have been smaller than 40x8)"
    )
    assert watch_hint(alone) == ""  # in the user's own tmux: nothing to find
    assert placement(Spawned("subprocess", "", 44, None)) == "a subprocess"
