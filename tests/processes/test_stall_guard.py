"""No-progress detection (`teammate.agent.stall_guard`) with a real Claude teammate on the real
`anthropic` SDK and the suite's Messages API server, in a real git repository: a model that
reads and runs read-only commands turn after turn (never the same call twice, so no loop) is
held at the fourth turn without progress (``SWARM_STALL_TURNS=4``) until the lead answers; one
whose commands change the working tree, or that writes files, is never held."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import git, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.team.file import TeamFile
from swarm.team.approvals import Pending, answer, pending_requests

Start = Callable[..., subprocess.Popen[str]]
STALL = {"SWARM_STALL_TURNS": "4"}


def repository(workdir: Path) -> None:
    git(workdir, "init", "-q")
    (workdir / "notes.txt").write_text("".join(f"line {n}\n" for n in range(100)))
    git(workdir, "add", "notes.txt")
    git(workdir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "notes")


def idle(team: TeamFile) -> bool:
    return any("idle_notification" in e.text for e in Mailbox(team.paths).read_all("team-lead"))


def test_turns_without_progress_ask_the_lead_and_stop_when_told(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    repository(workdir)
    calls = iter(range(1000))

    def play(body: dict[str, Any]) -> Turn:
        if "The lead stopped this" in json.dumps(body["messages"][-1]):
            return Turn.text("Understood, I stop.")
        n = next(calls)  # a new call each turn: reading, never changing anything
        if n % 2:
            return Turn.tool("Read", {"file_path": str(workdir / "notes.txt"), "offset": n})
        return Turn.tool("Bash", {"command": f"git log --oneline -n {n + 1}"})

    def asked() -> list[Pending]:
        return pending_requests(team.paths)

    with MessagesAPI(play) as api:
        start("alice", api, "--permission-mode", "bypassPermissions", env=STALL)
        Mailbox(team.paths).send("alice", "Look around.", sender="team-lead")
        (first,) = wait_for(asked, "alice to ask about turns without progress")
        assert "no progress? 4 model turns in a row changed no file" in first.asked
        assert len(api.requests) == 4  # held after the fourth turn's calls
        answer(team.paths, first.id, approve=True)
        (second,) = wait_for(
            lambda: [p for p in asked() if p.id != first.id], "alice to ask again, 4 turns later"
        )
        assert len(api.requests) == 8
        answer(team.paths, second.id, approve=False, text="you are lost: stop <now>")
        wait_for(lambda: idle(team), "alice to end her turn and go idle")
        assert len(api.requests) == 8  # no request after the lead stopped it
        Mailbox(team.paths).send("alice", "What happened?", sender="team-lead")
        wait_for(lambda: len(api.requests) == 9, "alice's next turn")
    told = json.dumps(api.requests[8]["messages"])
    assert "4 turns in a row changed no file" in told and "you are lost: stop <now>" in told


def test_turns_that_change_the_tree_or_write_files_are_never_held(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    repository(workdir)
    calls = iter(range(1000))

    def play(body: dict[str, Any]) -> Turn:
        n = next(calls)
        if n == 12:
            return Turn.text("Done.")
        if n % 2:  # a command that changes the working tree
            return Turn.tool("Bash", {"command": f"echo {n} >> notes.txt"})
        return Turn.tool("Write", {"file_path": str(workdir / f"out-{n}.txt"), "content": "x"})

    with MessagesAPI(play) as api:
        start("alice", api, "--permission-mode", "bypassPermissions", env=STALL)
        Mailbox(team.paths).send("alice", "Work.", sender="team-lead")
        wait_for(lambda: idle(team), "alice to finish her 12 turns")
        assert len(api.requests) == 13
    assert pending_requests(team.paths) == []
