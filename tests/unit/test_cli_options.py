"""Every `swarm` command that prints takes --json, and the commands that name a team take it as
every other command does (--team, -t, $SWARM_TEAM), the positional kept where there was one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from helpers import swarm

from swarm.cli.main import cli

# interactive (a console, a live dashboard) or a server: nothing to print as JSON
NO_JSON = {"host serve", "lead", "watch", "web"}  # servers and screens: they print as they run


def commands(
    group: click.Group, ctx: click.Context, prefix: str = ""
) -> Iterator[tuple[str, click.Command]]:
    """Every command of `group`, subcommands of its groups included, by its full name."""
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        full = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            yield from commands(command, click.Context(command, parent=ctx), full)
        else:
            yield full, command


def option_names(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) for o in p.opts}


def test_every_command_that_prints_takes_json() -> None:
    found = dict(commands(cli, click.Context(cli)))
    assert {"attach", "spawn", "shutdown", "restart", "up", "down", "send"} <= set(found)
    missing = sorted(n for n, c in found.items() if "--json" not in option_names(c))
    assert missing == sorted(NO_JSON), f"commands without --json: {missing}"


@pytest.mark.parametrize("command", [("down", "--wait", "0"), ("team", "show"), ("team", "delete")])
def test_team_commands_take_the_team_every_way(config_root: Path, command: tuple[str, ...]) -> None:
    def fresh() -> None:
        if not (config_root / "teams" / "t" / "config.json").exists():
            assert swarm("team", "create", "t", team=None).returncode == 0

    for how in (["t"], ["--team", "t"], ["-t", "t"], ["t", "--team", "t"]):
        fresh()
        result = swarm(*command, *how, "--json", team=None)
        assert result.returncode == 0, (how, result.stderr)
    fresh()
    assert swarm(*command, "--json", team="t").returncode == 0  # $SWARM_TEAM
    fresh()
    clash = swarm(*command, "t", "--team", "other", team=None)
    assert clash.returncode == 2
    assert "two different teams given: 't' and --team 'other'; give one" in clash.stderr
    assert (config_root / "teams" / "t" / "config.json").exists()  # nothing happened
    typed = swarm(*command, "nope", team="t")  # a typed name wins over $SWARM_TEAM
    assert typed.returncode == 1 and "team 'nope' not found" in typed.stderr
    none = swarm(*command, team=None)
    assert none.returncode == 2 and "no team given: pass --team NAME" in none.stderr
