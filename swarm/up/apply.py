"""`swarm up` and `swarm down`: a whole team from a team file, and back to nothing.

`plan_up` turns a loaded `TeamSpec` into an `UpPlan` and only computes (as honcho turns a
Procfile into process parameters before anything runs): each member's concrete spawn parameters
(defaults applied, paths absolute, its ``--settings`` JSON), the tasks with their dependencies
as indexes, the lead's settings. `bring_up` carries a plan out: the team, the settings files
(``teams/<team>/settings/<name>.json``, ``teams/<team>/swarm-lead.json``), one process per
member, all started together, then the tasks (so the first member up does not take every task
before the others have joined: the team claims them as a team); if any step fails, everything
made so far is stopped and deleted.
`bring_down` asks every live member to shut down (the shutdown protocol, stopping whoever does
not go within the wait), then deletes the team's files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.clock import now_iso
from protocols.errors import Error
from protocols.fs import safefs
from protocols.fs.jsonio import write_json
from protocols.member.budget import TeamBudgetFile, update_team_budget
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths, config_root
from protocols.printable import printable_line
from protocols.store.selection import check_url, locate, open_store, redacted, write_pointer
from protocols.tasks.board import NewTask
from protocols.tasks.task import for_text
from protocols.team.model import Member
from protocols.values import ModelKind, PermissionMode
from swarm.backends import Spawned, choose_backend
from swarm.errors import SwarmError
from swarm.team.budget import check_priced
from swarm.team.lifecycle import START_WAIT_S, await_start, check_model, spawn_member
from swarm.team.members import member_state, stop_member
from swarm.team.stopping import (
    delete_team,
    leftovers,
    live_names,
    remove_team_files,
    stop_together,
)
from swarm.up.spec import TaskSpec, TeamSpec, resolve_blocked_by
from swarm.views.panes import placement, watch_hint
from teammate.config.definitions import load_agent
from teammate.options import MemberSpec

LEAD_SETTINGS = "swarm-lead.json"
MAX_PARALLEL_WAITS = 32  # members `swarm up` waits for at once (threads that only wait)
DOWN_REASON = "the team is going down (swarm down)"
DOWN_WAIT_S = 10.0  # how long `swarm down` waits for the members' answers


class UpError(SwarmError):
    """`swarm up` refused to start, or could not; the message says why and what to do."""


@dataclass(frozen=True)
class MemberPlan:
    name: str
    prompt: str
    spec: MemberSpec  # its settings file is filled in as it is written, at spawn
    settings: dict[str, Any] | None  # the --settings JSON; None when the member has no rules


@dataclass(frozen=True)
class TaskPlan:
    subject: str
    description: str
    metadata: dict[str, Any] | None  # {"command": ...} for shell workers
    blocked_by: tuple[int, ...]  # 0-based indexes into UpPlan.tasks
    owner: str | None


@dataclass(frozen=True)
class UpPlan:
    team: str
    description: str | None
    cwd: Path  # the lead's working directory
    source: Path | None
    members: tuple[MemberPlan, ...]
    tasks: tuple[TaskPlan, ...]
    lead: dict[str, Any] | None  # swarm-lead.json; None when the file has no lead section
    store: str | None = None  # the team file's `store:` URL; None: files (or $SWARM_STORE)
    team_budget: dict[str, Any] | None = None  # team-budget.json's limits; None: no team limit

    def to_json(self) -> dict[str, Any]:
        value = _jsonable(dataclasses.asdict(self))
        store = value.pop("store")
        if store is not None:
            value["store"] = redacted(store)
        for member in value["members"]:  # a member's spec fields beside its name and prompt
            member.update(member.pop("spec"))
        return value


@dataclass(frozen=True)
class Departure:
    """What happened to one member on `swarm down`."""

    name: str
    outcome: str  # approved | rejected | no-answer | dead | stopped | starting | error
    detail: str  # the reason of a refusal, or the error


def plan_up(spec: TeamSpec, backend: str | None = None) -> UpPlan:
    """Resolve defaults and paths; `backend` (the command line's) overrides the file's."""
    defaults = spec.defaults
    base = spec.source.parent if spec.source is not None else Path.cwd()
    team_cwd = Path(defaults.cwd) if defaults.cwd else base
    members = []
    for m in spec.members:
        max_cost, max_tokens, max_time = spec.limits_of(m)
        rules = {behavior: list(getattr(m, behavior)) for behavior in ("allow", "deny", "ask")}
        mode = m.permission_mode or defaults.permission_mode
        member_spec = MemberSpec(
            model=spec.model_of(m),
            agent_type=m.agent_type or "general-purpose",
            permission_mode=PermissionMode(mode) if mode else None,
            plan_mode_required=m.plan_mode_required,
            script=m.script,
            max_turns=m.max_turns,
            max_cost=max_cost,
            max_tokens=max_tokens,
            max_time=max_time,
            backend=backend or m.backend or defaults.backend or "auto",
            cwd=m.cwd or str(team_cwd),
            worktree=m.name if m.isolation == "worktree" else None,
        )
        settings: dict[str, Any] | None = {"permissions": rules} if any(rules.values()) else None
        if m.mcp_servers:  # the teammate reads them from its --settings file (teammate.mcp)
            settings = {**(settings or {}), "mcpServers": m.mcp_servers}
        members.append(MemberPlan(m.name, m.prompt, member_spec, settings))
    tasks = tuple(
        TaskPlan(
            subject=t.subject,
            description=t.description,
            metadata=_task_metadata(t),
            blocked_by=tuple(after),
            owner=t.owner,
        )
        for t, after in zip(spec.tasks, resolve_blocked_by(spec.tasks), strict=True)
    )
    lead: dict[str, Any] | None = None
    if spec.lead is not None:
        model = {"model": spec.lead.model} if spec.lead.model else {}
        lead = {**model, "autoApprove": spec.lead.auto_approve, "autoDeny": spec.lead.auto_deny}
        for key, value in (("maxCostUsd", spec.lead.max_cost), ("maxTokens", spec.lead.max_tokens)):
            if value is not None:
                lead[key] = value
    store = check_url(spec.store, where="store:") if spec.store is not None else None
    given = {
        "maxCostUsd": spec.budget.team_max_cost,
        "maxTokens": spec.budget.team_max_tokens,
        "maxSeconds": spec.budget.team_max_time,
    }
    team_budget = given if any(v is not None for v in given.values()) else None
    return UpPlan(
        spec.team,
        spec.description,
        team_cwd,
        spec.source,
        tuple(members),
        tasks,
        lead,
        store,
        team_budget,
    )


def _task_metadata(task: TaskSpec) -> dict[str, Any] | None:
    """What a task of the file keeps in its metadata: its command, worktree, who may take it."""
    given = {"command": task.command, "worktree": task.worktree, "for": task.for_}
    return {key: value for key, value in given.items() if value} or None


def bring_up(
    plan: UpPlan | TeamSpec,
    *,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> TeamPaths:
    """Create the team, its tasks and settings files, and spawn every member; `say` gets one
    line per task created and per member spawned. On any failure everything made is undone
    (members stopped, team deleted) and the error raised."""
    if isinstance(plan, TeamSpec):
        plan = plan_up(plan)
    check_members(plan, os.environ if env is None else env, root)
    paths = locate(plan.team, root, plan.store)
    if open_store(paths).team_exists():
        where = redacted(paths.store) if paths.store else paths.team_dir
        raise UpError(
            f"team {plan.team!r} already exists at {where}; run `swarm down "
            f"{plan.team}` first (it stops its members and deletes it), or rename the team"
        )
    open_store(paths).team_file().create(description=plan.description, cwd=plan.cwd)
    if paths.store is not None:
        write_pointer(paths)  # `swarm down TEAM` and the others find it here
    started: list[Member] = []
    try:
        if plan.lead is not None:
            write_json(paths.team_dir / LEAD_SETTINGS, plan.lead)
        if plan.team_budget is not None:  # before any member makes a request
            since = now_iso() if plan.team_budget.get("maxSeconds") else ""  # its time: from now
            limits = TeamBudgetFile(**plan.team_budget, timeFrom=since)
            update_team_budget(paths, lambda found: limits)
        # every member first, together; then the tasks, which they claim as one team
        _spawn_all(paths, plan.members, env, say, started)
        _create_tasks(paths, plan, say)
    except BaseException:
        _undo(paths, started)
        raise
    return paths


def _spawn_all(
    paths: TeamPaths,
    members: Sequence[MemberPlan],
    env: Mapping[str, str] | None,
    say: Callable[[str], None],
    started: list[Member],
) -> None:
    """Start every member's process, one after another (quick: the team's order and colours
    are the file's), then wait for them to join all at once (a couple of seconds each, paid
    once rather than once per member). Each member started is added to `started` (for
    `_undo`); the first that could not join raises once every wait is over."""
    launched = []
    for plan in members:
        member, spawned = spawn_planned(paths, plan, env, wait_s=0)
        started.append(member)
        launched.append((plan, member, spawned))
    if not launched:
        return
    errors: list[BaseException] = []
    with ThreadPoolExecutor(max_workers=min(len(launched), MAX_PARALLEL_WAITS)) as pool:
        futures = [pool.submit(_joined, paths, *one, say) for one in launched]
        for future in futures:
            try:
                future.result()
            except BaseException as exc:  # raised once all are done: none is left behind
                errors.append(exc)
    if errors:
        raise errors[0]


def _joined(
    paths: TeamPaths,
    plan: MemberPlan,
    member: Member,
    spawned: Spawned,
    say: Callable[[str], None],
) -> None:
    """Wait for one member to join (`await_start`) and say where it runs."""
    backend = choose_backend(spawned.backend_type, socket_name=spawned.socket_name)
    foreign = plan.spec.teammate_command is not None
    await_start(paths, member, spawned, backend, START_WAIT_S, foreign=foreign)
    say(
        printable_line(
            f"spawned {plan.name} ({member.color}, {plan.spec.model}) in {placement(spawned)}, "
            f"pid {spawned.pid}{watch_hint(spawned)}"
        )
    )


def check_members(plan: UpPlan, environ: Mapping[str, str], root: Path | None = None) -> None:
    """Refuse a member that could not run, before anything is made or started (`root`: the
    config root whose price file prices a cost limit)."""
    for member in plan.members:
        spec, agent_type = member.spec, member.spec.agent_type or "general-purpose"
        cwd = Path(spec.cwd or plan.cwd)
        try:
            check_model(spec.model, agent_type, cwd, environ)
            if spec.max_cost is not None:  # a cost limit needs a price for its model
                check_priced(root if root is not None else config_root(), spec.model)
            if spec.kind == ModelKind.SCRIPTED:  # check_model skips offline models
                load_agent(agent_type, project_dir=cwd)
        except Error as exc:
            raise UpError(f"member {member.name!r} cannot start: {exc}") from None


def team_json(paths: TeamPaths) -> dict[str, Any]:
    """What `swarm up --json` prints once the team is up: its members' processes, its tasks."""
    members = []
    for member in open_store(paths).team_file().load().members:
        if member.name == LEAD_NAME:
            continue
        extra = member.model_extra or {}
        members.append(
            {
                "name": member.name,
                "outcome": "spawned",
                "pid": extra.get("pid"),
                "backend": member.backendType,
                "pane": member.tmuxPaneId or None,
                "socket": extra.get("tmuxSocket"),
            }
        )
    tasks = [
        {"id": t.id, "subject": t.subject, "created": True, "status": str(t.status)}
        for t in open_store(paths).task_board().list()
    ]
    return {"team": paths.team, "resumed": False, "members": members, "tasks": tasks}


