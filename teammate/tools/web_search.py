"""Claude Code's `WebSearch` for a Claude agent (2.1.330's name and input fields).

**WebSearch** (``query``, ``allowed_domains``, ``blocked_domains``), as in Claude Code: a model
request of its own, to the agent's model, whose only tool is the Messages API's server tool
``web_search_20250305`` (``max_uses`` `SEARCH_MAX_USES`, the domain list). The API runs the
search; the answer's ``server_tool_use`` and ``web_search_tool_result`` blocks become the
result (`search_result`): each search's links (title, URL) and the model's summary. The
searches count in the agent's usage and are priced (`protocols.member.prices`).

Of kind ``web`` for the permission policy, as WebFetch (`teammate.tools.web`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any

from pydantic import Field

from teammate.api.model import ModelError, ModelReply, ModelRequest
from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.file_lines import escape
from teammate.tools.web_http import BAD_URL_CHAR
from teammate.tools.web_page import clean

SEARCH_TOOL = "web_search_20250305"
SEARCH_MAX_USES = 8  # searches the API may run for one WebSearch call
SEARCH_MAX_TOKENS = 8_192
SEARCH_PAUSES = 3  # pause_turn answers of the search request carried on from
MAX_QUERY_CHARS = 10_000
MAX_DOMAINS = 200
MAX_DOMAIN_CHARS = 500
MAX_HITS = 100  # links kept of one search
MAX_TITLE_CHARS = 500
MAX_HIT_URL_CHARS = 8_192
SEARCH_PROMPT = (
    "You run a web search for another AI model that is waiting for the results. Search once "
    "with the web_search tool, then summarise the results in a few sentences."
)


# WebSearch


def search_request(
    query: str, allowed: list[str] | None, blocked: list[str] | None
) -> ModelRequest:
    """The request that has the API search for `query` (module doc)."""
    definition: dict[str, Any] = {
        "type": SEARCH_TOOL,
        "name": "web_search",
        "max_uses": SEARCH_MAX_USES,
    }
    if allowed:
        definition["allowed_domains"] = allowed
    if blocked:
        definition["blocked_domains"] = blocked
    text = f"Search the web for: {query}"
    return ModelRequest(
        system=[{"type": "text", "text": SEARCH_PROMPT}],
        tools=[definition],
        messages=[{"role": "user", "content": [{"type": "text", "text": text}]}],
        max_tokens=SEARCH_MAX_TOKENS,
    )


def run_search(
    model_call: Callable[[ModelRequest, str | None], ModelReply], request: ModelRequest
) -> list[dict[str, Any]]:
    """The content blocks of the search's answer, carried on through ``pause_turn`` (the API
    pauses a long server-tool turn; the same request with the answer so far goes on)."""
    content: list[dict[str, Any]] = []
    messages = list(request.messages)
    for _ in range(SEARCH_PAUSES + 1):
        reply = model_call(replace(request, messages=messages), None)
        content += reply.content
        if reply.stop_reason != "pause_turn":
            break
        messages = [*messages, {"role": "assistant", "content": reply.content}]
    return content


def search_result(query: str, content: list[dict[str, Any]]) -> str:
    """What the model gets of a search: each search's links (title and URL, as JSON), or the
    error the API gave, and the search model's summary."""
    lines = [f"Web search for {json.dumps(clean(query), ensure_ascii=False)}:"]
    searched = False
    for block in content:
        kind = block.get("type")
        if kind == "web_search_tool_result":
            searched = True
            lines.append(_links(block.get("content")))
        elif kind == "text" and str(block.get("text", "")).strip():
            lines.append(clean(str(block["text"]).strip()))
    if not searched:
        lines.insert(1, "(no search was run: the search model answered without one)")
    lines.append("Cite the pages you use as markdown links: [title](url).")
    return "\n\n".join(lines)


def _links(found: Any) -> str:
    if isinstance(found, dict):
        code = re.sub(r"[^\w]", "", str(found.get("error_code", "")))[:64] or "unknown"
        return f"The search failed: {code}."
    hits = [
        {"title": clean(str(hit.get("title", "")))[:MAX_TITLE_CHARS], "url": clean(str(hit["url"]))}
        for hit in found or []
        if isinstance(hit, dict)
        and isinstance(hit.get("url"), str)
        and len(hit["url"]) <= MAX_HIT_URL_CHARS
    ][:MAX_HITS]
    if not hits:
        return "No links found."
    return f"Links: {json.dumps(hits, ensure_ascii=False)}"


def _domains(values: list[str] | None, name: str) -> list[str] | None:
    """A domain list as given (`ToolError` naming what is wrong)."""
    if not values:
        return None
    if len(values) > MAX_DOMAINS:
        raise ToolError(f"{name} has {len(values)} domains; at most {MAX_DOMAINS}")
    for value in values:
        if not value.strip() or len(value) > MAX_DOMAIN_CHARS or BAD_URL_CHAR.search(value):
            raise ToolError(
                f"{name}: {escape(repr(value[:80]))} is not a domain (example.com, docs.python.org)"
            )
    return [value.strip() for value in values]


@tool(
    "WebSearch",
    "Searches the web and returns the results' titles and links, with a short summary. "
    "allowed_domains keeps only results from those sites; blocked_domains leaves them out (give "
    "one or the other). Cite the pages you use as markdown links.",
    kind="web",
)
def web_search(
    ctx: ToolContext,
    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The search query to use")
    ],
    allowed_domains: Annotated[
        list[str] | None, Field(description="Only include search results from these domains")
    ] = None,
    blocked_domains: Annotated[
        list[str] | None, Field(description="Never include search results from these domains")
    ] = None,
) -> str:
    if not query.strip():
        raise ToolError("the query is empty: give the words to search for")
    if allowed_domains and blocked_domains:
        raise ToolError("give allowed_domains or blocked_domains, not both")
    allowed = _domains(allowed_domains, "allowed_domains")
    blocked = _domains(blocked_domains, "blocked_domains")
    if ctx.model_call is None:
        raise ToolError("WebSearch has the agent's model search, and this agent has no model")
    try:
        content = run_search(ctx.model_call, search_request(query, allowed, blocked))
    except ModelError as exc:
        raise ToolError(f"the web search request failed: {exc}") from None
    return search_result(query, content)
