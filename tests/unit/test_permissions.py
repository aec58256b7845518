"""Permission requests: the legacy pending/resolved files and the mailbox request/response pair."""

from __future__ import annotations

import json
import threading

import pytest

from protocols.errors import ProtocolsError
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import (
    PermissionStore,
    await_permission_response,
    permission_response,
    request_permission,
)
from protocols.messages.models import PermissionRequest, PermissionResponse
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


@pytest.fixture
def store(team: TeamFile) -> PermissionStore:
    return PermissionStore(team.paths)


def new_request(store: PermissionStore, **overrides: object) -> str:
    request = store.new_request(
        worker_name="alice",
        worker_color="blue",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description="Run the tests",
        input={"command": "pytest -q"},
        **overrides,  # type: ignore[arg-type]
    )
    return request.id


def test_a_pending_request_has_claude_codes_fields(
    store: PermissionStore, paths: TeamPaths
) -> None:
    request_id = new_request(store)
    assert request_id.startswith("perm-")
    data = json.loads((paths.permissions_pending / f"{request_id}.json").read_text())
    assert list(data) == [
        "id",
        "workerId",
        "workerName",
        "workerColor",
        "teamName",
        "toolName",
        "toolUseId",
        "description",
        "input",
        "permissionSuggestions",
        "status",
        "createdAt",
    ]
    assert data["workerId"] == "alice@t" and data["status"] == "pending"
    assert store.poll(request_id) is None


def test_resolving_writes_the_resolution_and_removes_the_pending_file(
    store: PermissionStore, paths: TeamPaths
) -> None:
    request_id = new_request(store)
    store.resolve(request_id, approved=False, feedback="not now", resolved_by="leader")
    assert store.pending() == []
    resolution = store.poll(request_id)
    assert resolution.status == "rejected" and resolution.feedback == "not now"
    assert resolution.resolvedBy == "leader" and resolution.resolvedAt >= resolution.createdAt
    with pytest.raises(ProtocolsError, match=r"already answered \(rejected by leader\)"):
        store.resolve(request_id, approved=True)
    with pytest.raises(ProtocolsError, match="no pending permission request"):
        store.resolve("perm-1-nothing", approved=True)


def test_resolutions_older_than_an_hour_are_cleaned(
    store: PermissionStore, paths: TeamPaths
) -> None:
    old, fresh = new_request(store), new_request(store)
    store.resolve(old, approved=True)
    store.resolve(fresh, approved=True)
    path = paths.permissions_resolved / f"{old}.json"
    data = json.loads(path.read_text())
    data["resolvedAt"] -= 2 * 60 * 60 * 1000
    path.write_text(json.dumps(data, indent=2))
    assert store.clean_resolved() == [old]
    assert [r.id for r in store.resolved()] == [fresh]


def test_the_mailbox_pair_round_trip(team: TeamFile) -> None:
    mailbox = Mailbox(team.paths)
    request = request_permission(
        mailbox,
        worker="alice",
        tool_name="Bash",
        tool_use_id="toolu_9",
        description="Run the tests",
        input={"command": "pytest -q"},
        color="blue",
    )
    (entry,) = mailbox.read_unread("team-lead")
    assert entry.from_ == "alice"
    received = entry.structured()
    assert isinstance(received, PermissionRequest) and received.request_id == request.request_id
    mailbox.send("alice", "an unrelated note", sender="bob")

    def lead_answers() -> None:
        answer = permission_response(
            received.request_id, approved=True, updated_input={"command": "pytest"}
        )
        mailbox.send("alice", answer, sender="team-lead")

    lead = threading.Thread(target=lead_answers)
    lead.start()
    response = await_permission_response(mailbox, "alice", request.request_id, timeout=10)
    lead.join()
    assert isinstance(response, PermissionResponse) and response.approved
    assert response.response.updated_input == {"command": "pytest"}
    # the unrelated message is left for the teammate's normal handling
    assert [e.text for e in mailbox.read_unread("alice")] == ["an unrelated note"]


def test_a_denial_and_a_timeout(team: TeamFile) -> None:
    mailbox = Mailbox(team.paths)
    denial = permission_response("perm-1-abcdefg", approved=False, error="Not allowed here")
    assert (
        denial.encode()
        == '{"type":"permission_response","request_id":"perm-1-abcdefg","subtype":"error","error":"Not allowed here"}'
    )
    mailbox.send("alice", denial, sender="team-lead")
    assert not await_permission_response(mailbox, "alice", "perm-1-abcdefg", timeout=5).approved
    assert await_permission_response(mailbox, "alice", "perm-2-abcdefg", timeout=0.05) is None
