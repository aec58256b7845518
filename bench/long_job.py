"""A long job, side by side: today's compaction against the trimming of the tree before it.

What it measures
    One real Claude teammate process (``python -m teammate --model sonnet``) claims a task and
    works it for ``--turns`` model turns, each reading a file of ``--output-kb`` KB, then marks
    it completed and tells the lead. The model is the test suite's Messages API server
    (``tests/messages_api.py``) playing the same script for both trees: it enforces a context
    window (``--window`` tokens: its two refusals, as the API words them), counts tokens (4
    characters each) and bills prompt caching as the API does (`PromptCache`: a 1,024-token
    minimum, the 20-block look-back, 5-minute and 1-hour TTLs). It answers a compaction's summary
    request with a summary. ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` is set to the window (the
    baseline ignores it: it trims at its own estimated 150,000 tokens, and when the API refuses).

    Per tree: whether the task was completed; input tokens billed (plain input, cache reads and
    cache writes, each request billed as the server billed it, replayed through a fresh
    `PromptCache`); cache reads / (reads + writes); the job's cost at the catalogue's prices of
    claude-sonnet-5-5 (`protocols.member.prices`, each request priced on its own); requests per
    turn; refusals; the teammate's peak RSS (VmHWM, read before it is shut down); the live
    transcript's bytes and the history's (gzipped segments), next to the largest conversation sent
    (its messages' JSON bytes).

    ``--faults``: the same job with a failure every few steps (an ``overloaded_error`` event
    after the answer began, a reset connection, a 529 with ``retry-after: 0``): was the task
    completed, or lost?

Baseline
    The tree at ``--baseline`` (default fa8f768, the commit issue 36 was measured on), exported
    with ``git archive`` into a temporary directory and run with ``PYTHONPATH`` pointing at it:
    the same script, the same server, the same machine, in the same run.

Targets (issue 36): cache reads >= 90% of input tokens; cost <= 1/5 of the baseline's; live
transcript <= 2x the largest conversation; no task lost to a retryable failure.

Everything runs under temporary config roots, never ``~/.claude``. The last line is
``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import export_tree, peak_rss_mb
from messages_api import MessagesAPI, PromptCache, Turn

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.clock import now_iso
from protocols.member.prices import load_prices
from protocols.messages.models import ShutdownRequest
from protocols.tasks.board import TaskBoard
from teammate.agent.compaction import summary_turn

REPO = Path(__file__).resolve().parent.parent
BASELINE = "fa8f768"
TEAM = "long-job"
NAME = "alice"
MODEL = "claude-sonnet-5-5"
CRITERIA = "Acceptance: report the checksum of data.txt to the lead when done."


class Job:
    """The scripted model: `turns` Reads, then TaskUpdate and SendMessage, then the end; a
    summary for a summary request; with `faults`, a failure every few steps, once each."""

    def __init__(self, turns: int, faults: bool) -> None:
        self.turns = turns
        self.step = 0
        self.faulted: set[int] = set()
        self.faults = faults
        self.summaries = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn:
        with self.lock:
            return self._next(body)

    def _next(self, body: dict[str, Any]) -> Turn:
        if summary_turn(body):
            self.summaries += 1
            return Turn.text(f"Summary: reading data.txt; {self.step} reads done. {CRITERIA}")
        fault = self._fault()
        if fault is not None:
            return fault
        self.step += 1
        if self.step <= self.turns:
            return Turn.tool("Read", {"file_path": "data.txt"})
        if self.step == self.turns + 1:
            return Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"})
        if self.step == self.turns + 2:
            return Turn.tool("SendMessage", {"to": "team-lead", "message": "checksum 7f3a"})
        return Turn.text("Done.")

    def _fault(self) -> Turn | None:
        step = self.step
        if not self.faults or step == 0 or step in self.faulted:
            return None
        kinds = {37: "overloaded", 53: "reset", 71: "529"}
        kind = next((k for every, k in kinds.items() if step % every == 0), None)
        if kind is None:
            return None
        self.faulted.add(step)
        if kind == "529":
            return Turn.failure(529, retry_after=0)
        return Turn.tool("Read", {"file_path": "data.txt"}, fault=kind)


def export_baseline(rev: str, into: Path) -> Path:
    """The tree at `rev`, exported (no checkout, no worktree) into `into`."""
    return Path(export_tree(REPO, rev, into))


def run(tree: Path, args: argparse.Namespace, faults: bool) -> dict[str, Any]:
    """One job by the teammate of `tree`; its figures."""
    with tempfile.TemporaryDirectory(prefix="swarm-long-job-") as scratch:
        root = Path(scratch) / "config"
        work = Path(scratch) / "work"
        root.mkdir()
        work.mkdir()
        line = "x" * 79 + "\n"
        (work / "data.txt").write_text(line * (args.output_kb * 1024 // len(line)))
        paths = TeamPaths(root, TEAM)
        team = TeamFile(paths)
        team.create(description="a long job", cwd=work)
        team.add_member(NAME, cwd=work, model="sonnet")
        board = TaskBoard(paths)
        board.create(f"read data.txt {args.turns} times", f"Read data.txt.\n{CRITERIA}")
        job = Job(args.turns, faults)
        api = MessagesAPI(job, window=args.window, cache=PromptCache(min_tokens=1024))
        with api:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
            env.update(
                CLAUDE_CONFIG_DIR=str(root),
                ANTHROPIC_BASE_URL=api.url,
                ANTHROPIC_API_KEY="bench",
                CLAUDE_CODE_AUTO_COMPACT_WINDOW=str(args.window),
                PYTHONPATH=str(tree),
                SWARM_LOOP_REPEATS="0",  # the job re-reads one file each turn: a loop by design
                SWARM_STALL_TURNS="0",  # and changes nothing: no progress, by design too
            )
            argv = [sys.executable, "-m", "teammate", "--agent-id", f"{NAME}@{TEAM}"]
            argv += ["--agent-name", NAME, "--team-name", TEAM, "--model", "sonnet"]
            # the baseline's 100-turn cap would end the job early: no cap for either
            argv += ["--permission-mode", "acceptEdits", "--max-turns", str(10 * args.turns)]
            with open(Path(scratch) / "teammate.log", "w") as log:
                began = time.monotonic()
                proc = subprocess.Popen(
                    argv, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT
                )
                outcome = wait_done(board, proc, args.timeout)
                seconds = time.monotonic() - began
                rss = peak_rss_mb(proc.pid)
                shut_down(paths, proc)
        return figures(api, job, paths, outcome, seconds, rss, args)


def wait_done(board: TaskBoard, proc: subprocess.Popen[bytes], timeout: float) -> str:
    """How the task ended: completed, failed (and why), or the time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = board.get("1")
        if task is not None and task.status == "completed":
            return "completed"
        if task is not None and task.failed:
            return f"lost: {task.failure[:80]}"
        if proc.poll() is not None:
            return f"lost: the teammate exited ({proc.returncode})"
        time.sleep(0.05)
    return "timed out"


