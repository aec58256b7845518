"""A human-led team end to end through the `swarm` command, once with tmux panes (a private tmux
server per test) and once with subprocesses: spawn three shell workers, feed a dependency graph,
shut down, delete; a worker killed while holding a task; a stale shutdown request; bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BACKENDS, panes, swarm, wait_for

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


def spawn(name: str, backend: str, cwd: Path, prompt: str = "Work the board.") -> None:
    result = swarm("spawn", name, "--prompt", prompt, "--backend", backend, "--cwd", str(cwd))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_three_workers_complete_a_dependency_graph_then_leave_nothing_behind(
    backend: str, tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    for name in ("w1", "w2", "w3"):
        spawn(name, backend, tmp_path)
    pids = [m.model_extra["pid"] for m in TeamFile(TeamPaths(config_root, "t")).load().members[1:]]
    # 8 tasks: 1 -> {2, 3} -> 4; 5 -> 6; 7; 8 blocked by 4 and 6
    graph = {1: [], 2: [1], 3: [1], 4: [2, 3], 5: [], 6: [5], 7: [], 8: [4, 6]}
    for task_id, blockers in graph.items():
        args = ["task", "add", f"step {task_id}", "--command", f"echo {task_id} >> log.txt"]
        for blocker in blockers:
            args += ["--blocked-by", str(blocker)]
        assert swarm(*args).stdout.strip() == str(task_id)
    board = TaskBoard(TeamPaths(config_root, "t"))
    wait_for(
        lambda: all(t.status == "completed" for t in board.list()),
        "every task completed",
        timeout=60,
    )
    order = [int(line) for line in (tmp_path / "log.txt").read_text().split()]
    assert sorted(order) == list(graph)  # each exactly once
    for task_id, blockers in graph.items():
        assert all(order.index(b) < order.index(task_id) for b in blockers), order
    if backend == "tmux":
        assert sorted(panes(tmux_socket)) == ["w1", "w2", "w3"]
    for name in ("w1", "w2", "w3"):
        result = swarm("shutdown", name)
        assert result.returncode == 0 and "approved" in result.stdout, result.stderr
    assert swarm("team", "delete", "t", team=None).returncode == 0
    assert not any(pid_alive(pid) for pid in pids)
    assert panes(tmux_socket) == []
    assert not (config_root / "teams" / "t").exists() and not (config_root / "tasks" / "t").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_killed_while_holding_a_task_is_reaped_and_the_task_done_by_another(
    backend: str, tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    swarm("team", "create", "t", team=None)
    spawn("w1", backend, tmp_path)
    command = "if [ -e tried ]; then echo finished > done.txt; else touch tried; sleep 60; fi"
    swarm("task", "add", "slow the first time", "--command", command)
    team = TeamFile(TeamPaths(config_root, "t"))
    board = TaskBoard(team.paths)
    wait_for(
        lambda: board.require("1").owner == "w1" and (tmp_path / "tried").exists(),
        "w1 to start the task",
    )
    os.kill(team.load().member("w1").model_extra["pid"], signal.SIGKILL)
    reaped = wait_for(
        lambda: "reaped w1" in (out := swarm("reap").stdout) and out, "the reaper to see w1 dead"
    )
    assert "#1" in reaped
    assert board.require("1").status == "pending" and board.require("1").owner is None
    spawn("w2", backend, tmp_path)
    wait_for(lambda: board.require("1").status == "completed", "w2 to complete the task")
    assert board.require("1").owner == "w2" and (tmp_path / "done.txt").exists()
    swarm("shutdown", "w2")


def test_a_stale_shutdown_request_does_not_stop_a_respawned_worker(
    tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    swarm("team", "create", "t", team=None)
    spawn("w1", "subprocess", tmp_path)
    assert swarm("shutdown", "w1").returncode == 0
    paths = TeamPaths(config_root, "t")
    team = TeamFile(paths)
    team.add_member("w1")  # so the old request can be left in its inbox, as a lost message would be
    old = ShutdownRequest(
        requestId="shutdown-1@w1", from_="team-lead", timestamp="2020-01-01T00:00:00.000Z"
    )
    Mailbox(paths).send("w1", old, sender="team-lead")
    team.remove_member("w1")
    spawn("w1", "subprocess", tmp_path)
    wait_for(
        lambda: any(
            "Ignored shutdown request shutdown-1@w1" in e.text
            for e in Mailbox(paths).read_all("team-lead")
        ),
        "the stale request to be reported",
    )
    swarm("task", "add", "after", "--command", "true")
    wait_for(
        lambda: TaskBoard(paths).require("1").status == "completed", "the worker to keep working"
    )
    states = {
        m["name"]: m["state"] for m in json.loads(swarm("status", "--json").stdout)["members"]
    }
    assert states["w1"] in ("idle", "working")
    swarm("shutdown", "w1")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_prompt_full_of_shell_syntax_arrives_verbatim(
    backend: str, tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    swarm("team", "create", "t", team=None)
    marker = tmp_path / "injected"
    prompt = f"Hi \"w1\" 'quoted' $(touch {marker}) `touch {marker}` ; touch {marker}\nline two ✓"
    spawn("w1", backend, tmp_path, prompt=prompt)
    paths = TeamPaths(config_root, "t")
    ack = wait_for(
        lambda: [e for e in Mailbox(paths).read_all("team-lead") if e.text.startswith("Received")],
        "the ack",
    )
    assert ack
    assert Mailbox(paths).read_all("w1")[0].text == prompt
    assert not marker.exists()
    swarm("shutdown", "w1")


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("spawn", 'a"b', "--prompt", "x"), "invalid agent name"),
        (("spawn", "$(touch x)", "--prompt", "x"), "invalid agent name"),
        (("spawn", "w1", "--prompt", "x", "--backend", "docker"), "docker"),
        (("spawn", "team-lead", "--prompt", "x"), "already has a member named 'team-lead'"),
        (
            ("spawn", "w1", "-p", "x", "--model", "sonnet", "--teammate-command", "no-such-cc"),
            "'no-such-cc' is not an executable file or a program on PATH",
        ),
        (
            ("spawn", "w1", "-p", "x", "--teammate-command", "true"),
            "--model shell is for swarm's own teammate; a --teammate-command program needs",
        ),
        (
            ("spawn", "w1", "-p", "x", "--max-turns", "3", "--teammate-command", "true"),
            "--max-turns belong to swarm's own teammate",
        ),
        (
            ("spawn", "w1", "-p", "x", "--model", "sonnet", "--teammate-command", "'unclosed"),
            "No closing quotation (quote as in a shell)",
        ),
    ],
)
def test_bad_spawns_are_refused_and_add_no_member(
    config_root: Path, args: tuple[str, ...], complaint: str
) -> None:
    swarm("team", "create", "t", team=None)
    result = swarm(*args)
    assert result.returncode != 0 and complaint in result.stderr
    assert TeamFile(TeamPaths(config_root, "t")).load().member_names() == ["team-lead"]


def test_team_delete_refuses_live_members_unless_forced(
    tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    swarm("team", "create", "t", team=None)
    spawn("w1", "subprocess", tmp_path)
    paths = TeamPaths(config_root, "t")
    pid = TeamFile(paths).load().member("w1").model_extra["pid"]
    for cache in (paths.task_summary, paths.record_summary("team-lead")):  # as a view keeps
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text("a cache of the team's files")
    refused = swarm("team", "delete", "t", team=None)
    assert refused.returncode == 1 and "live members (w1)" in refused.stderr
    assert (config_root / "teams" / "t" / "config.json").exists()
    forced = swarm("team", "delete", "t", "--force", team=None)
    assert forced.returncode == 0 and "shut down w1: approved" in forced.stdout
    assert not pid_alive(pid)
    assert not (config_root / "teams" / "t").exists()
    assert not paths.task_summary.exists() and not paths.record_summaries.exists()


def test_inbox_follow_prints_messages_as_they_arrive(team: TeamFile) -> None:
    follower = subprocess.Popen(
        [sys.executable, "-m", "swarm", "inbox", "alice", "--follow", "--json", "--team", "t"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swarm("send", "alice", "first").returncode == 0
        line = json.loads(follower.stdout.readline())
        assert (line["text"], line["type"]) == ("first", "message")
        assert swarm("send", "alice", "second").returncode == 0
        assert json.loads(follower.stdout.readline())["text"] == "second"
    finally:
        follower.terminate()
        follower.wait(10)
