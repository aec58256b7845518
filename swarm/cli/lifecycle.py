"""`swarm spawn` and `swarm shutdown`: start a teammate process; ask it to stop (the shutdown
protocol), or stop it with --force."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import click

from protocols.durations import BadDuration, parse_duration
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store.selection import open_store
from protocols.team.model import Member
from protocols.values import PermissionMode
from swarm.backends.base import Spawned
from swarm.cli.common import (
    backend_option,
    emit,
    ids_text,
    json_option,
    paths_for,
    require_team,
    team_option,
)
from swarm.cli.completion import complete_member
from swarm.team.lifecycle import request_shutdown, spawn_member
from swarm.team.liveness import member_host
from swarm.team.restart import restart_member
from swarm.team.resume import RESUME_PROMPT
from swarm.team.unreachable import StoreOutOfReach, reach, shutdown_without_store
from swarm.views.panes import placement, watch_hint
from teammate.options import MemberSpec

# how `swarm shutdown` and `swarm restart` stop a teammate
wait_option = click.option(
    "--wait",
    "wait_s",
    type=float,
    default=30.0,
    show_default=True,
    help="seconds to wait for its answer to the shutdown request",
)
force_option = click.option(
    "--force", is_flag=True, help="stop it even if it refuses or does not answer"
)


@click.command()
@click.argument("name")
@click.option(
    "--prompt",
    "-p",
    help="the first message in its inbox (required, except with --resume: then it says the "
    "teammate was restarted)",
)
@click.option(
    "--resume",
    is_flag=True,
    help="carry on with the conversation NAME's last instance had (a Claude teammate's "
    "transcript) instead of starting cold; a dead entry for NAME is reaped first; with "
    "--host, the host NAME ran on resumes it from its transcript there",
)
@backend_option("auto: tmux when installed, else a subprocess")
@click.option(
    "--model",
    default="shell",
    show_default=True,
    help="'shell' runs task commands offline; 'sonnet', 'opus', 'haiku' or a model id runs a "
    "Claude agent (needs ANTHROPIC_API_KEY)",
)
@click.option(
    "--script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="play this YAML list of model turns instead of calling a model (offline)",
)
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    help="model calls per piece of work (default: no cap; budgets are the guard)",
)
@click.option(
    "--max-cost",
    type=float,
    metavar="USD",
    help="its budget in USD (its sub-agents' calls count): the lead hears at 80%; at 100% it "
    "stops making model calls until `swarm budget NAME +USD` raises it",
)
@click.option(
    "--max-tokens",
    type=int,
    metavar="N",
    help="its budget in tokens (input, output and cache), kept as --max-cost is",
)
@click.option(
    "--max-time",
    metavar="DURATION",
    help="how long it may run (90s, 30m, 2h, 1h30m), kept as --max-cost is: past it, no more "
    "model calls until `swarm budget NAME --time +30m`",
)
@click.option(
    "--worktree",
    "worktree",
    is_flag=True,
    help="work in its own git worktree (.claude/worktrees/NAME, branch worktree-NAME); removed "
    "when it stops unchanged, kept and reported when changed",
)
@click.option("--worktree-name", help="name the worktree (default: NAME); a/b becomes a+b")
@click.option(
    "--agent-type",
    default="general-purpose",
    show_default=True,
    help="an agent definition: built-in (general-purpose, Explore, Plan) or a .md file in "
    ".claude/agents/ (project) or ~/.claude/agents/ (user)",
)
@click.option("--plan-mode-required", is_flag=True)
@click.option("--permission-mode", type=click.Choice(PermissionMode.names()))
@click.option(
    "--ask",
    "ask",
    multiple=True,
    metavar="RULE",
    help="a permission rule that needs your approval, e.g. 'Bash(make deploy)' or a command "
    "pattern 'git push*' (repeatable; for a shell worker it replaces the default list)",
)
@click.option(
    "--settings",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="a Claude Code settings JSON whose permissions (allow/deny/ask rules, defaultMode) "
    "apply to the teammate, a shell worker included",
)
@click.option(
    "--mcp-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='MCP servers for the teammate ({"mcpServers": {...}}, as .mcp.json), over those of '
    "the project's .mcp.json and settings files",
)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="its working directory (default: here)",
)
@click.option(
    "--teammate-command",
    envvar="SWARM_TEAMMATE_COMMAND",
    metavar="CMD",
    help="start CMD instead of swarm's teammate, with Claude Code's teammate command line: "
    "'claude' runs a Claude Code teammate (default: $SWARM_TEAMMATE_COMMAND)",
)
@click.option(
    "--host",
    metavar="HOST",
    help="start it on that host of a team on PostgreSQL (`swarm host serve` there) instead of "
    "here; --cwd and file options are paths on that host",
)
@json_option
@team_option
def spawn(
    name: str,
    prompt: str | None,
    resume: bool,
    backend: str,
    model: str,
    script: Path | None,
    max_turns: int | None,
    max_cost: float | None,
    max_tokens: int | None,
    max_time: str | None,
    worktree: bool,
    worktree_name: str | None,
    agent_type: str,
    plan_mode_required: bool,
    permission_mode: str | None,
    ask: tuple[str, ...],
    settings: Path | None,
    mcp_config: Path | None,
    cwd: Path | None,
    teammate_command: str | None,
    host: str | None,
    as_json: bool,
    team: str,
) -> None:
    """Start teammate NAME in a tmux pane or a subprocess.

    \b
    Outside tmux, panes go to a private tmux server per team (plain
    `tmux ls` does not list it; swarm status prints the command):
      tmux -L swarm-<team> attach
    Inside tmux, a teammate splits your window; when its pane would be
    smaller than 40x8 it gets a window of its own in your session.
    Subprocess teammates log to teams/<team>/logs/<name>.log.

    \b
    A Claude Code teammate in the same team (docs/interop.md):
      swarm spawn ann -p "Review src/" --model sonnet --teammate-command claude

    \b
    After a crash, carry on with its conversation:
      swarm spawn bea --model sonnet --resume

    \b
    On another machine of a team on PostgreSQL (its `swarm host serve --name build-box`):
      swarm spawn cid --host build-box -p "Run the test suite"
    """
    if prompt is None and not resume:
        raise click.UsageError("give the teammate its first message with --prompt")
    spec = MemberSpec(
        model=model,
        agent_type=agent_type,
        permission_mode=PermissionMode(permission_mode) if permission_mode else None,
        plan_mode_required=plan_mode_required,
        script=str(script) if script else None,
        max_turns=max_turns,
        max_cost=max_cost,
        max_tokens=max_tokens,
        max_time=_duration("--max-time", max_time),
        settings=str(settings) if settings else None,
        mcp_config=str(mcp_config) if mcp_config else None,
        ask=ask,
        backend=backend,
        cwd=str(cwd) if cwd else None,
        worktree=(worktree_name or name) if worktree or worktree_name else None,
        teammate_command=teammate_command,
        resume=resume,
    )
    if host is not None:
        spawn_there(team, host, name, prompt, spec, as_json)
        return
    member, spawned = spawn_member(paths_for(team), name, prompt or RESUME_PROMPT, spec)
    emit(
        started_json(member, spawned, resumed=resume),
        as_json,
        lambda _: printable_line(
            f"spawned {name} ({member.color}) in {placement(spawned)}, pid {spawned.pid}"
            f"{watch_hint(spawned)}"
        ),
    )


def spawn_there(
    team: str, host: str, name: str, prompt: str | None, spec: MemberSpec, as_json: bool
) -> None:
    """`swarm spawn --host`: the host's answer (`swarm.team.host_requests.spawn_on_host`)."""
    from swarm.team.host_requests import spawn_on_host

    paths = paths_for(team)

    def absolute(path: str | None) -> str | None:  # the same path on both machines
        inline = path is not None and path.lstrip().startswith("{")  # --mcp-config's JSON
        return str(Path(path).resolve()) if path is not None and not inline else path

    spec = dataclasses.replace(
        spec,
        cwd=absolute(spec.cwd),
        script=absolute(spec.script),
        settings=absolute(spec.settings),
        mcp_config=absolute(spec.mcp_config),
    )
    click.echo(printable_line(f"asked host {host} to spawn {name}"), err=True)
    request = spawn_on_host(
        paths,
        host,
        name,
        prompt or RESUME_PROMPT,
        spec,
        progress=lambda text: click.echo(text, err=True),
    )
    done = request.outcome or {}
    how = ", with its conversation" if spec.resume else ""
    emit(
        {"name": name, "request": request.id, **done, "resumed": spec.resume},
        as_json,
        lambda _: printable_line(
            f"spawned {name} ({done.get('color')}) on host {host} "
            f"({done.get('machine')}), {done.get('backend')}, pid {done.get('pid')}{how}"
        ),
    )


