"""The starlette app of `swarm web`: every route, and the checks before each (`swarm.web.access`).

GET ``/`` the page, ``/app.css`` and its scripts (`PARTS`), ``/api/session`` the caller's role
and the server's team, ``/api/teams`` the teams it shows (`swarm.web.teams`), ``/api/state``
the team now (`swarm.web.state`, with its cost over time), ``/api/events`` the team as
server-sent events (an ``event: state`` with the whole state each time it changes, a comment
every `KEEPALIVE_S`), ``/api/members/NAME/thread`` and ``/log`` (`swarm.web.threads`).
POST ``/api/requests/{id}/approve`` (``{"feedback"?}``), ``.../deny`` (``{"reason"?}``),
``.../answer`` (``{"answers": [...]}``, one per question): the same check-and-set as ``swarm
approve``, ``swarm deny`` and ``swarm answer``, so of two answers one wins and the other gets
409 naming it; ``/api/send``, ``/api/tasks`` and ``/api/members/NAME/stop``
(`swarm.web.actions`). A route of one team takes it as ``?team=NAME`` (a ``--team`` server's
own by default). Every change needs the full token in the header, JSON and this server's
origin (`swarm.web.access.change_refused`); every response carries `swarm.web.responses`'s
headers.
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
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route

from protocols.errors import Error
from protocols.paths import TeamPaths
from swarm.team.approvals import answer, answer_question
from swarm.web import actions, threads
from swarm.web.access import FailureLimit, Role, Tokens, change_refused, cookie_name, given_token
from swarm.web.responses import HEADERS, error_reply, reply
from swarm.web.teams import Teams

STATIC = Path(__file__).parent / "static"
KEEPALIVE_S = 15.0
FIRST_LOOK_S = 30.0
MAX_BODY = 1_000_000
BY = "swarm web"
VERBS = ("approve", "deny", "answer")
# the page's parts, in static/
PARTS = ("app.css", "app.js", "requests.js", "chart.js", "member.js", "actions.js")
Handler = Callable[[Request], Awaitable[Response]]
# a change: (the team, the route's path parameters, the JSON body) -> what the page is told
Change = Callable[[TeamPaths, dict[str, str], dict[str, Any]], dict[str, Any]]
# a view: (the team, the route's path parameters, the query) -> the JSON answer
View = Callable[[TeamPaths, dict[str, str], dict[str, str]], dict[str, Any]]
FAILURES = (Error, ValueError, LookupError)  # answered as `swarm.web.responses.status_of` says


class Web:
    """The routes of one server: its teams, tokens, port, failure limit and stops in flight."""

    def __init__(self, teams: Teams, tokens: Tokens, port: int, tls: bool) -> None:
        self.teams = teams
        self.tokens = tokens
        self.port = port
        self.scheme = "https" if tls else "http"
        self.limit = FailureLimit()
        self.stops = actions.Stops()

    def app(self) -> Starlette:
        guarded, post = self._guarded, ["POST"]
        routes = [
            Route("/", guarded(self.page)),
            *[Route(f"/{name}", guarded(self._static(name))) for name in PARTS],
            Route("/api/session", guarded(self.session)),
            Route("/api/teams", guarded(self.team_list)),
            Route("/api/state", guarded(self.state)),
            Route("/api/events", guarded(self.events)),
            Route("/api/members/{name}/thread", guarded(self._view(_thread))),
            Route("/api/members/{name}/log", guarded(self._view(_log))),
            Route("/api/requests/{rid}/{verb}", guarded(self._change(_answer)), methods=post),
            Route("/api/send", guarded(self._change(_send)), methods=post),
            Route("/api/tasks", guarded(self._change(_task)), methods=post),
            Route("/api/members/{name}/stop", guarded(self._change(self._stop, 202)), methods=post),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        import asyncio

        self.teams.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(self.teams.stop)

    def _guarded(self, handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            client = request.client.host if request.client else "?"
            if self.limit.shut_out(client):
                return reply({"error": "too many wrong tokens: try again later"}, 429)
            given = given_token(request.query_params, request.headers, request.cookies, self.port)
            role = self.tokens.role(given)
            if role is None:
                self.limit.failed(client)
                return reply({"error": "this swarm web server needs its token (?token=...)"}, 401)
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

    def _static(self, name: str) -> Handler:
        media_type = "text/css" if name.endswith(".css") else "text/javascript"

        async def static(request: Request) -> Response:
            return FileResponse(STATIC / name, media_type=f"{media_type}; charset=utf-8")

        return static

    async def session(self, request: Request) -> Response:
        fixed = self.teams.fixed
        return reply(
            {
                "role": str(request.state.role),
                "team": fixed.team if fixed is not None else None,
                "allTeams": fixed is None,
            }
        )

    async def team_list(self, request: Request) -> Response:
        return reply({"teams": await anyio.to_thread.run_sync(self.teams.listing)})

    async def _paths(self, request: Request) -> TeamPaths:
        return await anyio.to_thread.run_sync(self.teams.paths, request.query_params.get("team"))

    async def state(self, request: Request) -> Response:
        try:
            feed = self.teams.feed(await self._paths(request))
        except FAILURES as exc:
            return _failed(exc)
        await feed.next(0, FIRST_LOOK_S)  # the first look, if not published yet
        if not feed.text:
            return reply({"error": f"cannot read the team yet: {feed.problem}"}, 503)
        return Response(feed.text, media_type="application/json")

    async def events(self, request: Request) -> Response:
        try:
            feed = self.teams.feed(await self._paths(request))
        except FAILURES as exc:
            return _failed(exc)

        async def stream() -> AsyncIterator[str]:
            seen = 0
            while True:
                if await feed.next(seen, KEEPALIVE_S):
                    seen = feed.version
                    yield f"event: state\nid: {seen}\ndata: {feed.text}\n\n"
                else:
                    yield ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    def _view(self, view: View) -> Handler:
        async def viewed(request: Request) -> Response:
            params, query = dict(request.path_params), dict(request.query_params)
            try:
                paths = await self._paths(request)
                return reply(await anyio.to_thread.run_sync(view, paths, params, query))
            except FAILURES as exc:
                return _failed(exc)

        return viewed

    def _change(self, change: Change, status: int = 200) -> Handler:
        async def changed(request: Request) -> Response:
            own = {f"{self.scheme}://{request.headers.get('host', '')}"}
            why = change_refused(request.headers, self.tokens, own)
            if why is not None or request.state.role is not Role.FULL:
                return reply({"error": why or "a read-only token cannot change anything"}, 403)
            body = await request.body()
            if len(body) > MAX_BODY:
                return reply({"error": f"too large: at most {MAX_BODY:,} bytes"}, 413)
            try:
                given = json.loads(body or b"{}")
            except ValueError:
                return reply({"error": "the body is not JSON"}, 400)
            if not isinstance(given, dict):
                return reply({"error": "the body must be a JSON object"}, 400)
            params = dict(request.path_params)
            if params.get("verb", VERBS[0]) not in VERBS:
                return reply({"error": f"no such action {params['verb']!r}"}, 404)
            paths = None
            try:
                paths = await self._paths(request)
                done = await anyio.to_thread.run_sync(change, paths, params, given)
            except FAILURES as exc:
                return _failed(exc)
            finally:
                if paths is not None:
                    self.teams.poke(paths)
            return reply(done, status)

        return changed

    def _stop(
        self, paths: TeamPaths, params: dict[str, str], given: dict[str, Any]
    ) -> dict[str, Any]:
        return self.stops.stop(paths, params["name"], given)


def _failed(exc: BaseException) -> Response:
    answered = error_reply(exc)
    if answered is None:
        raise exc
    return answered


def _answer(paths: TeamPaths, params: dict[str, str], given: dict[str, Any]) -> dict[str, Any]:
    """A request answered (approve, deny, answer); what the page is told."""
    rid, verb = params["rid"], params["verb"]
    if verb == "answer":
        answers = given.get("answers")
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise ValueError('give {"answers": ["...", ...]}: one answer per question')
        pending, chosen = answer_question(paths, rid, answers, by=BY)
        return {"id": pending.id, "answered": chosen}
    approve = verb == "approve"
    text = given.get("feedback" if approve else "reason")
    if text is not None and not isinstance(text, str):
        raise ValueError("a reason or feedback must be text")
    pending = answer(paths, rid, approve=approve, text=text or None, by=BY)
    return {"id": pending.id, "approved": approve}


def _send(paths: TeamPaths, params: dict[str, str], given: dict[str, Any]) -> dict[str, Any]:
    return actions.send_message(paths, given)


def _task(paths: TeamPaths, params: dict[str, str], given: dict[str, Any]) -> dict[str, Any]:
    return actions.new_task(paths, given)


def _thread(paths: TeamPaths, params: dict[str, str], query: dict[str, str]) -> dict[str, Any]:
    return threads.thread(paths, params["name"])


def _log(paths: TeamPaths, params: dict[str, str], query: dict[str, str]) -> dict[str, Any]:
    return threads.member_log(paths, params["name"], query)
