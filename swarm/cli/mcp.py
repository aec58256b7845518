"""`swarm mcp`: serve a team as an MCP server, over stdio as one member or over streamable HTTP
for many (`swarm.mcp_server`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from swarm.cli.common import backend_option, paths_for, team_option
from swarm.mcp_server.session import ServerOptions

LOOPBACK_ANY_PORT = "127.0.0.1:0"


@click.command()
@team_option
@click.option(
    "--name",
    help="serve over stdio as this member (joined as an MCP member if it is not one yet; "
    "team-lead acts as the lead)",
)
@click.option(
    "--http",
    "http_addr",
    is_flag=False,
    flag_value=LOOPBACK_ANY_PORT,
    metavar="ADDR",
    help=f"serve streamable HTTP on HOST:PORT instead (--http alone: {LOOPBACK_ANY_PORT}, a "
    "free port); prints the URL; each session names itself with the join tool",
)
@click.option(
    "--token",
    envvar="SWARM_MCP_TOKEN",
    help="bearer token HTTP clients must send; required off loopback (default: "
    "$SWARM_MCP_TOKEN, the better way: an option's value shows in ps)",
)
@backend_option("where the lead's SpawnTeammate starts teammates")
@click.option(
    "--teammate-model",
    default="sonnet",
    show_default=True,
    help="model of the teammates SpawnTeammate starts when the call names none",
)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="where spawned teammates work and task hooks are found (default: here)",
)
@click.option("--json", "as_json", is_flag=True, help="with --http: print the URL as JSON")
def mcp(
    team: str,
    name: str | None,
    http_addr: str | None,
    token: str | None,
    backend: str,
    teammate_model: str,
    cwd: Path | None,
    as_json: bool,
) -> None:
    """Serve the team as an MCP server: SendMessage, TaskCreate, TaskList, TaskGet and
    TaskUpdate (Claude Code's team tools), ReadInbox, TaskClaim, TeamStatus, and for the lead
    ListRequests, AnswerRequest, SpawnTeammate and ShutdownTeammate. The member is in the team
    while its session is open (backendType "mcp" in swarm status); when the session ends its
    unfinished tasks go back to the board.

    \b
    Claude Code as member cc of team shop, through an .mcp.json:
      {"mcpServers": {"swarm": {"command": "swarm",
        "args": ["mcp", "--team", "shop", "--name", "cc"]}}}
      claude --mcp-config .mcp.json --allowedTools 'mcp__swarm__*' \\
        -p "Take a task from the board with TaskList and TaskClaim, do it, then
            mark it completed with TaskUpdate"

    \b
    Over HTTP, for several clients (each calls join with its name first):
      swarm mcp --team shop --http 127.0.0.1:8765
      claude mcp add --transport http swarm http://127.0.0.1:8765/mcp
    """
    # the mcp SDK takes about a second to import: only when serving, not for `swarm --help`
    from swarm.mcp_server.transports import parse_address, serve_http, serve_stdio

    options = ServerOptions(
        paths=paths_for(team),
        cwd=(cwd or Path.cwd()).resolve(),
        backend=backend,
        teammate_model=teammate_model,
        http=http_addr is not None,
    )
    if http_addr is None:
        if not name:
            raise click.UsageError("give the member to serve with --name, or serve HTTP (--http)")
        serve_stdio(options, name)
        return
    if name:
        raise click.UsageError("--name is for stdio; over --http each session calls join")

    def announce(url: str) -> None:
        line = json.dumps({"url": url, "team": team, "pid": os.getpid()}) if as_json else url
        click.echo(line)

    serve_http(options, parse_address(http_addr), token, announce)
