"""The requests an agent sends: its conversation marked for prompt caching, and the size of it.

Caching that does not churn. Between two compactions the conversation only grows at its end,
so each request can read from the cache everything the one before it sent, if the breakpoints
are where the API looks:

- the tools (the last tool) and the system prompt each carry a breakpoint: they are the same
  in every request of the agent, across compactions;
- the end of the conversation carries one, so the next request finds this prefix;
- so does the block where the previous request ended, when it is not the end: the API looks
  back at most 20 blocks from a breakpoint for a prefix it has, and one turn that makes many
  tool calls at once adds more blocks than that (15 calls: 30 blocks), so without it such a
  request would write the whole conversation again. Four breakpoints in all, the API's most.

A breakpoint goes on the last block of a message that can carry one (not a thinking block).
`CacheMarks` remembers where the last request ended; a compaction, or anything else that
changes earlier messages, forgets it (`reset`).

TTL: breakpoints live 5 minutes (the API's default). An agent seen idle for more than that
between two pieces of work (a teammate waiting for its next task) asks for an hour instead
(``"ttl": "1h"``) from then on: an hour's write costs 2x the input price against 1.25x, and is
paid again only when the conversation grows, where a 5-minute cache gone cold makes the next
request write the whole conversation again. ``CLAUDE_CODE_PROMPT_CACHE_TTL`` (``5m``, ``1h``)
decides it instead. Every breakpoint of a request has the same TTL (the API wants longer TTLs
before shorter ones).

Sizes are estimates at 4 characters a token (`estimate`); the agent loop uses the API's own
counts of each reply where it has them (`teammate.agent.context`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

FIVE_MINUTES_S = 300.0
HOUR_S = 3600.0
UNMARKABLE = ("thinking", "redacted_thinking")


def cache_control(hour: bool) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": "1h"} if hour else {"type": "ephemeral"}


def estimate(value: Any) -> int:
    """About 4 characters a token."""
    return len(json.dumps(value, ensure_ascii=False)) // 4


def forced_ttl(environ: Mapping[str, str] | None = None) -> bool | None:
    """``CLAUDE_CODE_PROMPT_CACHE_TTL``: True for ``1h``, False for ``5m``, None if unset."""
    env = os.environ if environ is None else environ
    value = (env.get("CLAUDE_CODE_PROMPT_CACHE_TTL") or "").strip().lower()
    return {"1h": True, "5m": False}.get(value)


class CacheMarks:
    """Where the last request's conversation ended, and the TTL its breakpoints use."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.last: tuple[int, int] | None = None  # (message, block) of the last end mark
        self.forced = forced_ttl(environ)
        self.hour = bool(self.forced)
        self.written_ttl_s = FIVE_MINUTES_S  # the TTL the last request's cache was written for

    @property
    def ttl_s(self) -> float:
        return HOUR_S if self.hour else FIVE_MINUTES_S

    def idled(self, seconds: float) -> None:
        """The agent was idle `seconds` between two pieces of work (see the module doc)."""
        if self.forced is None and seconds > FIVE_MINUTES_S:
            self.hour = True

    def reset(self) -> None:
        self.last = None

    def mark(
        self, system: list[dict[str, Any]], tools: list[dict[str, Any]], messages: list[Any]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """The request's system, tools and messages with their breakpoints (copies of the marked
        blocks and messages only: the conversation itself stays unmarked)."""
        control = cache_control(self.hour)
        self.written_ttl_s = self.ttl_s
        if tools:
            tools = [*tools[:-1], {**tools[-1], "cache_control": control}]
        if system:
            system = [*system[:-1], {**system[-1], "cache_control": control}]
        messages = list(messages)
        end = _last_markable(messages, len(messages) - 1)
        for spot in {end, self.last if self.last != end else None} - {None}:
            assert spot is not None
            if spot[0] < len(messages) and spot[1] < len(messages[spot[0]]["content"]):
                message = messages[spot[0]]
                content = list(message["content"])
                content[spot[1]] = {**content[spot[1]], "cache_control": control}
                messages[spot[0]] = {**message, "content": content}
        self.last = end
        return system, tools, messages


def _last_markable(messages: list[dict[str, Any]], index: int) -> tuple[int, int] | None:
    """The last block that can carry a breakpoint, in message `index` or before it."""
    for at in range(index, -1, -1):
        content = messages[at]["content"]
        for block_at in range(len(content) - 1, -1, -1):
            if content[block_at].get("type") not in UNMARKABLE:
                return at, block_at
    return None
