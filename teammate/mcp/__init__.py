"""The MCP client of a Claude agent, on the official `mcp` SDK: config.py (which servers, from
``.mcp.json``, the settings files, ``--mcp-config`` and agent definitions), client.py (the
connections, on one background event loop, behind a thread-safe synchronous API), tools.py (an
MCP server's tools as swarm `Tool` objects named ``mcp__<server>__<tool>``).

Nothing here imports `mcp` at import time: only a started connection does.
"""
