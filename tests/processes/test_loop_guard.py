"""Loop detection (`teammate.agent.loop_guard`) with a real Claude teammate on the real
`anthropic` SDK and the suite's Messages API server: a model that makes the same call with the
same result again and again is stopped at the third repeat (``SWARM_LOOP_REPEATS=3``) until the
lead answers; approved, it goes on and is asked again three repeats later; denied, its turn ends
there with no more requests, and the model reads the lead's reason when it is next woken."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from helpers import wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.team.file import TeamFile
from swarm.team.approvals import Pending, answer, pending_requests

Start = Callable[..., subprocess.Popen[str]]


def test_a_looping_teammate_asks_the_lead_and_stops_when_told(team: TeamFile, start: Start) -> None:
    def play(body: dict[str, Any]) -> Turn:
        last = json.dumps(body["messages"][-1])
        if "The lead stopped this" in last:
            return Turn.text("Understood, I stop.")
        return Turn.tool("Bash", {"command": "echo same"})  # forever, unless stopped

    def asked() -> list[Pending]:
        return pending_requests(team.paths)

    with MessagesAPI(play) as api:
        start(
            "alice", api, "--permission-mode", "bypassPermissions", env={"SWARM_LOOP_REPEATS": "3"}
        )
        Mailbox(team.paths).send("alice", "Check the output.", sender="team-lead")
        (first,) = wait_for(asked, "alice to ask about a loop")
        assert first.tool == "Bash" and "a loop? Bash was called 3 times" in first.asked
        assert len(api.requests) == 3  # held after the third same result
        answer(team.paths, first.id, approve=True)
        (second,) = wait_for(
            lambda: [p for p in asked() if p.id != first.id], "alice to ask again, 3 calls later"
        )
        assert len(api.requests) == 6
        answer(team.paths, second.id, approve=False, text="you are looping: stop <now>")

        def idle() -> bool:
            return any(
                "idle_notification" in e.text for e in Mailbox(team.paths).read_all("team-lead")
            )

        wait_for(idle, "alice to end her turn and go idle")
        assert len(api.requests) == 6  # no request after the lead stopped the loop
        Mailbox(team.paths).send("alice", "What happened?", sender="team-lead")
        wait_for(lambda: len(api.requests) == 7, "alice's next turn")
    told = json.dumps(api.requests[6]["messages"])
    assert "The lead stopped this" in told and "you are looping: stop <now>" in told
