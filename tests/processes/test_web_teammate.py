"""WebFetch and WebSearch in a real Claude teammate process, talking to the test suite's
Messages API server through the real `anthropic` SDK: a page fetched from a local web server
(allowed by a ``WebFetch(domain:...)`` rule of the project's settings) reaches the reader model
as markdown and the answer the next request; a web search's request carries the API's server
tool and its streamed ``server_tool_use``/``web_search_tool_result`` blocks become the result;
a turn holding those blocks goes back to the server unchanged; the searches are counted and
priced in the status file."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.catalogue import resolve
from protocols.member.status import read_status
from protocols.messages.models import IdleNotification, PermissionRequest, ShutdownRequest
from protocols.team.file import TeamFile
from teammate.api.script import web_search_blocks
from teammate.tools.web import READER_PROMPT
from teammate.tools.web_search import SEARCH_TOOL

Start = Callable[..., subprocess.Popen[str]]
DOC = (
    b"<html><head><title>Orchard</title><script>track()</script></head><body>"
    b"<h1>Codeword</h1><p>The codeword is <b>plum</b>.</p></body></html>"
)
HITS = [{"title": "Swarm teams", "url": "https://example.com/swarm"}]


@pytest.fixture
def page_url() -> Iterator[str]:
    """A local web server with one page, /doc.html; its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/doc.html"
            body = DOC if found else b"no such page"
            self.send_response(200 if found else 404)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/doc.html"
    server.shutdown()
    server.server_close()


class Researcher:
    """The model's side of the run: the teammate's own turns in order (fetch, search, a turn
    holding a search the API ran, done), the reader's answer, and the search request's."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.served: list[dict[str, Any]] = []  # the blocks of the turn with server blocks
        self.step = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn:
        if any(tool.get("type") == SEARCH_TOOL for tool in body.get("tools") or []):
            return Turn.web_search("swarm teams", HITS, "One page about swarm teams.")
        if body["system"][0]["text"] == READER_PROMPT:
            return Turn.text("The codeword is plum.")
        with self.lock:
            self.step += 1
            step = self.step
        if step == 1:
            return Turn.tool("WebFetch", {"url": self.url, "prompt": "What is the codeword?"})
        if step == 2:
            return Turn.tool("WebSearch", {"query": "swarm teams"})
        if step == 3:
            tell = {"to": "team-lead", "message": "The codeword is plum.", "summary": "codeword"}
            self.served = [
                *web_search_blocks("plum orchards", HITS),
                {"type": "text", "text": "The web agrees."},
                {"type": "tool_use", "id": "toolu_tell", "name": "SendMessage", "input": tell},
            ]
            usage = {"input_tokens": 10, "output_tokens": 5}
            usage["server_tool_use"] = {"web_search_requests": 1}  # type: ignore[assignment]
            return Turn(list(self.served), "tool_use", usage=usage)
        return Turn.text("Done.")


def tool_result(body: dict[str, Any]) -> dict[str, Any]:
    (result,) = [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    return result


def test_a_teammate_fetches_a_page_and_searches_the_web(
    team: TeamFile, start: Start, workdir: Path, page_url: str
) -> None:
    settings = workdir / ".claude" / "settings.json"
    settings.parent.mkdir()
    rules = {"allow": ["WebFetch(domain:127.0.0.1)", "WebSearch"]}
    settings.write_text(json.dumps({"permissions": rules}))
    model = Researcher(page_url)
    mailbox = Mailbox(team.paths)
    with MessagesAPI(model) as api:
        proc = start("alice", api)
        mailbox.send("alice", "Find the codeword, then check the web.", sender="team-lead")
        wait_for(
            lambda: any(isinstance(e.structured(), IdleNotification) for e in lead(team)),
            "alice to go idle",
        )
        request = ShutdownRequest(
            requestId="shutdown-1@alice", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
        )
        mailbox.send("alice", request, sender="team-lead")
        output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output[-3000:]
    main = [b for b in api.requests if "You are 'alice'" in json.dumps(b["system"])]
    (reader,) = [b for b in api.requests if b["system"][0]["text"] == READER_PROMPT]
    (search,) = [b for b in api.requests if b not in main and b is not reader]
    assert len(main) == 4
    # WebFetch: the rule allowed it (the lead was never asked); the reader read the markdown
    assert not [e for e in lead(team) if isinstance(e.structured(), PermissionRequest)]
    assert reader["model"] == resolve("haiku").id
    read = reader["messages"][0]["content"][0]["text"]
    assert "# Codeword\n\nThe codeword is **plum**." in read and "track()" not in read
    fetched = tool_result(main[1])
    assert fetched["content"].startswith(f"Fetched {page_url} (HTTP 200 OK, text/html, ")
    assert fetched["content"].endswith("The codeword is plum.")
    # WebSearch: the API's server tool, its streamed blocks read into the result
    assert search["tools"] == [{"type": SEARCH_TOOL, "name": "web_search", "max_uses": 8}]
    searched = tool_result(main[2])["content"]
    assert f"Links: {json.dumps(HITS)}" in searched and "One page about swarm teams." in searched
    # a turn holding a search the API ran goes back as it came; only its tool_use is answered
    assert main[3]["messages"][-2] == {"role": "assistant", "content": model.served}
    assert tool_result(main[3])["tool_use_id"] == "toolu_tell"
    told = [e for e in lead(team) if e.from_ == "alice" and "plum" in e.text]
    assert told
    # both searches (the WebSearch request's and the turn's) counted, and priced
    status = read_status(team.paths, "alice")
    assert status is not None and status.usage["web_search_requests"] == 2
    assert (status.costUsd or 0) >= 0.02


def lead(team: TeamFile) -> list[Any]:
    return Mailbox(team.paths).read_all("team-lead")
