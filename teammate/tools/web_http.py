"""WebFetch's side of HTTP: which URLs it may fetch, and fetching one.

**The URL** (`check_url`): http or https only. Refused, saying why: another scheme (``file:``,
``ftp:``, ``data:``), a user name or password in it, a control character, a space or a
backslash, more than `MAX_URL_CHARS` characters, a host that is not a host name. An
internationalised host is fetched by its ASCII (punycode) name, the one the permission rules
``WebFetch(domain:HOST)`` match (`teammate.permissions.domain_rules.url_host`): what a rule allowed
is what is fetched, since the URL is rebuilt from that host. ``http`` becomes ``https``, as in
Claude Code, except for a loopback host (``localhost``, 127.0.0.0/8, ``::1``): a teammate's own
dev server, or a test's, is fetched as given. Other host names without a dot are refused, as
Claude Code refuses them.

**Fetching** (`fetch`): a GET through the anthropic SDK's HTTP client (httpx2; httpx in older
SDKs), redirects followed by hand, at most `MAX_REDIRECTS`, and only within the site (same
scheme, port and host, but for a leading ``www.``). A redirect elsewhere is not followed: the
model is told the new URL, whose fetch then goes through the permission check of its own. The
body is read as it streams, up to 10 MB (a page that never ends is cut there, never held
whole), within 60 s (`FetchLimits`; a page still coming then is cut too). Another answer than
2xx is an error naming the status; its body is not read.
"""

from __future__ import annotations

import importlib
import ipaddress
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from teammate.permissions.domain_rules import url_host
from teammate.tools.base import ToolError
from teammate.tools.file_lines import escape

MAX_URL_CHARS = 2_000
MAX_REDIRECTS = 10
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
ACCEPT = "text/markdown, text/html, */*"
USER_AGENT = "swarm-teammate (WebFetch)"
BAD_URL_CHAR = re.compile(
    r"[\x00-\x20\x7f-\xa0\\\u1680\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\ufeff]"
)
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"


# the URL


@dataclass(frozen=True)
class Target:
    """A URL WebFetch may fetch, rebuilt from its checked parts (`check_url`)."""

    url: str
    scheme: str
    host: str  # `teammate.permissions.domain_rules.normal_host`'s form
    port: int | None

    @property
    def site(self) -> tuple[str, int, str]:
        """What a redirect must keep to be followed: scheme, port, host but for ``www.``."""
        port = self.port or (443 if self.scheme == "https" else 80)
        return self.scheme, port, self.host.removeprefix("www.")


