"""The protocol messages swarm writes fit Claude Code 2.1.330's stricter shapes (spec section 9):
request ids, ISO timestamps with ``Z``, no extra keys where it allows none."""

from __future__ import annotations

import json
import re

from protocols.clock import now_iso
from protocols.messages.correlation import (
    permission_request_id,
    plan_approval_request_id,
    shutdown_request_id,
)
from protocols.messages.models import IdleNotification, TaskAssignment, TeammateTerminated

PERMISSION_ID = re.compile(r"^perm-\d+-[0-9a-z]+$")
ADDRESSED_ID = re.compile(r"^(shutdown|plan_approval)-\d+@[^@]+(@[^@]+)?$")
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_request_ids_have_claude_codes_shapes() -> None:
    assert PERMISSION_ID.match(permission_request_id())
    assert ADDRESSED_ID.match(shutdown_request_id("alice"))
    assert ADDRESSED_ID.match(plan_approval_request_id("alice", "t"))


def test_timestamps_are_iso_with_z() -> None:
    assert ISO_Z.match(now_iso())


def test_messages_without_extra_keys_have_exactly_claude_codes_keys() -> None:
    assignment = TaskAssignment(
        taskId="1", subject="s", description="d", assignedBy="team-lead", timestamp=now_iso()
    )
    keys = set(json.loads(assignment.encode()))
    assert keys == {"type", "taskId", "subject", "description", "assignedBy", "timestamp"}
    terminated = TeammateTerminated(message="alice has stopped")
    assert set(json.loads(terminated.encode())) == {"type", "message"}
    idle = IdleNotification(from_="alice", timestamp=now_iso(), idleReason="available")
    assert json.loads(idle.encode())["from"] == "alice"  # the inner from is the sender's
