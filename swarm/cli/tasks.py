"""`swarm task ...`: the task board."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from protocols.printable import printable_line
from protocols.store.selection import open_store
from protocols.tasks.task import list_line, states
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.cli.completion import complete_member
from swarm.errors import SwarmError
from swarm.team.actions import (
    add_task,
    failed_by_of,
    show_lines,
    task_lines,
    unknown_takers,
    update_task,
)


@click.group()
def task() -> None:
    """Work with the team's task board."""


@task.command("add")
@click.argument("subject")
@click.option("--description", "-d", default="", help="what to do")
@click.option("--command", "-c", "command", help="a shell command for shell workers")
@click.option("--blocked-by", multiple=True, help="a task id that must complete first")
@click.option(
    "--worktree",
    metavar="NAME",
    help="work it in git worktree NAME (.claude/worktrees/NAME): whoever claims it works there",
)
@click.option(
    "--owner",
    shell_complete=complete_member,
    help="the member it is for (told with a task_assignment)",
)
@click.option(
    "--for",
    "for_",
    multiple=True,
    metavar="WHO",
    help="who may take it: shell (shell workers), claude (teammates with a model), a member's "
    "name or an agent type; repeat or comma-separate for several (default: shell for a task "
    "with --command, anyone otherwise)",
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    help="the directory its command runs in (default: the one you are in; on a PostgreSQL "
    "team, whose members may be on other machines, the worker's own)",
)
@json_option
@team_option
def task_add(
    subject: str,
    description: str,
    command: str | None,
    blocked_by: tuple[str, ...],
    worktree: str | None,
    owner: str | None,
    for_: tuple[str, ...],
    cwd: Path | None,
    as_json: bool,
    team: str,
) -> None:
    """Add a task; prints its id. With --blocked-by it is blocked from the moment it exists:
    no idle worker can take it before its blockers complete. Its command runs where you typed
    `swarm task add` (or --cwd), whichever worker takes it (on a PostgreSQL team, whose
    workers may be on other machines: in the worker's directory unless --cwd says one).

    \b
      swarm task add "build it" --command "make" --cwd ~/src/app
      swarm task add "review the diff" --for claude
      swarm task add "deploy" --command "make deploy" --for ann
    """
    paths = paths_for(team)
    if worktree is not None:
        from teammate.agent.worktree import WorktreeError, flatten_slug  # only for --worktree

        try:
            flatten_slug(worktree)
        except WorktreeError as exc:
            raise SwarmError(f"--worktree: {exc}") from None
    labels = [label.strip() for given in for_ for label in given.split(",") if label.strip()]
    # a team on PostgreSQL spans machines: a directory of this one is only said with --cwd
    where = (cwd or Path.cwd()).resolve() if cwd or paths.store is None else None
    if where is not None and not where.is_dir():
        raise SwarmError(f"--cwd {str(cwd)!r}: not a directory")
    created = add_task(
        paths, subject, description, command, blocked_by, worktree, owner, labels, where
    )
    emit(created, as_json, lambda _: created["id"])
    for warning in unknown_takers(paths, labels):
        click.echo(f"swarm: warning: {printable_line(warning)}", err=True)


@task.command("list")
@json_option
@team_option
def task_list(as_json: bool, team: str) -> None:
    """List tasks (Claude Code's TaskList format); with --json each task's file and its
    ``state``: pending, blocked, in_progress, failed or completed."""
    paths = paths_for(team)
    tasks = open_store(paths).task_board().list()
    word = states(tasks)
    emit(
        [{**t.to_json_dict(), "state": str(word[t.id])} for t in tasks],
        as_json,
        lambda _: "\n".join(task_lines(paths, tasks)) or "No tasks found",
    )


