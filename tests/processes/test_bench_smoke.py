"""The benchmark scripts run (tiny sizes) and end with their key=value line; their correctness
figures (lost, duplicated, double claims) must be zero. Their speed figures are not checked here:
speed is measured by running bench/ in full, never asserted in tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize(
    ("script", "args", "zero"),
    [
        (
            "latency.py",
            ["--messages", "20", "--baseline-messages", "3", "--poll-interval", "0.2"],
            [],
        ),
        ("throughput.py", ["--writers", "3", "--messages", "30"], ["lost", "duplicated"]),
        (
            "claims.py",
            ["--tasks", "40", "--workers", "4"],
            ["double_claims", "unclaimed", "blocked_violations"],
        ),
        ("idle_requests.py", ["--seconds", "2"], ["idle_requests"]),
        (
            "wake_to_request.py",
            ["--claude-code", "none", "--rounds", "3", "--gap", "0.1"],
            [],
        ),
        ("prompt_cache.py", [], []),
        ("sandbox.py", ["--calls", "3"], []),
        (
            "web.py",
            ["--rounds", "2", "--cpu-seconds", "1", "--wake-blocks", "1", "--wake-rounds", "2"],
            [],
        ),
        ("read_memory.py", ["--size-mb", "2"], ["wrong_reads"]),
        (
            "tools.py",
            ["--parts", "output,message", "--gb", "0.01", "--sleep", "60", "--no-baseline"],
            [],
        ),
        (
            "long_job.py",
            ["--turns", "40", "--window", "40000", "--no-baseline", "--faults"],
            ["lost", "faults_lost"],
        ),
        ("skills_catalogue.py", ["--skills", "3", "--body-lines", "2"], []),
        ("search.py", ["--files", "300", "--runs", "1"], ["mismatches"]),
        (
            "subagents.py",
            ["--context-tokens", "2000", "--starts", "3", "--seconds", "0.5"],
            ["rest_requests", "sleepers_left"],
        ),
        ("dashboard.py", ["--members", "3", "--tasks", "20", "--runs", "3"], []),
        (
            "idle_cpu.py",
            ["--counts", "2,3", "--completed", "5", "--seconds", "0.5", "--no-plot"],
            [],
        ),
        ("cli_startup.py", ["--runs", "1"], []),
        ("hooks.py", ["--calls", "5"], []),
        ("mcp_startup.py", ["--runs", "1", "--servers", "1"], []),
        ("mcp_delivery.py", ["--messages", "5", "--warmup", "1"], ["lost"]),
        pytest.param(
            "pg_store.py",
            ["--sends", "5", "--messages", "8", "--tasks", "20", "--workers", "2"],
            ["file_double_claims", "pg_double_claims"],
            marks=pytest.mark.skipif(
                not (
                    shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
                ),
                reason="needs PostgreSQL's server binaries (make postgresql installs them)",
            ),
        ),
        pytest.param(
            "interop_inbox.py",
            # the newest Claude Code only: tests/interop checks every version, and each one
            # here is about 25 s of a test run
            ["--messages", "10", "--rounds", "1", "--version", "2.1.332"],
            [
                f"v2_1_332_{figure}"
                for figure in (
                    "none_cc_lost",
                    "none_swarm_lost",
                    "gap10ms_swarm_lost",
                    "tight_swarm_lost",
                )
            ],
            marks=[
                pytest.mark.interop,
                pytest.mark.skipif(
                    not (shutil.which("npm") and shutil.which("node") and shutil.which("tmux")),
                    reason="needs node, npm (to install Claude Code 2.1.88 and 2.1.332) and tmux",
                ),
            ],
        ),
        pytest.param(
            "wake_to_request.py",
            ["--rounds", "2", "--cc-rounds", "1", "--gap", "0.3"],
            [],
            marks=[
                pytest.mark.interop,
                pytest.mark.skipif(
                    not (shutil.which("npm") and shutil.which("node") and shutil.which("tmux")),
                    reason="needs node, npm (to install Claude Code 2.1.88 and 2.1.332) and tmux",
                ),
            ],
        ),
    ],
)
def test_benchmark_runs_and_reports(
    script: str, args: list[str], zero: list[str], config_root: Path
) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(config_root)},
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    figures = dict(pair.split("=", 1) for pair in last.split())
    for key in zero:
        assert figures[key] == "0", last
