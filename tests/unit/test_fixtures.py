"""The Claude Code 2.1.88 sample tree: every file parses, and unchanged files re-serialise to the
same bytes (so swarm can rewrite Claude Code's files without changing them)."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest

from protocols.fs.jsonio import dumps_pretty
from protocols.inbox.entry import InboxEntry
from protocols.inbox.permissions import PermissionFileRequest, PermissionStore
from protocols.messages.models import decode
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.tasks.model import Task
from protocols.team.file import TeamFile
from protocols.team.model import TeamConfig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cc-2.1.88"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cc-2.1.88"
TEAM = FIXTURES / "teams" / "demo-team"
INBOXES = sorted((TEAM / "inboxes").glob("*.json"))
TASKS = sorted((FIXTURES / "tasks" / "demo-team").glob("*.json"))
PERMISSIONS = sorted((TEAM / "permissions").glob("*/*.json"))


def test_repo_copy_matches_shared_fixtures() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no shared fixtures at {SHARED} to compare with (the repo copy is used)")
    mismatch = filecmp.dircmp(SHARED, FIXTURES)
    assert not mismatch.left_only and not mismatch.right_only and not mismatch.diff_files


def test_team_config_round_trips_byte_for_byte() -> None:
    raw = (TEAM / "config.json").read_text(encoding="utf-8")
    config = TeamConfig.from_json_dict(json.loads(raw))
    assert [m.name for m in config.members] == ["team-lead", "alice", "bob"]
    assert config.member("bob").planModeRequired is True
    assert dumps_pretty(config.to_json_dict()) == raw


@pytest.mark.parametrize("path", INBOXES, ids=lambda p: p.name)
def test_inbox_round_trips_byte_for_byte(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    entries = [InboxEntry.from_json_dict(item) for item in json.loads(raw)]
    assert dumps_pretty([e.to_json_dict() for e in entries]) == raw


@pytest.mark.parametrize("path", INBOXES, ids=lambda p: p.name)
def test_structured_messages_decode_and_re_encode_to_the_same_text(path: Path) -> None:
    for item in json.loads(path.read_text(encoding="utf-8")):
        message = decode(item["text"])
        if message is not None:
            assert message.encode() == item["text"]


def test_every_structured_type_in_the_fixtures_is_recognised() -> None:
    kinds = set()
    plain = []
    for path in INBOXES:
        for item in json.loads(path.read_text(encoding="utf-8")):
            message = decode(item["text"])
            if message is None:
                plain.append(item["text"])
            else:
                kinds.add(message.type)
    assert kinds == {
        "task_assignment",
        "permission_response",
        "sandbox_permission_response",
        "shutdown_request",
        "plan_approval_response",
        "mode_set_request",
        "team_permission_update",
        "idle_notification",
        "plan_approval_request",
        "permission_request",
        "sandbox_permission_request",
        "shutdown_approved",
        "shutdown_rejected",
    }
    # non-JSON text, JSON that only looks structured, and an unknown type are plain messages
    assert '{"type":"some_future_type","x":1}' in plain
    assert any(t.startswith("A plain message that merely looks like JSON") for t in plain)


@pytest.mark.parametrize("path", TASKS, ids=lambda p: p.name)
def test_task_round_trips_byte_for_byte(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    task = Task.from_json_dict(json.loads(raw))
    assert dumps_pretty(task.to_json_dict()) == raw


@pytest.mark.parametrize("path", PERMISSIONS, ids=lambda p: p.name)
def test_permission_file_round_trips_byte_for_byte(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    request = PermissionFileRequest.from_json_dict(json.loads(raw))
    assert dumps_pretty(request.to_json_dict()) == raw


def test_the_sample_tree_reads_through_the_classes(cc_root: Path) -> None:
    paths = TeamPaths(cc_root, "demo-team")
    assert TeamFile(paths).load().leadAgentId == "team-lead@demo-team"
    board = TaskBoard(paths)
    assert [t.id for t in board.list()] == ["1", "2", "3", "5"]  # 6 is _internal, 4 deleted
    assert [t.id for t in board.list(include_internal=True)] == ["1", "2", "3", "5", "6"]
    store = PermissionStore(paths)
    assert [r.id for r in store.pending()] == ["perm-1771105290000-q1w2e3r"]
    assert store.poll("perm-1771105250000-a9s8d7f").status == "approved"


def test_rewriting_an_unchanged_team_file_keeps_its_bytes(cc_root: Path) -> None:
    paths = TeamPaths(cc_root, "demo-team")
    before = paths.config.read_bytes()
    TeamFile(paths).update(lambda config: config)
    assert paths.config.read_bytes() == before
