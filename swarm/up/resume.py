"""`swarm up --resume`: bring a team back from its team file after a reboot or a crash.

The team exists; its files say what was going on. `resume_up` compares them with the plan
(`swarm.up.apply.plan_up`) and only fills the gaps:

- **Tasks.** A task of the file is on the board already when a board task has the same subject,
  description, command and worktree (`task_key`); each board task stands for one task of the
  file, in file order, so two equal tasks in the file match two on the board. Matched tasks are
  left as they are (a completed one is never run again); the others are created, blocked by the
  tasks they wait for, whether new or already on the board.
- **Members.** One whose process runs (working, idle, or still starting) is left alone. A dead
  one is started again with the options its entry records (``swarmSpec``), with its
  conversation when it has one to carry on with (a Claude teammate's transcript), and it keeps
  its tasks: what it held in progress stays its own, so the new instance claims it again and
  runs it once (`teammate.board_watch`). Whatever the dead instance left running is stopped
  first, so a task never runs twice at once. A member of the file that the team does not have
  (reaped, or never started) is spawned as `swarm up` would.

Members of the team that the file does not name are not touched.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.fs import safefs
from protocols.fs.jsonio import write_json
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import locate, open_store
from protocols.tasks.board import NewTask
from protocols.tasks.model import Task
from protocols.team.model import Member
from protocols.values import ModelKind
from swarm.backends import Spawned
from swarm.team.lifecycle import spawn_member
from swarm.team.members import clear_keeping_tasks, member_pid, member_spec, member_state
from swarm.team.resume import RESTART_PROMPT, RESUME_PROMPT, conversation_length
from swarm.team.signatures import lead_mailbox
from swarm.up.apply import (
    LEAD_SETTINGS,
    MemberPlan,
    TaskPlan,
    UpError,
    UpPlan,
    check_members,
    spawn_planned,
    task_line,
)
from teammate.options import MemberSpec

TaskKey = tuple[str, str, str | None, str | None]


@dataclass(frozen=True)
class Revival:
    """What `resume_up` did with one member of the file."""

    name: str
    outcome: str  # running | restarted | resumed (with its conversation) | spawned
    pid: int | None
    held: list[str]  # the unfinished tasks it owns, which it takes up again
    spawned: Spawned | None  # None when it was left running

    def to_json(self) -> dict[str, Any]:
        where = self.spawned
        return {
            "name": self.name,
            "outcome": self.outcome,
            "pid": self.pid,
            "backend": where.backend_type if where else None,
            "pane": (where.pane_id or None) if where else None,
            "socket": where.socket_name if where else None,
            "tasks": self.held,
        }


@dataclass(frozen=True)
class PlacedTask:
    """A task of the file and the board task it is: found there, or created now."""

    id: str
    subject: str
    created: bool
    status: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Resumed:
    team: str
    members: list[Revival]
    tasks: list[PlacedTask]

    def to_json(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "resumed": True,
            "members": [m.to_json() for m in self.members],
            "tasks": [t.to_json() for t in self.tasks],
        }


def task_key(subject: str, description: str, metadata: Mapping[str, Any] | None) -> TaskKey:
    """What makes a board task the same as a task of the team file."""
    meta = metadata or {}
    command, worktree = meta.get("command"), meta.get("worktree")
    return (
        subject,
        description,
        command if isinstance(command, str) else None,
        worktree if isinstance(worktree, str) else None,
    )


def match_tasks(planned: tuple[TaskPlan, ...], board: list[Task]) -> list[Task | None]:
    """For each task of the file, the board task that is it (None: not on the board); a board
    task is matched once, the lowest id first."""
    free: dict[TaskKey, list[Task]] = {}
    for task in sorted(board, key=lambda t: int(t.id) if t.id.isdigit() else 0):
        free.setdefault(task_key(task.subject, task.description, task.metadata), []).append(task)
    found: list[Task | None] = []
    for plan in planned:
        same = free.get(task_key(plan.subject, plan.description, plan.metadata), [])
        found.append(same.pop(0) if same else None)
    return found


def resume_up(
    plan: UpPlan,
    *,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Resumed:
    """Bring the existing team of `plan` back (module doc); `say` gets one line per task and
    per member."""
    paths = locate(plan.team, root, plan.store)
    if not open_store(paths).team_exists():
        raise UpError(
            f"team {plan.team!r} does not exist at {paths.team_dir}, so there is nothing to "
            f"resume; start it with `swarm up {plan.source or 'FILE'}` (without --resume)"
        )
    check_members(plan, os.environ if env is None else env, root)
    placed = _place_tasks(paths, plan, say)
    if plan.lead is not None and not safefs.exists(paths.team_dir / LEAD_SETTINGS):
        write_json(paths.team_dir / LEAD_SETTINGS, plan.lead)
    members = [_revive(paths, m, env, say) for m in plan.members]
    return Resumed(plan.team, members, placed)


def _place_tasks(paths: TeamPaths, plan: UpPlan, say: Callable[[str], None]) -> list[PlacedTask]:
    board = open_store(paths).task_board()
    found = match_tasks(plan.tasks, board.list())
    missing = [i for i, task in enumerate(found) if task is None]
    batch = {index: n for n, index in enumerate(missing)}  # file index -> index in the batch
    specs = []
    for i in missing:
        t = plan.tasks[i]
        existing = tuple(found[j].id for j in t.blocked_by if found[j] is not None)  # type: ignore[union-attr]
        after = tuple(batch[j] for j in t.blocked_by if j in batch)
        specs.append(
            NewTask(
                t.subject,
                t.description,
                metadata=t.metadata,
                blocked_by=existing,
                after=after,
                owner=t.owner,
            )
        )
    created = board.create_many(specs) if specs else []
    placed: list[PlacedTask] = []
    for i, task in enumerate(found):
        if task is not None:
            placed.append(PlacedTask(task.id, task.subject, False, str(task.status)))
            say(f"task #{task.id}: {task.subject} (on the board already: {task.status})")
            continue
        new = created[batch[i]]
        placed.append(PlacedTask(new.id, new.subject, True, str(new.status)))
        line = task_line(new.id, new.subject, new.blockedBy, new.owner, new.metadata)
        say(f"{line} (added)")
    return placed


def _revive(
    paths: TeamPaths, plan: MemberPlan, env: Mapping[str, str] | None, say: Callable[[str], None]
) -> Revival:
    member = open_store(paths).team_file().load().member(plan.name)
    held = _held(paths, plan.name)
    if member is not None and not member_state(member).gone:
        pid = member_pid(member)
        say(f"{plan.name}: running{f' (pid {pid})' if pid else ''}; left alone")
        return Revival(plan.name, "running", pid, held, None)
    if member is None:  # reaped, or never started: as `swarm up` starts it
        resume = can_resume(paths, plan.name, plan.spec)
        planned = dataclasses.replace(plan, prompt=RESUME_PROMPT) if resume else plan
        _, spawned = spawn_planned(
            paths, dataclasses.replace(planned, spec=_resuming(plan.spec, resume)), env
        )
        say(f"{plan.name}: was not in the team; spawned{_where(spawned)}")
        return Revival(plan.name, "resumed" if resume else "spawned", spawned.pid, held, spawned)
    spec = member_spec(member) or plan.spec
    resume = can_resume(paths, plan.name, spec)
    first = RESUME_PROMPT if resume else _first_message(paths, member, plan)
    clear_keeping_tasks(paths, member)
    _, spawned = spawn_member(paths, plan.name, first, _resuming(spec, resume), env=env)
    how = "with its conversation" if resume else "fresh"
    tasks = f"; takes up {', '.join('#' + i for i in held)} again" if held else ""
    say(f"{plan.name}: was dead; restarted {how}{_where(spawned)}{tasks}")
    return Revival(plan.name, "resumed" if resume else "restarted", spawned.pid, held, spawned)


def can_resume(paths: TeamPaths, name: str, spec: MemberSpec) -> bool:
    """Whether `name` starts again with its conversation: swarm's own Claude teammate with a
    transcript that holds one (a shell worker has none)."""
    if spec.kind == ModelKind.SHELL or spec.teammate_command is not None:
        return False
    return conversation_length(paths, name) > 0


def _resuming(spec: MemberSpec, resume: bool) -> MemberSpec:
    return dataclasses.replace(spec, resume=resume)


def _held(paths: TeamPaths, name: str) -> list[str]:
    return [t.id for t in open_store(paths).task_board().list() if t.owner == name and t.unfinished]


def _first_message(paths: TeamPaths, member: Member, plan: MemberPlan) -> str:
    """Its first instructions again, unless they still wait unread in its inbox (then a note
    that it was restarted, so nothing is there twice)."""
    prompt = member.prompt or plan.prompt
    waiting = lead_mailbox(paths).read_unread(member.name)
    if any(e.from_ == LEAD_NAME and e.text == prompt for e in waiting):
        return RESTART_PROMPT
    return prompt


def _where(spawned: Spawned) -> str:
    where = f"tmux pane {spawned.pane_id}" if spawned.pane_id else "a subprocess"
    return f" in {where}, pid {spawned.pid}"
