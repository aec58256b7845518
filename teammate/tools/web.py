"""Claude Code's web tools for a Claude agent: `WebFetch` and `WebSearch` (to be built)."""

from __future__ import annotations

from teammate.tools.base import Tool

WEB_TOOLS: tuple[Tool, ...] = ()
