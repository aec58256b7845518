"""MCP start-up: how much stdio MCP servers delay a teammate's first model request.

A real teammate process (``python -m teammate --model sonnet``, the real `anthropic` SDK against
the test suite's Messages API server, a temporary config root) starts with a message already in
its inbox; the figure is the time from starting the process to the server receiving its first
model request. Runs with 0 servers (the baseline), 1 and 3 stdio servers (``tests/mcp_server.py``,
an SDK-built server in its own Python process), once with the servers optional (they connect in
the background: the target is the baseline) and once with all of them in the agent's
``requiredMcpServers`` (the first request waits for them: the target is the baseline plus the
slowest server's start, not the sum). For comparison, ``alone``: the time the same servers take
to connect when started together by an `McpManager` in this process, with no teammate (on a
busy 2-core machine, 3 servers starting at once slow each other down). Each figure is the median
of `--runs` runs. Printed, never asserted. The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import teammate_argv, wait_for
from messages_api import MessagesAPI, Turn

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.messages.models import IdleNotification
from teammate.mcp.client import McpManager
from teammate.mcp.config import parse_server

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_server.py"
TEAM = "mcpbench"


def one_run(servers: int, required: bool) -> float:
    """Seconds from starting the teammate to its first model request."""
    with tempfile.TemporaryDirectory(prefix="swarm-mcp-bench-") as tmp:
        root, work = Path(tmp) / "config", Path(tmp) / "work"
        work.mkdir()
        names = [f"s{i}" for i in range(servers)]
        config = {n: {"command": sys.executable, "args": [str(SERVER)]} for n in names}
        (work / ".mcp.json").write_text(json.dumps({"mcpServers": config}))
        agent = work / ".claude" / "agents" / "bench.md"
        agent.parent.mkdir(parents=True)
        needed = json.dumps(names if required else [])
        agent.write_text(
            f"---\nname: bench\ndescription: b\nrequiredMcpServers: {needed}\n---\nYou test.\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env["CLAUDE_CONFIG_DIR"] = str(root)
        env["HOME"] = str(Path(tmp))
        os.environ["CLAUDE_CONFIG_DIR"] = str(root)
        paths = TeamPaths.for_team(TEAM)
        team = TeamFile(paths)
        team.create(description="bench", cwd=work)
        team.add_member("alice", cwd=work)
        Mailbox(paths).send("alice", "Go.", sender="team-lead", summary="go")
        first = threading.Event()
        arrived: list[float] = []

        def play(body: dict[str, Any]) -> Turn:
            if not first.is_set():
                arrived.append(time.monotonic())
                first.set()
            return Turn.text("ok")

        with MessagesAPI(play) as api:
            env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench")
            argv = teammate_argv("alice", "--agent-type", "bench", team=TEAM, model="sonnet")
            started = time.monotonic()
            proc = subprocess.Popen(
                argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                if not first.wait(120):
                    raise SystemExit("no model request within 120 s")

                def idle() -> bool:
                    entries = Mailbox(paths).read_all("team-lead")
                    return any(isinstance(e.structured(), IdleNotification) for e in entries)

                wait_for(idle, "the teammate to finish its turn", 60)  # then stop it
            finally:
                proc.terminate()
                proc.wait(30)
        return arrived[0] - started


def median_of(runs: int, servers: int, required: bool) -> float:
    return statistics.median(one_run(servers, required) for _ in range(runs))


def alone(servers: int) -> float:
    """Seconds for `servers` stdio servers started together to all connect (no teammate)."""
    manager = McpManager(Path.cwd())
    configs = [
        parse_server(f"s{i}", {"command": sys.executable, "args": [str(SERVER)]}, "bench", {})
        for i in range(servers)
    ]
    started = time.monotonic()
    manager.start(configs)
    problems = manager.wait([c.key for c in configs], 120)
    took = time.monotonic() - started
    manager.close()
    if any(problems.values()):
        raise SystemExit(f"servers did not connect: {problems}")
    return took


def server_counts(text: str) -> list[int]:
    """``1,3``: the numbers of servers to run with, each 1 or more."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give numbers of 1 or more, such as 1,3")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--servers",
        type=server_counts,
        default=[1, 3],
        help="the numbers of servers to compare with the baseline, comma-separated (default 1,3)",
    )
    args = parser.parse_args()
    counts: list[int] = args.servers
    baseline = median_of(args.runs, 0, False)
    figures = {"baseline_0_servers_s": baseline}
    print(f"spawn -> first model request, median of {args.runs} runs")
    head = ("servers", "optional", "required", "baseline", "alone")
    print("  " + "  ".join(f"{h:>9}" for h in head))
    print(f"  {0:>9}  {baseline:>8.3f}s  {'-':>9}  {baseline:>8.3f}s  {'-':>9}")
    for count in counts:
        optional = median_of(args.runs, count, False)
        required = median_of(args.runs, count, True)
        by_itself = statistics.median(alone(count) for _ in range(args.runs))
        figures[f"optional_{count}_s"] = optional
        figures[f"required_{count}_s"] = required
        figures[f"alone_{count}_s"] = by_itself
        print(
            f"  {count:>9}  {optional:>8.3f}s  {required:>8.3f}s  {baseline:>8.3f}s  "
            f"{by_itself:>8.3f}s"
        )
    print(" ".join(f"{k}={v:.3f}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
