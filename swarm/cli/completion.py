"""Shell completion of what only the team's files know: team names, member names and the ids of
requests waiting for an answer (commands and options complete through click itself).

Install it once per shell (docs/cli.md)::

    eval "$(_SWARM_COMPLETE=bash_source swarm)"    # bash, in ~/.bashrc
    eval "$(_SWARM_COMPLETE=zsh_source swarm)"     # zsh, in ~/.zshrc
    _SWARM_COMPLETE=fish_source swarm | source     # fish

Each function reads the files under the config root and never writes; a team that cannot be
read completes nothing rather than failing the shell.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from protocols.errors import Error
from protocols.fs import safefs
from protocols.paths import TeamPaths, config_root

if TYPE_CHECKING:  # click loads it when the shell asks (every command imports this module)
    from click.shell_completion import CompletionItem


def complete_team(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The teams under the config root whose name starts with what was typed."""
    try:
        teams = safefs.listdir(config_root() / "teams")
    except (OSError, Error):
        return []
    return sorted(t for t in teams if t.startswith(incomplete) and not t.startswith("."))


def _team_of(ctx: click.Context) -> str | None:
    """The team the command line names so far (``--team``), else ``$SWARM_TEAM``."""
    while ctx is not None:
        team = ctx.params.get("team")
        if isinstance(team, str) and team:
            return team
        ctx = ctx.parent  # type: ignore[assignment]
    return os.environ.get("SWARM_TEAM") or None


def member_names(ctx: click.Context) -> list[str]:
    team = _team_of(ctx)
    if team is None:
        return []
    from protocols.store.selection import locate, open_store

    try:
        return open_store(locate(team)).team_file().member_names()
    except (OSError, Error, ValueError):
        return []


def complete_member(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The members of the team given so far whose name starts with what was typed."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(n) for n in member_names(ctx) if n.startswith(incomplete)]


def complete_recipient(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """A member, or ``*`` (everyone but the sender)."""
    from click.shell_completion import CompletionItem

    items = complete_member(ctx, param, incomplete)
    return items + ([CompletionItem("*", help="everyone")] if "*".startswith(incomplete) else [])


def complete_request(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The ids of requests waiting for the lead, each with who asks and for what."""
    from click.shell_completion import CompletionItem

    team = _team_of(ctx)
    if team is None:
        return []
    from swarm.team.approvals import pending_requests
    from swarm.team.request_text import ask_line

    try:
        waiting = pending_requests(TeamPaths(config_root(), team))
    except (OSError, Error, ValueError):
        return []
    return [
        CompletionItem(p.id, help=f"{p.asker}: {ask_line(p)}")
        for p in waiting
        if p.id.startswith(incomplete)
    ]
