"""Message delivery to an MCP member: send to a blocked ReadInbox call's return, against files.

What it measures
    * mcp: the time from the moment a sender process starts `Mailbox.send` to a member over
      MCP to the moment that member's client, an `mcp` SDK `ClientSession` talking to
      ``swarm mcp --name bob`` over stdio, has the result of the ``ReadInbox`` call that was
      blocked waiting for it (``wait_seconds`` 30). Each message gets its own call: the call is
      started, given a head start (`--head-start-ms`) to reach its wait in the server, then the
      sender is told to send. The figure includes what MCP adds to the files: the JSON-RPC
      request and answer over the pipes, the server's worker thread and its inotify watcher.
    * files: the same message through the inbox file alone, the receiver in a separate process
      blocked in `Mailbox.wait` on a persistent `InboxWatcher`: bench/latency.py's measurement,
      run by its own functions (`latency.run_ours`).

The send time (``time.monotonic_ns()``, one clock for the whole machine on Linux) travels inside
the message text in both. A few warm-up messages are left out. Everything runs under a temporary
config root, never ``~/.claude``. The last line printed is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import latency
from benchkit import percentile
from mcp_client import McpClient, text_of

from protocols import LEAD_NAME, Mailbox, TeamFile, TeamPaths
from protocols.fs.jsonio import default_durability

TEAM = latency.TEAM
MCP_MEMBER = "bob"
WAIT_S = 30
SENT = re.compile(r"latency seq=(\d+) sent_ns=(\d+)")


def sender(root: str, total: int, orders: Connection) -> None:
    """Send message `seq` to the MCP member each time the main process says so."""
    mailbox = Mailbox(TeamPaths(Path(root), TEAM))
    for _ in range(total):
        if not orders.poll(60):
            raise SystemExit("no order to send within 60 s")
        seq = orders.recv()
        mailbox.send(MCP_MEMBER, latency.message_text(seq), sender=LEAD_NAME)


async def timed_read(client: McpClient) -> tuple[Any, int]:
    """A blocking ReadInbox call, and when its result arrived (in the client's event loop)."""
    result = await client.session.call_tool("ReadInbox", {"wait_seconds": WAIT_S})
    return result, time.monotonic_ns()


def run_mcp(
    ctx: Any, root: str, messages: int, warmup: int, head_start_s: float
) -> tuple[list[float], int]:
    """(send-to-returned latencies in ms, warm-up dropped; messages that never arrived)."""
    total = messages + warmup
    orders, order_writer = ctx.Pipe(duplex=False)
    process = ctx.Process(target=sender, args=(root, total, orders))
    argv = [sys.executable, "-m", "swarm", "mcp", "--team", TEAM, "--name", MCP_MEMBER]
    latencies_ns: dict[int, int] = {}
    with McpClient.stdio(argv) as client:
        process.start()
        try:
            for seq in range(total):
                call = client.portal.start_task_soon(timed_read, client)
                time.sleep(head_start_s)  # a head start for the call to block in the server
                order_writer.send(seq)
                result, received_ns = call.result(WAIT_S + 30)
                if result.is_error:
                    raise SystemExit(f"ReadInbox failed: {text_of(result)}")
                for found in SENT.finditer(text_of(result)):
                    latencies_ns.setdefault(int(found[1]), received_ns - int(found[2]))
        finally:
            process.join(10)
            if process.is_alive():
                process.terminate()
    kept = [latencies_ns[seq] / 1e6 for seq in range(warmup, total) if seq in latencies_ns]
    return kept, total - len(latencies_ns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200, help="messages measured, each way")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up messages, not measured")
    parser.add_argument(
        "--head-start-ms", type=float, default=20.0, help="between starting a call and the send"
    )
    args = parser.parse_args()

    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-mcp-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root  # the server and the spawned processes inherit it
        team = TeamFile(TeamPaths(Path(root), TEAM))
        team.create(description="MCP delivery benchmark")
        team.add_member(latency.OURS_AGENT)  # the files receiver; bob joins over MCP
        print(f"config root: {root} (temporary)  durability: {default_durability()}")
        print(
            f"mcp: {args.messages} messages (+{args.warmup} warm-up), each to a ReadInbox call "
            f"blocked in `swarm mcp` over stdio ({args.head_start_ms:g} ms head start) ..."
        )
        mcp, lost = run_mcp(ctx, root, args.messages, args.warmup, args.head_start_ms / 1000)
        print(
            f"files: {args.messages} messages (+{args.warmup} warm-up), receiver process on "
            "Mailbox.wait + InboxWatcher (bench/latency.py) ..."
        )
        files, _ = latency.run_ours(ctx, root, args.messages, args.warmup)
    if not mcp:
        raise SystemExit("mcp: no message arrived")
    rows = [("mcp (ReadInbox)", mcp), ("files (Mailbox.wait)", files)]
    print(f"  {'':22} {'p50 ms':>8} {'p99 ms':>8} {'min ms':>8} {'max ms':>8}")
    for label, values in rows:
        print(
            f"  {label:22} {percentile(values, 50):8.2f} {percentile(values, 99):8.2f} "
            f"{min(values):8.2f} {max(values):8.2f}"
        )
    added = percentile(mcp, 50) - percentile(files, 50)
    print(f"  MCP adds {added:.2f} ms at the median; lost over MCP: {lost}")
    print(
        f"mcp_p50_ms={percentile(mcp, 50):.2f} mcp_p99_ms={percentile(mcp, 99):.2f} "
        f"files_p50_ms={percentile(files, 50):.2f} files_p99_ms={percentile(files, 99):.2f} "
        f"messages={args.messages} lost={lost}"
    )


if __name__ == "__main__":
    main()
