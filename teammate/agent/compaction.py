"""Compaction: a conversation that fills its window is replaced by a summary the model writes,
so an agent that works for hours goes on with its task instead of forgetting it.

The summary request is the conversation as it is (the same tools, system prompt and messages,
so it reads them from the prompt cache) with one more user turn asking for the summary
(`SUMMARY_PROMPT`, and a person's instructions for a compaction by hand), without tools use.
What replaces the conversation (`after_compaction`) is one user turn that holds:

- the summary;
- the work in progress, word for word: the prompt of the piece of work the agent was doing (a
  teammate's task with its description and criteria), however long ago it was given;
- what the agent's owner says it must know (`state`: a teammate's team, lead, task and its
  status on the board);
- the files the conversation read and changed;

followed by the most recent exchanges as they were (`recent_tail`: at most a tenth of the
window, from an assistant turn on, so no tool result loses its call).

Microcompaction (`clear_old_results`) replaces the content of old tool results with
`CLEARED`, keeping the most recent ones: it runs when the prompt cache has expired anyway
(the whole conversation is written again, so the shorter the better) and when a summary
cannot be had.

`summary_turn` recognises the summary request (its `MARKER`), for scripted models and tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from teammate.agent.requests import estimate

CLEARED = "[Old tool result content cleared]"
MARKER = "<compact-request>"
SUMMARY_MAX_TOKENS = 20_000
KEEP_RESULTS = 3  # user turns with tool results left whole by a microcompaction
RESULT_CHARS = 400  # a tool result this short is not worth clearing
TAIL_SHARE = 10  # the tail kept after a compaction: at most 1/10 of the window ...
TAIL_MOST = 20_000  # ... and at most this many tokens
FILES_KEPT = 40
FILE_TOOLS = {"Read": "read", "Write": "written", "Edit": "edited", "NotebookEdit": "edited"}

SUMMARY_PROMPT = f"""{MARKER}
This conversation is about to be replaced by your summary of it, so that you can go on working
with room to spare. Write that summary now, as text only: do not call any tool.

The summary is all you will have of this conversation, so keep in it everything the work needs:
1. The task: what was asked, by whom, and every requirement and acceptance criterion, exactly.
2. Decisions made and why; what the user or the team lead said that changes the task.
3. What is done: the steps taken, the commands run and what they showed, with their results.
4. Files: each file read or changed, and what matters about it (key lines, what changed).
5. Errors met and how they were fixed or worked around.
6. Open questions and requests waiting for an answer.
7. What you were doing right before this summary, and the next steps, in order.

Write it as notes to yourself: precise names, paths, numbers and commands; no pleasantries.
</compact-request>"""


@dataclass
class FilesTouched:
    """The files a conversation read or changed, newest last, across compactions."""

    seen: dict[str, set[str]] = field(default_factory=dict)

    def scan(self, messages: Iterable[dict[str, Any]]) -> None:
        for message in messages:
            for block in message.get("content", []):
                if block.get("type") != "tool_use" or block.get("name") not in FILE_TOOLS:
                    continue
                given = block.get("input") or {}
                path = given.get("file_path") or given.get("notebook_path")
                if isinstance(path, str) and path:
                    how = self.seen.pop(path, set())
                    self.seen[path] = how | {FILE_TOOLS[block["name"]]}
        while len(self.seen) > FILES_KEPT:
            self.seen.pop(next(iter(self.seen)))

    def text(self) -> str:
        if not self.seen:
            return ""
        lines = [f"- {path} ({', '.join(sorted(how))})" for path, how in self.seen.items()]
        intro = "Files this conversation read or changed (read them again before relying on what"
        return f"{intro} they held):\n" + "\n".join(lines)


def summary_messages(messages: list[dict[str, Any]], instructions: str) -> list[dict[str, Any]]:
    """The conversation with the summary request as its last user turn."""
    ask = SUMMARY_PROMPT + (f"\n\nAlso: {instructions.strip()}" if instructions.strip() else "")
    request = {"type": "text", "text": ask}
    if messages and messages[-1]["role"] == "user":
        last = messages[-1]
        return [*messages[:-1], {**last, "content": [*last["content"], request]}]
    return [*messages, {"role": "user", "content": [request]}]


def summary_of(content: list[dict[str, Any]]) -> str:
    """The summary in the model's answer: its text (thinking and any tool call left out)."""
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text").strip()


def recent_tail(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The most recent messages, from an assistant turn on, within `budget` tokens (none if
    even the last exchange is bigger)."""
    kept: list[dict[str, Any]] = []
    size = 0
    start = len(messages)
    for at in range(len(messages) - 1, 0, -1):
        size += estimate(messages[at]["content"])
        if size > budget:
            break
        if messages[at]["role"] == "assistant":
            start = at
    kept = messages[start:]
    return [dict(m, content=list(m["content"])) for m in kept]


def after_compaction(
    summary: str,
    work: str | None,
    state: list[str],
    files: FilesTouched,
    tail: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The conversation that replaces a compacted one (module doc)."""
    blocks = [
        "This conversation was compacted to keep within the context window. Your summary of "
        f"everything before this point:\n<summary>\n{summary}\n</summary>"
    ]
    if work:
        blocks.append(
            "The work in progress when the conversation was compacted, as it was given to you "
            f"(its requirements still hold):\n<current-work>\n{work}\n</current-work>"
        )
    blocks += [s for s in state if s]
    if files.text():
        blocks.append(files.text())
    follow = "Go on with the work from where you left off"
    blocks.append(
        f"{follow}: the messages below are the last ones before the summary, as they were."
        if tail
        else f"{follow}; do not ask the user to repeat anything."
    )
    first = {"role": "user", "content": [{"type": "text", "text": b} for b in blocks]}
    return [first, *tail]


def clear_old_results(messages: list[dict[str, Any]], keep: int = KEEP_RESULTS) -> int:
    """Replace the content of tool results older than the last `keep` turns that have any with
    `CLEARED`; the characters freed (0: nothing changed)."""
    holders = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and any(b.get("type") == "tool_result" for b in m["content"])
    ]
    freed = 0
    for at in holders[: max(0, len(holders) - keep)]:
        content = []
        for block in messages[at]["content"]:
            text = block.get("content")
            if block.get("type") == "tool_result" and len(str(text)) > RESULT_CHARS:
                freed += len(str(text)) - len(CLEARED)
                block = {**block, "content": CLEARED}
            content.append(block)
        messages[at] = {**messages[at], "content": content}
    return freed


def summary_turn(body: dict[str, Any]) -> bool:
    """Whether a request (as sent to the API) asks for a compaction summary."""
    messages = body.get("messages") or []
    if not messages:
        return False
    content = messages[-1].get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    return any(MARKER in str(b.get("text", "")) for b in blocks if isinstance(b, dict))
