"""Helpers for tests that drive real processes: run `swarm`, build a teammate command line, and
wait on a condition with a deadline (never a fixed sleep)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

DEADLINE_S = 20.0


def wait_for(condition: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
    """Poll `condition` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def swarm(*args: str, team: str | None = "t") -> subprocess.CompletedProcess[str]:
    """Run ``python -m swarm ARGS`` with SWARM_TEAM set to `team`."""
    env = {**os.environ}
    env.pop("SWARM_TEAM", None)
    if team:
        env["SWARM_TEAM"] = team
    return subprocess.run(
        [sys.executable, "-m", "swarm", *args], capture_output=True, text=True, timeout=60, env=env
    )


def teammate_argv(name: str, *extra: str, team: str = "t", model: str = "shell") -> list[str]:
    return [
        sys.executable,
        "-m",
        "teammate",
        "--agent-id",
        f"{name}@{team}",
        "--agent-name",
        name,
        "--team-name",
        team,
        "--agent-color",
        "blue",
        "--model",
        model,
        *extra,
    ]


class Processes:
    """Teammate processes started by a test; `close` kills whatever is still running."""

    def __init__(self, cwd: Any) -> None:
        self.cwd = cwd
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
