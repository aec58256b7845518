"""`swarm up TEAM_FILE` and `swarm down TEAM`: a whole team from a YAML team file, and back;
`swarm up --resume TEAM_FILE`: the same team again after a reboot or a crash; `swarm stop
TEAM` and `swarm start TEAM`: every member stopped with the files kept, and started again."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from protocols.errors import Error
from protocols.paths import TeamPaths
from protocols.printable import printable_json, printable_line
from swarm.backends.base import BACKEND_KINDS
from swarm.cli.common import (
    emit,
    json_option,
    paths_for,
    pick_team,
    require_team,
    say_waiting,
    team_argument,
)
from swarm.team.lifecycle import ShutdownResult
from swarm.team.restart import start_team
from swarm.team.stopping import departure_text, leftovers, stop_team
from swarm.team.unreachable import StoreOutOfReach, down_without_store, reach, stopped_text
from swarm.up.apply import (
    DOWN_WAIT_S,
    Departure,
    UpPlan,
    bring_down,
    bring_up,
    plan_up,
    task_line,
    team_json,
)
from swarm.up.argument import team_of_argument
from swarm.up.resume import resume_up
from swarm.up.spec import load_team_file


@click.command()
@click.argument("team_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--backend",
    type=click.Choice(BACKEND_KINDS),
    help="start every member with this backend, whatever the file says",
)
@click.option("--dry-run", is_flag=True, help="check the file and print the plan; start nothing")
@click.option(
    "--resume",
    is_flag=True,
    help="the team exists (after a reboot or a crash): restart its dead members with their "
    "tasks and conversations, add the file's tasks not on the board; leave the rest",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="print JSON: the plan with --dry-run, else the members and tasks (progress goes to "
    "stderr)",
)
def up(team_file: Path, backend: str | None, dry_run: bool, resume: bool, as_json: bool) -> None:
    """Start the team in TEAM_FILE: create it, start its members together, then add its tasks.

    \b
    A team file (YAML; relative paths are relative to its folder):
      team: shop
      defaults: {model: shell}
      members:
        - {name: ann, prompt: Work the board.}
        - {name: ben, prompt: Work the board.}
      tasks:
        - {key: data, subject: make the data, command: "seq 10 > n.txt"}
        - {subject: add it up, command: "awk '{s+=$1} END {print s}' n.txt",
           blocked_by: [data]}
    Members also take agent_type, model (shell, scripted, sonnet, opus, haiku,
    a model id), script, max_turns, max_cost (USD), max_tokens and max_time (2h,
    30m: a budget), plan_mode_required, permission_mode, allow/deny/ask (permission
    rules such as "Bash(npm test:*)"), mcp_servers ({name: {command, args} or
    {type: http, url}}, as in .mcp.json) and cwd; tasks take description, key,
    blocked_by (keys or 1-based positions) and owner. A top-level budget:
    {max_cost, max_tokens, max_time} is each member's unless it sets its own (a
    default, not a cap on the team's total); its team_max_cost, team_max_tokens
    and team_max_time (from when the team is up) cap the team's total (swarm team
    budget).
    See examples/teams/ for complete files.

    \b
    With --resume the team exists already (after a reboot, kill -9 or tmux
    kill-server): dead members start again with the options they were
    spawned with and their conversation (Claude teammates), and take up the
    tasks they held; live members are left alone. A task of the file with the
    subject, description and command of one on the board is not added again.

    \b
    Example:
      swarm up examples/teams/shell-pipeline.yaml --dry-run
      swarm up examples/teams/shell-pipeline.yaml
      swarm status --team pipeline
      swarm up examples/teams/shell-pipeline.yaml --resume
      swarm down pipeline
    """
    if dry_run and resume:
        raise click.UsageError("--dry-run prints the plan of a new team: it goes without --resume")
    plan = plan_up(load_team_file(team_file), backend=backend)
    if dry_run:
        if as_json:
            click.echo(printable_json(plan.to_json(), indent=2))
        else:
            click.echo("\n".join(plan_lines(plan)))
        return

    def say(line: str) -> None:
        click.echo(printable_line(line), err=as_json)

    if resume:
        resumed = resume_up(plan, say=say)
        if as_json:
            click.echo(printable_json(resumed.to_json(), indent=2))
            return
        counts = Counter(m.outcome for m in resumed.members)
        added = sum(t.created for t in resumed.tasks)
        click.echo(
            f"team {plan.team!r} is back: {counts['running']} running, "
            f"{counts['restarted'] + counts['resumed'] + counts['spawned']} started again; "
            f"{added} tasks added, {len(resumed.tasks) - added} on the board already"
        )
        return
    paths = bring_up(plan, say=say)
    if as_json:
        click.echo(printable_json(team_json(paths), indent=2))
        return
    click.echo(
        f"team {plan.team!r} is up: {len(plan.members)} members, {len(plan.tasks)} tasks. "
        f"Watch: swarm status --team {plan.team}; stop: swarm down {plan.team}"
    )


def _wait_option(default: float, what: str) -> Any:
    return click.option(
        "--wait",
        "wait_s",
        type=click.FloatRange(min=0),
        default=default,
        show_default=True,
        help=f"seconds the members have to answer before those still running are {what}",
    )


@click.command()
@_wait_option(DOWN_WAIT_S, "stopped anyway")
@json_option
@team_argument
def down(name: str | None, team: str | None, wait_s: float, as_json: bool) -> None:
    """Shut team TEAM down and delete its files (teams/TEAM and tasks/TEAM); TEAM defaults
    to --team, else $SWARM_TEAM. TEAM may be the team file `swarm up` started it from.

    Every live member is asked to shut down (the shutdown protocol: it finishes its current
    step and releases its tasks); one that refuses or does not answer within --wait seconds is
    stopped anyway. Who is still awaited is shown as it goes. Ctrl-C stops waiting at once
    (exit 130) and deletes nothing: run `swarm down` again to finish. To stop the members and
    keep the files, use `swarm stop`.

    \b
    Example:
      swarm down pipeline --wait 5
      swarm down examples/teams/shell-pipeline.yaml
    """
    team = pick_team(team_of_argument(name) if name else None, team)
    paths = paths_for(team, must_exist=False)
    if not leftovers(paths):  # not even the remains of a deletion cut short: no such team
        paths = _reachable(team, paths, "swarm down", as_json)
    departures = bring_down(paths, wait_s, progress=say_waiting)
    emit(
        {"team": team, "deleted": True, "members": [dataclasses.asdict(d) for d in departures]},
        as_json,
        lambda _: "\n".join(
            [departure_line(d, wait_s) for d in departures] + [f"deleted team {team!r}"]
        ),
    )


@click.command()
@_wait_option(DOWN_WAIT_S, "stopped anyway")
@json_option
@team_argument
def stop(name: str | None, team: str | None, wait_s: float, as_json: bool) -> None:
    """Stop every member of team TEAM and keep its files: the board, the inboxes, the
    conversations; each member's tasks stay its own. `swarm start` starts them again; `swarm
    down` deletes the team.

    Members are asked to shut down (the shutdown protocol); one that refuses or does not
    answer within --wait seconds is stopped anyway. Ctrl-C stops waiting at once (exit 130):
    run `swarm stop` again to finish.

    \b
    Example:
      swarm stop pipeline && swarm start pipeline
    """
    team = pick_team(team_of_argument(name) if name else None, team)
    paths = _reachable(team, paths_for(team, must_exist=False), "swarm stop", as_json)
    results = stop_team(paths, wait_s, progress=say_waiting)
    emit(
        {"team": team, "members": [_result_json(name, r) for name, r in results]},
        as_json,
        lambda _: "\n".join(
            [departure_text(name, r, wait_s) for name, r in results]
            + [f"team {team!r} is stopped: `swarm start {team}` starts it again"]
        ),
    )


@click.command()
@json_option
@team_argument
def start(name: str | None, team: str | None, as_json: bool) -> None:
    """Start the members of team TEAM that `swarm stop` stopped, all at once, with the options
    each was spawned with (a Claude teammate with its conversation); each carries on with the
    tasks it held.

    \b
    Example:
      swarm start pipeline
    """
    team = pick_team(team_of_argument(name) if name else None, team)
    started = start_team(paths_for(team))
    failed = [s for s in started if s.error]
    emit(
        {"team": team, "members": [dataclasses.asdict(s) for s in started]},
        as_json,
        lambda _: "\n".join(
            [printable_line(s.line()) for s in started]
            or [f"no member of team {team!r} is stopped: nothing to start"]
        ),
    )
    if failed:
        sys.exit(1)


def _reachable(team: str, paths: TeamPaths, command: str, as_json: bool) -> TeamPaths:
    """`paths_for(team)` once its store answers; when the store is out of reach, every member
    running on this machine is stopped (nothing is deleted or changed in the store) and the
    command exits 1: run it again once the store is back."""
    try:
        reach(paths, lambda: require_team(paths), "finding the team")
        return paths
    except StoreOutOfReach as exc:
        click.echo(printable_line(f"{exc}; stopping its members on this machine"), err=True)
        stopped = down_without_store(paths)
        emit(
            {
                "team": team,
                "storeUnreachable": True,
                "reason": str(exc),
                "stoppedHere": [dataclasses.asdict(s) for s in stopped],
            },
            as_json,
            lambda _: "\n".join(
                [printable_line(stopped_text(s)) for s in stopped]
                + [f"no member of team {team!r} runs on this machine"] * (not stopped)
                + [
                    f"{command}: nothing else done: the team's members, tasks and files stay "
                    f"in its store; run {command} again once it answers"
                ]
            ),
        )
        sys.exit(1)


def _result_json(name: str, result: ShutdownResult | Error) -> dict[str, Any]:
    if isinstance(result, Error):
        return {"name": name, "outcome": "error", "reason": str(result)}
    return {"name": name, "outcome": result.outcome, "reason": result.reason}


def departure_line(departure: Departure, wait_s: float) -> str:
    outcome, why = departure.outcome, f": {departure.detail}" if departure.detail else ""
    text = {
        "approved": "agreed to shut down; stopped",
        "rejected": f"refused to shut down{why}; stopped",
        "no-answer": f"did not answer within {wait_s:g} s; stopped",
        "dead": "had already stopped; removed",
        "stopped": "was stopped (swarm stop); removed",
        "starting": "had not started; removed",
    }.get(outcome, f"{outcome}{why}")
    return printable_line(f"{departure.name}: {text}")


def plan_lines(plan: UpPlan) -> list[str]:
    lines = [
        f"team {plan.team!r}: {plan.description or ''}".rstrip(),
        f"  from {plan.source}, lead cwd {plan.cwd}",
        "  (dry run: nothing was started)",
    ]
    for m in plan.members:
        spec = m.spec
        mode = f", {spec.permission_mode} mode" if spec.permission_mode else ""
        plan_first = ", plan first" if spec.plan_mode_required else ""
        lines.append(
            f"member {m.name}: {spec.agent_type}, model {spec.model}, backend {spec.backend}"
            f"{mode}{plan_first}, cwd {spec.cwd}"
        )
        if spec.script is not None:
            lines.append(f"  script: {spec.script}")
        for behavior, rules in (m.settings or {}).get("permissions", {}).items():
            if rules:
                lines.append(f"  {behavior}: {', '.join(rules)}")
        prompt = " ".join(m.prompt.split())
        lines.append(f"  prompt: {prompt if len(prompt) <= 80 else prompt[:77] + '...'}")
    for number, t in enumerate(plan.tasks, 1):
        after = [str(i + 1) for i in t.blocked_by]
        lines.append(task_line(str(number), t.subject, after, t.owner, t.metadata))
        if t.metadata and t.metadata.get("command"):
            lines.append(f"  command: {t.metadata['command']}")
    if plan.lead is not None:
        lines.append(f"lead: {json.dumps(plan.lead, ensure_ascii=False)}")
    return lines
