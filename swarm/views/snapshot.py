"""A read-only view of a team at one moment, for `swarm status` and `swarm watch`.

`snapshot` reads the team file, the status files, the task board, the lead's inbox and the
end of its record, the lines of the records that may hold requests or answers (kept in the
records' summaries, `protocols.inbox.record_summary`: a long record is not read whole), the inboxes
of members with a request waiting, and the legacy permission files, and
returns plain frozen values. A member's sub-agents come from its status file (its running ones
and the last few finished ones), each priced on its own model (else the member's); their tokens
are already in the member's, so nothing adds them twice. It never writes a team file: inboxes
are read with `Mailbox.peek_all` (no lock, an inbox that does not parse is left alone), nothing
is marked read; a look may rewrite swarm's own caches: with ``once`` (``swarm status``) the
board's summary (`protocols.tasks.summary`), and the records' summaries. Its strings are as the
files hold them (a teammate may have written them): `status_table` and `dashboard` escape them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from protocols.clock import ms_from_iso
from protocols.clock import now_ms as clock_now_ms
from protocols.errors import ProtocolsError
from protocols.inbox.record import RecordEntries
from protocols.member.status_keys import USAGE_KEYS, subagent_label
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.tasks.task import STATUSES, TaskLike, state_of
from protocols.values import MemberState
from swarm.team.approvals import Pending, pending_requests
from swarm.team.liveness import Liveness, liveness, member_entry, member_host, member_pid
from swarm.team.request_text import PLAN_KIND, QUESTION_TOOL, target
from swarm.views.costs import PriceTable, load_prices
from swarm.views.message_text import describe
from swarm.views.panes import pane_servers

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.shape import PlainEntry
    from protocols.member.status import AgentStatus, SubAgentStatus
    from protocols.records.plain import Plain
    from protocols.store.contract import TaskBoardContract, TeamFileContract
    from protocols.team.model import Member


TEXT_MAX = 120
PARSE_RETRY_S = 0.2  # an inbox being written in place (Claude Code) is re-read this long
READERS_KEPT = 8
_READERS: dict[TeamPaths, tuple[TeamFileContract, TaskBoardContract]] = {}


class SubAgentView(NamedTuple):
    """One sub-agent of a member, as its member's status file lists it."""

    agent_id: str
    agent_type: str
    name: str | None
    label: str  # `SubAgentStatus.label`: the member's name and its type or name
    description: str
    state: str  # running | completed | failed | killed
    activity: str  # its last tool call
    model: str | None  # its own, else its member's
    requests: int
    turns: int
    tool_uses: int
    usage: dict[str, int]
    cost_usd: float | None
    color: str | None  # its definition's colour
    started_at: str
    ended_at: str | None

    @property
    def running(self) -> bool:
        return self.state == "running"


class MemberView(NamedTuple):
    name: str
    color: str | None
    state: str  # lead | working | waiting | idle | dead | starting | over budget
    task: str | None  # "#3 subject" of its in_progress task
    activity: str
    activity_age_s: float | None
    model: str | None
    requests: int
    turns: int
    usage: dict[str, int]
    cost_usd: float | None
    pid: int | None
    backend: str | None
    subagents: Sequence[SubAgentView] = ()  # running, then recent
    # its MCP servers: {"name", "state", "error", "tools", "transport"} (status file)
    mcp_servers: Sequence[dict[str, Any]] = ()
    # its limits and spend, when it has a limit: maxCostUsd, maxTokens, costUsd, tokens, over,
    # reason (`protocols.member.status.BudgetStatus`)
    budget: dict[str, Any] | None = None
    host: str | None = None  # the `swarm host serve` it runs under (PostgreSQL teams)
    lease_s: float | None = None  # seconds its lease still runs (PostgreSQL teams; < 0: ran out)
    context_tokens: int | None = None  # how full its conversation is, of its window
    context_window: int | None = None
    compactions: int = 0  # how often its conversation was compacted
    # its background commands (`protocols.member.status.ShellStatus` as dicts): running, then ended
    shells: Sequence[dict[str, Any]] = ()
    pane: str | None = None  # its tmux pane (%N), as its entry records it
    socket: str | None = None  # the private tmux server of that pane (`tmux -L`); None: $TMUX's

    @property
    def failed_mcp_servers(self) -> list[dict[str, Any]]:
        return [s for s in self.mcp_servers if s.get("state") == "failed"]

    @property
    def running_subagents(self) -> list[SubAgentView]:
        return [s for s in self.subagents if s.running]

    @property
    def running_shells(self) -> list[dict[str, Any]]:
        return [s for s in self.shells if s.get("state") == "running"]


