"""What a fetched page becomes for the model (`page_of`), and the pages kept a while.

**The content**: HTML (its first `MAX_HTML_CHARS`) as markdown (markdownify on BeautifulSoup;
scripts, styles and frames dropped, links made absolute), other text as it is, in the charset
the server named (else UTF-8 with replacements); control characters dropped. Binary content
(an image, a PDF) is saved in the agent's files (``<files>/web``) for Read, never shown.

**Pages kept** (`PageCache`): 15 minutes, a few pages, so reading on sees the same page.
"""

from __future__ import annotations

import mimetypes
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin

from teammate.tools.base import ToolContext
from teammate.tools.file_lines import human_size
from teammate.tools.web_http import FetchLimits, Response

MAX_HTML_CHARS = 1 << 20  # of a page's HTML made markdown (what is past it is left out, said)
DROPPED_TAGS = ("script", "style", "noscript", "iframe", "frame", "template", "object", "embed")
CACHE_PAGES = 8
CACHE_CHARS = 8_000_000  # of the pages kept, all together
CACHE_TTL_S = 15 * 60.0
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_MEDIA_TYPE = re.compile(r"[\w!#$&^.+-]{1,64}/[\w!#$&^.+-]{1,64}")
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]{1,40})", re.IGNORECASE)


# the content


@dataclass(frozen=True)
class Page:
    """What a fetch gave, as the model gets it: text (markdown for HTML), or a file saved."""

    url: str  # the URL fetched (the last, after redirects within the site)
    status: int
    media_type: str
    size: int  # bytes read
    text: str = ""
    saved: str | None = None  # binary content: the file it is in
    notes: tuple[str, ...] = ()  # what was left out


def page_of(ctx: ToolContext, response: Response, limits: FetchLimits) -> Page:
    """`response` (a 2xx) made a `Page` (module doc)."""
    media = media_type(response.content_type)
    notes = []
    if response.cut == "size":
        notes.append(f"the page was cut at {human_size(limits.max_bytes)}")
    elif response.cut == "time":
        notes.append(f"the page was cut after {limits.timeout_s:g} s")
    size = len(response.body)
    if is_binary(media, response.body):
        saved = save_binary(ctx, response.body, media)
        return Page(response.url, response.status, media, size, saved=saved, notes=tuple(notes))
    html = media in ("text/html", "application/xhtml+xml") or (
        not media and response.body[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))
    )
    text = decode_text(response.body, response.content_type, html)
    if html:
        if len(text) > MAX_HTML_CHARS:
            notes.append(f"only its first {human_size(MAX_HTML_CHARS)} of HTML was read")
        text = html_to_markdown(text[:MAX_HTML_CHARS], response.url)
    return Page(response.url, response.status, media, size, clean(text), notes=tuple(notes))


def media_type(content_type: str) -> str:
    """``text/html`` of ``text/html; charset=utf-8``; "" if the server gave none that reads."""
    found = _MEDIA_TYPE.match(content_type.strip())
    return found.group().lower() if found else ""


def is_binary(media: str, body: bytes) -> bool:
    """Whether a body is not text, by its media type as Claude Code tells (text/*, JSON, XML,
    JavaScript and forms are text), or by a NUL byte when the server named no type."""
    if not media:
        return b"\x00" in body[:8192]
    text_types = ("application/json", "application/xml", "application/x-www-form-urlencoded")
    return not (
        media.startswith(("text/", "application/javascript"))
        or media in text_types
        or media.endswith(("+json", "+xml"))
    )


def decode_text(body: bytes, content_type: str, html: bool) -> str:
    """`body` as text: in the charset the server named, else (HTML) the one the page declares,
    else UTF-8; bytes that do not decode become U+FFFD, never an error."""
    named = _CHARSET.search(content_type)
    if named:
        try:
            return body.decode(named.group(1), errors="replace")
        except (LookupError, ValueError, TypeError):  # unknown, or not a text encoding
            pass
    if html:
        from bs4.dammit import UnicodeDammit

        found = UnicodeDammit(body, ["utf-8"], is_html=True).unicode_markup
        if found is not None:
            return found
    return body.decode("utf-8", errors="replace")


def html_to_markdown(html: str, base_url: str) -> str:
    """`html` as markdown: scripts, styles and frames dropped, links and images made absolute
    against `base_url` (``javascript:`` links dropped), headings as ``#``."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for element in soup(DROPPED_TAGS):
        element.decompose()
    for name, attribute in (("a", "href"), ("img", "src")):
        for element in soup.find_all(name):
            value = element.get(attribute)
            if not isinstance(value, str):
                continue
            if value.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                del element[attribute]
            else:
                element[attribute] = urljoin(base_url, value.strip())
    markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


def clean(text: str) -> str:
    """`text` without control characters (newlines and tabs kept; CRLF as LF)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def save_binary(ctx: ToolContext, body: bytes, media: str) -> str:
    """Keep a binary body in the agent's files (``web/``) for Read; the file's path."""
    suffix = mimetypes.guess_extension(media or "") or ".bin"
    name = f"webfetch-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}{suffix}"
    path = ctx.files("web") / name
    with open(path, "xb") as out:  # a new file: never through a link someone left there
        out.write(body)
    return str(path)


class PageCache:
    """Pages fetched lately, by the URL asked for: each kept `ttl_s`, at most `size` of them
    and `chars` characters in all (the oldest go first). Thread-safe: sub-agents fetch from
    threads of their own."""

    def __init__(
        self,
        size: int = CACHE_PAGES,
        chars: int = CACHE_CHARS,
        ttl_s: float = CACHE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size, self.chars, self.ttl_s, self.clock = size, chars, ttl_s, clock
        self._pages: OrderedDict[str, tuple[float, Page]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: str) -> Page | None:
        with self._lock:
            kept = self._pages.get(url)
            if kept is None or kept[0] < self.clock():
                self._pages.pop(url, None)
                return None
            return kept[1]

    def put(self, url: str, page: Page) -> None:
        with self._lock:
            self._pages.pop(url, None)
            self._pages[url] = (self.clock() + self.ttl_s, page)
            while len(self._pages) > self.size or (
                len(self._pages) > 1
                and sum(len(p.text) for _, p in self._pages.values()) > self.chars
            ):
                self._pages.popitem(last=False)


PAGES = PageCache()
