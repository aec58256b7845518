"""Restarting and resuming a teammate that runs on a host: `swarm restart NAME` (with and without
--resume) and `swarm spawn NAME --resume --host H`, from the lead's machine, done by the
member's `swarm host serve` on its own machine, where its transcript (its conversation) lives.

Two config roots are two machines (`test_pg_hosts.machine`); the host agent and the teammates
are real processes; a Claude teammate's model is the test suite's Messages API server."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, wait_for
from messages_api import MessagesAPI, Turn
from pg_cli import url_of
from test_pg_hosts import machine, spawn_on_b, start_team, stop

from protocols.messages.models import IdleNotification
from protocols.paths import TeamPaths
from protocols.pg import Database, Leases, PgMailbox
from protocols.pids import pid_alive

pytestmark = pytest.mark.slow


def test_a_shell_teammate_on_a_host_is_restarted_there(
    tmp_path: Path, conninfo: str, db: Database
) -> None:
    a = machine(tmp_path, "a", url_of(conninfo))
    b = machine(tmp_path, "b", url_of(conninfo))
    agent = start_team(a, b, db)
    try:
        first = spawn_on_b(a, "w1")
        old_pid = int(str(first["pid"]))
        wait_for(lambda: Leases(db, "t").view()["w1"].left_s, "w1's first heartbeat")

        again = a.json("restart", "w1", "--wait", str(DEADLINE_S))
        assert (again["name"], again["host"], again["backend"]) == ("w1", "b", "subprocess")
        assert again["resumed"] is False and again["pid"] != old_pid
        wait_for(lambda: not pid_alive(old_pid), "the first w1 on b to exit")
        spawns = _spawns(db, "w1")
        assert [s["pid"] for s in spawns] == [old_pid, again["pid"]]  # both done by host b

        a.swarm("task", "add", "after", "--command", "pwd > where.txt")
        done = a.swarm("wait", "--all-tasks", "--timeout", str(DEADLINE_S))
        assert done.stdout.startswith("met: all 1 tasks completed"), done.stdout
        assert (b.work / "where.txt").read_text().strip() == str(b.work)  # on b, as before
        [w1] = [m for m in a.json("status")["members"] if m["name"] == "w1"]
        assert w1["host"] == "b" and w1["state"] in ("idle", "working")
    finally:
        a.swarm("team", "delete", "t", "--force", check=False)
        stop(agent)
    assert agent.process.returncode == 0, agent.output()


def test_a_claude_teammate_on_a_host_resumes_its_conversation_there(
    tmp_path: Path, conninfo: str, db: Database
) -> None:
    """Spawned on b with a word to remember; `swarm restart --resume` on a: the new instance on
    b asks the model with the earlier conversation. Killed on b; `swarm spawn --resume` on a
    without --host says where; with --host b it resumes again, from b's transcript."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    def play(body: dict[str, Any]) -> Turn:
        with lock:
            seen.append(body)
        return Turn.text("noted")

    def asked(*words: str) -> list[dict[str, Any]]:
        with lock:
            return [b for b in seen if all(w in json.dumps(b["messages"]) for w in words)]

    with MessagesAPI(play, concurrent=True) as api:
        model_env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url}
        a = machine(tmp_path, "a", url_of(conninfo))
        b = machine(tmp_path, "b", url_of(conninfo), **model_env)
        agent = start_team(a, b, db)
        lead = PgMailbox(db, "t")
        try:
            spawn = ["spawn", "alice", "--host", "b", "--model", "sonnet"]
            spawn += ["--backend", "subprocess", "--json"]
            first = json.loads(a.swarm(*spawn, "-p", "The word is PEAR-7.").stdout)
            assert first["resumed"] is False
            wait_for(lambda: _idle(lead, "alice") >= 1, "alice idle after her first turn")
            assert asked("PEAR-7")
            on_b = TeamPaths(b.root, "t").transcript("alice")
            assert on_b.exists() and not TeamPaths(a.root, "t").transcript("alice").exists()

            again = a.json("restart", "alice", "--resume", "--wait", str(DEADLINE_S))
            assert (again["host"], again["resumed"]) == ("b", True)
            assert again["pid"] != first["pid"]
            wait_for(lambda: asked("PEAR-7", "You were restarted"), "the resumed alice's turn")

            pid = int(again["pid"])
            wait_for(lambda: _idle(lead, "alice") >= 2, "the resumed alice idle")
            os.kill(pid, signal.SIGKILL)  # her process on b dies; b's agent declares her dead
            wait_for(lambda: not Leases(db, "t").view()["alice"].alive, "alice declared dead")

            here = a.swarm("spawn", "alice", "--resume", "--model", "sonnet", check=False)
            assert here.returncode == 1 and "Traceback" not in here.stderr
            assert "ran on host 'b'" in here.stderr and "--resume --host b" in here.stderr

            before = len(asked("PEAR-7", "You were restarted"))
            resumed = json.loads(
                a.swarm(
                    "spawn", "alice", "--resume", "--host", "b", "--model", "sonnet", "--json"
                ).stdout
            )
            assert resumed["resumed"] is True and resumed["host"] == "b"
            wait_for(
                lambda: len(asked("PEAR-7", "You were restarted")) > before,
                "alice resumed by spawn --resume --host",
            )
            live = a.swarm(
                "spawn", "alice", "--resume", "--host", "b", "--model", "sonnet", check=False
            )
            assert live.returncode == 1 and "still running on host 'b'" in live.stderr
            assert len(_spawns(db, "alice")) == 3
            # each first message was signed on a (b holds no key of the lead's), and obeyed
            resumes = [e for e in lead.peek_all("alice") if "You were restarted" in e.text]
            assert len(resumes) == 2 and all(e.to_json_dict().get("lead_sig") for e in resumes)
            assert not TeamPaths(b.root, "t").lead_key.exists()
        finally:
            a.swarm("team", "delete", "t", "--force", check=False)
            stop(agent)
    assert agent.process.returncode == 0, agent.output()


def _idle(mailbox: PgMailbox, name: str) -> int:
    return sum(
        1
        for e in mailbox.peek_all("team-lead")
        if e.from_ == name and isinstance(e.structured(), IdleNotification)
    )


def _spawns(db: Database, member: str) -> list[dict[str, Any]]:
    """The outcomes of the member's answered spawn requests, oldest first."""
    rows = db.run(
        lambda c: c.execute(
            "SELECT outcome FROM host_requests WHERE team = 't' AND member = %s "
            "AND kind = 'spawn' AND state = 'done' ORDER BY id",
            [member],
        ).fetchall()
    )
    return [row[0] for row in rows]