@task.command("show")
@click.argument("task_id")
@json_option
@team_option
def task_show(task_id: str, as_json: bool, team: str) -> None:
    """Show one task: its state (pending, blocked, in_progress, failed or completed), who may
    take it, where its command runs and, when it failed, why and its output's last lines."""
    board = open_store(paths_for(team)).task_board()
    task = board.require(task_id)
    state = states(board.list())[task.id] if task.blockedBy else states([task])[task.id]
    shown = {**task.to_json_dict(), "state": str(state)}
    emit(shown, as_json, lambda _: "\n".join(show_lines(task, state)))


@task.command("update")
@click.argument("task_id")
@click.option("--status", type=click.Choice(["pending", "in_progress", "completed", "deleted"]))
@click.option("--owner", shell_complete=complete_member, help="assign to a member")
@click.option("--no-owner", is_flag=True, help="clear the owner")
@click.option("--add-blocked-by", multiple=True, help="a task id that must complete first")
@json_option
@team_option
def task_update(
    task_id: str,
    status: str | None,
    owner: str | None,
    no_owner: bool,
    add_blocked_by: tuple[str, ...],
    as_json: bool,
    team: str,
) -> None:
    """Change a task's status, owner or dependencies."""
    if owner and no_owner:
        raise click.UsageError("--owner and --no-owner exclude each other")
    paths = paths_for(team)
    if owner:
        open_store(paths).team_file().load().require(owner)
    changes: dict[str, Any] = {}
    if status:
        changes["status"] = status
    if owner:
        changes["owner"] = owner
    if no_owner:
        changes["owner"] = None
    if add_blocked_by:
        changes["addBlockedBy"] = list(add_blocked_by)
    if not changes:
        raise click.UsageError(
            "nothing to change: give --status, --owner, --no-owner or --add-blocked-by"
        )
    updated = update_task(paths, task_id, changes)  # TaskCompleted hooks may refuse it
    if updated is None:
        emit({"id": task_id, "deleted": True}, as_json, lambda _: f"deleted task #{task_id}")
        return
    emit(updated.to_json_dict(), as_json, lambda _: printable_line(list_line(updated)))


@task.command("claim")
@click.argument("task_id")
@click.option(
    "--as", "agent", required=True, shell_complete=complete_member, help="the member who claims it"
)
@json_option
@team_option
def task_claim(task_id: str, agent: str, as_json: bool, team: str) -> None:
    """Claim a task for a member; on failure prints the reason word and exits 1 (with --json:
    ``{"claimed": false, "reason": ...}`` on stdout)."""
    paths = paths_for(team)
    open_store(paths).team_file().load().require(agent)
    result = open_store(paths).task_board().claim(task_id, agent)
    if not result.success or result.task is None:
        if as_json:
            emit({"id": task_id, "claimed": False, "reason": str(result.reason)}, True, str)
        else:
            click.echo(str(result.reason), err=True)
        sys.exit(1)
    claimed = result.task
    emit(
        {**claimed.to_json_dict(), "claimed": True},
        as_json,
        lambda _: printable_line(list_line(claimed)),
    )


@task.command("retry")
@click.argument("task_id")
@json_option
@team_option
def task_retry(task_id: str, as_json: bool, team: str) -> None:
    """Put a failed (or stuck) task back on the board: pending, no owner, its failure cleared;
    an idle worker claims it as usual, but not one that failed it before (give it to one by
    name with `swarm task update ID --owner NAME`). What waits for it stays blocked until it
    completes."""
    board = open_store(paths_for(team)).task_board()
    before = board.require(task_id)
    if before.status == "completed":
        raise SwarmError(f"task #{task_id} is completed; there is nothing to retry")
    after = board.retry(task_id)
    was = f" (it had failed: {printable_line(before.failure)})" if before.failed else ""
    lines = [f"{printable_line(list_line(after))}{was}"]
    if failed := failed_by_of(after):
        names = ", ".join(failed)
        lines.append(
            printable_line(
                f"{names} failed it before and will not take it again by itself; "
                f"`swarm task update {task_id} --owner NAME` gives it to one by name"
            )
        )
    emit(after.to_json_dict(), as_json, lambda _: "\n".join(lines))
