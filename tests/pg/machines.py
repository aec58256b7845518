"""Machines for the tests of teams that span them: a "machine" is a config root of its own
(its own ``HOME`` and ``CLAUDE_CONFIG_DIR``, its own working directory), and `serve` runs a
`swarm host serve` agent on one, in a process group of its own (``start_new_session``), so a test
can stop, kill or freeze a whole machine. Shared by tests/pg/test_pg_hosts.py, the network
namespace tests and the lead scenarios on two hosts (tests/processes/test_scenarios.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import DEADLINE_S
from reaper import VARIABLE as REAPER_VARIABLE


@dataclass
class Machine:
    """A config root, a home and a working directory: one "machine"."""

    root: Path
    work: Path
    env: dict[str, str]

    def swarm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "swarm", *args],
            capture_output=True,
            text=True,
            timeout=DEADLINE_S * 2,
            env=self.env,
            cwd=self.work,
        )
        if check:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.swarm(*args, "--json").stdout)


def machine(tmp_path: Path, name: str, url: str, **extra: str) -> Machine:
    base = tmp_path / name
    root, home, work = base / "claude", base / "home", base / "work"
    for directory in (root, home, work):
        directory.mkdir(parents=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWARM_", "CLAUDE", "ANTHROPIC_")) or k == REAPER_VARIABLE
    }  # the run's token kept: what a machine starts is reaped with the run (tests/reaper.py)
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(root),
        SWARM_TEAM="t",
        SWARM_STORE=url,
        SWARM_TMUX_SOCKET=f"swarm-test-{name}-{os.getpid()}",
        **extra,
    )
    return Machine(root, work, env)


@dataclass
class HostAgent:
    machine: Machine
    process: subprocess.Popen[bytes]
    log: Path

    def signal_group(self, sig: signal.Signals) -> None:
        os.killpg(self.process.pid, sig)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def serve(
    box: Machine,
    name: str,
    inside: Callable[[list[str]], list[str]] | None = None,
    rescan_s: float = 0.5,
) -> HostAgent:
    """`swarm host serve --name NAME --rescan RESCAN_S` on `box`; `inside` wraps its command (a
    network namespace's ``ip netns exec``, `netns.Namespace.argv`)."""
    log = box.work.parent / f"host-{name}.log"
    argv = [sys.executable, "-m", "swarm", "host", "serve", "--name", name]
    argv += ["--rescan", str(rescan_s)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv if inside is None else inside(argv),
            env=box.env,
            cwd=box.work,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return HostAgent(box, process, log)


def stop(agent: HostAgent) -> None:
    """SIGTERM to the host's agent (it stops its teammates and leaves); its whole process
    group killed if it has not exited by the deadline."""
    if agent.process.poll() is None:
        agent.signal_group(signal.SIGCONT)
        agent.process.terminate()
        try:
            agent.process.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            agent.signal_group(signal.SIGKILL)
            agent.process.wait()
