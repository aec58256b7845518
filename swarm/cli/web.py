"""`swarm web`: the team in a browser (`swarm.web`)."""

from __future__ import annotations

from pathlib import Path

import click

from swarm.cli.common import paths_for, team_option


@click.command()
@team_option
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
    team: str, listen: str, tls_cert: Path | None, tls_key: Path | None, insecure: bool
) -> None:
    """Serve a live web page of the team that answers its requests (approve, deny, answer).

    \b
    Members, the board, the last messages and the requests waiting, with their content, updated
    as the team's files (or its PostgreSQL store) change. It prints the page's URL with a new
    token (and a read-only one for viewers); both are kept, mode 0600, in
    swarm/web/TEAM-PORT.json under the config root until the server stops.
      swarm web --team demo
      swarm web --team demo --listen 127.0.0.1:0
      swarm web --team demo --listen 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
    """
    from swarm.web.server import Tls, parse_address, serve  # starlette loads only for this

    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("give both --tls-cert and --tls-key, or neither")
    tls = Tls(tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
    serve(
        paths_for(team),
        parse_address(listen),
        tls,
        insecure,
        click.echo,
    )