def shut_down(paths: TeamPaths, proc: subprocess.Popen[bytes]) -> None:
    request = ShutdownRequest(
        requestId=f"shutdown-1@{NAME}", from_="team-lead", timestamp=now_iso()
    )
    Mailbox(paths).send(NAME, request, sender="team-lead")
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def figures(
    api: MessagesAPI,
    job: Job,
    paths: TeamPaths,
    outcome: str,
    seconds: float,
    rss: float | None,
    args: argparse.Namespace,
) -> dict[str, Any]:
    prices = load_prices(paths.root / "none")  # the catalogue's, no override
    plain = read = written = 0
    cost = 0.0
    for usage in api.billed.values():  # each answer's usage, as the server billed it
        plain += usage["input_tokens"]
        read += usage.get("cache_read_input_tokens", 0)
        written += usage.get("cache_creation_input_tokens", 0)
        hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
        flat = {k: v for k, v in usage.items() if isinstance(v, int)}
        cost += prices.cost(MODEL, {**flat, "cache_creation_1h_input_tokens": hour}) or 0.0
    transcript = paths.transcript(NAME)
    live = transcript.stat().st_size if transcript.exists() else 0
    history_dir = transcript.with_name(transcript.name.removesuffix(".jsonl") + ".history")
    history = sum(p.stat().st_size for p in history_dir.glob("*")) if history_dir.exists() else 0
    largest = max((len(json.dumps(b["messages"]).encode()) for b in api.requests), default=0)
    billed_in = plain + read + written
    return {
        "outcome": outcome,
        "seconds": seconds,
        "requests": len(api.requests),
        "refused": len(api.refused),
        "summaries": job.summaries,
        "requests_per_turn": len(api.requests) / max(1, args.turns),
        "input_tokens": billed_in,
        "cache_read_share": read / max(1, read + written),
        "read_of_input": read / max(1, billed_in),
        "cost_usd": cost,
        "peak_rss_mb": rss,
        "transcript_bytes": live,
        "history_bytes": history,
        "largest_conversation_bytes": largest,
    }


