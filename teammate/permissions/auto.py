"""The ``auto`` permission mode: a call the rules would ask the lead about is first put to a
small model (the ``haiku`` alias), which answers allow, deny or ask; anything but a clear
allow or deny, and any failure, asks the lead as ``default`` mode would.

Rules still come first: a deny rule denies, an allow rule (or a read) allows, without a model
call. What the judge is sent, exactly (`judge_request`):

- system: `JUDGE_PROMPT`, which says its job and the answer format;
- one user message: the working directory, the permission rules in force (allow, deny and ask
  lists as rule texts), and the call: the tool's name and its input as JSON;
- no tools, ``max_tokens`` `JUDGE_MAX_TOKENS`.

The answer's first word decides: ``ALLOW`` or ``DENY`` (the rest of the line is the reason,
shown to the model on a denial and kept in the transcript); anything else is ``ask``. The
judge's usage is counted in the agent's status like its other model calls.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teammate.api.model import Model, ModelError, ModelRequest, Usage

JUDGE_MODEL = "haiku"
JUDGE_MAX_TOKENS = 200
JUDGE_PROMPT = (
    "You decide whether an AI coding agent may make one tool call without asking a person. "
    "Allow only calls that are clearly safe and within the project: reading, searching, "
    "building, testing, editing files inside the working directory. Deny calls that are "
    "clearly destructive or reach outside the project (deleting outside it, force-pushing, "
    "changing system settings, sending data elsewhere). When in any doubt, answer ASK: a person "
    "will decide. Respect the permission rules given. Answer with one line: ALLOW, DENY or ASK, "
    "then a colon and a short reason."
)


@dataclass(frozen=True)
class Judgement:
    behavior: str  # allow | deny | ask
    reason: str
    usage: Usage | None = None  # the judge's model call (None: it failed)


JUDGE_TRIES = 3  # a passing failure (529, a reset) is tried again this often, quickly
JUDGE_BACKOFF_S = 0.5


def judge_request(
    tool_name: str, tool_input: Mapping[str, Any], rules: Mapping[str, list[str]], cwd: Path
) -> ModelRequest:
    """The request the judge is sent for one call (see the module's docstring)."""
    text = (
        f"Working directory: {cwd}\n"
        f"Permission rules: {json.dumps(dict(rules), ensure_ascii=False)}\n"
        f"Tool: {tool_name}\n"
        f"Input: {json.dumps(dict(tool_input), ensure_ascii=False)}"
    )
    return ModelRequest(
        system=[{"type": "text", "text": JUDGE_PROMPT}],
        tools=[],
        messages=[{"role": "user", "content": [{"type": "text", "text": text}]}],
        max_tokens=JUDGE_MAX_TOKENS,
    )


def judge(
    model: Model,
    tool_name: str,
    tool_input: Mapping[str, Any],
    rules: Mapping[str, list[str]],
    cwd: Path,
) -> Judgement:
    """Ask `model` (already the judge's variant) about one call; never raises."""
    request = judge_request(tool_name, tool_input, rules, cwd)
    for attempt in range(JUDGE_TRIES):
        try:
            reply = model.complete(request)
            break
        except (ModelError, OSError) as exc:
            if attempt + 1 == JUDGE_TRIES or not getattr(exc, "retryable", False):
                return Judgement("ask", f"the auto-mode check failed ({exc})")
            time.sleep(JUDGE_BACKOFF_S * 2**attempt)  # a passing failure: a short wait
    said = " ".join(b.get("text", "") for b in reply.content if b.get("type") == "text").strip()
    word, _, reason = said.partition(":")
    verdict = word.strip().upper()
    if verdict in ("ALLOW", "DENY"):
        why = reason.strip() or "no reason given"
        return Judgement(verdict.lower(), f"auto mode: {why}", reply.usage)
    return Judgement("ask", f"auto mode could not decide: {said[:200] or 'no answer'}", reply.usage)
