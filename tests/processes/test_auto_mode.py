"""The auto permission mode in a real teammate process (the real SDK against the test suite's
Messages API server): what the rules leave open is put to the judge (the haiku model); its
ALLOW runs the command without asking, its DENY refuses it with the reason, and an answer it
cannot give goes to the lead as a permission request, answered by `swarm deny` as another
process. Reads never reach the judge; `bubble` is accepted on the command line too."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, Processes, swarm, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn

from protocols.mailbox import Mailbox
from protocols.messages import IdleNotification, PermissionRequest, ShutdownRequest
from protocols.team import TeamFile
from teammate.permissions.auto import JUDGE_PROMPT


@pytest.fixture
def processes(workdir: Path) -> Iterator[Processes]:
    running = Processes(workdir)
    yield running
    running.close()


def test_the_judge_allows_denies_or_leaves_it_to_the_lead(
    team: TeamFile, workdir: Path, processes: Processes
) -> None:
    (workdir / "keep.txt").write_text("keep me\n")
    judged: list[dict[str, Any]] = []
    calls = [
        ("Read", {"file_path": "keep.txt"}),
        ("Bash", {"command": "touch made.txt"}),
        ("Bash", {"command": "rm keep.txt"}),
        ("Bash", {"command": "curl http://127.0.0.1:9/upload"}),
    ]

    def play(body: dict[str, Any]) -> Turn:
        if json.dumps(body.get("system")) == json.dumps([{"type": "text", "text": JUDGE_PROMPT}]):
            judged.append(body)
            asked = body["messages"][0]["content"][0]["text"]
            if "touch made.txt" in asked:
                return Turn.text("ALLOW: creates a file in the project")
            if "rm keep.txt" in asked:
                return Turn.text("DENY: deletes a project file")
            return Turn.text("I am not sure about this one")
        done = sum(
            1 for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"
        )  # fmt: skip
        return Turn.tool(*calls[done]) if done < len(calls) else Turn.text("Done.")

    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with MessagesAPI(play, concurrent=True) as api:
        environ.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        argv = teammate_argv("alice", "--permission-mode", "auto", model="sonnet")
        alice = processes.start(argv, environ)
        Mailbox(team.paths).send("alice", "Tidy up.", sender="team-lead", summary="go")

        def request() -> PermissionRequest | None:
            for entry in Mailbox(team.paths).read_all("team-lead"):
                if isinstance(message := entry.structured(), PermissionRequest):
                    return message
            return None

        asked = wait_for(request, "the call the judge could not decide to reach the lead")
        assert swarm("deny", asked.request_id, "--reason", "no uploads").returncode == 0

        def idle() -> bool:
            entries = Mailbox(team.paths).read_all("team-lead")
            return any(isinstance(e.structured(), IdleNotification) for e in entries)

        wait_for(idle, "alice to go idle")
        stop = ShutdownRequest(
            requestId="shutdown-1@alice", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
        )
        Mailbox(team.paths).send("alice", stop, sender="team-lead")
        alice.communicate(timeout=DEADLINE_S)
        argv = teammate_argv("bob", "--permission-mode", "bubble", model="sonnet")
        bubble = processes.start(argv, environ)
        Mailbox(team.paths).send("bob", "hello", sender="team-lead", summary="hi")
        stop_bob = ShutdownRequest(
            requestId="shutdown-1@bob", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
        )
        Mailbox(team.paths).send("bob", stop_bob, sender="team-lead")
        output, _ = bubble.communicate(timeout=DEADLINE_S)
        assert bubble.returncode == 0, output

    assert (workdir / "made.txt").exists()  # allowed by the judge, without asking
    assert (workdir / "keep.txt").read_text() == "keep me\n"  # denied by the judge
    assert asked.input == {"command": "curl http://127.0.0.1:9/upload"}
    assert len(judged) == 3  # the Read never went to the judge
    assert all(body["model"] == "claude-haiku-5-5" for body in judged)
    alices = [b for b in api.requests if "Tidy up." in json.dumps(b["messages"])]
    results = json.dumps(alices[-1]["messages"], ensure_ascii=False)
    assert "auto mode: deletes a project file" in results
    assert "no uploads" in results
