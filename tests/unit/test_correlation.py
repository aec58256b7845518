"""Request ids in Claude Code's formats, pairing responses with requests, and telling a request
older than the receiver's joinedAt (the stale-shutdown bug) from a live one."""

from __future__ import annotations

import re

from protocols.clock import iso_from_ms, ms_from_iso
from protocols.messages.correlation import (
    PendingRequests,
    is_stale,
    permission_request_id,
    plan_approval_request_id,
    request_id_ms,
    sandbox_request_id,
    shutdown_request_id,
)
from protocols.messages.models import (
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ShutdownApproved,
    ShutdownRequest,
)


def test_ids_have_claude_codes_formats() -> None:
    assert shutdown_request_id("alice", 1771105300000) == "shutdown-1771105300000@alice"
    assert plan_approval_request_id("bob", "demo", 5) == "plan_approval-5@bob@demo"
    assert re.fullmatch(r"perm-\d{13}-[0-9a-z]{7}", permission_request_id())
    assert re.fullmatch(r"sandbox-\d{13}-[0-9a-z]{7}", sandbox_request_id())
    assert permission_request_id() != permission_request_id()


def test_the_time_in_an_id_can_be_read_back() -> None:
    assert request_id_ms("shutdown-1771105300000@alice") == 1771105300000
    assert request_id_ms("plan_approval-12@bob@demo") == 12
    assert request_id_ms("perm-99-abcdefg") == 99
    assert request_id_ms("something-else") is None


def test_iso_timestamps_round_trip_with_milliseconds() -> None:
    assert iso_from_ms(1771105300123) == "2026-02-14T21:41:40.123Z"
    assert ms_from_iso("2026-02-14T21:41:40.123Z") == 1771105300123
    assert ms_from_iso("not a time") is None


def test_responses_pair_with_their_requests_only() -> None:
    pending = PendingRequests()
    shutdown = ShutdownRequest(requestId="shutdown-1@alice", from_="team-lead", timestamp="t")
    plan = PlanApprovalRequest(
        from_="bob",
        timestamp="t",
        planFilePath="p",
        planContent="c",
        requestId="plan_approval-1@bob@t",
    )
    pending.add(shutdown)
    pending.add(plan)
    unrelated = ShutdownApproved(requestId="shutdown-9@alice", from_="alice", timestamp="t")
    assert pending.match(unrelated) is None
    wrong_kind = PermissionResponse(request_id="shutdown-1@alice", subtype="error", error="x")
    assert pending.match(wrong_kind) is None
    approved = ShutdownApproved(requestId="shutdown-1@alice", from_="alice", timestamp="t")
    assert pending.match(approved) is shutdown
    assert pending.match(approved) is None  # answered once
    answer = PlanApprovalResponse(requestId="plan_approval-1@bob@t", approved=True, timestamp="t")
    assert pending.match(answer) is plan
    assert len(pending) == 0


def test_a_request_from_before_the_receiver_joined_is_stale() -> None:
    joined = 1771105300000
    old = ShutdownRequest(
        requestId="shutdown-1771105299000@alice",
        from_="team-lead",
        timestamp=iso_from_ms(joined - 1000),
    )
    live = ShutdownRequest(
        requestId="shutdown-1771105301000@alice",
        from_="team-lead",
        timestamp=iso_from_ms(joined + 1000),
    )
    assert is_stale(old, joined)
    assert not is_stale(live, joined)
    no_timestamp = ShutdownRequest(
        requestId="shutdown-1771105299000@alice", from_="team-lead", timestamp="garbled"
    )
    assert is_stale(no_timestamp, joined)  # falls back to the time in the id
