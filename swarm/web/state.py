"""The team as the page shows it: `swarm watch`'s snapshot (`swarm.views.snapshot.to_json`, the
same JSON as ``swarm status --json``), each waiting request with its content in full as
``swarm permissions --show`` prints it (`swarm.team.request_text.content_lines`: the command,
the diff of an Write or Edit, the plan, the questions) and, for a question, its questions and
options as the page's Answer form needs them. Reads only, but for what `swarm watch` writes
before it looks (`Mailbox.observe_team`: swarm's record of what members sent each other).

Where the snapshot says how long ago (``age_s``, ``activity_age_s``) or how long from now
(``lease_s``), the state says when instead (``at_ms``, ``activity_at_ms``, ``lease_ends_ms``,
milliseconds since the epoch) and the page counts the ages itself: a team where nothing happens
looks the same at every look, so nothing is sent to the pages (`swarm.web.feed`).

The page inserts every string of it as text (``textContent``), never as HTML.
"""

from __future__ import annotations

import json
from typing import Any

from protocols.clock import now_ms
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.team.approvals import member_cwd
from swarm.team.request_text import QUESTION_TOOL, content_lines
from swarm.team.signatures import lead_mailbox, signing_problem
from swarm.views.snapshot import RequestView, snapshot, to_json

MESSAGES = 30  # the last messages to the lead shown
# (list, the snapshot's field, the state's field, its sign): ages become the instants they count
# from (-), time left the instant it ends (+)
INSTANTS = (
    ("members", "activity_age_s", "activity_at_ms", -1),
    ("members", "lease_s", "lease_ends_ms", 1),
    ("requests", "age_s", "at_ms", -1),
    ("messages", "age_s", "at_ms", -1),
)


class TeamState:
    """Looks at one team again and again (the snapshot's readers are kept between looks): use
    from one thread."""

    def __init__(self, paths: TeamPaths) -> None:
        self.paths = paths
        self._mailbox = lead_mailbox(paths)

    def look(self) -> dict[str, Any]:
        self._mailbox.observe_team()  # before a reader that deletes what it read takes it
        now = now_ms()
        view = snapshot(self.paths, now_ms=now, messages=MESSAGES)
        state = to_json(view)
        dated(state, now)
        state["requests"] = [
            {**shown, **_content(self.paths, request)}
            for shown, request in zip(state["requests"], view.requests, strict=True)
        ]
        state["store"] = "postgresql" if self.paths.store is not None else "files"
        return state


def dated(state: dict[str, Any], now: int) -> None:
    """Each of `INSTANTS` in `state` (a snapshot's JSON taken at `now`) from seconds before or
    after `now` to the instant itself."""
    for listed, seconds, instant, sign in INSTANTS:
        for item in state[listed]:
            value = item.pop(seconds, None)
            at = None if value is None else now + sign * round(value * 1000)
            # a lease's end is counted on the database's clock, ours differs by a few ms at each
            # look: to the second, or a quiet team on PostgreSQL would change at every look
            item[instant] = round(at, -3) if at is not None and sign > 0 else at


def _content(paths: TeamPaths, request: RequestView) -> dict[str, Any]:
    pending = request.pending
    if pending is None:
        return {"content": [], "questions": []}
    lines = content_lines(pending, member_cwd(paths, pending.teammate))
    entry = open_store(paths).team_file().entry(pending.teammate)
    return {
        "content": lines,
        # the teammate would ignore an answer from here (`signing_problem`): the page says why
        "cannot_answer": None if pending.kind == "file" else signing_problem(paths, entry),
        "description": pending.asked,
        "questions": _questions(pending.input) if pending.tool == QUESTION_TOOL else [],
    }


def _questions(tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    """Each question with its options' labels and whether several may be chosen."""
    questions = tool_input.get("questions")
    shown = []
    for question in questions if isinstance(questions, list) else []:
        if not isinstance(question, dict):
            continue
        options = [o for o in question.get("options") or [] if isinstance(o, dict)]
        shown.append(
            {
                "question": str(question.get("question", "")),
                "multiSelect": bool(question.get("multiSelect")),
                "options": [
                    {"label": str(o.get("label", "")), "description": str(o.get("description", ""))}
                    for o in options
                ],
            }
        )
    return shown


def encoded(state: dict[str, Any]) -> str:
    """`state` as one line of JSON (every character outside ASCII escaped, so also every
    control character: the line is safe in an event stream's ``data:`` field)."""
    return json.dumps(state, ensure_ascii=True, default=str, separators=(",", ":"))
