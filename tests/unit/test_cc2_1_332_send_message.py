"""SendMessage's ``options`` and its ``"@parent"`` and ``"@find"`` addresses (Claude Code
2.1.332), in swarm's SendMessage: ``"@parent"`` is the lead that started the teammate (with
``options.priority`` or without), and what looks up Claude Code's cloud sessions by title
(``"@find"``, ``options.session_name``) is refused with an error that says what is allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protocols.inbox.mailbox import Mailbox
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from teammate.tools.base import ToolContext, ToolError
from teammate.tools.team import send_message


@dataclass
class Link:
    """The part of a `TeamLink` SendMessage uses."""

    name: str
    paths: TeamPaths
    board: TaskBoard
    mailbox: Mailbox
    color: str | None = None


def context(paths: TeamPaths, tmp_path: Path, name: str) -> ToolContext:
    link = Link(name, paths, TaskBoard(paths), Mailbox(paths), "blue")
    return ToolContext(cwd=tmp_path, team=link)  # type: ignore[arg-type]


def send(ctx: ToolContext, **fields: Any) -> dict[str, Any]:
    result = json.loads(str(send_message.run(ctx, {"summary": "a note", **fields})))
    assert isinstance(result, dict)
    return result


def texts(paths: TeamPaths, name: str) -> list[str]:
    return [entry.text for entry in Mailbox(paths).peek_all(name)]


def test_at_parent_is_the_lead_that_started_the_teammate(
    team: TeamFile, paths: TeamPaths, tmp_path: Path
) -> None:
    alice = context(paths, tmp_path, "alice")
    assert (
        send(alice, to="@parent", message="done")["message"] == "Message sent to team-lead's inbox"
    )
    sent = send(alice, to="@parent", message="and more", options={"priority": "now"})
    assert sent["success"] is True
    assert texts(paths, LEAD_NAME) == ["done", "and more"]
    (entry, _) = Mailbox(paths).peek_all(LEAD_NAME)
    assert (entry.from_, entry.summary) == ("alice", "a note")


def test_the_lead_has_no_parent(team: TeamFile, paths: TeamPaths, tmp_path: Path) -> None:
    lead = context(paths, tmp_path, LEAD_NAME)
    with pytest.raises(ToolError, match=r'you are the team lead.*no "@parent"'):
        send(lead, to="@parent", message="hello?")
    assert texts(paths, LEAD_NAME) == []


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"to": "@find", "options": {"session_name": "x"}}, '"@find" looks up Claude Code'),
        ({"to": "@find"}, 'send to a teammate by name, "\\*" for all of them, or "@parent"'),
        ({"to": "@parent", "options": {"session_name": "x"}}, "options.session_name names"),
        ({"to": "bob", "options": {"priority": "next"}}, 'options only go with to: "@parent"'),
        ({"to": "@parent", "options": {"priority": "soon"}}, "options.priority"),
        ({"to": "@parent", "options": {"colour": "red"}}, "options.colour"),
        ({"to": "session_01ABCDEFGHIJKLMNOPQRSTUV"}, "no teammate named"),
        ({"to": "bob@t"}, 'bare teammate name, "\\*" or "@parent"'),
    ],
)
def test_what_only_claude_codes_sessions_have_is_refused_saying_what_is_allowed(
    team: TeamFile, paths: TeamPaths, tmp_path: Path, fields: dict[str, Any], error: str
) -> None:
    with pytest.raises(ToolError, match=error):
        send(context(paths, tmp_path, "alice"), message="hi", **fields)
    assert all(texts(paths, name) == [] for name in ("team-lead", "bob", "carol"))


def test_the_schema_offers_at_parent_and_the_options(team: TeamFile) -> None:
    schema = send_message.schema()["input_schema"]
    assert "@parent" in schema["properties"]["to"]["description"]
    options = schema["properties"]["options"]
    assert set(options["properties"]) == {"priority", "session_name"}
    assert options["properties"]["priority"]["enum"] == ["now", "next", "later"]
    assert "options" not in schema["required"]