def started_json(member: Member, spawned: Spawned, resumed: bool) -> dict[str, Any]:
    """What `swarm spawn --json` and `swarm restart --json` print: where the teammate runs
    (``host``: the host that runs it, None for this machine)."""
    return {
        "name": member.name,
        "host": member_host(member),
        "color": member.color,
        "backend": spawned.backend_type,
        "pid": spawned.pid,
        "pane": spawned.pane_id or None,
        "socket": spawned.socket_name,
        "own_window": spawned.own_window,
        "resumed": resumed,
    }


@click.command()
@click.argument("name", shell_complete=complete_member)
@click.option("--reason", help="told to the teammate")
@wait_option
@force_option
@json_option
@team_option
def shutdown(
    name: str, reason: str | None, wait_s: float, force: bool, as_json: bool, team: str
) -> None:
    """Ask teammate NAME to shut down; remove it and return its tasks once it has stopped.
    Exits 1 when it is still running (it refused, or did not answer in time)."""
    paths = paths_for(team, must_exist=False)
    if name == LEAD_NAME:
        raise click.UsageError("team-lead is the lead, not a teammate: `swarm down` ends a team")
    try:  # a misspelt name asks nobody; a store out of reach is said in seconds
        reach(paths, lambda: _require_member(paths, name), "reading the team")
    except StoreOutOfReach as exc:
        if not force:
            raise StoreOutOfReach(
                f"{exc}: nobody can be asked to shut down. --force stops {name}'s process if it "
                "runs on this machine (its tasks go back to pending when its lease runs out)"
            ) from exc
        result = shutdown_without_store(paths, name)
    else:
        click.echo(
            printable_line(f"asked {name} to shut down; waiting up to {wait_s:g} s for the answer"),
            err=True,
        )
        result = request_shutdown(paths, name, reason, wait_s, force)
    if as_json:
        emit(dataclasses.asdict(result), True, str)
        sys.exit(0 if result.stopped else 1)
    if result.stopped:
        click.echo(
            f"{name}: {result.outcome}; stopped and removed; "
            f"tasks returned to pending: {ids_text(result.released)}"
        )
        return
    hint = "" if force else " (use --force to stop it anyway)"
    click.echo(f"{name}: {result.outcome}: {printable_line(result.reason)}{hint}", err=True)
    sys.exit(1)


