"""Requests waiting for the lead: listing them, answering them, closing them.

A request is pending while no answer to it exists: ``permission_request``,
``sandbox_permission_request`` and ``plan_approval_request`` messages in the ``team-lead`` inbox
(live or archived) whose id has no response in the requester's inbox, and the legacy files in
``permissions/pending``. Only requests that name their real sender count (a
``permission_request`` whose ``agent_id``, or a plan or sandbox request whose ``from`` or
``workerName``, is not the member that sent it is spoofed and ignored), and only from a current
member, sent since it joined: a departed member's requests are closed when it leaves
(`close_requests`), the lead told, and never come back.

A sub-agent's ask arrives as its member's own ``permission_request``, the description prefixed
``alice \u203a reviewer: `` by the teammate (`protocols.member.status.subagent_label`).
`Pending.agent` is that label and `Pending.asked` the description without it; both are the
teammate's words, a display label only: the request stays the member's (its answer goes to the
member, its rules are the member's), and a prefix naming another member is left in the description
as it is.

Answering is a compare-and-set on the requester's inbox (`Mailbox.send_unless`): exactly one of
several answers to one request is sent; the others get `AlreadyAnswered` saying which answer won
and who gave it. The lead's copy of the request is then marked read.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from protocols.clock import ms_from_iso, now_iso
from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.member.status_keys import subagent_label
from protocols.messages.correlation import request_id_of
from protocols.names import LEAD_NAME, checked_component
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import PermissionMode
from swarm.team.signatures import lead_mailbox, lead_wrote, signing_problem

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.shape import PlainEntry

    Entry = InboxEntry | PlainEntry

# a structured message is told by its type, whether it is a model or a
# `protocols.records.plain.Plain` (requests are read without pydantic when they are plainly what
# they say: `peek_plain`)
REQUEST_KINDS = frozenset(
    {"permission_request", "sandbox_permission_request", "plan_approval_request"}
)
RESPONSE_KINDS = frozenset(
    {"permission_response", "sandbox_permission_response", "plan_approval_response"}
)
AGENT_LABEL_MAX = 80  # a longer "label" is not one: the description is left as it is
LABELLED_KINDS = frozenset({"permission_request", "file"})  # the teammate writes the description


class RequestNotFound(ProtocolsError):
    """No pending request has that id."""


class CannotSign(ProtocolsError):
    """The teammate takes only answers signed with a lead key this machine does not hold."""


class AlreadyAnswered(ProtocolsError):
    """Another answer to the request was given first; the message says which and by whom."""


class Pending(NamedTuple):
    id: str
    kind: str  # permission_request | sandbox_permission_request | plan_approval_request | file
    teammate: str
    tool: str
    input: dict[str, Any]
    description: str
    created_ms: int | None
    message: Any = None  # the structured request, or the legacy file record
    entry: Entry | None = None

    @property
    def agent(self) -> str | None:
        """``alice \u203a reviewer`` when one of the member's sub-agents asked, else None."""
        return sub_agent_of(self)[0]

    @property
    def asked(self) -> str:
        """The description without the sub-agent's label."""
        return sub_agent_of(self)[1]

    @property
    def asker(self) -> str:
        """Who asked, for people: the sub-agent's label, else the member's name."""
        return self.agent or self.teammate

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "teammate": self.teammate,
            "agent": self.agent,
            "tool": self.tool,
            "input": self.input,
            "description": self.asked,
            "createdAt": self.created_ms,
        }


def sub_agent_of(pending: Pending) -> tuple[str | None, str]:
    """(the label of the sub-agent that asked, the description without it); (None, the
    description) unless it starts with ``<the requesting member> \u203a <label>: ``."""
    prefix = subagent_label(pending.teammate, "")
    if pending.kind not in LABELLED_KINDS or not pending.description.startswith(prefix):
        return None, pending.description
    label, colon, rest = pending.description[len(prefix) :].partition(": ")
    if not colon or not label.strip() or len(label) > AGENT_LABEL_MAX or "\n" in label:
        return None, pending.description
    return subagent_label(pending.teammate, label), rest


def is_request(message: Any) -> bool:
    """Whether a structured message (a model or a `Plain`) is a request to the lead."""
    return getattr(message, "type", None) in REQUEST_KINDS


def describe_request(entry: Entry, message: Any) -> Pending:
    created = ms_from_iso(entry.timestamp)
    if message.type == "permission_request":
        return Pending(
            message.request_id,
            message.type,
            message.agent_id,
            message.tool_name,
            message.input,
            message.description,
            created,
            message,
            entry,
        )
    if message.type == "sandbox_permission_request":
        host = message.hostPattern.host
        return Pending(
            message.requestId,
            message.type,
            message.workerName,
            "network",
            {"host": host},
            f"connect to {host}",
            message.createdAt,
            message,
            entry,
        )
    return Pending(
        message.requestId,
        message.type,
        message.from_,
        "ExitPlanMode",
        {"planFilePath": message.planFilePath},
        message.planContent,
        created,
        message,
        entry,
    )


