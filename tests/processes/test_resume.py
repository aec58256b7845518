"""Resuming a teammate with its conversation, with real processes: a Claude teammate (the real
SDK against the test suite's Messages API server) is killed with SIGKILL in the middle of a tool
call; ``swarm spawn NAME --resume`` reaps the dead entry (its task back to pending, the lead
told) and starts a new instance whose first request carries the whole earlier conversation,
with the call it never finished answered as interrupted. A sub-agent of the killed instance is
resumed by the new one with SendMessage to its agent id; one whose transcript is gone is a
clear error to the model. A live member and a name with no conversation are refused."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from helpers import swarm, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.messages.models import IdleNotification, TeammateTerminated
from protocols.team.file import TeamFile
from swarm.team.members import member_pid, member_spec
from teammate.agent.transcript import INTERRUPTED


def words(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def idle(team: TeamFile, name: str) -> list[Any]:
    return [
        e
        for e in Mailbox(team.paths).read_all("team-lead")
        if isinstance(e.structured(), IdleNotification) and e.from_ == name
    ]


def test_a_killed_teammate_resumes_with_its_conversation_and_its_sub_agent(
    paths: Any, tmp_path: Path, workdir: Path
) -> None:
    team = TeamFile(paths)
    team.create(description="resume", cwd=workdir)
    seen: list[dict[str, Any]] = []
    sub_id: list[str] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        text = words(body)
        if "You are a sub-agent" in json.dumps(body.get("system")):
            if "and the second word?" in text:
                return Turn.text("the second word is QUINCE (I remembered PEAR)")
            return Turn.text("first word: PEAR")
        if "and the second word?" in text:
            return Turn.text("asked my sub-agent again")
        if "You were restarted" in text:
            message = {"to": sub_id[0], "message": "and the second word?"}
            return Turn.tool("SendMessage", {**message, "summary": "more"})
        if "sleep 600" not in text:
            if "first word: PEAR" not in text:
                call = {
                    "description": "find a word",
                    "prompt": "The word is PEAR.",
                    "subagent_type": "general-purpose",
                }
                return Turn.tool("Agent", call)
            return Turn.tool("Bash", {"command": "sleep 600", "description": "wait a long time"})
        return Turn.text("unreachable: the sleep is killed")

    env = {"ANTHROPIC_API_KEY": "test-key"}
    before = 0
    try:
        with MessagesAPI(play) as api:
            env["ANTHROPIC_BASE_URL"] = api.url
            spawn = [
                "spawn",
                "alice",
                "--model",
                "sonnet",
                "--backend",
                "subprocess",
                "--permission-mode",
                "bypassPermissions",
                "--cwd",
                str(workdir),
            ]
            result = swarm(*spawn, "-p", "Remember the word PLUM. 'q' $(x) é", env=env)
            assert result.returncode == 0, result.stderr
            # the sub-agent answered, then alice is in the middle of `sleep 600`
            sleeping = "running Bash: sleep 600"
            wait_for(
                lambda: getattr(read_status(paths, "alice"), "activity", "") == sleeping, sleeping
            )
            sub = next(b for b in seen if "first word: PEAR" in words(b))
            sub_id.append(words(sub).split("agentId: ")[1].split(" ")[0])
            member = team.load().member("alice")
            pid = member_pid(member) if member is not None else None
            assert pid
            os.kill(pid, signal.SIGKILL)
            wait_for(
                lambda: swarm("status", "--json").stdout.count('"dead"') or None, "alice to be dead"
            )

            refused = swarm(*spawn, "-p", "again", env=env)  # the dead entry is still there
            assert refused.returncode != 0

            before = len(seen)
            resumed = swarm(*spawn, "--resume", env=env)
            assert resumed.returncode == 0, resumed.stderr
            wait_for(lambda: idle(team, "alice") or None, "the resumed alice to go idle")
            again = swarm(*spawn, "--resume", env=env)
            assert again.returncode != 0 and "still running" in again.stderr
            assert "Traceback" not in again.stderr
    finally:  # nothing left running, whatever failed
        swarm("shutdown", "alice", "--force")

    first = seen[before]
    history = first["messages"]
    assert "Remember the word PLUM. 'q' $(x) é" in json.dumps(history[0], ensure_ascii=False)
    # the call it never finished is answered, and the restart note follows in the same turn
    last = history[-1]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["content"] == INTERRUPTED
    assert "You were restarted" in json.dumps(last)
    # the sub-agent of the killed instance was resumed with its conversation
    sub_again = [
        b
        for b in seen[before:]
        if "and the second word?" in words(b) and "first word: PEAR" in words(b)
    ]
    assert sub_again, "the sub-agent was not resumed with its conversation"
    # the dead entry was reaped: the task went back, the lead was told, one alice in the roster
    notes = [
        e
        for e in Mailbox(paths).read_all("team-lead")
        if isinstance(e.structured(), TeammateTerminated)
    ]
    assert notes and "alice has stopped" in notes[0].structured().message


def test_resume_is_refused_without_a_conversation(paths: Any, workdir: Path) -> None:
    TeamFile(paths).create(cwd=workdir)
    env = {"ANTHROPIC_API_KEY": "test-key"}
    result = swarm(
        "spawn", "zed", "--model", "sonnet", "--resume", "--backend", "subprocess", env=env
    )
    assert result.returncode != 0 and "nothing to resume for 'zed'" in result.stderr
    assert "Traceback" not in result.stderr
    assert TeamFile(paths).load().member("zed") is None
    missing = swarm("spawn", "zed", "--model", "sonnet", env=env)
    assert missing.returncode != 0 and "--prompt" in missing.stderr


def test_swarm_restart_starts_a_member_again_with_the_options_it_had(
    paths: Any, workdir: Path
) -> None:
    """A live shell worker is stopped and started again with its recorded options (a new
    process, the same spec); a dead one is reaped and started; a misspelt name, and a member
    swarm did not start, are refused with the reason."""
    team = TeamFile(paths)
    team.create(cwd=workdir)
    spawn = ["spawn", "ann", "-p", "Work.", "--backend", "subprocess", "--cwd", str(workdir)]
    assert swarm(*spawn, "--ask", "git push*", "--permission-mode", "dontAsk").returncode == 0
    try:
        before = team.load().member("ann")
        assert before is not None
        restarted = swarm("restart", "ann")
        assert restarted.returncode == 0, restarted.stderr
        assert "restarted ann" in restarted.stdout and "fresh" in restarted.stdout
        after = team.load().member("ann")
        assert after is not None and member_pid(after) != member_pid(before)
        assert member_spec(after) == member_spec(before)
        assert after.prompt == "Work."
        pid = member_pid(after)
        assert pid
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: swarm("status", "--json").stdout.count('"dead"') or None, "ann dead")
        again = swarm("restart", "ann")
        assert again.returncode == 0, again.stderr
        latest = team.load().member("ann")
        assert latest is not None and member_spec(latest) == member_spec(before)
    finally:
        swarm("shutdown", "ann", "--force", "--wait", "5")
    typo = swarm("restart", "anne")
    assert typo.returncode == 1 and "no member named 'anne'" in typo.stderr
    team.add_member("cc", cwd=workdir)  # as a Claude Code lead adds its members: no spec
    foreign = swarm("restart", "cc")
    assert foreign.returncode == 1 and "was not started by swarm spawn" in foreign.stderr
