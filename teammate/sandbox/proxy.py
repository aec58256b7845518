"""The network allow-list of sandboxed commands: an HTTP proxy that lets through only the domains
``sandbox.network.allowedDomains`` names (``example.com``, or ``*.example.com`` for its
subdomains), with the sandbox's own network cut off otherwise.

A sandboxed command has no network but a loopback of its own (``--unshare-net``), so it cannot
reach this proxy, which runs in the teammate, over TCP. The proxy listens on a Unix socket in
the agent's sandbox temporary directory (bound into the sandbox), and every sandboxed command
starts behind a small forwarder (`FORWARD`, run by the sandbox's Python before the command
itself): it listens on the sandbox's loopback (``127.0.0.1:PORT``, what ``HTTP_PROXY`` and
``HTTPS_PROXY`` say inside) before the command starts, and carries each connection to the Unix
socket. Nothing else leaves the sandbox.

The proxy takes ``CONNECT host:port`` (HTTPS, and any TLS: it never sees inside) and plain HTTP
requests in absolute form (``GET http://host/...``); a host the list does not name gets
``403`` with one line saying which domains are allowed, which the model reads as the command's
error (`teammate.sandbox.bwrap.Sandbox.why`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import socket
import socketserver
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

PORT = 3128  # the forwarder's port on the sandbox's own loopback
HEAD_MAX = 64 * 1024  # a request head longer than this is refused
DENIED = "[sandbox] the network allows only"
CONNECT_TIMEOUT_S = 30.0
REFUSED_KEPT = 20  # refused hosts remembered until the next command's end asks

# the forwarder, run inside the sandbox as ``python3 -S -c FORWARD SOCKET PORT COMMAND...``:
# listen first, then fork a child that carries connections while the parent becomes the
# command; the child dies with the sandbox's pid namespace when the command ends
FORWARD = r"""
import os, socket, sys, threading
path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def carry(conn):
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        return
    threading.Thread(target=pipe, args=(conn, up), daemon=True).start()
    pipe(up, conn)
if os.fork() == 0:
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the command's output ends when the command does, not with this
        os.dup2(null, fd)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=carry, args=(conn,), daemon=True).start()
server.close()
os.execvp(argv[0], argv)
"""


def allowed(host: str, domains: Sequence[str]) -> bool:
    """Whether `host` is one of `domains` (``*.example.com``: its subdomains, not itself)."""
    name = host.strip("[]").rstrip(".").lower()
    return any(fnmatch.fnmatchcase(name, d.lower().rstrip(".")) for d in domains)


class DomainProxy:
    """The proxy of one agent's sandbox (module doc); `close` stops it."""

    def __init__(self, socket_path: Path, domains: Sequence[str]) -> None:
        self.socket_path = socket_path
        self.domains = tuple(domains)
        self._refused: list[str] = []  # hosts refused since `take_refused` last looked
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy.serve(self.request)

        socket_path.unlink(missing_ok=True)
        self._server = socketserver.ThreadingUnixStreamServer(str(socket_path), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sandbox-proxy", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.socket_path.unlink(missing_ok=True)

    def take_refused(self) -> list[str]:
        """The hosts refused since the last call (what the command that just ended asked for,
        or a background one)."""
        with self._lock:
            taken, self._refused = self._refused, []
        return taken

    def refusal(self, host: str) -> bytes:
        text = f"{DENIED} {', '.join(self.domains)}; not {host} (sandbox.network.allowedDomains)"
        body = (text + "\n").encode("utf-8", "replace")
        head = f"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}"
        return head.encode() + b"\r\nConnection: close\r\n\r\n" + body

    def serve(self, conn: socket.socket) -> None:
        """One client connection: its request head read, the host checked, then piped."""
        head = _read_head(conn)
        if head is None:
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3:
            return
        method, target, _ = parts
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            rest = b""
        else:
            url = urlsplit(target)
            host, port = url.hostname or "", str(url.port or 80)
            rest = head  # the request goes on as it came (absolute form)
        if not host or not allowed(host, self.domains):
            with self._lock:  # the last few: nobody may ask for a while (a background loop)
                self._refused = [*self._refused[-(REFUSED_KEPT - 1) :], host or target]
            with contextlib.suppress(OSError):
                conn.sendall(self.refusal(host or target))
            return
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
                conn.sendall(f"{exc}\n".encode())
            return
        with upstream:
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(rest)
            other = threading.Thread(target=_pipe, args=(conn, upstream), daemon=True)
            other.start()
            _pipe(upstream, conn)
            other.join(CONNECT_TIMEOUT_S)


def _read_head(conn: socket.socket) -> bytes | None:
    """The request head up to its blank line (what came after it kept with it), or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(4096)
        except OSError:
            return None
        if not chunk or len(data) > HEAD_MAX:
            return None
        data += chunk
    return data


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
