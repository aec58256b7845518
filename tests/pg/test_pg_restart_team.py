"""The server crashes and comes back while shell teammates work a board and answer messages:
they reconnect by themselves, finish the board, answer every message once, and live on.

Three teammates (``swarm spawn --backend subprocess --model shell``) on a PostgreSQL team work
tasks whose command appends the task's number to a file, while the lead keeps a conversation
going with them (a message, then its answer). Once the first three tasks are done, while the
teammates run the commands of the next ones (held on a gate file until the server is back), the
server is restarted with ``pg_ctl restart -m immediate`` (a crash: every connection cut,
recovery from the write-ahead log). What is checked, from the store's own record (`task_events`):

* every task completed once, under the epoch of its last claim, and no task claimed by one
  member while another's claim on it was still open;
* each task's line is in the file at least once, and more than once only if the task was
  claimed more than once (a command cut off before its completion was committed may
  legitimately run again under a new claim); without a lease running out, that is once;
* every message whose `send` returned was answered exactly once, and is marked read;
* afterwards every teammate is still running, has heartbeated its lease again, and answers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import swarm, wait_for
from pg_cli import url_of
from pg_server import TemporaryServer

from protocols.paths import TeamPaths
from protocols.pg import Database, PgMailbox, PgTaskBoard
from protocols.store.selection import locate
from protocols.tasks.board import NewTask
from swarm.team.signatures import lead_mailbox

pytestmark = pytest.mark.slow

NAMES = ("ann", "bob", "cat")
TASKS = 18
AFTER_RESTART = 4  # messages the lead sends once the server is back
FREE = 3  # tasks whose command runs at once; the rest wait for the gate opened after the crash


def answers(db: Database, text: str) -> int:
    """How many answers to the message `text` the lead has."""
    wanted = f"Received: {text!r}."
    return sum(e.text.startswith(wanted) for e in PgMailbox(db, "t").peek_all("team-lead"))


def converse(paths: TeamPaths, conninfo: str, restarted: threading.Event, sent: list[str]) -> None:
    """The lead's side: a message to each teammate in turn, each after the last was answered,
    until the server was restarted and `AFTER_RESTART` more went out. Runs in a thread, with
    its own connections; `sent` gets each message whose send returned."""
    mailbox = lead_mailbox(paths)
    with Database(conninfo, reconnect_s=90.0) as db:
        after = 0
        while after < AFTER_RESTART and len(sent) < 200:
            after += restarted.is_set()
            text = f"note {len(sent)}"
            mailbox.send(NAMES[len(sent) % len(NAMES)], text, sender="team-lead")
            sent.append(text)
            wait_for(lambda text=text: answers(db, text), f"the answer to {text!r}", 120)


def test_teammates_ride_out_a_server_crash_mid_run(
    pg_server: TemporaryServer, conninfo: str, db: Database, config_root: Path, tmp_path: Path
) -> None:
    url = url_of(conninfo)
    assert swarm("team", "create", "t", "--store", url, team=None).returncode == 0
    paths = locate("t", config_root)
    work = tmp_path / "work"
    work.mkdir()
    pids = {}
    for name in NAMES:
        spawned = swarm(
            "spawn", name, "--backend", "subprocess", "--model", "shell", "--prompt", "work",
            "--cwd", str(work), "--json",
        )  # fmt: skip
        assert spawned.returncode == 0, spawned.stderr
        pids[name] = member_pid(db, name)
    out, gate = work / "done.txt", work / "gate"
    board = PgTaskBoard(db, "t")
    # the first tasks run through; the others wait for the gate, opened once the server is
    # back: so the crash comes while commands are running and before the board is done,
    # however slowly this test process looks at the board
    board.create_many(
        [
            NewTask(f"task {n}", metadata={"command": f"{wait_for_gate(gate, n)}echo {n} >> {out}"})
            for n in range(TASKS)
        ]
    )
    restarted, sent = threading.Event(), []  # type: threading.Event, list[str]
    lead = threading.Thread(target=converse, args=(paths, conninfo, restarted, sent))
    lead.start()
    try:
        # the session's earlier tests left WAL behind (a database each): a crash would replay
        # it all, for longer than a teammate waits for its store; this test is about the
        # reconnecting, not the server's recovery
        db.run(lambda c: c.execute("CHECKPOINT"))
        wait_for(lambda: completed(board) >= FREE, "the free tasks done")
        before = completed(board)
        pg_server.restart("immediate")
        restarted.set()
        gate.touch()
        lead.join(timeout=240)
        check_the_run(db, out, before, lead, sent, pids)
    finally:
        restarted.set()
        for pid in pids.values():  # each releases what it holds and exits
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        lead.join(timeout=240)


def wait_for_gate(gate: Path, n: int) -> str:
    """The start of task `n`'s command: nothing for the first three, else a wait for `gate`."""
    return "" if n < FREE else f"while [ ! -e '{gate}' ]; do sleep 0.05; done; "


