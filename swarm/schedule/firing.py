"""What a schedule does when it fires, done so that doing it twice for one firing does it once:
a scheduler that died part way leaves the firing unsettled, and the next one does it again.

- ``task``: the task is added with the firing in its metadata (``swarmSchedule``: the schedule's
  id and the instant due); a task of the board that has it already is that firing's.
- ``send``: the message's id is made from the firing, and a mailbox stores a message id once.
- ``up``: `swarm up FILE`, or `swarm up --resume FILE` when its team exists: either way the
  file's team runs afterwards, and its tasks are on the board once.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

from protocols.paths import TeamPaths
from protocols.store.selection import locate, open_store
from swarm.schedule.model import Schedule

MARK = "swarmSchedule"  # a scheduled task's metadata key: "<schedule id>@<due, ISO>"


def firing_key(schedule: Schedule, due: datetime) -> str:
    return f"{schedule.id}@{due.isoformat()}"


def fire(schedule: Schedule, due: datetime, root: Path, store: str | None = None) -> str:
    """Do what `schedule` says for its firing due at `due` (its team on `store`, else found
    under `root`); a line saying what was done. Raises what the action raises (a team that is
    gone, a member unknown, a bad team file)."""
    key = firing_key(schedule, due)
    if schedule.action == "up":
        return _up(Path(schedule.file), root)
    paths = locate(schedule.team, root, store)
    if schedule.action == "send":
        return _send(paths, schedule, key, due)
    return _task(paths, schedule, key)


def _task(paths: TeamPaths, schedule: Schedule, key: str) -> str:
    from swarm.team.actions import add_task

    board = open_store(paths).task_board()
    for task in board.list():
        if (task.metadata or {}).get(MARK) == key:
            return f"task #{task.id} was added already"
    created = add_task(
        paths,
        schedule.subject,
        schedule.description,
        command=schedule.command,
        takers=schedule.takers,
        cwd=Path(schedule.cwd) if schedule.cwd and schedule.command else None,
        marks={MARK: key},
    )
    return f"added task #{created['id']}"


def _send(paths: TeamPaths, schedule: Schedule, key: str, due: datetime) -> str:
    from swarm.team.sending import send_text

    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    message_id = f"msg-{int(due.timestamp() * 1000)}-{digest}"
    sent, _ = send_text(paths, schedule.to, schedule.text, message_id=message_id)
    return f"sent to {', '.join(sent)}"


def _up(file: Path, root: Path) -> str:
    from swarm.up.apply import bring_up, plan_up
    from swarm.up.resume import resume_up
    from swarm.up.spec import load_team_file

    plan = plan_up(load_team_file(file))
    if open_store(locate(plan.team, root, plan.store)).team_exists():
        resumed = resume_up(plan, root=root)
        started = sum(m.outcome != "running" for m in resumed.members)
        added = sum(t.created for t in resumed.tasks)
        return f"team {plan.team!r} was up: {started} members started again, {added} tasks added"
    bring_up(plan, root=root)
    return f"team {plan.team!r} is up: {len(plan.members)} members, {len(plan.tasks)} tasks"
