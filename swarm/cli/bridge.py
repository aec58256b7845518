"""`swarm bridge`: mirror a PostgreSQL team into this host's files for its Claude Code members
(`protocols.bridge`), once or until stopped."""

from __future__ import annotations

import signal
from typing import Any

import click

from protocols.errors import InvalidSetting
from swarm.cli.common import emit, json_option, paths_for, team_option


@click.command()
@click.option(
    "--member",
    "members",
    multiple=True,
    metavar="NAME",
    help="a member living on this host (a Claude Code lead or teammate); repeat for several",
)
@click.option(
    "--session",
    is_flag=True,
    help="mirror into the session team (session-<hex>) of the Claude Code lead running here "
    "(2.1.178 and later; --member team-lead), followed to its next session",
)
@click.option("--once", is_flag=True, help="make one pass and exit")
@click.option(
    "--rescan",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="seconds between passes when nothing wakes the bridge",
)
@json_option
@team_option
def bridge(
    members: tuple[str, ...], session: bool, once: bool, rescan: float, as_json: bool, team: str
) -> None:
    """Mirror a PostgreSQL team into this host's Claude Code files, both ways, until stopped.

    \b
    The roster goes into teams/TEAM/config.json, the tasks both ways with tasks/TEAM/, and
    the messages of each --member both ways with its inbox file; what a --member writes into
    anyone else's inbox file is carried to the store. Each message once, by its msg_id.
    With --session the files are those of the Claude Code lead session running here.
      swarm bridge --team shop --member cc-reviewer        # until Ctrl-C or SIGTERM
      swarm bridge --team shop --member cc-reviewer --once --json
      swarm bridge --team shop --member team-lead --session   # a Claude Code 2.1.330 lead
    """
    from protocols.bridge import Bridge, Passed
    from swarm.signal_relay import relayed

    if paths_for(team, must_exist=False).store is None:
        raise InvalidSetting(
            f"team {team!r} is not in PostgreSQL here; the bridge mirrors a PostgreSQL team: "
            "give --store URL (or $SWARM_STORE)"
        )
    paths = paths_for(team)
    the_bridge = Bridge(paths, members, rescan, session=session)

    def value(passed: Passed) -> dict[str, Any]:
        return {"messages": passed.messages, "tasks": passed.tasks, "roster": passed.roster}

    def text(v: dict[str, Any]) -> str:
        roster = ", the roster" if v["roster"] else ""
        return f"carried {v['messages']} message(s) or read mark(s), {v['tasks']} task(s){roster}"

    if once:
        emit(value(the_bridge.sync()), as_json, text)
        return

    def shown(passed: Passed) -> None:
        if passed.moved:
            emit(value(passed), as_json, text)

    with relayed({signal.SIGTERM, signal.SIGINT}, lambda _: the_bridge.stop()):
        the_bridge.run(on_pass=shown)
