"""A Claude teammate sends its model request before it writes anything about the turn (``isActive``,
its status file, its transcript: `teammate.agent.loop`), and marks the message read only once the
turn that answers it has ended; a message that arrives mid-turn is handed to the model between
two of its requests and read when that turn ends, too. With real processes: the teammate is
killed with SIGKILL while its request for a message is at the model (the local Messages API
server holds the answer back), and the message is still unread; the teammate restarted with its
conversation answers it, and only then is it read. Nothing is lost at the worst moment."""

from __future__ import annotations

import json
import os
import signal
import threading
from typing import Any

from helpers import swarm, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import IdleNotification
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.team.members import member_pid

PING = "PING-7f3a: what is the answer?"
START = "START-19c2: list the tasks."
MIDTURN = "MIDTURN-5b7e: also check the docs."


def idle_notes(paths: TeamPaths) -> int:
    return sum(
        1
        for e in Mailbox(paths).read_all("team-lead")
        if isinstance(e.structured(), IdleNotification) and e.from_ == "alice"
    )


def start_alice(paths: TeamPaths, workdir: Any, env: dict[str, str]) -> None:
    """Spawn alice, a Claude teammate, as a subprocess; return once her first turn is over."""
    spawn = ["spawn", "alice", "--model", "sonnet", "--backend", "subprocess"]
    spawn += ["--cwd", str(workdir)]
    result = swarm(*spawn, "-p", "Say you are ready.", env=env)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: idle_notes(paths) >= 1, "alice idle after her prompt")


def kill_alice(team: TeamFile) -> None:
    """SIGKILL alice; return once `swarm status` sees her dead."""
    member = team.load().member("alice")
    pid = member_pid(member) if member is not None else None
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: '"dead"' in swarm("status", "--json").stdout, "alice dead")


def test_a_teammate_killed_while_its_request_is_out_answers_the_message_again(
    paths: TeamPaths, workdir: Any
) -> None:
    team = TeamFile(paths)
    team.create(description="request first", cwd=workdir)
    held = threading.Event()  # the first request for PING reached the model
    release = threading.Event()  # lets that request's handler end (after the kill)
    asked: list[int] = []  # one entry per request that carries PING

    def play(body: dict[str, Any]) -> Turn:
        last = json.dumps(body["messages"][-1], ensure_ascii=False)
        if PING not in last:
            return Turn.text("ready")
        asked.append(len(asked))
        if len(asked) == 1:
            held.set()
            release.wait(120)  # the teammate is killed meanwhile
            return Turn.text("too late: nobody is listening")
        return Turn.text("the answer is 42")

    env = {"ANTHROPIC_API_KEY": "test-key"}
    mailbox = Mailbox(paths)
    try:
        with MessagesAPI(play, concurrent=True) as api:
            env["ANTHROPIC_BASE_URL"] = api.url
            start_alice(paths, workdir, env)

            mailbox.send("alice", PING, sender="team-lead", summary="ping")
            wait_for(held.is_set, "alice's request for the message at the model")
            kill_alice(team)  # the request is out; its turn has not ended

            # not lost: still unread, for whoever takes the name next
            assert [e.text for e in mailbox.read_unread("alice")] == [PING]

            restarted = swarm("restart", "alice", "--resume", env=env)
            assert restarted.returncode == 0, restarted.stderr
            wait_for(lambda: len(asked) >= 2, "the restarted alice asking about the message")
            wait_for(lambda: not mailbox.read_unread("alice"), "the message read once answered")
    finally:
        release.set()
        swarm("shutdown", "alice", "--force", "--wait", "5")
    # answered once by each instance: delivered at least once, never dropped
    assert len(asked) == 2
    assert [(e.text, e.read) for e in mailbox.peek_all("alice") if e.text == PING] == [(PING, True)]


def test_a_message_taken_up_mid_turn_is_still_unread_when_the_teammate_dies(
    paths: TeamPaths, workdir: Any
) -> None:
    team = TeamFile(paths)
    team.create(description="mid-turn", cwd=workdir)
    mailbox = Mailbox(paths)
    held = threading.Event()  # the request carrying MIDTURN reached the model
    release = threading.Event()
    carried: list[int] = []  # one entry per request whose last message carries MIDTURN
    sent: list[Any] = []  # MIDTURN is sent once, during the first turn

    def play(body: dict[str, Any]) -> Turn:
        last = json.dumps(body["messages"][-1], ensure_ascii=False)
        if MIDTURN in last:
            carried.append(len(carried))
            if len(carried) == 1:
                held.set()
                release.wait(120)  # the teammate is killed meanwhile
                return Turn.text("too late")
            return Turn.text("docs checked")
        if START in last and not sent:
            # arrives while the turn goes on: the teammate hands it over after the tool call
            sent.append(mailbox.send("alice", MIDTURN, sender="team-lead", summary="the docs"))
            return Turn.tool("TaskList", {})
        return Turn.text("ready")

    env = {"ANTHROPIC_API_KEY": "test-key"}
    try:
        with MessagesAPI(play, concurrent=True) as api:
            env["ANTHROPIC_BASE_URL"] = api.url
            start_alice(paths, workdir, env)

            mailbox.send("alice", START, sender="team-lead", summary="start")
            wait_for(held.is_set, "the request carrying the mid-turn message at the model")
            kill_alice(team)  # the message is in a request; the turn has not ended

            unread = [e.text for e in mailbox.read_unread("alice")]
            assert MIDTURN in unread, unread  # not lost: answered again after a restart

            restarted = swarm("restart", "alice", "--resume", env=env)
            assert restarted.returncode == 0, restarted.stderr
            wait_for(lambda: len(carried) >= 2, "the restarted alice taking up the message")
            wait_for(lambda: not mailbox.read_unread("alice"), "every message read once answered")
    finally:
        release.set()
        swarm("shutdown", "alice", "--force", "--wait", "5")
    history = [(e.text, e.read) for e in mailbox.peek_all("alice") if e.text == MIDTURN]
    assert history == [(MIDTURN, True)]
