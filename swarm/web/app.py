"""The starlette app of `swarm web`: every route, and the checks before each (`swarm.web.access`).

GET ``/`` the page, ``/app.js`` and ``/app.css`` its parts, ``/api/session`` the caller's role,
``/api/state`` the team now (`swarm.web.state`), ``/api/events`` the team as server-sent events
(an ``event: state`` with the whole state each time it changes, a comment every `KEEPALIVE_S`);
POST ``/api/requests/{id}/approve`` (``{"feedback"?}``), ``.../deny`` (``{"reason"?}``),
``.../answer`` (``{"answers": [...]}``, one per question): the same check-and-set as ``swarm
approve``, ``swarm deny`` and ``swarm answer``, so of two answers one wins and the other gets
409 naming it. Every response says no-store, nosniff, no referrer and a content security policy
that runs only this server's script and styles.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from protocols.errors import ProtocolsError
from protocols.paths import TeamPaths
from swarm.team.approvals import (
    AlreadyAnswered,
    CannotSign,
    QuestionError,
    RequestNotFound,
    answer,
    answer_question,
)
from swarm.web.access import FailureLimit, Role, Tokens, change_refused, cookie_name, given_token
from swarm.web.feed import Feed

STATIC = Path(__file__).parent / "static"
KEEPALIVE_S = 15.0
FIRST_LOOK_S = 30.0
MAX_BODY = 1_000_000
BY = "swarm web"
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}
Handler = Callable[[Request], Awaitable[Response]]


class Web:
    """The routes of one server: its team, tokens, port, feed and failure limit."""

    def __init__(self, paths: TeamPaths, tokens: Tokens, port: int, tls: bool) -> None:
        self.paths = paths
        self.tokens = tokens
        self.port = port
        self.scheme = "https" if tls else "http"
        self.feed = Feed(paths)
        self.limit = FailureLimit()

    def app(self) -> Starlette:
        guarded = self._guarded
        routes = [
            Route("/", guarded(self.page)),
            Route("/app.js", guarded(self._static("app.js", "text/javascript"))),
            Route("/app.css", guarded(self._static("app.css", "text/css"))),
            Route("/api/session", guarded(self.session)),
            Route("/api/state", guarded(self.state)),
            Route("/api/events", guarded(self.events)),
            Route("/api/requests/{rid}/{verb}", guarded(self.change), methods=["POST"]),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        import asyncio

        self.feed.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(self.feed.stop)

    def _guarded(self, handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            client = request.client.host if request.client else "?"
            if self.limit.shut_out(client):
                return _answer({"error": "too many wrong tokens: try again later"}, 429)
            given = given_token(request.query_params, request.headers, request.cookies, self.port)
            role = self.tokens.role(given)
            if role is None:
                self.limit.failed(client)
                return _answer({"error": "this swarm web server needs its token (?token=...)"}, 401)
            request.state.role = role
            response = await handler(request)
            response.headers.update(HEADERS)
            return response

        return guarded

    async def page(self, request: Request) -> Response:
        response = FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")
        token = given_token(request.query_params, request.headers, {}, self.port)
        if token:  # the page's parts and its event stream come with the cookie
            response.set_cookie(
                cookie_name(self.port), token, httponly=True, samesite="strict",
                secure=self.scheme == "https",
            )  # fmt: skip
        return response

    def _static(self, name: str, media_type: str) -> Handler:
        async def static(request: Request) -> Response:
            return FileResponse(STATIC / name, media_type=f"{media_type}; charset=utf-8")

        return static

    async def session(self, request: Request) -> Response:
        return _answer({"role": str(request.state.role), "team": self.paths.team})

    async def state(self, request: Request) -> Response:
        await self.feed.next(0, FIRST_LOOK_S)  # the first look, if not published yet
        if not self.feed.text:
            return _answer({"error": f"cannot read the team yet: {self.feed.problem}"}, 503)
        return Response(self.feed.text, media_type="application/json")

    async def events(self, request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            seen = 0
            while True:
                if await self.feed.next(seen, KEEPALIVE_S):
                    seen = self.feed.version
                    yield f"event: state\nid: {seen}\ndata: {self.feed.text}\n\n"
                else:
                    yield ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def change(self, request: Request) -> Response:
        own = {f"{self.scheme}://{request.headers.get('host', '')}"}
        why = change_refused(request.headers, self.tokens, own)
        if why is not None or request.state.role is not Role.FULL:
            return _answer({"error": why or "a read-only token cannot answer"}, 403)
        body = await request.body()
        if len(body) > MAX_BODY:
            return _answer({"error": "too large"}, 413)
        try:
            given = json.loads(body or b"{}")
        except ValueError:
            return _answer({"error": "the body is not JSON"}, 400)
        if not isinstance(given, dict):
            return _answer({"error": "the body must be a JSON object"}, 400)
        rid, verb = request.path_params["rid"], request.path_params["verb"]
        if verb not in ("approve", "deny", "answer"):
            return _answer({"error": f"no such action {verb!r}"}, 404)
        try:
            done = await anyio.to_thread.run_sync(self._write, rid, verb, given)
        except AlreadyAnswered as exc:
            return _answer({"error": str(exc), "answered": True}, 409)
        except RequestNotFound as exc:
            return _answer({"error": str(exc)}, 404)
        except (QuestionError, ValueError) as exc:
            return _answer({"error": str(exc)}, 400)
        except CannotSign as exc:  # the teammate would ignore it: nothing was written
            return _answer({"error": str(exc)}, 403)
        except ProtocolsError as exc:
            return _answer({"error": str(exc)}, 500)
        finally:
            self.feed.poke()
        return _answer(done)

    def _write(self, rid: str, verb: str, given: dict[str, Any]) -> dict[str, Any]:
        """The answer written (a worker thread); what the page is told."""
        if verb == "answer":
            answers = given.get("answers")
            if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                raise ValueError('give {"answers": ["...", ...]}: one answer per question')
            pending, chosen = answer_question(self.paths, rid, answers, by=BY)
            return {"id": pending.id, "answered": chosen}
        approve = verb == "approve"
        text = given.get("feedback" if approve else "reason")
        if text is not None and not isinstance(text, str):
            raise ValueError("a reason or feedback must be text")
        pending = answer(self.paths, rid, approve=approve, text=text or None, by=BY)
        return {"id": pending.id, "approved": approve}


def _answer(body: dict[str, Any], status: int = 200) -> Response:
    return JSONResponse(body, status_code=status, headers=HEADERS)
