"""`swarm web` as a test runs it: a real server process on a free loopback port (of team `team`,
or with ``team=None`` of every team under the config root), its URLs and tokens, an HTTP client
(httpx2, the anthropic SDK's), and a reader of its event stream that keeps every state it was
sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from helpers import Processes, read_lines, wait_for

# a Claude teammate's AskUserQuestion in the tests that answer it from the page
QUESTIONS = [
    {
        "question": "Which database?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "a server"},
            {"label": "SQLite", "description": "a file"},
        ],
        "multiSelect": False,
    }
]


class WebServer:
    def __init__(
        self,
        procs: Processes,
        *args: str,
        team: str | None = "t",
        env: dict[str, str] | None = None,
    ) -> None:
        chosen = ["--team", team] if team is not None else []
        argv = [sys.executable, "-m", "swarm", "web", *chosen, "--listen", "127.0.0.1:0", *args]
        if team is None:  # every team: no $SWARM_TEAM may pick one
            env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k != "SWARM_TEAM"}
        self.proc = procs.start(argv, env)
        self.lines = read_lines(self.proc)
        wait_for(lambda: len(self.lines) >= 3 or self.proc.poll() is not None, "swarm web to start")
        assert self.lines[0].startswith("swarm web: http://127.0.0.1:"), self.lines
        self.url = self.lines[0].removeprefix("swarm web: ")
        self.viewer_url = self.lines[1].removeprefix("read-only: ")
        self.token = parse_qs(urlsplit(self.url).query)["token"][0]
        self.viewer_token = parse_qs(urlsplit(self.viewer_url).query)["token"][0]
        self.base = self.url.split("/?")[0]
        self.token_file = Path(self.lines[2].split("kept in ")[1].split(",")[0])
        self.client = httpx2.Client(base_url=self.base, timeout=30)

    def get(self, path: str, token: str | None = None) -> httpx2.Response:
        params = {"token": token} if token is not None else {}
        return self.client.get(path, params=params)

    def state(self) -> dict[str, Any]:
        response = self.get("/api/state", self.token)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def post(
        self,
        request_id: str,
        verb: str,
        body: dict[str, Any] | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx2.Response:
        sent = {
            "Authorization": f"Bearer {token or self.token}",
            "Content-Type": "application/json",
        }
        sent.update(headers or {})
        return self.client.post(
            f"/api/requests/{request_id}/{verb}", content=json.dumps(body or {}), headers=sent
        )

    def change(
        self,
        path: str,
        body: dict[str, Any] | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        team: str | None = None,
    ) -> httpx2.Response:
        """POST `body` as JSON to `path` with a token in the header, as the page does."""
        sent = {
            "Authorization": f"Bearer {token or self.token}",
            "Content-Type": "application/json",
        }
        sent.update(headers or {})
        params = {"team": team} if team is not None else {}
        return self.client.post(path, content=json.dumps(body or {}), headers=sent, params=params)

    def json(self, path: str, **params: str) -> Any:
        """GET `path` with the full token; its JSON (asserting a 200)."""
        response = self.client.get(path, params={"token": self.token, **params})
        assert response.status_code == 200, response.text
        return response.json()

    def close(self) -> None:
        self.client.close()


class EventReader:
    """The states an event stream sent, gathered by a daemon thread as they come."""

    def __init__(self, server: WebServer, token: str | None = None) -> None:
        self.states: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self.status: int | None = None
        self._client = httpx2.Client(base_url=server.base, timeout=httpx2.Timeout(30, read=None))
        self._token = token or server.token
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        params = {"token": self._token}
        try:
            with self._client.stream("GET", "/api/events", params=params) as response:
                self.status = response.status_code
                for line in response.iter_lines():
                    self.raw.append(line)
                    if line.startswith("data: "):
                        self.states.append(json.loads(line.removeprefix("data: ")))
        except httpx2.HTTPError:
            pass  # the server stopped (the test is over)

    def requests(self) -> list[dict[str, Any]]:
        return self.states[-1]["requests"] if self.states else []


def stop(server: WebServer) -> int:
    server.close()
    server.proc.terminate()
    return server.proc.wait(30)


__all__ = ["EventReader", "WebServer", "stop", "subprocess"]
