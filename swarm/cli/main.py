"""The `swarm` command: parse, call the library, print. Every command that prints takes ``--json``.

Errors raised on purpose (`protocols.errors.Error`, the root of every package's errors) and
from the file system (`OSError`: a full disk, a read-only or foreign config root) are printed as
one line on stderr with exit code 1; ``swarm --debug ...`` shows the traceback instead.
"""

from __future__ import annotations

import errno
import importlib
import sys

import click

from protocols.errors import Error
from protocols.printable import printable

# each command's module is imported only when that command runs (or --help lists them all),
# so `swarm send` does not load the lead, libtmux or rich
COMMANDS = {
    "approve": "swarm.cli.approvals:approve",
    "attach": "swarm.cli.attach:attach",
    "config": "swarm.cli.config:config",
    "deny": "swarm.cli.approvals:deny",
    "doctor": "swarm.cli.doctor:doctor",
    "down": "swarm.cli.up:down",
    "hooks": "swarm.cli.hooks:hooks",
    "inbox": "swarm.cli.messages:inbox",
    "lead": "swarm.cli.lead:lead",
    "logs": "swarm.cli.logs:logs",
    "mcp": "swarm.cli.mcp:mcp",
    "permissions": "swarm.cli.approvals:permissions",
    "reap": "swarm.cli.status:reap",
    "restart": "swarm.cli.lifecycle:restart",
    "send": "swarm.cli.messages:send",
    "shutdown": "swarm.cli.lifecycle:shutdown",
    "spawn": "swarm.cli.lifecycle:spawn",
    "status": "swarm.cli.status:status",
    "task": "swarm.cli.tasks:task",
    "team": "swarm.cli.teams:team",
    "up": "swarm.cli.up:up",
    "wait": "swarm.cli.wait:wait",
    "watch": "swarm.cli.watch:watch",
    "worktree": "swarm.cli.worktree:worktree",
}


class LazyGroup(click.Group):
    """A group whose commands are imported when first asked for (click's documented pattern
    for lazily loaded subcommands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = COMMANDS[cmd_name].split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command), COMMANDS[cmd_name]
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="show tracebacks")
@click.version_option(package_name="swarm", message="swarm %(version)s")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Run a team of agents as processes that talk through files.

    \b
    Files live under $CLAUDE_CONFIG_DIR (default ~/.claude), in Claude Code's
    agent-team format. Typical session:
      swarm team create demo
      export SWARM_TEAM=demo
      swarm task add "say hello" --command "echo hello"
      swarm status
    """
    ctx.obj = {"debug": debug}


def main(argv: list[str] | None = None) -> int:
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name="swarm", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo("aborted", err=True)
        return 1
    except Error as exc:
        if debug:
            raise
        click.echo(f"swarm: error: {printable(str(exc))}", err=True)
        return 1
    except OSError as exc:  # the file system said no: a full disk, a read-only root, rights
        if debug:
            raise
        click.echo(f"swarm: error: {printable(os_error_text(exc))}", err=True)
        return 1
    return 0


def os_error_text(exc: OSError) -> str:
    """One line for a failed file operation: what failed, where, and what can be done."""
    where = f": {exc.filename}" if exc.filename else ""
    what = exc.strerror or str(exc)
    hint = {
        errno.ENOSPC: "free some space and try again; nothing was half written",
        errno.EDQUOT: "the disk quota is used up; free some space and try again",
        errno.EROFS: "the config root is on a read-only file system; set CLAUDE_CONFIG_DIR to a "
        "writable directory",
        errno.EACCES: "no permission; check the owner and mode of the config root "
        "(CLAUDE_CONFIG_DIR)",
        errno.EPERM: "not permitted; check the owner and mode of the config root "
        "(CLAUDE_CONFIG_DIR)",
    }.get(exc.errno or 0, "")
    return f"{what}{where}" + (f" ({hint})" if hint else "")
