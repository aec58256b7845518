"""Fork: a sub-agent that starts from its parent's whole conversation (spec agents.md section 4).

When forking is on (`fork_enabled`: ``SWARM_FORK_SUBAGENT`` in the environment, or under
``env`` in a settings file) an Agent call without ``subagent_type`` forks the caller. The child
sends the parent's system prompt, tools and model unchanged, and `fork_messages` gives it the
parent's history up to and including the assistant turn that forked, then one user message
answering every ``tool_use`` of that turn with the same `PLACEHOLDER`, then the child's
directive. Children forked in one turn therefore send requests that are byte-identical up to
their directive, so all but the first read the conversation from the prompt cache; the last
placeholder carries a cache breakpoint (the request's fourth, the API's most) so the shared
part includes the forking turn itself.

The directive is wrapped in `directive_text`: who the child is (a worker, not the main agent),
how to work (no questions, tools directly, commit before reporting) and the answer's form
(``Scope:``, ``Result:``, ``Key files:``, ``Files changed:``, ``Issues:``), inside the
`FORK_TAG` marker. A fork child may not fork again: its tool context says so (``forked``), and
`is_fork_conversation` finds the marker in a conversation that came from one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from teammate.tools.base import ToolError

FORK_VARIABLE = "SWARM_FORK_SUBAGENT"
FORK_TYPE = "fork"  # the agent type a fork child is shown as
PLACEHOLDER = "Fork started \u2014 processing in background"
FORK_TAG = "forked-worker"
ANSWER_FORM = ("Scope:", "Result:", "Key files:", "Files changed:", "Issues:")


def fork_enabled(environ: Mapping[str, str], settings_env: Mapping[str, str] | None = None) -> bool:
    """Whether `FORK_VARIABLE` is on (``1``, ``true``, ``yes``, ``on``) in the environment,
    else in a settings file's ``env``."""
    value = environ.get(FORK_VARIABLE)
    if value is None and settings_env is not None:
        value = settings_env.get(FORK_VARIABLE)
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def directive_text(directive: str, worktree: Path | None = None, home: Path | None = None) -> str:
    """The fork child's last text block: its directive inside the boilerplate and marker."""
    moved = (
        f"\nYou work in your own git worktree, {worktree}, a fresh copy of the repository. "
        f"Paths in the conversation above point into {home}: translate them into the worktree, "
        "and read a file again before you change it, since it may differ from what you saw.\n"
        if worktree is not None
        else ""
    )
    return (
        f"<{FORK_TAG}>\n"
        "You are a forked worker: a copy of the agent above, started in the background to do "
        "one piece of work. You are not that agent; it goes on with its own work and reads "
        "only your final answer.\n"
        "- Do not converse and do not ask questions: nobody will answer. Decide, and say what "
        "you decided.\n"
        "- Use your tools directly. You cannot fork or start agents of your own.\n"
        "- Keep to the directive. If you change files, commit them with git before you "
        "answer.\n"
        "- Your final answer has exactly these parts, each starting a line:\n"
        "  Scope: what you were asked to do, in one line\n"
        "  Result: what you found or did\n"
        "  Key files: the paths that matter\n"
        "  Files changed: each changed path with its commit hash (or: none)\n"
        "  Issues: what went wrong or is left (or: none)\n"
        f"{moved}"
        f"\nDirective: {directive}\n"
        f"</{FORK_TAG}>"
    )


def fork_messages(
    history: list[dict[str, Any]], tool_use_id: str, directive: str
) -> list[dict[str, Any]]:
    """The child's conversation: `history` (ending with the assistant turn that holds the
    forking `tool_use_id`), then every tool use of that turn answered with `PLACEHOLDER`,
    then `directive` (already wrapped). A `ToolError` if the history does not end that way."""
    if not history or history[-1].get("role") != "assistant":
        raise ToolError("a fork starts from the turn that calls Agent; this conversation has none")
    uses = [b for b in history[-1]["content"] if b.get("type") == "tool_use"]
    if tool_use_id not in {b.get("id") for b in uses}:
        raise ToolError("a fork starts from the turn that calls Agent; this call is not in it")
    answers: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": PLACEHOLDER} for b in uses
    ]
    # a cache breakpoint where the children part: the first child's request writes the shared
    # prefix (the forking turn and its placeholders too), its siblings' read all of it
    answers[-1]["cache_control"] = {"type": "ephemeral"}
    return [
        *copy.deepcopy(history),
        {"role": "user", "content": [*answers, {"type": "text", "text": directive}]},
    ]


def is_fork_conversation(messages: list[dict[str, Any]]) -> bool:
    """Whether a text block of a user message of `messages` opens with the fork marker (a
    fork child's directive; a quote of it inside another message does not count)."""
    opening = f"<{FORK_TAG}>"
    for message in messages:
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "text" and str(block.get("text", "")).startswith(opening):
                return True
    return False