class RequestView(NamedTuple):
    id: str
    kind: str
    teammate: str
    tool: str
    summary: str  # what it asks, unescaped: the real input in full (a Bash command), or a
    # plan's first line; never the teammate's description of a permission request
    age_s: float | None
    agent: str | None = None  # the member's sub-agent that asked (a label: `Pending.agent`)
    pending: Pending | None = None  # the request itself, for its detail view


class MessageView(NamedTuple):
    sender: str
    color: str | None
    text: str  # one line, at most TEXT_MAX characters
    age_s: float | None


class TeamView(NamedTuple):
    team: str
    members: list[MemberView]
    tasks: dict[str, list[TaskLike]]  # pending, in_progress, completed: each by id (failed apart)
    failed: list[TaskLike]  # failed by their worker (or denied), waiting for a retry
    blocked: dict[str, list[str]]  # task id -> ids of its blockers not yet completed
    requests: list[RequestView]
    messages: list[MessageView]  # the last ones into team-lead, oldest first
    usage: dict[str, int]
    cost_usd: float | None  # None if no member's model has a price
    # failed task id -> the last lines of its output (`FAILURE_LINES`; those that have one)
    failure_tails: dict[str, list[str]] = {}  # (a default shared by all: never changed)


FAILURE_LINES = 3  # of a failed task's output, shown by `swarm status` and `swarm watch`


def snapshot(
    paths: TeamPaths, now_ms: int | None = None, messages: int = 8, once: bool = False
) -> TeamView:
    """The team as its files say now (ages counted from `now_ms`); reads only (but for the
    board's summary, a cache). `once`: the process looks once (``swarm status``), so a board of
    files is read through its summary (`TaskBoard.rows`) rather than the process's index, which
    only pays for itself over many looks (``swarm watch``)."""
    now = clock_now_ms() if now_ms is None else now_ms
    team_file, board = _readers(paths)
    members = team_file.members()
    everything: list[TaskLike] = list(
        board.rows(include_internal=True) if once else board.list(include_internal=True)
    )
    visible = [t for t in everything if not t.internal]
    tasks: dict[str, list[TaskLike]] = {s: [] for s in STATUSES}
    failed: list[TaskLike] = []
    for task in visible:  # one pass: 10,000 tasks are read in one look
        if task.failed:
            failed.append(task)
        elif task.status in tasks:
            tasks[task.status].append(task)
    prices = load_prices(paths.root)
    judge = liveness(paths)  # by process on files, by lease on PostgreSQL
    working: dict[str | None, TaskLike] = {}  # each owner's first task in progress
    for task in tasks["in_progress"]:
        working.setdefault(task.owner, task)
    views = [_member_view(paths, m, working, prices, now, judge) for m in members]
    mailbox = open_store(paths).mailbox()
    lead = mailbox.peek_protocol(LEAD_NAME)  # the requests in the lead's history, not all of it
    last = mailbox.peek_recent(LEAD_NAME, messages)
    colors = {m.name: m.color for m in members}
    costs = [m.cost_usd for m in views if m.cost_usd is not None]
    return TeamView(
        team=paths.team,
        members=views,
        tasks=tasks,
        failed=failed,
        blocked=_still_blocked(everything, visible),
        requests=[_request_view(p, now) for p in pending_requests(paths, lead, members)],
        messages=[_message_view(e, colors, now) for e in last],
        usage={k: sum(m.usage[k] for m in views) for k in USAGE_KEYS},
        cost_usd=sum(costs) if costs else None,
        failure_tails=_failure_tails(board, failed),
    )


def _failure_tails(board: TaskBoardContract, failed: list[TaskLike]) -> dict[str, list[str]]:
    """The last lines of each failed task's output (``metadata.outputTail``), unescaped; read
    from its file when the listing left its metadata out (a summary row)."""
    tails = {}
    for listed in failed:
        metadata = getattr(listed, "metadata", None)
        if not isinstance(metadata, dict):
            metadata = board.task_metadata(listed.id)  # a summary row: no model built
        tail = (metadata or {}).get("outputTail")
        if isinstance(tail, str) and tail.strip():
            tails[listed.id] = tail.strip().splitlines()[-FAILURE_LINES:]
    return tails


