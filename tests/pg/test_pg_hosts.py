"""Hosts on a PostgreSQL team: a lead on one "machine", a `swarm host serve` agent on another,
and teammates spawned there on request; liveness judged by lease, across them.

A machine here is a config root of its own (its own ``HOME`` and ``CLAUDE_CONFIG_DIR``, its own
working directory); the host agent and the teammates it starts run in process groups of their
own (``start_new_session``), so a test can kill or freeze a whole "machine". Everything is real:
`swarm` processes, the host agent, `python -m teammate`, the server. Waits are on conditions
with deadlines, never on time; task commands that must be caught mid-task wait for a gate file
that the test creates."""

from __future__ import annotations

import json
import os
import shlex
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, wait_for
from machines import HostAgent, Machine, machine, serve, stop
from pg_cli import url_of

from protocols.pg import Database, Leases, PgMailbox, PgTaskBoard
from protocols.pg.hosts import Hosts
from protocols.pids import pid_alive

pytestmark = pytest.mark.slow

SHORT_LEASE_S = "2"  # the lease on the host that a test cuts off or kills


@pytest.fixture
def lead_and_host(tmp_path: Path, conninfo: str) -> Iterator[tuple[Machine, Machine]]:
    """Machine a, for the lead, and machine b, for a host; both reach the test's database."""
    yield machine(tmp_path, "a", url_of(conninfo)), machine(tmp_path, "b", url_of(conninfo))


def start_team(
    a: Machine, b: Machine, db: Database, inside: Callable[[list[str]], list[str]] | None = None
) -> HostAgent:
    a.swarm("team", "create", "t")
    agent = serve(b, "b", inside)
    wait_for(lambda: Hosts(db, "t").alive().get("b"), "host b to register")
    return agent


def spawn_on_b(a: Machine, name: str) -> dict[str, object]:
    result = a.swarm(
        "spawn", name, "--host", "b", "--backend", "subprocess", "--model", "shell",
        "--prompt", "work the board", "--json",
    )  # fmt: skip
    answer = json.loads(result.stdout)
    assert isinstance(answer, dict)
    return answer


def gated(gate: Path, log: Path, started: Path | None = None) -> str:
    """A task command that waits for `gate`, then writes its working directory to `log`; it
    first writes that directory to `started`, if given (the command is running)."""
    wait = f"until [ -e {shlex.quote(str(gate))} ]; do sleep 0.05; done; pwd >> {shlex.quote(str(log))}"
    return wait if started is None else f"pwd >> {shlex.quote(str(started))}; {wait}"


def events(db: Database) -> list[tuple[int, str, str, int]]:
    return db.run(
        lambda c: c.execute(
            "SELECT task_id, event, agent, epoch FROM task_events WHERE team = 't' ORDER BY seq"
        ).fetchall()
    )


def lease_ran_out(db: Database, name: str) -> bool:
    left = Leases(db, "t").view()[name].left_s
    return left is not None and left < 0


def b_works_the_board(a: Machine, b: Machine, db: Database) -> dict[str, Any]:
    """A asks host b for teammate w1, which does two dependent tasks there, in b's directory,
    in order, and shows alive by its lease on b (shared with the network-namespace test).
    Returns the host's answer to the spawn."""
    a.swarm("task", "add", "first", "--command", "echo one > first.txt")
    a.swarm("task", "add", "second", "--command", "echo two > second.txt", "--blocked-by", "1")
    answer = spawn_on_b(a, "w1")
    assert answer["host"] == "b" and answer["backend"] == "subprocess"
    done = a.swarm("wait", "--all-tasks", "--timeout", str(DEADLINE_S))
    assert done.stdout.startswith("met: all 2 tasks completed"), done.stdout
    assert [(t, e, who) for t, e, who, _ in events(db)] == [
        (1, "claimed", "w1"), (1, "completed", "w1"),
        (2, "claimed", "w1"), (2, "completed", "w1"),
    ]  # fmt: skip
    assert (b.work / "first.txt").exists() and (b.work / "second.txt").exists()
    assert not (a.work / "first.txt").exists()  # it ran on b, in b's directory
    [w1] = [m for m in a.json("status")["members"] if m["name"] == "w1"]
    assert w1["state"] in ("idle", "working") and w1["host"] == "b"
    assert w1["lease_s"] is not None and w1["lease_s"] > 0
    return answer