def check_url(raw: str, upgrade: bool = True) -> Target:
    """The `Target` of `raw`; a `ToolError` saying what is wrong with it and what is allowed
    (module doc). `upgrade`: http becomes https (not for a redirect's target: it stays as the
    server said, and an https page sent to http is another site)."""
    url = raw.strip()
    bad = BAD_URL_CHAR.search(url)
    if bad:
        where = f"{escape(repr(bad.group()))} at character {bad.start() + 1}"
        raise ToolError(f"the URL holds {where}: write it percent-encoded (%20 for a space)")
    if len(url) > MAX_URL_CHARS:
        raise ToolError(f"the URL is {len(url):,} characters long; at most {MAX_URL_CHARS:,}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ToolError(f"not a valid URL ({exc}): give an http or https URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        given = f"{escape(scheme)}:" if scheme else "a URL without a scheme"
        raise ToolError(f"WebFetch fetches http and https URLs only, not {given}")
    if "@" in parts.netloc:
        raise ToolError("a URL with a user name or password (user@host) is refused")
    host = url_host(url)
    if host is None:
        raise ToolError(f"{escape(parts.netloc) or 'the URL'} names no valid host")
    loopback = is_loopback(host)
    if not loopback and "." not in host and ":" not in host:
        raise ToolError(
            f"{host} has no dot: WebFetch fetches public hosts (and this machine's own, "
            "localhost), not a local network's"
        )
    if scheme == "http" and upgrade and not loopback:
        scheme, port = "https", None if port == 80 else port
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    path = quote(parts.path or "/", safe=_PATH_SAFE)
    query = quote(parts.query, safe=_PATH_SAFE + "?")
    return Target(urlunsplit((scheme, netloc, path, query, "")), scheme, host, port)


def is_loopback(host: str) -> bool:
    """Whether `host` (a `normal_host`) is this machine: ``localhost``, 127.0.0.0/8, ``::1``."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# fetching


@dataclass(frozen=True)
class FetchLimits:
    """How long a fetch may take (all of it, redirects included; also each wait for bytes),
    how much of a body is read, how many redirects are followed: Claude Code's figures, and the
    tests' seam (`LIMITS`)."""

    timeout_s: float = 60.0
    max_bytes: int = 10 << 20
    max_redirects: int = MAX_REDIRECTS


LIMITS = FetchLimits()


@dataclass(frozen=True)
class Response:
    """One answer: its status, and for a 2xx its body (as much as was read)."""

    url: str
    status: int
    content_type: str = ""
    body: bytes = b""
    cut: str | None = None  # why the body is not whole: "size", "time"
    location: str = ""  # a redirect's
    retry_after: str = ""


@dataclass(frozen=True)
class Moved:
    """A redirect not followed: to another site, or to a URL WebFetch cannot fetch."""

    url: str
    location: str
    status: int
    problem: str | None = None  # why the new URL cannot be fetched at all


def fetch(
    target: Target, limits: FetchLimits | None = None, clock: Callable[[], float] = time.monotonic
) -> Response | Moved:
    """GET `target`, following redirects within its site (module doc); `ToolError` for a
    timeout, a connection that failed, too many redirects."""
    limits = limits or LIMITS
    http = _http()
    deadline = clock() + limits.timeout_s
    headers = {"accept": ACCEPT, "accept-encoding": "identity", "user-agent": USER_AGENT}
    current = target
    try:
        with http.Client(
            headers=headers,
            timeout=http.Timeout(limits.timeout_s),
            follow_redirects=False,
            trust_env=not is_loopback(target.host),  # no proxy for this machine's own servers
        ) as client:
            for _ in range(limits.max_redirects + 1):
                response = _get(client, current, limits, deadline, clock)
                if response.status not in REDIRECT_CODES:
                    return response
                step = _redirect(current, response)
                if isinstance(step, Moved):
                    return step
                current = step
    except http.TimeoutException:
        raise ToolError(f"fetching {current.url} timed out after {limits.timeout_s:g} s") from None
    except http.HTTPError as exc:
        why = escape(str(exc)) or type(exc).__name__
        raise ToolError(f"fetching {current.url} failed: {why}") from None
    raise ToolError(
        f"{target.url} redirected more than {limits.max_redirects} times (a loop?); not fetched"
    )


def _http() -> Any:
    """The HTTP client module the anthropic SDK brings: httpx2 (newer SDKs) or httpx."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ToolError(
        "WebFetch needs httpx2 or httpx (the anthropic SDK brings one): neither is here"
    )


def _get(
    client: Any, target: Target, limits: FetchLimits, deadline: float, clock: Callable[[], float]
) -> Response:
    with client.stream("GET", target.url) as answer:
        status = int(answer.status_code)
        headers = answer.headers
        if not 200 <= status < 300:
            location = headers.get("location", "") if status in REDIRECT_CODES else ""
            return Response(
                target.url, status, location=location, retry_after=headers.get("retry-after", "")
            )
        body, cut = _read(answer, limits.max_bytes, deadline, clock)
        return Response(target.url, status, headers.get("content-type", ""), body, cut)


def _read(
    answer: Any, limit: int, deadline: float, clock: Callable[[], float]
) -> tuple[bytes, str | None]:
    """The body as it streams, up to `limit` bytes and until `deadline`; why it was cut."""
    body = bytearray()
    for chunk in answer.iter_bytes():
        room = limit - len(body)
        if len(chunk) > room:
            body += chunk[:room]
            return bytes(body), "size"
        body += chunk
        if clock() > deadline:
            return bytes(body), "time"
    return bytes(body), None


def _redirect(current: Target, response: Response) -> Target | Moved:
    """Where a redirect leads: the next `Target` within the site, else what to tell the model."""
    if not response.location.strip():
        return Moved(current.url, "", response.status, "the redirect names no new URL")
    location = urljoin(current.url, response.location.strip())
    try:
        target = check_url(location, upgrade=False)
    except ToolError as exc:
        return Moved(current.url, location, response.status, str(exc))
    if target.site != current.site:
        return Moved(current.url, target.url, response.status)
    return target