def structured(entries: Sequence[Entry]) -> list[tuple[Entry, Any]]:
    result = []
    for entry in entries:
        try:
            message = entry.structured()
        except ProtocolsError:
            continue
        if message is not None:
            result.append((entry, message))
    return result


def genuine(entry: Entry, message: Any) -> bool:
    """Whether a request names the member that sent it (the entry's ``from``)."""
    return describe_request(entry, message).teammate == entry.from_ and (
        getattr(message, "from_", entry.from_) == entry.from_
    )


def pending_requests(
    paths: TeamPaths, lead: Sequence[Entry] | None = None, members: Sequence[Any] | None = None
) -> list[Pending]:
    """Requests to the lead with no answer from the lead yet, oldest first. Reads only (no
    locks, no writes); `lead` is the lead's archive + inbox (or those of its entries that may be
    requests, `Mailbox.peek_protocol`), and `members` the team's members
    (`TeamFile.members`), when the caller already has them. The inboxes are read as a view
    reads them (`Mailbox.peek_protocol`): what is plainly a message needs no model, so ``swarm
    status`` loads no pydantic for them, and a long record is not parsed whole."""
    mailbox = open_store(paths).mailbox()  # only read: the lead's signer is not needed
    if lead is None:
        lead = mailbox.peek_protocol(LEAD_NAME)
    if members is None:
        members = open_store(paths).team_file().members()
    joined = {m.name: m.joinedAt for m in members}
    asked = []
    for entry, message in structured(lead):
        if not is_request(message) or not genuine(entry, message):
            continue
        sent = ms_from_iso(entry.timestamp)
        if entry.from_ in joined and (sent is None or sent >= joined[entry.from_]):
            asked.append((entry, message))
    answered: set[str] = set()
    # the lead's key is read (and the signature library loaded) only for an answer to check
    by_lead = _lazily(lambda: lead_wrote(paths))
    for name in {entry.from_ for entry, _ in asked}:
        answered |= {id_ for id_ in _answered_ids(mailbox.peek_protocol(name), by_lead)}
    found: dict[str, Pending] = {}
    for entry, message in asked:
        pending = describe_request(entry, message)
        if pending.id not in answered:
            found.setdefault(pending.id, pending)
    for record in _legacy_pending(paths):
        if record.workerName not in joined:
            continue  # its worker left: closed when it did
        found.setdefault(
            record.id,
            Pending(
                record.id,
                "file",
                record.workerName,
                record.toolName,
                record.input,
                record.description,
                record.createdAt,
                record,
            ),
        )
    return sorted(found.values(), key=lambda p: p.created_ms or 0)


def _lazily(
    make: Callable[[], Callable[[Mapping[str, Any]], bool]],
) -> Callable[[Mapping[str, Any]], bool]:
    """A check made by `make` when first used."""
    made = functools.cache(make)
    return lambda entry: made()(entry)


def _legacy_pending(paths: TeamPaths) -> list[Any]:
    """The legacy request files waiting (`PermissionStore.pending`); on files, a directory
    with no request file in it is told without loading the store's models."""
    store = open_store(paths)
    if store.kind == "files":
        try:
            if not any(n.endswith(".json") for n in safefs.listdir(paths.permissions_pending)):
                return []
        except FileNotFoundError:
            return []
    return list(store.permissions().pending())


def _answered_ids(
    entries: Sequence[Entry], by_lead: Callable[[Mapping[str, Any]], bool]
) -> set[str]:
    """Ids of the requests the lead answered in these entries (only the lead's answers count,
    signed when the lead signs, as they do for the teammate)."""
    return {
        rid
        for e, m in structured([e for e in entries if e.from_ == LEAD_NAME])
        if getattr(m, "type", None) in RESPONSE_KINDS
        and (rid := request_id_of(m)) is not None
        and by_lead(e.to_json_dict())
    }


def member_cwd(paths: TeamPaths, name: str) -> Path | None:
    """The working directory of member `name` (where its relative paths point), if known."""
    try:  # its raw entry: validating the whole team for one field costs ~6 ms at 200 members
        member = open_store(paths).team_file().entry(name)
    except ProtocolsError:
        return None
    cwd = member.get("cwd") if member is not None else None
    return Path(cwd) if isinstance(cwd, str) and cwd else None