def test_a_teammate_spawned_on_another_host_works_the_board_and_shows_alive_by_its_lease(
    lead_and_host: tuple[Machine, Machine], db: Database
) -> None:
    a, b = lead_and_host
    agent = start_team(a, b, db)
    try:
        answer = b_works_the_board(a, b, db)
        hosts = a.json("host", "list")
        assert [(h["name"], h["alive"]) for h in hosts] == [("b", True)]

        shutdown = a.json("shutdown", "w1")
        assert shutdown["outcome"] == "approved" and shutdown["stopped"], shutdown
        pid = int(str(answer["pid"]))
        wait_for(lambda: not pid_alive(pid), "w1's process on b to exit")
        spawned = Hosts(db, "t").last_spawn("w1")
        assert spawned is not None and spawned.outcome is not None
        assert spawned.outcome["pid"] == pid
        exited = wait_for(lambda: Hosts(db, "t").get(spawned.id).exited, "b to record the exit")
        assert exited["code"] == 0
        assert [m["name"] for m in a.json("status")["members"]] == ["team-lead"]
    finally:
        stop(agent)
    assert agent.process.returncode == 0, agent.output()
    assert not Hosts(db, "t").alive()["b"]  # it left: dead at once, not at its lease's end


def test_spawn_on_a_host_that_is_not_alive_or_on_a_file_team_is_a_clear_error(
    lead_and_host: tuple[Machine, Machine], db: Database
) -> None:
    a, b = lead_and_host
    agent = start_team(a, b, db)
    stop(agent)
    assert agent.process.returncode == 0, agent.output()
    refused = a.swarm("spawn", "w1", "--host", "b", "-p", "go", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "host 'b' is not alive" in refused.stderr and "live hosts: none" in refused.stderr
    unknown = a.swarm("spawn", "w1", "--host", "nowhere", "-p", "go", check=False)
    assert "has never served this team" in unknown.stderr
    here = {k: v for k, v in a.env.items() if k != "SWARM_STORE"}
    files = Machine(a.root, a.work, {**here, "SWARM_TEAM": "f"})  # a team in files on a
    files.swarm("team", "create", "f")
    in_files = files.swarm("spawn", "w1", "--host", "b", "-p", "go", check=False)
    assert in_files.returncode == 1 and "needs a team on PostgreSQL" in in_files.stderr


def test_a_killed_host_s_task_goes_back_by_lease_and_is_done_once_on_another_host(
    tmp_path: Path, conninfo: str, db: Database
) -> None:
    a = machine(tmp_path, "a", url_of(conninfo))
    b = machine(tmp_path, "b", url_of(conninfo), SWARM_LEASE_S=SHORT_LEASE_S)
    gate, log = tmp_path / "gate", tmp_path / "finished-in.txt"
    agent = start_team(a, b, db)
    try:
        a.swarm("task", "add", "gated", "--command", gated(gate, log))
        pid = int(str(spawn_on_b(a, "w1")["pid"]))
        board = PgTaskBoard(db, "t")
        wait_for(lambda: (t := board.get("1")) and t.owner == "w1", "w1 to claim the task")
        agent.signal_group(signal.SIGKILL)  # the whole machine b: its agent and its teammate
        os.killpg(pid, signal.SIGKILL)
        agent.process.wait()
        wait_for(lambda: not pid_alive(pid), "w1 to be gone")

        wait_for(lambda: lease_ran_out(db, "w1"), "w1's lease to run out")
        [dead] = a.json("reap")
        assert (dead["name"], dead["released"]) == ("w1", ["1"])
        task = board.get("1")
        assert task is not None and (task.status, task.owner) == ("pending", None)
        notes = [e.text for e in PgMailbox(db, "t").peek_all("team-lead")]
        assert any("teammate_terminated" in n and "w1 has stopped" in n for n in notes), notes

        a.swarm("spawn", "w2", "--backend", "subprocess", "--model", "shell", "-p", "go")
        gate.touch()
        done = a.swarm("wait", "--all-tasks", "--timeout", str(DEADLINE_S))
        assert done.stdout.startswith("met: all 1 tasks completed"), done.stdout
        assert log.read_text().splitlines() == [str(a.work)]  # finished on a, once
        completed = [(who, epoch) for _, e, who, epoch in events(db) if e == "completed"]
        assert completed == [("w2", 3)]  # claimed by w1 (1), released (2), claimed by w2 (3)
    finally:
        a.swarm("team", "delete", "t", "--force", check=False)  # w2 stopped with it
        stop(agent)


def test_a_cut_off_teammate_s_late_completion_is_refused_by_the_fence(
    tmp_path: Path, conninfo: str, db: Database
) -> None:
    a = machine(tmp_path, "a", url_of(conninfo))
    b = machine(tmp_path, "b", url_of(conninfo), SWARM_LEASE_S=SHORT_LEASE_S)
    gate, log = tmp_path / "gate", tmp_path / "finished-in.txt"
    agent = start_team(a, b, db)
    frozen: list[int] = []
    try:
        a.swarm("task", "add", "gated", "--command", gated(gate, log))
        pid = int(str(spawn_on_b(a, "w1")["pid"]))
        board = PgTaskBoard(db, "t")
        wait_for(lambda: (t := board.get("1")) and t.owner == "w1", "w1 to claim the task")
        frozen += [pid, agent.process.pid]
        os.killpg(pid, signal.SIGSTOP)  # machine b cut off: its teammate and its agent
        agent.signal_group(signal.SIGSTOP)

        wait_for(lambda: lease_ran_out(db, "w1"), "w1's lease to run out")
        members = a.json("status")["members"]
        assert next(m["state"] for m in members if m["name"] == "w1") == "dead"
        assert pid_alive(pid)  # its process is there (stopped): the lease decided, not the pid
        assert [r["name"] for r in a.json("reap")] == ["w1"]
        a.swarm("spawn", "w2", "--backend", "subprocess", "--model", "shell", "-p", "go")
        wait_for(lambda: (t := board.get("1")) and t.owner == "w2", "w2 to take the task")
        gate.touch()
        os.killpg(pid, signal.SIGCONT)  # w1 wakes first, finishes its command, reports
        frozen.remove(pid)

        wait_for_refused_completion(db, b.root)
        wait_for(lambda: board.get("1").status == "completed", "w2 to finish")
        agent.signal_group(signal.SIGCONT)  # its agent stops a teammate that is no member now
        frozen.remove(agent.process.pid)
        wait_for(lambda: not pid_alive(pid), "host b to stop w1")
        completed = [(who, epoch) for _, e, who, epoch in events(db) if e == "completed"]
        assert completed == [("w2", 3)]
        task = board.get("1")
        assert task is not None and task.owner == "w2"
        # both commands ran (the fence guards the board, not the world), the task is done once
        assert sorted(log.read_text().splitlines()) == sorted([str(a.work), str(b.work)])
        assert Leases(db, "t").view()["w2"].held
    finally:
        for frozen_pid in frozen:
            os.killpg(frozen_pid, signal.SIGCONT)
        a.swarm("team", "delete", "t", "--force", check=False)  # w2 stopped with it
        stop(agent)


def wait_for_refused_completion(db: Database, b_root: Path) -> None:
    """Until w1 tells the lead its completion of #1 was refused by the fence (its log shown if
    that never comes)."""

    def refused() -> list[str]:
        return [
            e.text
            for e in PgMailbox(db, "t").peek_all("team-lead")
            if e.from_ == "w1" and "#1 was done, but" in e.text
        ]

    try:
        wait_for(refused, "w1's completion to be refused")
    except AssertionError as exc:
        w1_log = b_root / "teams" / "t" / "logs" / "w1.log"
        raise AssertionError(f"{exc}\nw1's log:\n{w1_log.read_text()}") from None
