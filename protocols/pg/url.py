"""A PostgreSQL store's URL (``--store``, ``$SWARM_STORE``, a team file's ``store:``): checked,
and shown without its password; and what a team's channel says besides a member's name. Nothing
here imports psycopg: `protocols.store.selection` asks these of every URL it is given."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from protocols.errors import InvalidSetting

SCHEMES = ("postgresql", "postgres")
# what a PostgreSQL team's channel says besides a member's name (no member is called so: '@')
TASKS = "@tasks"  # a task changed
STATUS = "@status"  # a member's status changed
URL_FORM = "postgresql://[user[:password]@][host][:port]/dbname[?param=value&...]"


class BadStoreUrl(InvalidSetting):
    """A store URL that is not a PostgreSQL URL swarm can use; the message says what is allowed."""


def check_url(url: str, where: str = "--store") -> str:
    """`url` if it is a usable PostgreSQL URL, else `BadStoreUrl` naming what is wrong (never
    the password)."""
    shown = redacted(url)
    allowed = f"{where} takes a PostgreSQL URL, {URL_FORM}"
    if not url.strip():
        raise BadStoreUrl(f"{where} is empty; {allowed}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadStoreUrl(f"{where} {shown!r} cannot be read as a URL ({exc}); {allowed}") from None
    if parts.scheme not in SCHEMES:
        got = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise BadStoreUrl(
            f"{where} {shown!r} has {got}; the store is files unless given as a PostgreSQL URL "
            f"(scheme {' or '.join(SCHEMES)}): {URL_FORM}"
        )
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    dbname = parts.path.lstrip("/") or query.get("dbname", "")
    if not dbname:
        raise BadStoreUrl(f"{where} {shown!r} names no database; {allowed}")
    if port is not None and not 0 < port < 65536:
        raise BadStoreUrl(f"{where} {shown!r}: port {port} is out of range; {allowed}")
    if parts.fragment:
        raise BadStoreUrl(f"{where} {shown!r} has a #fragment, which means nothing here; {allowed}")
    return url


def redacted(url: str) -> str:
    """`url` without a password (in the user part, or ``password=`` in the query); the rest as
    it was written."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unreadable URL>"
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = f"{userinfo.split(':', 1)[0]}@{hostport}" if at else parts.netloc
    query = "&".join(
        "password=***" if pair.split("=", 1)[0] == "password" else pair
        for pair in parts.query.split("&")
    )
    # by hand: urlunsplit drops an empty host's "//" (postgresql:///db?host=/run/socket)
    return (
        f"{parts.scheme}://{netloc}{parts.path}"
        + (f"?{query}" if parts.query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def is_store_url(value: str | None) -> bool:
    return bool(value) and urlsplit(value or "").scheme in SCHEMES