def _create_tasks(paths: TeamPaths, plan: UpPlan, say: Callable[[str], None]) -> None:
    """Every task with its links and owner, in one locked operation (a task may wait for one
    further down the file): none is ever on the board unblocked before its blockers are."""
    board = open_store(paths).task_board()  # no mailbox: owners are not running yet to be told
    specs = [
        NewTask(t.subject, t.description, metadata=t.metadata, after=t.blocked_by, owner=t.owner)
        for t in plan.tasks
    ]
    ids = [task.id for task in board.create_many(specs)]
    for task_id, task in zip(ids, plan.tasks, strict=True):
        after = [ids[i] for i in task.blocked_by]
        say(task_line(task_id, task.subject, after, task.owner, task.metadata))


def task_line(
    task_id: str,
    subject: str,
    after: Sequence[str],
    owner: str | None,
    metadata: Mapping[str, Any] | None,
) -> str:
    """``task #2: test it (after #1) [assigned to ann] [for shell]``: one task of a team file
    as `swarm up` says it (the members it is for: `protocols.tasks.task.for_text`)."""
    waits = f" (after {', '.join('#' + i for i in after)})" if after else ""
    owner_text = f" [assigned to {owner}]" if owner else ""
    wanted = (metadata or {}).get("for")
    who = f" [{for_text(metadata)}]" if wanted else ""
    return f"task #{task_id}: {subject}{waits}{owner_text}{who}"


