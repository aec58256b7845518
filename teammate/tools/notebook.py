"""Claude Code's `NotebookEdit` for a Claude agent (to be built)."""

from __future__ import annotations

from teammate.tools.base import Tool

NOTEBOOK_TOOLS: tuple[Tool, ...] = ()
