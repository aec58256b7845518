"""swarm's record of every message, against readers that delete what they read (Claude Code
2.1.160 and later): `swarm inbox` shows the whole conversation."""

from __future__ import annotations

import json
import uuid

from helpers import swarm

from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


def test_a_message_between_two_other_programs_stays_in_the_history(
    team: TeamFile, paths: TeamPaths
) -> None:
    """Claude Code writes to Claude Code: swarm's watcher records it before its reader deletes
    it (inbox temp file renamed into place, as 2.1.330 writes)."""
    entry = {
        "from": "bob",
        "text": "between two Claude Codes: $(id) ünïcode",
        "timestamp": "2026-11-20T10:00:00.000Z",
        "color": "blue",
        "msgV": 1,
        "msg_id": str(uuid.uuid4()),
        "type": "message",
        "read": False,
    }
    inbox = paths.inbox("alice")
    written = inbox.with_name("alice.json.tmp")
    written.write_text(json.dumps([entry], indent=2))
    written.rename(inbox)

    shown = swarm("watch", "--once")  # what a running `swarm watch` or `swarm lead` does
    assert shown.returncode == 0, shown.stderr
    inbox.write_text("[]")  # its reader marked it read: 2.1.160 and later delete it

    history = json.loads(swarm("inbox", "alice", "--json").stdout)
    assert [(m["text"], m["read"], m["msg_id"]) for m in history] == [
        (entry["text"], True, entry["msg_id"])
    ]
    assert json.loads(swarm("inbox", "alice", "--unread", "--json").stdout) == []
