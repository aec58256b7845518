"""Read's content blocks reach the model: a real Claude teammate process, talking to the test
suite's Messages API server through the real `anthropic` SDK, Reads a PNG and a notebook, and
the next request carries the image block (the file's own bytes) and the notebook's cells in
its tool_results; NotebookEdit then changes the notebook on disk."""

from __future__ import annotations

import base64
import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import DEADLINE_S, wait_for, went_idle
from messages_api import MessagesAPI, Turn
from PIL import Image

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.team.file import TeamFile

Start = Callable[..., subprocess.Popen[str]]


def tool_result(request: dict[str, Any]) -> dict[str, Any]:
    (result,) = [
        block
        for block in request["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    return result


def stop(team: TeamFile, proc: subprocess.Popen[str], name: str = "alice") -> None:
    request = ShutdownRequest(
        requestId=f"shutdown-1@{name}", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send(name, request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output[-3000:]


def test_a_png_and_a_notebook_read_reach_the_model_and_the_notebook_is_edited(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    picture = io.BytesIO()
    Image.linear_gradient("L").resize((64, 48)).convert("RGB").save(picture, "PNG")
    (workdir / "chart.png").write_bytes(picture.getvalue())
    cells = [{"cell_type": "code", "id": "c1", "metadata": {}, "source": "1 + 1", "outputs": []}]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (workdir / "nb.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    script = [
        Turn.tool("Read", {"file_path": "chart.png"}),
        Turn.tool("Read", {"file_path": "nb.ipynb"}),
        Turn.tool(
            "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "c1", "new_source": "2"}
        ),
        Turn.text("The chart is a gradient."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Look at chart.png.", sender="team-lead", summary="look")
        wait_for(lambda: went_idle(team.paths, "alice"), "alice to go idle")
        stop(team, proc)
    _, after_image, after_notebook, after_edit = api.requests
    image_result = tool_result(after_image)
    assert not image_result.get("is_error"), image_result
    (block,) = image_result["content"]
    assert block["type"] == "image"
    assert block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == (workdir / "chart.png").read_bytes()
    (cell,) = tool_result(after_notebook)["content"]
    assert cell == {"type": "text", "text": '<cell id="c1">1 + 1</cell id="c1">'}
    assert tool_result(after_edit)["content"] == "Cell c1 now holds:\n2"
    assert json.loads((workdir / "nb.ipynb").read_text())["cells"][0]["source"] == "2"
