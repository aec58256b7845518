"""Telemetry is off by default and costs nothing when off: a `swarm task add` and the teammate
runtime, in one process with no telemetry variables, load no ``opentelemetry`` module; the
switch reads Claude Code's variable and the standard OTEL_TRACES_EXPORTER."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from protocols.team.file import TeamFile
from protocols.trace_context import TRACE_KEY, carrier_of, telemetry_enabled


def test_the_switch() -> None:
    assert not telemetry_enabled({})
    assert not telemetry_enabled({"CLAUDE_CODE_ENABLE_TELEMETRY": "0"})
    assert telemetry_enabled({"CLAUDE_CODE_ENABLE_TELEMETRY": "1"})
    off = {"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_TRACES_EXPORTER": "none"}
    assert not telemetry_enabled(off)


def test_a_carrier_is_only_strings() -> None:
    assert carrier_of(None) == {}
    assert carrier_of({TRACE_KEY: "junk"}) == {}
    assert carrier_of({TRACE_KEY: {"traceparent": "00-x", "n": 1}}) == {"traceparent": "00-x"}


def test_no_opentelemetry_import_when_off(team: TeamFile, tmp_path: Path) -> None:
    """A task added and a shell teammate's work on it, in one process, load no opentelemetry."""
    script = f"""
import sys
from pathlib import Path
from swarm.cli.main import main
try:
    main(["task", "add", "x", "--command", "true"])
except SystemExit:
    pass
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from teammate.runtime import Teammate
import teammate.telemetry
board = TaskBoard(TeamPaths(Path({str(team.paths.root)!r}), "t"))
assert board.list(), "the task was added"
loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
print("LOADED", loaded)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CLAUDE_CODE_EN"))}
    env["SWARM_TEAM"] = "t"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout
