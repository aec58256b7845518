"""`swarm host ...`: serve this machine as a host of a PostgreSQL team (`swarm.hosts.agent`), and
list the team's hosts."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from protocols.names import validate_name
from protocols.printable import printable_line
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.team.host_requests import team_hosts


@click.group()
def host() -> None:
    """Hosts of a team on PostgreSQL: machines whose agent starts teammates on request."""


@host.command("serve")
@click.option("--name", "name", required=True, help="this host's name in the team")
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="the teammates' working directory when a spawn names none (default: here)",
)
@click.option(
    "--rescan",
    "rescan_s",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="seconds between looks at the requests without a notification (the safety net)",
)
@team_option
def serve(name: str, cwd: Path | None, rescan_s: float, team: str) -> None:
    """Serve as host NAME of the team: start and stop its teammates here when `swarm spawn
    --host NAME` (or `swarm shutdown`) asks, through the store; no port is opened. Its lease
    lasts $SWARM_LEASE_S seconds (default 30). SIGTERM or Ctrl-C stops its teammates (their
    tasks go back to the board) and ends it.

    \b
      swarm host serve --team shop --name build-box --store postgresql://db.example/swarm
    """
    paths = paths_for(team)
    team_hosts(paths, "swarm host serve")  # a team in files has no hosts: a clear error
    from swarm.hosts.agent import HostAgent  # psycopg: only now that the team is on PostgreSQL

    validate_name(name, "host name")

    def say(text: str) -> None:
        click.echo(printable_line(text), err=True)

    from swarm.schedule.scheduler import in_background

    agent = HostAgent(paths, name, (cwd or Path.cwd()).resolve(), say, rescan_s)
    # the schedules of this config root fire here too (each firing once: `swarm.schedule`)
    stores = [paths.store] if paths.store else []  # and the team's: its every host fires them
    with in_background(paths.root, "swarm host serve", lambda done: say(done.line()), stores):
        code = agent.serve()
    sys.exit(code)


@host.command("list")
@json_option
@team_option
def host_list(as_json: bool, team: str) -> None:
    """The team's hosts, alive or not (by lease), and where they run."""
    hosts = team_hosts(paths_for(team), "swarm host list").list()
    emit(
        [h.to_json() for h in hosts],
        as_json,
        lambda _: (
            "\n".join(
                printable_line(
                    f"{h.name}  {'alive' if h.alive else 'dead'}  "
                    f"{h.info.get('machine', '?')} pid {h.info.get('pid', '?')}"
                    + (f"  lease {h.lease_left_s:.0f} s" if h.alive and h.lease_left_s else "")
                )
                for h in hosts
            )
            or "no hosts (start one: swarm host serve --team TEAM --name NAME)"
        ),
    )