def _require_member(paths: TeamPaths, name: str) -> None:
    """`TeamNotFound`, or an unknown member's error (did you mean...), unless the store has
    the team and `name` in it. Run on a thread of its own (`reach`): `paths` has the store."""
    require_team(paths)
    open_store(paths).team_file().load().require(name)


@click.command()
@click.argument("name", shell_complete=complete_member)
@click.option("--resume", is_flag=True, help="carry on with its conversation (Claude teammates)")
@click.option("--prompt", "-p", help="its first message (default: the one it was spawned with)")
@wait_option
@force_option
@json_option
@team_option
def restart(
    name: str,
    resume: bool,
    prompt: str | None,
    wait_s: float,
    force: bool,
    as_json: bool,
    team: str,
) -> None:
    """Stop teammate NAME and start it again with the options it was spawned with (model,
    agent type, permissions, worktree, backend...). The tasks it was working on stay its own:
    the new instance carries on with them. A dead or stopped member is simply started again.
    A member on a host is started again there, by its `swarm host serve`.

    \b
      swarm restart bea --resume     # same options, same conversation
    """
    member, spawned = restart_member(
        paths_for(team), name, resume=resume, prompt=prompt, wait_s=wait_s, force=force
    )
    how = "with its conversation" if resume else "fresh"
    host = member_host(member)
    where = f" on host {host}" if host else ""
    emit(
        started_json(member, spawned, resumed=resume),
        as_json,
        lambda _: printable_line(
            f"restarted {name} ({member.color}){where}, {how}, pid {spawned.pid}"
        ),
    )


def _duration(option: str, text: str | None) -> float | None:
    """`text` in seconds (`protocols.durations`); a bad one is a usage error naming `option`."""
    if text is None:
        return None
    try:
        return parse_duration(text)
    except BadDuration as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
