"""Prompt caching in a 5-turn tool loop: the share of turn 2+ prompt tokens read from the cache.

What it measures
    One real teammate process (``python -m teammate --model sonnet``) runs one prompt through
    the real `anthropic` SDK against the test suite's local Messages API server
    (``tests/messages_api.py``, with ``PromptCache(min_tokens=1024)``: 1024 tokens is the API's
    minimum cacheable prefix for Sonnet). The scripted model makes four cheap tool turns
    (``TaskList``, ``Read`` of a small file, ``Glob``, ``SendMessage`` to the lead) and ends
    with a text turn: 5 requests. The agent loop marks the tools, the system prompt and the last
    block of the conversation with ``cache_control``.

    Billing is deterministic given the sequence of request bodies, so the server's recorded
    requests are replayed through a fresh `PromptCache` to get each request's usage
    (``input_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``; tokens are
    estimated at 4 characters each). The figure is sum(cache_read) / sum(prompt tokens) over
    turns 2..5; turn 1's share (nothing cached yet: 0) is printed too.

Baseline and comparison
    * baseline: the same request bodies with every ``cache_control`` removed: nothing is
      cached, share 0%.
    * prefix only: ``cache_control`` kept on the tools and the system prompt only (the stable
      prefix), i.e. what caching only tools + system would give.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR``), never ``~/.claude``; the
teammate is shut down with a ``shutdown_request``. The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import lead_messages, start_claude_teammate
from helpers import wait_for as wait_until
from messages_api import MessagesAPI, PromptCache, Turn

from protocols import LEAD_NAME, Mailbox, TeamFile, TeamPaths
from protocols.clock import now_iso
from protocols.member.status import read_status
from protocols.messages.models import IdleNotification, ShutdownApproved, ShutdownRequest

TEAM = "prompt-cache"
NAME = "alice"
TURNS = 5
DEADLINE_S = 60.0
Usage = dict[str, int]


def script() -> list[Turn]:
    return [
        Turn.tool("TaskList", {}),
        Turn.tool("Read", {"file_path": "notes.txt"}),
        Turn.tool("Glob", {"pattern": "*.txt"}),
        Turn.tool(
            "SendMessage",
            {"to": LEAD_NAME, "message": "notes.txt says: ship it", "summary": "notes read"},
        ),
        Turn.text("Read the notes and told the lead."),
    ]


def run_teammate(min_tokens: int) -> tuple[list[dict[str, Any]], PromptCache, Usage]:
    """Run the scripted turn in a real teammate process: the request bodies the server got,
    the server's cache, and the usage totals the teammate wrote to its status file."""
    with (
        tempfile.TemporaryDirectory(prefix="swarm-bench-prompt-cache-") as root,
        MessagesAPI(script(), cache=PromptCache(min_tokens=min_tokens)) as api,
    ):
        os.environ["CLAUDE_CONFIG_DIR"] = root
        workdir = Path(root) / "work"
        workdir.mkdir()
        (workdir / "notes.txt").write_text("ship it\n", encoding="utf-8")
        paths = TeamPaths(Path(root), TEAM)
        team = TeamFile(paths)
        team.create(description="prompt caching", cwd=workdir)
        team.add_member(NAME, cwd=workdir)
        mailbox = Mailbox(paths)
        log_path = Path(root) / f"{NAME}.log"
        proc = start_claude_teammate(NAME, TEAM, root, workdir, api.url)
        try:
            mailbox.send(
                NAME,
                "Check the task list and the .txt files, read notes.txt, tell me what it says.",
                sender=LEAD_NAME,
                summary="read the notes",
            )
            wait_until(lambda: lead_messages(mailbox, IdleNotification), "alice to go idle")
            request = ShutdownRequest(
                requestId=f"shutdown-1@{NAME}", from_=LEAD_NAME, timestamp=now_iso()
            )
            mailbox.send(NAME, request, sender=LEAD_NAME)
            code = proc.wait(timeout=DEADLINE_S)
            if code != 0 or not lead_messages(mailbox, ShutdownApproved):
                raise SystemExit(
                    f"alice did not shut down cleanly (exit code {code}):\n{log_path.read_text()}"
                )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert api.cache is not None
        status = read_status(paths, NAME)
        if status is None:
            raise SystemExit("alice wrote no status file")
        return list(api.requests), api.cache, status.usage