def spawn_planned(
    paths: TeamPaths,
    plan: MemberPlan,
    env: Mapping[str, str] | None,
    wait_s: float = START_WAIT_S,
) -> tuple[Member, Spawned]:
    """Write the member's settings file, if it has rules, and spawn it as planned (waiting up
    to `wait_s` for it to join: 0 returns once its process is started)."""
    spec = plan.spec
    if plan.settings is not None:
        settings = paths.team_dir / "settings" / f"{plan.name}.json"
        safefs.makedirs(settings.parent)
        write_json(settings, plan.settings)
        spec = dataclasses.replace(spec, settings=str(settings))
    return spawn_member(paths, plan.name, plan.prompt, spec, env=env, wait_s=wait_s)


def _undo(paths: TeamPaths, started: list[Member]) -> None:
    """Stop the members already started and delete the team, keeping the original error."""
    for member in started:
        with contextlib.suppress(Exception):
            stop_member(paths, member)
    with contextlib.suppress(Exception):
        delete_team(paths, force=True)


def bring_down(
    paths: TeamPaths,
    wait_s: float = DOWN_WAIT_S,
    progress: Callable[[str], None] | None = None,
) -> list[Departure]:
    """Ask every live member to shut down, all at once; whoever refuses or has not answered
    within `wait_s` seconds is stopped. Then delete the team's files. `progress(line)` hears
    each departure and who is still awaited; Ctrl-C raises `StopInterrupted` and deletes
    nothing (run it again to finish). What is left of a deletion cut short is removed."""
    if leftovers(paths) and not safefs.exists(paths.config):
        remove_team_files(paths)
        return []
    members = [m for m in open_store(paths).team_file().load().members if m.name != LEAD_NAME]
    live = live_names(paths)
    outcomes = stop_together(paths, live, DOWN_REASON, wait_s, progress, what="swarm down")
    departures = [
        Departure(name, "error", str(o))
        if isinstance(o, Error)
        else Departure(name, o.outcome, o.reason)
        for name, o in zip(live, outcomes, strict=True)
    ]
    departures += [Departure(m.name, member_state(m), "") for m in members if m.name not in live]
    delete_team(paths, force=True, progress=progress, what="swarm down")
    return departures


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return str(value) if isinstance(value, Path) else value