def _still_blocked(everything: list[TaskLike], visible: list[TaskLike]) -> dict[str, list[str]]:
    """For each unfinished visible task, the blockers it still waits for (those unfinished)."""
    unfinished = {t.id for t in everything if t.unfinished}
    blocked = {}
    for task in visible:
        if task.blockedBy and task.unfinished:
            still = [b for b in task.blockedBy if b in unfinished]
            if still:
                blocked[task.id] = still
    return blocked


OVER_BUDGET = "over budget"  # a member's state while it waits for a raise (`swarm budget`)
LIVE = (MemberState.WORKING, MemberState.IDLE, MemberState.WAITING)


def _member_view(
    paths: TeamPaths,
    member: Member | Plain,
    working: dict[str | None, TaskLike],
    prices: PriceTable,
    now: int,
    judge: Liveness,
) -> MemberView:
    """One member: its roster state (``waiting`` when its status file says so), current task,
    activity, usage and cost."""
    status = open_store(paths).peek_status(member.name)
    current = working.get(member.name)
    entry = member_entry(member)
    usage = {k: int((status.usage if status else {}).get(k, 0)) for k in USAGE_KEYS}
    model = status.model if status else member.model
    return MemberView(
        name=member.name,
        color=member.color,
        state=_shown_state(status, judge.state(member)),
        task=f"#{current.id} {current.subject}" if current else None,
        model=model,
        usage=usage,
        cost_usd=_cost(status, model, usage, prices),
        pid=member_pid(member) or (status.pid if status else None),
        backend=member.backendType,
        host=member_host(member),
        lease_s=_rounded(judge.lease_left_s(member.name)),
        pane=_text(entry.get("tmuxPaneId")),
        socket=_text(entry.get("tmuxSocket")),
        **_from_status(status, member.name, model, prices, now),
    )


def _shown_state(status: AgentStatus | Plain | None, state: MemberState) -> str:
    """The roster's state, ``waiting`` when the status file says so, ``over budget`` when a
    live member waits for a raise."""
    waiting = status is not None and status.state == MemberState.WAITING
    if waiting and state in (MemberState.WORKING, MemberState.IDLE):
        state = MemberState.WAITING
    budget = status.budget if status is not None else None
    return OVER_BUDGET if budget is not None and budget.over and state in LIVE else str(state)


def _from_status(
    status: AgentStatus | Plain | None, name: str, model: str | None, prices: PriceTable, now: int
) -> dict[str, Any]:
    """What a member's view takes from its status file (a member without one: nothing yet)."""
    if status is None:
        return {
            "activity": "",
            "activity_age_s": None,
            "requests": 0,
            "turns": 0,
            "subagents": [],
            "mcp_servers": [],
            "budget": None,
            "context_tokens": None,
            "context_window": None,
            "compactions": 0,
            "shells": [],
        }
    budget = status.budget
    # a limit of its own (cost, tokens or time), or the team's that it is stopped by
    limited = budget is not None and (
        any(limit is not None for limit in (budget.maxCostUsd, budget.maxTokens, budget.maxSeconds))
        or budget.over
    )
    return {
        "activity": status.activity,
        "activity_age_s": _age(now, ms_from_iso(status.updatedAt)),
        "requests": status.requests,
        "turns": status.turns,
        "subagents": [_subagent_view(name, s, model, prices) for s in status.subagents],
        "mcp_servers": [s.to_json_dict() for s in status.mcpServers],
        "budget": budget.model_dump() if budget is not None and limited else None,
        "context_tokens": status.contextTokens,
        "context_window": status.contextWindow,
        "compactions": status.compactions,
        "shells": [shell.to_json_dict() for shell in status.shells],
    }


def _text(value: Any) -> str | None:
    """A string field of an entry, None when it is absent, empty or not a string."""
    return value if isinstance(value, str) and value else None


