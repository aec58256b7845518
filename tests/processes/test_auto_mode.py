"""The auto permission mode in a real teammate process (the real SDK against the test suite's
Messages API server): what the rules leave open is put to the judge (the haiku model); its
ALLOW runs the command without asking, its DENY refuses it with the reason, and an answer it
cannot give goes to the lead as a permission request, answered by `swarm deny` as another
process. Reads never reach the judge; `bubble` is accepted on the command line too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import (
    Processes,
    claude_env,
    stop_teammate,
    swarm,
    teammate_argv,
    wait_for,
    went_idle,
)
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import PermissionRequest
from protocols.team.file import TeamFile
from teammate.permissions.auto import JUDGE_PROMPT


def test_the_judge_allows_denies_or_leaves_it_to_the_lead(
    team: TeamFile, workdir: Path, workers: Processes
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

    with MessagesAPI(play, concurrent=True) as api:
        environ = claude_env(api.url)
        argv = teammate_argv("alice", "--permission-mode", "auto", model="sonnet")
        alice = workers.start(argv, environ)
        Mailbox(team.paths).send("alice", "Tidy up.", sender="team-lead", summary="go")

        def request() -> PermissionRequest | None:
            for entry in Mailbox(team.paths).read_all("team-lead"):
                if isinstance(message := entry.structured(), PermissionRequest):
                    return message
            return None

        asked = wait_for(request, "the call the judge could not decide to reach the lead")
        assert swarm("deny", asked.request_id, "--reason", "no uploads").returncode == 0

        wait_for(lambda: went_idle(team.paths, "alice"), "alice to go idle")
        stop_teammate(team.paths, "alice", alice)
        argv = teammate_argv("bob", "--permission-mode", "bubble", model="sonnet")
        bubble = workers.start(argv, environ)
        Mailbox(team.paths).send("bob", "hello", sender="team-lead", summary="hi")
        stop_teammate(team.paths, "bob", bubble)

    assert (workdir / "made.txt").exists()  # allowed by the judge, without asking
    assert (workdir / "keep.txt").read_text() == "keep me\n"  # denied by the judge
    assert asked.input == {"command": "curl http://127.0.0.1:9/upload"}
    assert len(judged) == 3  # the Read never went to the judge
    assert all(body["model"] == "claude-haiku-5-5" for body in judged)
    alices = [b for b in api.requests if "Tidy up." in json.dumps(b["messages"])]
    results = json.dumps(alices[-1]["messages"], ensure_ascii=False)
    assert "auto mode: deletes a project file" in results
    assert "no uploads" in results
