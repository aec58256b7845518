"""A small MCP server for tests, built on the `mcp` SDK's `MCPServer`: ``echo`` (read-only),
``shout`` (not read-only), ``crash`` (read-only; the process exits at once, mid-call), ``note``
(writes a file where it is told: what a sandbox must stop outside the teammate's directory),
and one resource, ``memo://notes``.

    python tests/mcp_server.py stdio
    python tests/mcp_server.py stdio --gate FILE   # serves only once FILE exists: a server
                                                   # still connecting, for as long as a test likes
    python tests/mcp_server.py http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp
    python tests/mcp_server.py sse PORT      # SSE on 127.0.0.1:PORT/sse
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("swarm-test")


@server.tool(description="Echo the text back.", annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    return f"echo: {text} (pid {os.getpid()})"


@server.tool(description="Say the text loudly.")
def shout(text: str) -> str:
    return text.upper()


@server.tool(
    description="Exit the server at once.", annotations=ToolAnnotations(read_only_hint=True)
)
def crash() -> str:
    os._exit(3)


@server.tool(description="Write the text into the file at path.")
def note(path: str, text: str) -> str:
    try:
        with open(path, "w") as out:
            out.write(text)
    except OSError as exc:
        return f"not written: {exc.strerror}"
    return f"wrote {path}"


@server.resource("memo://notes", description="The team's notes.")
def notes() -> str:
    return "remember the plum"


def wait_for_gate() -> None:
    """With ``--gate FILE``: start serving only once FILE exists (inotify is not worth it
    here: a test process, polling its gate every 20 ms)."""
    if "--gate" not in sys.argv:
        return
    gate = sys.argv[sys.argv.index("--gate") + 1]
    while not os.path.exists(gate):
        time.sleep(0.02)


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    wait_for_gate()
    if transport == "stdio":
        server.run()
    elif transport == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run(transport="sse", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):  # SIGINT: a client asking it to stop
        main()
