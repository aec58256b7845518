"""`swarm web`: the team in a browser (`swarm.web`)."""

from __future__ import annotations

from pathlib import Path

import click

from protocols.paths import config_root
from swarm.cli.common import given_store, paths_for, store_option
from swarm.cli.completion import complete_team


@click.command()
@click.option(
    "--team",
    "-t",
    envvar="SWARM_TEAM",
    shell_complete=complete_team,
    help="the team (default: $SWARM_TEAM; without either, every team under the config root, "
    "picked on the page)",
)
@store_option
@click.option(
    "--listen",
    default="127.0.0.1:8765",
    show_default=True,
    metavar="HOST:PORT",
    help="where to serve (port 0 picks a free one); off loopback needs --tls-cert and "
    "--tls-key, or --insecure",
)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="serve HTTPS with this certificate (PEM)")  # fmt: skip
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="the private key of --tls-cert (PEM)")  # fmt: skip
@click.option("--insecure", is_flag=True, help="serve plain HTTP off loopback (a trusted network)")
def web(
    team: str | None, listen: str, tls_cert: Path | None, tls_key: Path | None, insecure: bool
) -> None:
    """Serve a live web page of the team that answers its requests (approve, deny, answer).

    \b
    Members, the board, the messages and the requests waiting, with their content, updated
    as the team's files (or its PostgreSQL store) change; from the page, send messages, add
    tasks, stop members, read a member's messages and log, follow the team's cost. Without
    --team (and $SWARM_TEAM) it serves every team under the config root, picked on the page.
    It prints the page's URL with a new token (and a read-only one for viewers); both are
    kept, mode 0600, in swarm/web/TEAM-PORT.json (_teams-PORT.json for every team) under the
    config root until the server stops.
      swarm web --team demo
      swarm web --listen 127.0.0.1:0
      swarm web --team demo --listen 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
    """
    from swarm.web.server import Tls, parse_address, serve  # starlette loads only for this
    from swarm.web.teams import Teams

    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("give both --tls-cert and --tls-key, or neither")
    tls = Tls(tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
    if team:
        paths = paths_for(team)
        teams = Teams(paths.root, paths)
    elif given_store() is not None:
        raise click.UsageError("--store needs --team: every team is served from files only")
    else:
        teams = Teams(config_root())
    serve(teams, parse_address(listen), tls, insecure, click.echo)
