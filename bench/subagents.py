"""Sub-agents: what forking saves, what starting one costs, and background sub-agents at rest.

All three run real teammate processes (``python -m teammate --model sonnet``) through the real
`anthropic` SDK against the test suite's Messages API server (``tests/messages_api.py``), under
a temporary config root (never ``~/.claude``).

1. Fork economics. A parent whose conversation is about `--context-tokens` tokens (a lead's
   message of that size) starts 5 children in one turn, once as forks (``SWARM_FORK_SUBAGENT=1``,
   no ``subagent_type``) and, as the baseline in the same run, as 5 fresh ``general-purpose``
   background sub-agents whose prompts carry the same context. Every request the server got is
   billed in arrival order by a fresh ``PromptCache(min_tokens=1024)`` (prefix caching as the
   API does it, 4 characters a token); the figure is the share of the children's input tokens
   read from a prefix sent before (cacheable), and the children's input tokens billed at full
   price (uncached + cache writes). Target: at least 90% cacheable for forks.
2. Overhead. `--starts` synchronous sub-agents, one after another: the time from the server
   handing the parent its Agent call to the sub-agent's first request (the whole path: the SDK
   reading the answer, the tool call, building the sub-agent, its request). Baseline, side by
   side in the same process: a Glob call's round trip (answer handed over -> the parent's next
   request). Target: median under 20 ms.
3. At rest. The parent starts 8 background sub-agents that each wait in a long Bash command;
   over a `--seconds` window the server counts model requests (target 0) and /proc gives the
   teammate's CPU (target under 1% of a core), against the same window with the parent idle and
   no sub-agents (baseline); memory per sub-agent is the RSS growth divided by 8.

The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import percentile, verdict
from helpers import wait_for as wait_until
from messages_api import MessagesAPI, PromptCache, Turn

from protocols import LEAD_NAME, Mailbox, TeamFile, TeamPaths
from protocols.clock import now_iso
from protocols.messages.models import ShutdownRequest

TEAM = "subagents"
NAME = "alice"
CHILDREN = 5
SLEEPERS = 8
SLEEP_COMMAND = "sleep 601"
TICKS = os.sysconf("SC_CLK_TCK")
FORK_TARGET, OVERHEAD_TARGET_MS, CPU_TARGET = 90.0, 20.0, 1.0
Usage = dict[str, int]


def context_text(tokens: int) -> str:
    """About `tokens` tokens (4 characters each) of distinct lines."""
    lines, size, n = [], 0, 0
    while size < tokens * 4:
        line = f"Fact {n}: component {n % 97} depends on module {n * 7 % 1013} (checked).\n"
        lines.append(line)
        size, n = size + len(line), n + 1
    return "".join(lines)


class Teammate:
    """One teammate process in a fresh config root, and a way to talk to it."""

    def __init__(self, root: Path, api: MessagesAPI, fork: bool, *extra: str) -> None:
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.paths = TeamPaths(root, TEAM)
        team = TeamFile(self.paths)
        team.create(description="sub-agents", cwd=self.work)
        team.add_member(NAME, cwd=self.work)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SWARM_"))}
        env.update(CLAUDE_CONFIG_DIR=str(root), ANTHROPIC_BASE_URL=api.url)
        env.update(ANTHROPIC_API_KEY="bench", SWARM_FORK_SUBAGENT="1" if fork else "0")
        argv = [sys.executable, "-m", "teammate", "--agent-id", f"{NAME}@{TEAM}"]
        argv += ["--agent-name", NAME, "--team-name", TEAM, "--model", "sonnet", *extra]
        self.log = root / f"{NAME}.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                argv, cwd=self.work, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def tell(self, text: str) -> None:
        Mailbox(self.paths).send(NAME, text, sender=LEAD_NAME, summary="bench")

    def stop(self) -> None:
        request = ShutdownRequest(
            requestId=f"shutdown-1@{NAME}", from_=LEAD_NAME, timestamp=now_iso()
        )
        Mailbox(self.paths).send(NAME, request, sender=LEAD_NAME)
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0


def is_fork_child(body: dict[str, Any]) -> bool:
    return "<forked-worker>" in json.dumps(body["messages"])


def is_sub_agent(body: dict[str, Any]) -> bool:
    return "You are a sub-agent" in json.dumps(body.get("system")) or is_fork_child(body)


def notices_seen(bodies: list[dict[str, Any]]) -> int:
    return sum(
        json.dumps(b["messages"][-1]["content"]).count("<task-notification>") for b in bodies
    )


# 1. fork economics


def five_children(fork: bool, context: str) -> tuple[float, int, int]:
    """(cacheable share of the children's first requests in %, their input tokens, of which
    billed at full price)."""
    parent: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        if is_sub_agent(body):
            return Turn.text("Scope: a part\nResult: done\nKey files: none\n"
                             "Files changed: none\nIssues: none")  # fmt: skip
        parent.append(body)
        if len(parent) > 1:
            return Turn.text("noted")
        calls = []
        for n in range(CHILDREN):
            task = f"Check part {n} of the facts above and report."
            if fork:
                calls.append(("Agent", {"description": f"part {n}", "prompt": task}))
            else:
                call = {"description": f"part {n}", "prompt": f"{context}\n{task}"}
                calls.append(("Agent", {**call, "subagent_type": "general-purpose",
                                        "run_in_background": True}))  # fmt: skip
        return Turn.tools(calls)

    with (
        tempfile.TemporaryDirectory(prefix="swarm-bench-fork-") as root,
        MessagesAPI(play, concurrent=True) as api,
    ):
        mate = Teammate(Path(root), api, fork)
        try:
            mate.tell(context + "\nSplit this review into five parts.")
            wait_until(lambda: notices_seen(parent) >= CHILDREN, "five notifications", 120)
        finally:
            mate.stop()
        requests = list(api.requests)
    cache = PromptCache(min_tokens=1024)
    firsts: list[Usage] = []
    for body in requests:
        usage = cache.bill(body)
        if (
            is_sub_agent(body)
            and len([m for m in body["messages"] if m["role"] == "assistant"]) <= 1
        ):
            firsts.append(usage)
    if len(firsts) != CHILDREN:
        raise SystemExit(f"expected {CHILDREN} children's first requests, found {len(firsts)}")
    kinds = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    total = sum(u[kind] for u in firsts for kind in kinds)
    read = sum(u["cache_read_input_tokens"] for u in firsts)
    return 100 * read / total, total, total - read


# 2. overhead and 3. at rest


def starts_and_rest(starts: int, seconds: float) -> dict[str, Any]:
    marks: dict[str, list[float]] = {"agent": [], "child": [], "glob": [], "next": []}
    phase = {"name": "starts"}
    counted = {"requests": 0}
    lock = threading.Lock()

    def parent_turn(count: int) -> Turn:
        if phase["name"] == "rest":
            return Turn.text("waiting for the sleepers") if count else Turn.tools(
                [("Agent", {"description": f"sleeper {n}", "prompt": f"SLEEPER {n}",
                            "run_in_background": True}) for n in range(SLEEPERS)]
            )  # fmt: skip
        if count >= 2 * starts:
            return Turn.text("all started")
        if count % 2 == 0:
            marks["agent"].append(time.monotonic())
            call = {"description": "quick look", "prompt": "QUICK", "subagent_type": "Explore"}
            return Turn.tool("Agent", call)
        marks["glob"].append(time.monotonic())
        return Turn.tool("Glob", {"pattern": "*.txt"})

    parent_count = {"starts": 0, "rest": 0}

    def play(body: dict[str, Any]) -> Turn:
        now = time.monotonic()
        with lock:
            counted["requests"] += 1
        if is_sub_agent(body):
            if "SLEEPER" in json.dumps(body["messages"][0]):
                if len(body["messages"]) == 1:
                    return Turn.tool("Bash", {"command": SLEEP_COMMAND})
                return Turn.text("slept")
            marks["child"].append(now)
            return Turn.text("nothing there")
        name = phase["name"]
        count = parent_count[name]
        if name == "starts" and count % 2 == 0 and count > 0:
            marks["next"].append(now)  # the request after a Glob round trip
        parent_count[name] += 1
        return parent_turn(count)

    with tempfile.TemporaryDirectory(prefix="swarm-bench-subagents-") as root:
        settings = Path(root) / "settings.json"
        settings.write_text(json.dumps({"permissions": {"allow": [f"Bash({SLEEP_COMMAND})"]}}))
        with MessagesAPI(play, concurrent=True) as api:
            mate = Teammate(Path(root), api, False, "--settings", str(settings))
            try:
                mate.tell("Start the quick looks.")
                wait_until(lambda: parent_count["starts"] > 2 * starts, "the starts", 120)
                wait_until(lambda: idle_cpu_settled(mate), "alice to settle", 30)
                cpu0, rss0 = mate.cpu_seconds(), mate.rss_kib()
                time.sleep(seconds)  # the measuring window itself, not a wait for a condition
                idle_cpu = 100 * (mate.cpu_seconds() - cpu0) / seconds
                phase["name"] = "rest"
                mate.tell("Start the sleepers.")
                wait_until(lambda: len(sleepers()) == SLEEPERS, "eight sleeping sub-agents", 60)
                wait_until(lambda: parent_count["rest"] >= 2, "alice to end her turn", 60)
                wait_until(lambda: idle_cpu_settled(mate), "alice to settle", 30)
                with lock:
                    before = counted["requests"]
                cpu1, rss1 = mate.cpu_seconds(), mate.rss_kib()
                time.sleep(seconds)  # the measuring window
                rest_cpu = 100 * (mate.cpu_seconds() - cpu1) / seconds
                with lock:
                    during = counted["requests"] - before
            finally:
                mate.stop()
                left = sleepers()
                for pid in left:
                    os.kill(pid, signal.SIGKILL)
    overheads = [1000 * (c - a) for a, c in zip(marks["agent"], marks["child"], strict=False)]
    rounds = [1000 * (n - g) for g, n in zip(marks["glob"], marks["next"], strict=False)]
    return {
        "start_ms": percentile(overheads, 50),
        "start_p90_ms": percentile(overheads, 90),
        "glob_ms": percentile(rounds, 50),
        "idle_cpu": idle_cpu,
        "rest_cpu": rest_cpu,
        "rest_requests": during,
        "kib_per_subagent": (rss1 - rss0) / SLEEPERS,
        "sleepers_left": len(left),
    }


def idle_cpu_settled(mate: Teammate) -> bool:
    """Whether the teammate used under 2% of a core over the last 0.2 s (its turn is over)."""
    before = mate.cpu_seconds()
    time.sleep(0.2)
    return (mate.cpu_seconds() - before) / 0.2 < 0.02


def sleepers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip()
            except OSError:
                continue
            if cmdline == SLEEP_COMMAND.encode():
                found.append(int(entry.name))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context-tokens", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=20, help="sub-agents started one by one")
    parser.add_argument("--seconds", type=float, default=5.0, help="each CPU window")
    args = parser.parse_args()
    if sleepers():
        raise SystemExit(f"a {SLEEP_COMMAND!r} runs already; stop it first")
    context = context_text(args.context_tokens)
    fork_share, fork_tokens, fork_full = five_children(True, context)
    fresh_share, fresh_tokens, fresh_full = five_children(False, context)
    print(f"fork economics: a parent of ~{args.context_tokens} tokens starts {CHILDREN} children")
    print(f"  forks:  {fork_share:5.1f}% of their {fork_tokens} input tokens cacheable; "
          f"{fork_full} at full price   (target >= {FORK_TARGET:g}%: "
          f"{verdict(fork_share >= FORK_TARGET)})")  # fmt: skip
    print(f"  fresh general-purpose sub-agents (baseline): {fresh_share:5.1f}% of "
          f"{fresh_tokens}; {fresh_full} at full price")  # fmt: skip
    rest = starts_and_rest(args.starts, args.seconds)
    print(f"starting a sub-agent ({args.starts} synchronous): median {rest['start_ms']:.1f} ms, "
          f"p90 {rest['start_p90_ms']:.1f} ms   (target < {OVERHEAD_TARGET_MS:g} ms: "
          f"{verdict(rest['start_ms'] < OVERHEAD_TARGET_MS)})")  # fmt: skip
    print(f"  baseline, a Glob round trip in the same teammate: median {rest['glob_ms']:.1f} ms")
    print(f"{SLEEPERS} background sub-agents waiting in Bash, over {args.seconds:g} s: "
          f"{rest['rest_requests']} model requests, {rest['rest_cpu']:.2f}% of a core "
          f"(target 0 and < {CPU_TARGET:g}%: "
          f"{verdict(rest['rest_requests'] == 0 and rest['rest_cpu'] < CPU_TARGET)})")  # fmt: skip
    print(f"  baseline, the same teammate idle without them: {rest['idle_cpu']:.2f}% of a core")
    print(f"  memory: {rest['kib_per_subagent']:.0f} KiB of RSS per background sub-agent")
    print(f"  sleeping commands left after the teammate stopped: {rest['sleepers_left']}")
    print(
        f"fork_share={fork_share:.1f} fresh_share={fresh_share:.1f} "
        f"fork_full_tokens={fork_full} fresh_full_tokens={fresh_full} "
        f"start_median_ms={rest['start_ms']:.1f} glob_median_ms={rest['glob_ms']:.1f} "
        f"rest_requests={rest['rest_requests']} rest_cpu={rest['rest_cpu']:.2f} "
        f"idle_cpu={rest['idle_cpu']:.2f} kib_per_subagent={rest['kib_per_subagent']:.0f} "
        f"sleepers_left={rest['sleepers_left']}"
    )


if __name__ == "__main__":
    main()
