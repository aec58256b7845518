"""What every `swarm web` response carries, and which error becomes which HTTP status.

Every response says no-store, nosniff, no referrer, no framing and a content security policy
that runs only this server's script and styles (`HEADERS`). An answer is JSON (`reply`; every
character outside ASCII escaped, so team text is never HTML). `status_of` maps the errors the
library raises to a status: bad input 400, an answer the teammate would not take 403, nothing
there 404, answered already 409, the store failing 500; each ``error`` says what is wrong.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse, Response

from protocols.errors import Error, InvalidName, ProtocolsError, TaskNotFound, UnknownMember
from swarm.errors import SwarmError
from swarm.team.approvals import AlreadyAnswered, CannotSign, QuestionError, RequestNotFound

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


class BadInput(Error, ValueError):
    """A change or a question the server will not act on: what is wrong and what is allowed."""


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":"), default=str).encode()


def reply(body: dict[str, Any] | list[Any], status: int = 200) -> Response:
    return _Json(body, status_code=status, headers=HEADERS)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an error from the library answers with; None: not one of ours."""
    if isinstance(exc, AlreadyAnswered):
        return 409
    if isinstance(exc, CannotSign):  # the teammate would ignore the answer: nothing written
        return 403
    if isinstance(exc, RequestNotFound | LookupError) and not isinstance(
        exc, UnknownMember | TaskNotFound
    ):
        return 404
    if isinstance(exc, QuestionError | ValueError | InvalidName | UnknownMember | TaskNotFound):
        return 400  # bad input: an unknown member or blocker is the caller's mistake
    if isinstance(exc, SwarmError):
        return 400
    if isinstance(exc, ProtocolsError):
        return 500
    return None


def error_reply(exc: BaseException) -> Response | None:
    """`exc` as its answer (``{"error": ...}``, 409s with ``"answered": true``), or None."""
    status = status_of(exc)
    if status is None:
        return None
    body: dict[str, Any] = {"error": str(exc)}
    if status == 409:
        body["answered"] = True
    return reply(body, status)
