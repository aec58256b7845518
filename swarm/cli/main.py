"""The `swarm` command: parse, call the library, print. Every command that prints takes ``--json``.

Errors raised on purpose (`protocols.errors.Error`, the root of every package's errors) and
from the file system (`OSError`: a full disk, a read-only or foreign config root) are printed as
one line on stderr with exit code 1; ``swarm --debug ...`` shows the traceback instead.
"""

from __future__ import annotations

import importlib
import sys

import click

from protocols.collector import no_last_collection
from protocols.errors import Error
from protocols.printable import printable
from swarm import __version__
from swarm.cli.exits import INTERRUPTED, os_error_text

# each command's module is imported only when that command runs, so `swarm send` does not load
# the lead, libtmux or rich; `swarm --help` lists them from the one-line summaries kept here
# (tests/unit/test_cli_catalogue.py checks each against its command's own help)
COMMANDS: dict[str, tuple[str, str]] = {
    "attach": (
        "swarm.cli.attach:attach",
        (
            "Watch teammate NAME: select its tmux pane and attach this terminal to it (inside "
            "tmux, switch your client to it), or follow a subprocess teammate's log until "
            "Ctrl-C."
        ),
    ),
    "answer": (
        "swarm.cli.approvals:answer_cmd",
        "Answer a teammate's questions (AskUserQuestion): one ANSWER per question, in order.",
    ),
    "approve": (
        "swarm.cli.approvals:approve",
        "Approve a pending request (permission, sandbox host, or plan).",
    ),
    "bridge": (
        "swarm.cli.bridge:bridge",
        "Mirror a PostgreSQL team into this host's Claude Code files, both ways, until stopped.",
    ),
    "budget": (
        "swarm.cli.budget:budget",
        (
            "Show teammate NAME's spend and limits, or change them: +USD raises its cost limit "
            "by USD, =USD sets it."
        ),
    ),
    "compact": (
        "swarm.cli.compact:compact",
        (
            "Ask teammate NAME to compact its conversation: replace it by a summary it writes, "
            "keeping its task, its team and what it was doing (INSTRUCTIONS: what the summary "
            "must keep)."
        ),
    ),
    "config": (
        "swarm.cli.config:config",
        (
            "Where each setting a member uses comes from: the settings files (user, project, "
            "local, --settings) with their permission rules, default mode, env keys, hooks, "
            "MCP servers and agents; the CLAUDE.md files; the skills; its memory directory."
        ),
    ),
    "deny": (
        "swarm.cli.approvals:deny",
        "Deny a pending request (REQUEST_ID: the id, or a unique prefix or ending of it).",
    ),
    "doctor": (
        "swarm.cli.doctor:doctor",
        (
            "Check what a team needs here: tmux, inotify limits, a writable config root, an "
            "API key, Claude Code, and the project's MCP servers (found, never started)."
        ),
    ),
    "down": (
        "swarm.cli.up:down",
        (
            "Shut team TEAM down and delete its files (teams/TEAM and tasks/TEAM); TEAM "
            "defaults to --team, else $SWARM_TEAM."
        ),
    ),
    "hooks": (
        "swarm.cli.hooks:hooks",
        "List the hooks in force: event, matcher, timeout, command and the file each came from.",
    ),
    "host": (
        "swarm.cli.hosts:host",
        "Hosts of a team on PostgreSQL: machines whose agent starts teammates on request.",
    ),
    "inbox": (
        "swarm.cli.messages:inbox",
        "Show every message member NAME was sent, oldest first, read or not.",
    ),
    "lead": (
        "swarm.cli.lead:lead",
        "Lead the team given by --team from this terminal (--create makes it if it is new).",
    ),
    "logs": (
        "swarm.cli.logs:logs",
        (
            "Show what member NAME did, oldest first: tool calls and results, what the model "
            "said, tokens per reply, and messages in and out."
        ),
    ),
    "mcp": (
        "swarm.cli.mcp:mcp",
        (
            "Serve the team as an MCP server: SendMessage, TaskCreate, TaskList, TaskGet and "
            "TaskUpdate (Claude Code's team tools), ReadInbox, TaskClaim, TeamStatus, and for"
            " the lead ListRequests, AnswerRequest, SpawnTeammate and ShutdownTeammate."
        ),
    ),
    "permissions": (
        "swarm.cli.approvals:permissions",
        "List requests waiting for an answer (permission, sandbox, plan approval, questions).",
    ),
    "reap": (
        "swarm.cli.status:reap",
        "Remove members whose process is gone; their unfinished tasks go back to pending.",
    ),
    "restart": (
        "swarm.cli.lifecycle:restart",
        (
            "Stop teammate NAME and start it again with the options it was spawned with "
            "(model, agent type, permissions, worktree, backend...)."
        ),
    ),
    "schedule": (
        "swarm.cli.schedule:schedule",
        "Scheduled runs: add a task, send a message or bring a team up on a cron schedule.",
    ),
    "scheduler": (
        "swarm.cli.schedule:scheduler",
        (
            "Fire the schedules of this config root as they come due, until Ctrl-C or "
            "SIGTERM; each firing prints a line."
        ),
    ),
    "send": (
        "swarm.cli.messages:send",
        'Send TEXT to member TO (or "*" for everyone but the sender).',
    ),
    "shutdown": (
        "swarm.cli.lifecycle:shutdown",
        "Ask teammate NAME to shut down; remove it and return its tasks once it has stopped.",
    ),
    "spawn": (
        "swarm.cli.lifecycle:spawn",
        "Start teammate NAME in a tmux pane or a subprocess.",
    ),
    "start": (
        "swarm.cli.up:start",
        (
            "Start the members of team TEAM that `swarm stop` stopped, all at once, with the "
            "options each was spawned with (a Claude teammate with its conversation); each "
            "carries on with the tasks it held."
        ),
    ),
    "status": (
        "swarm.cli.status:status",
        (
            "Members (working/idle/dead), their tasks, model calls and tokens, task counts "
            "and pending requests."
        ),
    ),
    "stop": (
        "swarm.cli.up:stop",
        (
            "Stop every member of team TEAM and keep its files: the board, the inboxes, the "
            "conversations; each member's tasks stay its own."
        ),
    ),
    "task": (
        "swarm.cli.tasks:task",
        "Work with the team's task board.",
    ),
    "team": (
        "swarm.cli.teams:team",
        "Create, list, show and delete teams; the team's budget; prune a team's history.",
    ),
    "up": (
        "swarm.cli.up:up",
        "Start the team in TEAM_FILE: create it, start its members together, then add its tasks.",
    ),
    "wait": (
        "swarm.cli.wait:wait",
        "Wait for one thing to happen in the team, without polling (inotify wakes it).",
    ),
    "watch": (
        "swarm.cli.watch:watch",
        "The team at a glance, redrawn whenever its files change.",
    ),
    "web": (
        "swarm.cli.web:web",
        "Serve a live web page of the team that answers its requests (approve, deny, answer).",
    ),
    "worktree": (
        "swarm.cli.worktree:worktree",
        "Teammates' git worktrees (.claude/worktrees/<name>, branch worktree-<name>).",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when first asked for (click's documented pattern
    for lazily loaded subcommands); its help lists them from `COMMANDS` without importing."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = COMMANDS[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command), COMMANDS[cmd_name]
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                summary = _cut(COMMANDS[name][1], limit)
            else:
                command = super().get_command(ctx, name)
                summary = command.get_short_help_str(limit) if command else ""
            rows.append((name, summary))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _cut(summary: str, limit: int) -> str:
    """`summary` cut at a word to fit `limit` columns, ending in "..." as click cuts them."""
    if len(summary) <= limit:
        return summary
    words = summary[: max(0, limit - 3) + 1].split(" ")
    return " ".join(words[:-1] if len(words) > 1 else words) + "..."


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="show tracebacks")
@click.option(
    "--store",
    metavar="URL",
    expose_value=False,
    callback=lambda ctx, param, value: _remember_store(ctx, value),
    help="the team's PostgreSQL store, for any command (as each command's --store)",
)
@click.version_option(__version__, message="swarm %(version)s")
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
    if ctx.invoked_subcommand != "doctor":  # doctor reports it among its checks
        from protocols.paths import check_root, config_root

        check_root(config_root())  # a file there: said plainly, not as an errno later


def _remember_store(ctx: click.Context, value: str | None) -> None:
    if value is not None:  # imported only then: `swarm --help` loads no command's helpers
        from swarm.cli.common import STORE_KEY, check_url

        ctx.meta[STORE_KEY] = check_url(value)


def main(argv: list[str] | None = None) -> int:
    no_last_collection()
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name="swarm", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort as exc:  # Ctrl-C (or end of input) at a prompt or a wait
        interrupted = isinstance(exc.__context__, KeyboardInterrupt)
        click.echo("interrupted" if interrupted else "aborted", err=True)
        return INTERRUPTED if interrupted else 1
    except KeyboardInterrupt:  # after the command ran: while its output was printed
        click.echo("interrupted", err=True)
        return INTERRUPTED
    except Error as exc:
        if debug:
            raise
        click.echo(f"swarm: error: {printable(str(exc))}", err=True)
        return getattr(exc, "exit_code", 1)
    except OSError as exc:  # the file system said no: a full disk, a read-only root, rights
        if debug:
            raise
        click.echo(f"swarm: error: {printable(os_error_text(exc))}", err=True)
        return 1
    return 0