def check_the_run(
    db: Database,
    out: Path,
    before: int,
    lead: threading.Thread,
    sent: list[str],
    pids: dict[str, int],
) -> None:
    board = PgTaskBoard(db, "t")
    assert before < TASKS, "the board was done before the restart"
    assert not lead.is_alive() and len(sent) >= AFTER_RESTART
    leases = lease_ends(db)  # as the server came back
    wait_for(lambda: completed(board) == TASKS, "the board finished after the restart", 90)

    events = db.run(
        lambda c: c.execute(
            "SELECT task_id, event, agent, epoch FROM task_events WHERE team = 't' ORDER BY seq"
        ).fetchall()
    )
    claims = check_claims(events)
    lines = Counter(out.read_text().split())
    for n in range(TASKS):
        task_id = str(n + 1)
        assert 1 <= lines[str(n)] <= claims[task_id], (task_id, lines[str(n)], claims[task_id])

    for text in sent:
        assert answers(db, text) == 1, text
    unread = [e.text for name in NAMES for e in PgMailbox(db, "t").read_unread(name)]
    assert unread == []

    wait_for(lambda: all(lease_ends(db)[n] > leases[n] for n in NAMES), "heartbeats again")
    for name in NAMES:
        os.kill(pids[name], 0)  # still running
        assert swarm("send", name, f"still there, {name}?").returncode == 0
        wait_for(lambda name=name: answers(db, f"still there, {name}?"), f"{name}'s answer")


def completed(board: PgTaskBoard) -> int:
    return sum(t.status == "completed" for t in board.list())


def member_pid(db: Database, name: str) -> int:
    found = db.run(
        lambda c: c.execute(
            "SELECT data->>'pid' FROM members WHERE team = 't' AND name = %s", [name]
        ).fetchone()
    )
    assert found is not None and found[0], name
    return int(found[0])


def lease_ends(db: Database) -> dict[str, Any]:
    rows = db.run(
        lambda c: c.execute(
            "SELECT name, lease_expires_at FROM members WHERE team = 't' AND alive"
        ).fetchall()
    )
    return dict(rows)


def check_claims(events: list[tuple[int, str, str | None, int]]) -> Counter[str]:
    """Each task completed once, under its last claim's epoch, never claimed while another
    claim on it was open; returns how many times each task was claimed."""
    holder: dict[str, tuple[str | None, int]] = {}
    claims: Counter[str] = Counter()
    done: Counter[str] = Counter()
    for number, event, agent, epoch in events:
        task = str(number)
        if event == "claimed":
            assert task not in holder, f"#{task} claimed by {agent} while {holder[task]} held it"
            holder[task] = (agent, epoch)
            claims[task] += 1
        elif event == "released":
            holder.pop(task, None)
        elif event == "completed":
            assert holder.pop(task, (None, None))[1] == epoch, f"#{task} completed off its claim"
            done[task] += 1
    assert done == Counter({str(n + 1): 1 for n in range(TASKS)})
    return claims