def find_pending(paths: TeamPaths, request_id: str) -> Pending:
    """The pending request whose id is `request_id`, or the only one it begins (a prefix such as
    ``perm-1764`` or the id's last part); `RequestNotFound` naming the candidates otherwise."""
    pending = pending_requests(paths)
    exact = [p for p in pending if p.id == request_id]
    if exact:
        return exact[0]
    given = request_id.strip()
    found = [p for p in pending if given and (p.id.startswith(given) or p.id.endswith(given))]
    if len(found) == 1:
        return found[0]
    if found:
        listed = ", ".join(p.id for p in found)
        raise RequestNotFound(f"{request_id!r} names more than one request: {listed}")
    raise _not_pending(paths, request_id)


def answer(
    paths: TeamPaths,
    request_id: str,
    *,
    approve: bool,
    text: str | None = None,
    updated_input: dict[str, Any] | None = None,
    permission_mode: str | None = None,
    by: str = "swarm",
) -> Pending:
    """Approve or deny the pending request `request_id`; `text` is feedback or the reason.
    An approved plan switches the teammate to `permission_mode` (None: the mode it was
    started with). `by` says who answered (shown to whoever tries to answer it too).

    Raises `RequestNotFound`, or `AlreadyAnswered` when another answer got there first. A
    unique prefix of an id names its request (`find_pending`)."""
    pending = find_pending(paths, request_id)
    request_id = pending.id
    asks = pending.tool == "AskUserQuestion"  # swarm.team.request_text.QUESTION_TOOL
    if approve and asks and "answers" not in (updated_input or {}):
        raise QuestionError(
            f"request {request_id} is a question from {pending.teammate}: answer it with "
            f"`swarm answer {request_id} ANSWER...` (one answer per question)"
        )
    mailbox = lead_mailbox(paths)
    message = pending.message
    verdict = "approved" if approve else "denied"
    if pending.kind == "file":
        try:
            open_store(paths).permissions().resolve(
                request_id,
                approved=approve,
                resolved_by=f"{LEAD_NAME} ({by})",
                feedback=text,
                updated_input=updated_input,
            )
        except ProtocolsError as exc:
            raise AlreadyAnswered(str(exc)) from None
        return pending
    problem = signing_problem(paths, open_store(paths).team_file().entry(pending.teammate))
    if problem is not None:  # it would be ignored, and this machine would count it answered
        raise CannotSign(problem)
    response = _response(message, request_id, approve, text, updated_input, permission_mode)
    by_lead = lead_wrote(paths)
    _, winner = mailbox.send_unless(
        pending.teammate,
        response,
        lambda item: _answers(item, request_id) and by_lead(item),
        sender=LEAD_NAME,
        summary=f"{verdict} by {by}",
    )
    if winner is not None:
        raise AlreadyAnswered(f"request {request_id} was already answered ({_told(winner)})")
    if pending.entry is not None:
        mailbox.mark_read(LEAD_NAME, [pending.entry])
    return pending


def answer_question(
    paths: TeamPaths, request_id: str, given: Sequence[str], by: str = "swarm"
) -> tuple[Pending, dict[str, str]]:
    """Answer the questions of pending `AskUserQuestion` request `request_id`, one answer per
    question in order: an option's label or number (several, comma-separated, where the
    question takes several), else the person's own words. The request and the answers.

    Raises `RequestNotFound`, `AlreadyAnswered`, or `QuestionError` naming what is wrong."""
    from swarm.team.request_text import QUESTION_TOOL

    pending = find_pending(paths, request_id)
    request_id = pending.id
    if pending.tool != QUESTION_TOOL:
        raise QuestionError(
            f"request {request_id} is a {pending.tool} permission request, not a question: "
            f"answer it with `swarm approve {request_id}` or `swarm deny {request_id}`"
        )
    questions = [q for q in pending.input.get("questions") or [] if isinstance(q, dict)]
    if len(given) != len(questions):
        asked = "; ".join(f"{i}. {q.get('question', '')}" for i, q in enumerate(questions, 1))
        raise QuestionError(
            f"request {request_id} asks {len(questions)} question(s), so give "
            f"{len(questions)} answer(s) in order (got {len(given)}): {asked}"
        )
    answers = {
        str(q.get("question", "")): _chosen(q, text)
        for q, text in zip(questions, given, strict=True)
    }
    updated = {**pending.input, "answers": answers}
    answer(paths, request_id, approve=True, updated_input=updated, by=by)
    return pending, answers


class QuestionError(ProtocolsError):
    """An answer that does not fit the question it answers; says which and why."""


