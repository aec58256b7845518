"""The page's state says when things happened, not how long ago: a quiet team looks the same at
every look, so the server sends the pages nothing (`swarm.web.feed`)."""

from __future__ import annotations

import pytest

from protocols.clock import ms_from_iso
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.web import state as web_state
from swarm.web.state import TeamState, dated, encoded


def test_ages_become_the_instants_they_count_from_and_time_left_the_instant_it_ends() -> None:
    state = {
        "members": [{"name": "alice", "activity_age_s": 2.5, "lease_s": 10.0}],
        "requests": [{"id": "r1", "age_s": None}],
        "messages": [{"sender": "bob", "age_s": 0.001}],
    }
    dated(state, 1_000_000)
    assert state == {
        "members": [{"name": "alice", "activity_at_ms": 997_500, "lease_ends_ms": 1_010_000}],
        "requests": [{"id": "r1", "at_ms": None}],
        "messages": [{"sender": "bob", "at_ms": 999_999}],
    }


def test_a_quiet_team_looks_the_same_a_minute_later(
    paths: TeamPaths, team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    (sent,) = Mailbox(paths).send("team-lead", "the report is written", sender="alice")
    clock = iter([2_000_000_000_000, 2_000_000_060_000])
    monkeypatch.setattr(web_state, "now_ms", lambda: next(clock))
    looks = TeamState(paths)
    first, second = looks.look(), looks.look()
    assert encoded(first) == encoded(second)
    (message,) = first["messages"]
    assert message["at_ms"] == ms_from_iso(sent.timestamp)
    assert "age_s" not in message
