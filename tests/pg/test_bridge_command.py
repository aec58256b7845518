"""`swarm bridge` as a process on a PostgreSQL team: messages both ways arrive once each, also
when the bridge is killed with SIGKILL in the middle and started again; `--once`, `--json`, and
the one-line error for a team that is not in PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import Processes, wait_for
from pg_cli import ok, swarm
from procs import live_items

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pg import Database, PgMailbox, PgTeamFile

pytestmark = pytest.mark.slow

ROUNDS = 40  # messages each way before the kill, and as many after it


def start_bridge(procs: Processes, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "SWARM_STORE"}
    env["SWARM_TEAM"] = "t"
    argv = [sys.executable, "-m", "swarm", "bridge", "--member", "alice", "--rescan", "1"]
    return procs.start(argv, env=env)


def test_messages_cross_once_each_way_across_a_killed_bridge(
    pg_team_t: str,
    db: Database,
    home: Path,
    config_root: Path,
) -> None:
    for name in ("alice", "bob"):
        PgTeamFile(db, "t").add_member(name, cwd=home)
    files = TeamPaths(config_root, "t")
    store = PgMailbox(db, "t")
    procs = Processes(home)
    try:
        first = start_bridge(procs, home)
        wait_for(lambda: files.config.exists(), "the bridge's first pass")
        local = Mailbox(files)

        def send(start: int) -> None:
            for n in range(start, start + ROUNDS):
                local.send("bob", f"up {n}", sender="alice", message_id=f"up-{n}")
                store.send("alice", f"down {n}", sender="bob", message_id=f"down-{n}")

        send(0)
        wait_for(lambda: store.peek_all("bob") and files.inbox("alice").exists(), "a first carry")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        send(ROUNDS)
        start_bridge(procs, home)
        wait_for(lambda: len(store.peek_all("bob")) == 2 * ROUNDS, "every message up")
        wait_for(lambda: len(live_items(files, "alice")) >= 2 * ROUNDS, "every message down")
        # stored first, then marked in the file: wait for the second step before the last look
        wait_for(lambda: Mailbox(files).read_unread("bob") == [], "the outbox marked carried")
    finally:
        procs.close()
    up = Counter(e.text for e in store.peek_all("bob"))
    assert up == Counter(f"up {n}" for n in range(2 * ROUNDS))
    down = Counter(i["text"] for i in live_items(files, "alice"))
    assert down == Counter(f"down {n}" for n in range(2 * ROUNDS))  # none twice in the file
    assert len(store.peek_all("bob")) == 2 * ROUNDS  # marking the outbox stored nothing again
    PgTeamFile(db, "t").remove_member("alice")  # no process, lease running: as below


def test_sigterm_ends_the_bridge_cleanly(
    pg_team_t: str,
    db: Database,
    home: Path,
    config_root: Path,
) -> None:
    """SIGTERM (as Ctrl-C) ends the bridge's loop, relayed to a thread rather than handled in a
    signal handler that sets the loop's events (`swarm.signal_relay`): exit 0. (The members'
    leases then run out, as the bridge's leases module says: their processes may live on.)"""
    PgTeamFile(db, "t").add_member("alice", cwd=home)
    files = TeamPaths(config_root, "t")
    procs = Processes(home)
    try:
        bridge = start_bridge(procs, home)
        wait_for(lambda: files.config.exists(), "the bridge's first pass")
        bridge.send_signal(signal.SIGTERM)
        wait_for(lambda: bridge.poll() is not None, "the bridge to end on SIGTERM")
    finally:
        procs.close()
    # alice is a roster entry with no process, her lease still running: without this, the
    # fixture's `team delete --force` would wait 10 s for her to answer a shutdown request
    PgTeamFile(db, "t").remove_member("alice")
    assert bridge.returncode == 0, bridge.stderr.read() if bridge.stderr else ""


def test_once_json_and_a_files_team_refused(
    pg_team_t: str,
    db: Database,
    home: Path,
    config_root: Path,
) -> None:
    PgTeamFile(db, "t").add_member("alice", cwd=home)
    PgMailbox(db, "t").send("alice", "hello", sender="team-lead")
    value = json.loads(ok(swarm("bridge", "--member", "alice", "--once", "--json", cwd=home)))
    assert value == {"messages": 1, "tasks": 0, "roster": True}
    assert [i["text"] for i in live_items(TeamPaths(config_root, "t"), "alice")] == ["hello"]
    ok(swarm("team", "create", "plain", cwd=home, team=None))
    refused = swarm("bridge", "--once", cwd=home, team="plain")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "not in PostgreSQL" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