def table(rows: dict[str, dict[str, Any]]) -> str:
    keys = [
        ("outcome", "{}"),
        ("seconds", "{:.1f}"),
        ("requests", "{:,}"),
        ("refused", "{:,}"),
        ("summaries", "{:,}"),
        ("requests_per_turn", "{:.2f}"),
        ("input_tokens", "{:,}"),
        ("cache_read_share", "{:.1%}"),
        ("read_of_input", "{:.1%}"),
        ("cost_usd", "${:.2f}"),
        ("peak_rss_mb", "{:.0f} MiB"),
        ("transcript_bytes", "{:,}"),
        ("history_bytes", "{:,}"),
        ("largest_conversation_bytes", "{:,}"),
    ]
    names = list(rows)
    lines = [f"{'':28}" + "".join(f"{n:>26}" for n in names)]
    for key, fmt in keys:
        cells = []
        for name in names:
            value = rows[name].get(key)
            cell = "-" if value is None else fmt.format(value)
            cells.append(cell if len(cell) <= 24 else cell[:23] + "…")
        lines.append(f"{key:28}" + "".join(f"{c:>26}" for c in cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--output-kb", type=int, default=5)
    parser.add_argument("--window", type=int, default=200_000)
    parser.add_argument("--baseline", default=BASELINE, help="the tree to compare with (a rev)")
    parser.add_argument("--no-baseline", action="store_true", help="this tree only")
    parser.add_argument("--faults", action="store_true", help="also the job with failures")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    trees: dict[str, Path] = {"this tree": REPO}
    with tempfile.TemporaryDirectory(prefix="swarm-baseline-") as base:
        if not args.no_baseline:
            trees = {
                f"baseline {args.baseline}": export_baseline(args.baseline, Path(base)),
                **trees,
            }
        print(
            f"a {args.turns}-turn job, {args.output_kb} KB a tool result, a {args.window:,}-token "
            f"window; prices: {MODEL}'s",
            flush=True,
        )
        rows = {name: run(tree, args, faults=False) for name, tree in trees.items()}
        print(table(rows))
        faulty: dict[str, dict[str, Any]] = {}
        if args.faults:
            print(
                "\nthe same job with a failure every few steps (overloaded mid-stream, reset, 529):"
            )
            faulty = {name: run(tree, args, faults=True) for name, tree in trees.items()}
            print(table(faulty))
    mine = rows["this tree"]
    largest = mine["largest_conversation_bytes"]
    pairs = {
        "lost": int(mine["outcome"] != "completed"),
        "read_of_input": f"{mine['read_of_input']:.3f}",
        "cost_usd": f"{mine['cost_usd']:.4f}",
        "transcript_over_largest": f"{mine['transcript_bytes'] / max(1, largest):.2f}",
        "requests_per_turn": f"{mine['requests_per_turn']:.2f}",
    }
    base_rows = [r for n, r in rows.items() if n != "this tree"]
    if base_rows:
        base = base_rows[0]
        pairs["baseline_lost"] = int(base["outcome"] != "completed")
        if base["outcome"] == "completed":  # a lost job's cost says nothing of the whole job's
            pairs["baseline_cost_usd"] = f"{base['cost_usd']:.4f}"
            pairs["cost_ratio"] = f"{mine['cost_usd'] / max(1e-9, base['cost_usd']):.3f}"
    if faulty:
        pairs["faults_lost"] = int(faulty["this tree"]["outcome"] != "completed")
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
