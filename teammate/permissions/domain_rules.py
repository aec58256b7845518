"""WebFetch's permission rules by host: ``WebFetch(domain:example.com)`` names that host alone,
``domain:*.example.com`` the hosts below it, ``domain:*`` every host (`domain_matches`, as Claude
Code matches them). A host is compared in one form (`normal_host`): lower case, IDNA, IPv4 in
dotted form however it was written, IPv6 compressed; what a rule matched (`url_host`) is the
very host a WebFetch then fetches from (`teammate.tools.web_http`)."""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

_HOST = re.compile(r"(?:[a-z0-9_-]{1,63}\.)*[a-z0-9_-]{1,63}")  # a host name, in ASCII
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}")
_WILD_LABEL = re.compile(r"[a-z0-9_*-]{1,63}")  # a rule's first label with a * in it
DOMAIN_PREFIX = "domain:"  # WebFetch rules name a host: WebFetch(domain:example.com)


def normal_host(host: str) -> str | None:
    """`host` as WebFetch rules and fetches name it: lower case, an internationalised name in
    its ASCII (IDNA, punycode) form, no trailing dot, an IPv4 address in dotted form however it
    was written (``0x7f.1`` is ``127.0.0.1``, as the resolver reads it), an IPv6 one compressed;
    None if it is not a host name."""
    host = host.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            return None
    if _NUMERIC_HOST.fullmatch(host):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    return ascii_host if _HOST.fullmatch(ascii_host) else None


def url_host(url: str) -> str | None:
    """The host a WebFetch of `url` goes to (`normal_host`); None if it names none. WebFetch
    fetches from this very host, so what a rule matched is what is fetched."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:  # an unclosed IPv6 bracket
        return None
    return normal_host(host) if host else None


def _host_pattern(content: str) -> str | None:
    """A ``domain:`` rule's pattern in the form `normal_host` gives hosts (None: not one)."""
    pattern = content.removeprefix(DOMAIN_PREFIX).strip().lower().rstrip(".")
    if "*" not in pattern:
        return normal_host(pattern) if pattern else None
    if pattern == "*":
        return pattern
    first, _, rest = pattern.partition(".")
    suffix = normal_host(rest) if rest and "*" not in rest else None
    if suffix is None or not _WILD_LABEL.fullmatch(first):
        return None  # a * only in the first label, with a host after it
    return f"{first}.{suffix}"


def domain_matches(content: str, host: str) -> bool:
    """Whether a WebFetch rule's ``domain:PATTERN`` names `host` (a `normal_host`), as Claude
    Code matches them: ``domain:example.com`` that host alone, never its subdomains;
    ``domain:*.example.com`` every host below example.com (``a.b.example.com`` too), not
    example.com itself; ``domain:*`` every host; a ``*`` within the first label stands for
    part of it (``docs-*.example.com``)."""
    pattern = _host_pattern(content)
    if pattern is None:
        return False
    if pattern == "*":
        return True
    first, _, rest = pattern.partition(".")
    if first == "*":
        return bool(rest) and host.endswith("." + rest) and not host.startswith(".")
    regex = re.escape(first).replace(r"\*", "[^.]*") + (r"\." + re.escape(rest) if rest else "")
    return re.fullmatch(regex, host) is not None


def check_domain_rule(content: str) -> None:
    """`ValueError` unless `content` is a WebFetch rule's ``domain:HOST``."""
    if not content.startswith(DOMAIN_PREFIX) or _host_pattern(content) is None:
        raise ValueError(
            f"WebFetch({content}) is not a WebFetch rule: they name a host, as in "
            "WebFetch(domain:example.com), WebFetch(domain:*.example.com) (the hosts below it) "
            "or WebFetch(domain:*)"
        )