def _chosen(question: dict[str, Any], text: str) -> str:
    """`text` as the answer to `question`: option numbers and labels as the labels."""
    labels = [str(o.get("label", "")) for o in question.get("options") or [] if isinstance(o, dict)]
    parts = [p.strip() for p in text.split(",")] if question.get("multiSelect") else [text.strip()]
    chosen = []
    for part in parts:
        if part.isdigit() and 1 <= int(part) <= len(labels):
            chosen.append(labels[int(part) - 1])
            continue
        same = [label for label in labels if label.casefold() == part.casefold()]
        chosen.append(same[0] if same else part)
    if not any(chosen):
        raise QuestionError(f"an empty answer to {question.get('question', '')!r}")
    return ", ".join(chosen)


def _response(
    message: Any,
    request_id: str,
    approve: bool,
    text: str | None,
    updated_input: dict[str, Any] | None,
    permission_mode: str | None,
) -> Any:
    """The lead's answer to request `message` (a model or a `Plain`: told by its type)."""
    from protocols.inbox.permissions import permission_response
    from protocols.messages.models import PlanApprovalResponse, SandboxPermissionResponse
    from protocols.team.signing import plan_digest

    if message.type == "permission_request":
        return permission_response(
            request_id,
            approved=approve,
            updated_input=updated_input,
            error=text or "Permission denied by the lead",
        )
    if message.type == "sandbox_permission_request":
        return SandboxPermissionResponse(
            requestId=request_id, host=message.hostPattern.host, allow=approve, timestamp=now_iso()
        )
    if approve:
        return PlanApprovalResponse(
            requestId=request_id,
            approved=True,
            timestamp=now_iso(),
            permissionMode=PermissionMode(permission_mode) if permission_mode else None,
            # the plan it approves, for a teammate that checks (Claude Code's lead sends it)
            planDigest=plan_digest(message.planContent),
        )
    return PlanApprovalResponse(
        requestId=request_id,
        approved=False,
        timestamp=now_iso(),
        feedback=text or "Plan rejected by the lead",
    )


def _answers(item: dict[str, Any], request_id: str) -> bool:
    """Whether inbox item `item` is the lead's answer to `request_id`."""
    from protocols.messages.models import decode

    if item.get("from") != LEAD_NAME or not isinstance(item.get("text"), str):
        return False
    try:
        message = decode(item["text"])
    except ProtocolsError:
        return False
    return (
        message is not None
        and message.type in RESPONSE_KINDS
        and (request_id_of(message) == request_id)
    )


def _told(item: dict[str, Any]) -> str:
    """``approved by swarm lead at 2026-...`` for an answer already in an inbox."""
    from protocols.messages.models import decode

    message = decode(item["text"])
    approved = getattr(message, "approved", None)
    if approved is None:
        approved = getattr(message, "allow", False)
    said = str(item.get("summary") or ("approved" if approved else "denied"))
    return f"{said}, at {item.get('timestamp', 'an unknown time')}"


def _not_pending(paths: TeamPaths, request_id: str) -> ProtocolsError:
    """Why `request_id` cannot be answered: answered already (by whom), or unknown."""
    mailbox = lead_mailbox(paths)
    for name in open_store(paths).team_file().member_names():
        for entry in mailbox.peek_all(name):
            if _answers(entry.to_json_dict(), request_id):
                told = _told(entry.to_json_dict())
                return AlreadyAnswered(f"request {request_id} was already answered ({told})")
    done = open_store(paths).permissions().poll(request_id) if _file_id(request_id) else None
    if done is not None:
        who = done.resolvedBy or "someone"
        return AlreadyAnswered(
            f"request {request_id} was already answered ({done.status} by {who})"
        )
    return RequestNotFound(
        f"no pending request {request_id!r}; `swarm permissions` lists the ones waiting"
    )


def _file_id(request_id: str) -> bool:
    try:
        checked_component(request_id, "request id")
    except ProtocolsError:
        return False
    return True


def close_requests(paths: TeamPaths, name: str, why: str) -> list[Pending]:
    """Close what member `name` asked and nobody answered (call before it is removed): the
    lead's copies are marked read, its legacy request files resolved as rejected, and the lead
    told once. Returns the closed requests."""
    mine = [p for p in pending_requests(paths) if p.teammate == name]
    if not mine:
        return []
    mailbox = lead_mailbox(paths)
    entries = [p.entry for p in mine if p.entry is not None]
    mailbox.mark_read(LEAD_NAME, entries)
    store = open_store(paths).permissions()
    for p in mine:
        if p.kind == "file":
            with contextlib.suppress(ProtocolsError):
                store.resolve(p.id, approved=False, resolved_by=LEAD_NAME, feedback=why)
    listed = "; ".join(f"{p.id} ({p.tool})" for p in mine)
    note = (
        f"{name} left with {len(mine)} request{'s' if len(mine) != 1 else ''} unanswered, now "
        f"closed ({why}): {listed}"
    )
    mailbox.send(LEAD_NAME, note, sender=LEAD_NAME, summary=f"{name}'s requests closed")
    return mine