def _cost(
    status: Any, model: str | None, usage: dict[str, int], prices: PriceTable
) -> float | None:
    """What the member's requests cost as it priced each (its status file), else its usage
    priced at once (a status file of an older version)."""
    priced = getattr(status, "costUsd", None)
    return float(priced) if priced is not None else prices.cost(model, usage)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _subagent_view(
    member: str, entry: SubAgentStatus | Plain, member_model: str | None, prices: PriceTable
) -> SubAgentView:
    usage = {k: int(entry.usage.get(k, 0)) for k in USAGE_KEYS}
    model = entry.model or member_model
    return SubAgentView(
        agent_id=entry.agentId,
        agent_type=entry.agentType,
        name=entry.name,
        label=subagent_label(member, entry.name or entry.agentType),  # `SubAgentStatus.label`
        description=entry.description,
        state=entry.state,
        activity=entry.activity,
        model=model,
        requests=entry.requests,
        turns=entry.turns,
        tool_uses=entry.toolUses,
        usage=usage,
        cost_usd=_cost(entry, model, usage, prices),
        color=entry.color,
        started_at=entry.startedAt,
        ended_at=entry.endedAt,
    )


def _readers(paths: TeamPaths) -> tuple[TeamFileContract, TaskBoardContract]:
    """The team file and board readers of `paths`, kept between snapshots: each re-parses only
    the files that changed since (a redraw of `swarm watch` stats the tasks, parses none)."""
    readers = _READERS.pop(paths, None) or (
        open_store(paths).team_file(),
        open_store(paths).task_board(),
    )
    _READERS[paths] = readers  # most recently used last
    while len(_READERS) > READERS_KEPT:
        _READERS.pop(next(iter(_READERS)))
    return readers


def clear_cache() -> None:
    """Forget the parsed files: the next snapshot reads everything again."""
    _READERS.clear()
    RecordEntries.forget()


def to_json(view: TeamView) -> dict[str, Any]:
    """`view` as JSON-ready values (tasks as their files hold them)."""
    return {
        "team": view.team,
        "members": [_member_json(m) for m in view.members],
        # each task with its `state` in the one vocabulary (`protocols.tasks.task.TaskState`)
        "tasks": {
            s: [{**t.to_json_dict(), "state": _state(view, t)} for t in listed]
            for s, listed in view.tasks.items()
        },
        "failed": [
            {
                **t.to_json_dict(),
                "state": "failed",
                "failure": t.failure,
                "outputTail": view.failure_tails.get(t.id, []),
            }
            for t in view.failed
        ],
        "blocked": {k: list(v) for k, v in view.blocked.items()},
        "requests": [
            {k: v for k, v in r._asdict().items() if k != "pending"} for r in view.requests
        ],
        "messages": [m._asdict() for m in view.messages],
        "usage": dict(view.usage),
        "cost_usd": view.cost_usd,
        # how to see the teammates' tmux panes (`swarm.views.panes`)
        "panes": [server.to_json() for server in pane_servers(view.team, view.members)],
    }


def _state(view: TeamView, task: TaskLike) -> str:
    return str(state_of(task.status, task.failed, task.id in view.blocked))


def _member_json(member: MemberView) -> dict[str, Any]:
    return {
        **member._asdict(),
        "subagents": [s._asdict() for s in member.subagents],
        "shells": list(member.shells),
        "mcp_servers": list(member.mcp_servers),
    }


def _age(now: int, then_ms: int | None) -> float | None:
    return None if then_ms is None else max(0.0, (now - then_ms) / 1000)


def _clip(text: str, limit: int = TEXT_MAX) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _structured(entry: InboxEntry | PlainEntry) -> Any:
    try:
        return entry.structured()
    except ProtocolsError:
        return None


def _request_view(pending: Pending, now: int) -> RequestView:
    if pending.kind == PLAN_KIND:
        summary = _clip(pending.description) or "(an empty plan)"
    elif pending.tool == QUESTION_TOOL:
        questions = [q for q in pending.input.get("questions") or [] if isinstance(q, dict)]
        first = str(questions[0].get("question", "")) if questions else ""
        many = f"{len(questions)} questions" if len(questions) != 1 else "1 question"
        summary = _clip(f"{many}: {first}")
    else:
        summary = target(pending.tool, pending.input)
    return RequestView(
        pending.id,
        pending.kind,
        pending.teammate,
        pending.tool,
        summary,
        _age(now, pending.created_ms),
        pending.agent,
        pending,
    )


def _message_view(
    entry: InboxEntry | PlainEntry, colors: dict[str, str | None], now: int
) -> MessageView:
    message = _structured(entry)
    text = _clip(entry.text) if message is None else _clip(describe(message))
    return MessageView(
        entry.from_,
        entry.color or colors.get(entry.from_),
        text,
        _age(now, ms_from_iso(entry.timestamp)),
    )