# replaying the requests through the billing


def as_sent(body: dict[str, Any]) -> dict[str, Any]:
    return body


def strip_all(body: dict[str, Any]) -> dict[str, Any]:
    """The request with no ``cache_control`` anywhere."""
    body = copy.deepcopy(body)
    for block in _blocks_of(body):
        block.pop("cache_control", None)
    return body


def prefix_only(body: dict[str, Any]) -> dict[str, Any]:
    """The request with ``cache_control`` kept on the tools and system prompt only."""
    body = copy.deepcopy(body)
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict):
                    block.pop("cache_control", None)
    return body


def _blocks_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of the request that can carry ``cache_control``."""
    blocks = [b for b in body.get("tools") or [] if isinstance(b, dict)]
    system = body.get("system")
    if isinstance(system, list):
        blocks.extend(b for b in system if isinstance(b, dict))
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            blocks.extend(b for b in content if isinstance(b, dict))
    return blocks


def replay(
    requests: list[dict[str, Any]], min_tokens: int, change: Callable[[Any], Any]
) -> tuple[list[Usage], PromptCache]:
    """Each request's usage, billed in order by a fresh `PromptCache` after `change`."""
    cache = PromptCache(min_tokens=min_tokens)
    return [cache.bill(change(body)) for body in requests], cache


def prompt_tokens(usage: Usage) -> int:
    return (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )


def share(usages: list[Usage]) -> float:
    """sum(cache_read) / sum(prompt tokens), in percent."""
    total = sum(prompt_tokens(u) for u in usages)
    return 100 * sum(u["cache_read_input_tokens"] for u in usages) / total if total else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--min-tokens", type=int, default=1024, help="smallest cacheable prefix, tokens"
    )
    args = parser.parse_args()

    requests, live, counted = run_teammate(args.min_tokens)
    if len(requests) != TURNS:
        raise SystemExit(f"expected {TURNS} model requests, the server got {len(requests)}")
    failed = [
        block["content"]
        for body in requests[1:]
        for block in body["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("is_error")
    ]
    if failed:
        raise SystemExit(f"tool calls failed, the run is not the one meant: {failed}")
    sent, replayed = replay(requests, args.min_tokens, as_sent)
    if replayed.prefixes != live.prefixes:
        raise SystemExit("the replay cached other prefixes than the server did while serving")
    billed_read = sum(u["cache_read_input_tokens"] for u in sent)
    if counted["cache_read_input_tokens"] != billed_read:
        raise SystemExit(
            f"alice's status file counts {counted['cache_read_input_tokens']} cached tokens, "
            f"the server billed {billed_read}"
        )
    baseline, _ = replay(requests, args.min_tokens, strip_all)
    prefix, _ = replay(requests, args.min_tokens, prefix_only)

    print(
        f"{TURNS} requests through the anthropic SDK, billed by PromptCache(min_tokens="
        f"{args.min_tokens}), 4 chars/token:"
    )
    print("  turn   prompt  cache_read  cache_write   input   read share")
    for turn, usage in enumerate(sent, 1):
        total = prompt_tokens(usage)
        read = usage["cache_read_input_tokens"]
        print(
            f"  {turn:4d} {total:8d} {read:11d} {usage['cache_creation_input_tokens']:12d} "
            f"{usage['input_tokens']:7d} {100 * read / total:11.1f}%"
        )
    later = sent[1:]
    cached = share(later)
    first = share(sent[:1])
    prefix_share = share(prefix[1:])
    baseline_share = share(baseline[1:])
    print(
        f"turns 2-{TURNS}: {sum(prompt_tokens(u) for u in later)} prompt tokens, "
        f"{sum(u['cache_read_input_tokens'] for u in later)} read from the cache = "
        f"{cached:.1f}%   (turn 1: {first:.1f}%)"
    )
    print(
        f"prefix only (cache_control on tools + system alone): {prefix_share:.1f}% of turns "
        f"2-{TURNS} read from the cache"
    )
    print(f"baseline (no cache_control): {baseline_share:.1f}% read from the cache")
    print(f"alice's own status file agrees: {billed_read} tokens read from the cache in all")
    print(
        f"cached_share_turn2plus={cached:.1f} prefix_only_share={prefix_share:.1f} "
        f"baseline_share={baseline_share:.1f} turns={TURNS}"
    )


if __name__ == "__main__":
    main()
