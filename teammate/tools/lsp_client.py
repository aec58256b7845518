"""The running language servers of one agent, for its LSP tool: one process per server and
workspace root, started on first use, kept until the agent stops. Which server serves a file:
`teammate.tools.lsp_servers`.

The link. The JSON-RPC framing and endpoint are python-lsp-jsonrpc's (``pylsp_jsonrpc``, the
python-lsp project's library under pylsp itself): threads and futures, as swarm's tools are
(no event loop to host), 14 ms to import. pygls 2's client was measured against it: asyncio only
(a loop thread of its own to keep), 320 ms to import with lsprotocol and cattrs; lsprotocol's
types alone take 270 ms and turn a server's small deviation from the spec into a failure. The
results are read as the JSON they are, by the tool (`teammate.tools.lsp`).

A server's life. Started in the agent's working directory (its root URI) with the agent's
environment (so it carries ``SWARM_PROCESS_TOKEN``: `swarm` stops it if the teammate dies) in
a process group of its own; initialized once; a file is opened (``didOpen``) before the first
request about it and changed (``didChange``, the whole text) when its content differs from what
the server was given. Each request has a deadline: a server that misses it is killed, and the
next call starts a new one. `LspClient.close` ends them all: ``shutdown`` and ``exit``, then
SIGTERM and SIGKILL to each process group.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from teammate.tools.lsp_servers import LspError, LspTimeout, ServerRegistry, ServerSpec, Unsupported

log = logging.getLogger(__name__)

DEFAULT_REQUEST_TIMEOUT_S = 60.0  # Claude Code's requestTimeout default
DEFAULT_STARTUP_TIMEOUT_S = 60.0  # initialize, which may index the workspace
DEFAULT_SHUTDOWN_TIMEOUT_S = 2.0  # the shutdown request, then each signal
METHOD_NOT_FOUND = -32601
EXIT_WAIT_S = 0.5  # after a server's output ends: how long its exit status is waited for
STDERR_TAIL = 2000  # characters of a failed server's stderr shown with the failure

# positions: the tool's columns are characters; a server's are in its position encoding


def to_units(line: str, column: int, encoding: str) -> int:
    """Character offset `column` of `line` in the server's `encoding` (utf-16 by default)."""
    prefix = line[:column]
    if encoding == "utf-32":
        return len(prefix)
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    return len(prefix.encode("utf-16-le")) // 2


def from_units(line: str, units: int, encoding: str) -> int:
    """The character offset in `line` of a server's offset `units` in `encoding`."""
    if encoding == "utf-32":
        return units
    width = 1 if encoding == "utf-8" else 2
    codec = "utf-8" if encoding == "utf-8" else "utf-16-le"
    data = line.encode(codec)[: units * width]
    return len(data.decode(codec, errors="ignore"))


# one running server


@dataclass
class _Document:
    path: Path
    version: int
    text: str
    stamp: tuple[int, int]  # (mtime_ns, size) when it was read


class LanguageServer:
    """One running language server: its process, its JSON-RPC endpoint, the documents it has
    open. Thread-safe: requests may overlap; a document's changes are sent in order."""

    def __init__(self, spec: ServerSpec, executable: str, root: Path) -> None:
        self.spec = spec
        self.executable = executable
        self.root = root
        self.capabilities: dict[str, Any] = {}
        self.encoding = "utf-16"
        self.process: subprocess.Popen[bytes] | None = None
        self._endpoint: Any = None
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()  # None: the writer's end
        self._stderr: IO[bytes] | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # the pending requests, the closed flag, the documents
        self._pending: set[Future[Any]] = set()
        self._closed = False
        self._documents: dict[str, _Document] = {}

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self._closed

    def start(self, startup_timeout_s: float) -> None:
        """Start the process and initialize it; `LspError` (the server stopped) if it fails."""
        from pylsp_jsonrpc.endpoint import Endpoint  # type: ignore[import-untyped]
        from pylsp_jsonrpc.streams import (  # type: ignore[import-untyped]
            JsonRpcStreamReader,
            JsonRpcStreamWriter,
        )

        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (kept until the server ends)
        try:
            self.process = subprocess.Popen(
                [self.executable, *self.spec.args],
                cwd=self.root,
                env={**os.environ, **self.spec.env},  # SWARM_PROCESS_TOKEN with the rest
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,  # its own group: stopped whole
            )
        except OSError as exc:
            self._stderr.close()
            raise LspError(f"cannot start {self.spec.name} ({self.executable}): {exc}") from None
        writer = JsonRpcStreamWriter(self.process.stdin)
        # the endpoint hands messages to a queue: a server that stops reading its input never
        # blocks the caller (whose request then misses its deadline)
        self._endpoint = Endpoint(self._dispatcher(), self._outbox.put)
        reader = JsonRpcStreamReader(self.process.stdout)
        self._threads = [
            threading.Thread(target=self._listen, args=(reader,), daemon=True),
            threading.Thread(target=self._write, args=(writer,), daemon=True),
        ]
        for thread in self._threads:
            thread.name = f"lsp-{self.spec.name}"
            thread.start()
        try:
            self._initialize(startup_timeout_s)
        except LspError:
            self.kill()
            raise

    def _initialize(self, timeout_s: float) -> None:
        answer = self.request("initialize", initialize_params(self.root, self.spec), timeout_s)
        capabilities = answer.get("capabilities") if isinstance(answer, dict) else None
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        encoding = self.capabilities.get("positionEncoding", "utf-16")
        self.encoding = encoding if encoding in ("utf-8", "utf-16", "utf-32") else "utf-16"
        self.notify("initialized", {})
        if self.spec.settings is not None:
            self.notify("workspace/didChangeConfiguration", {"settings": self.spec.settings})

    def _listen(self, reader: Any) -> None:
        """The reader thread: every message to the endpoint; at the end of the server's output,
        every request still waiting fails."""
        with contextlib.suppress(Exception):  # a closed pipe: the server is gone
            reader.listen(self._consume)
        if self.process is not None:  # its exit status, for the message, if it is ending
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(EXIT_WAIT_S)
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, set()
        for future in pending:
            if not future.done():
                with contextlib.suppress(Exception):
                    future.set_exception(LspError(self._gone()))

    def _consume(self, message: Any) -> None:
        """One message from the server; a malformed one is logged, not the reader's end."""
        try:
            self._endpoint.consume(message)
        except Exception:
            log.warning("%s sent a message swarm cannot take: %.200r", self.spec.name, message)

    def _write(self, writer: Any) -> None:
        """The writer thread: each message to the server's input, until the end."""
        while (message := self._outbox.get()) is not None:
            writer.write(message)  # a closed pipe: logged by the library, and dropped

    def _gone(self) -> str:
        code = self.process.poll() if self.process is not None else None
        how = f"exited with status {code}" if code is not None else "closed its output"
        tail = self.stderr_tail()
        return f"{self.spec.name} {how}" + (f"; its last output:\n{tail}" if tail else "")

    def stderr_tail(self) -> str:
        """The end of what the server wrote to stderr."""
        if self._stderr is None or self._stderr.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL))
            return self._stderr.read().decode("utf-8", errors="replace").strip()
        return ""

    def _dispatcher(self) -> dict[str, Callable[[Any], Any]]:
        """Answers to what a server asks of its client, and the notifications it sends that
        need none (the rest: method not found, or ignored)."""
        folder = [{"uri": self.root.as_uri(), "name": self.root.name}]
        ignored: Callable[[Any], Any] = lambda params: None  # noqa: E731
        answers: dict[str, Callable[[Any], Any]] = {
            "workspace/configuration": self._configuration,
            "workspace/workspaceFolders": lambda params: folder,
            "workspace/applyEdit": lambda params: {"applied": False, "failureReason": "read-only"},
        }
        for method in (
            "client/registerCapability",
            "client/unregisterCapability",
            "window/workDoneProgress/create",
            "window/showMessageRequest",
            "window/showDocument",
            "workspace/semanticTokens/refresh",
            "workspace/inlayHint/refresh",
            "workspace/codeLens/refresh",
            "workspace/diagnostic/refresh",
            "textDocument/publishDiagnostics",
            "window/logMessage",
            "window/showMessage",
            "telemetry/event",
            "$/progress",
            "$/logTrace",
        ):
            answers[method] = ignored
        return answers

    def _configuration(self, params: Any) -> list[Any]:
        """``workspace/configuration``: each section asked for, from the spec's settings."""
        items = params.get("items", []) if isinstance(params, dict) else []
        return [_section(self.spec.settings, item.get("section")) for item in items]

    def notify(self, method: str, params: Any) -> None:
        if self._endpoint is not None and self.running:
            self._endpoint.notify(method, params)

    def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """The result of one request; a missed deadline kills the server (`LspTimeout`), an
        error answer is `LspError` (`Unsupported` for a method the server does not have)."""
        from pylsp_jsonrpc.exceptions import JsonRpcException  # type: ignore[import-untyped]

        future = self._send(method, params)
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            self.kill()
            raise LspTimeout(
                f"{self.spec.name} did not answer {method} within {timeout_s:g} s; it was "
                "stopped, and the next call starts it again"
            ) from None
        except JsonRpcException as exc:
            if exc.code == METHOD_NOT_FOUND:
                raise Unsupported(f"{self.spec.name} does not support {method}") from None
            raise LspError(f"{self.spec.name} failed {method}: {exc.message}") from None
        finally:
            with self._lock:
                self._pending.discard(future)

    def _send(self, method: str, params: Any) -> Future[Any]:
        """A request sent: its answer to come (failed if the server's output ends first)."""
        with self._lock:
            if self._closed or self._endpoint is None:
                raise LspError(self._gone())
            future: Future[Any] = self._endpoint.request(method, params)
            self._pending.add(future)
        return future

    # documents

    def sync(self, path: Path, text: str) -> None:
        """Make the server's copy of `path` read `text` (``didOpen`` the first time,
        ``didChange`` after), and bring its other open documents up to date with the disk."""
        with self._lock:
            self._refresh_others(path)
            self._sync_one(path, text, _stamp(path))

    def _sync_one(self, path: Path, text: str, stamp: tuple[int, int]) -> None:
        uri = path.as_uri()
        document = self._documents.get(uri)
        if document is None:
            language = self.spec.languages.get(path.suffix.lower(), "plaintext")
            self._documents[uri] = _Document(path, 1, text, stamp)
            item = {"uri": uri, "languageId": language, "version": 1, "text": text}
            self.notify("textDocument/didOpen", {"textDocument": item})
            return
        document.stamp = stamp
        if document.text == text:
            return
        document.version += 1
        document.text = text
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": document.version},
                "contentChanges": [{"text": text}],
            },
        )

    def _refresh_others(self, current: Path) -> None:
        """The open documents other than `current` that changed on disk since they were sent
        (closed if they are gone)."""
        for uri, document in list(self._documents.items()):
            path = document.path
            if path == current:
                continue
            stamp = _stamp(path)
            if stamp == document.stamp:
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                del self._documents[uri]
                self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                continue
            self._sync_one(path, text, stamp)

    # stopping

    def stop(self) -> None:
        """``shutdown`` and ``exit``, a moment to exit, then the end of its process group."""
        grace = self.spec.shutdown_timeout_s or DEFAULT_SHUTDOWN_TIMEOUT_S
        polite = self.running
        if polite:
            with contextlib.suppress(Exception):  # an error, a missed deadline: it ends anyway
                self._send("shutdown", None).result(grace)
            self.notify("exit", None)
        self._end(grace, polite)

    def kill(self) -> None:
        """The end of its process group, with no goodbye (a server that does not answer)."""
        self._end(self.spec.shutdown_timeout_s or DEFAULT_SHUTDOWN_TIMEOUT_S, polite=False)

    def _end(self, grace: float, polite: bool) -> None:
        with self._lock:
            self._closed = True
        self._outbox.put(None)  # the writer ends after what is queued (the exit notification)
        process = self.process
        if process is not None:
            if polite:  # a moment to read the exit notification and go
                self._threads[1].join(grace)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(grace)
            end_group(process, grace)
            for pipe in (process.stdin, process.stdout):  # after its end: no write blocks now
                if pipe is not None:
                    with contextlib.suppress(OSError, ValueError):
                        pipe.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(grace)
        if self._endpoint is not None:
            self._endpoint.shutdown()
        if self._stderr is not None:
            self._stderr.close()


def end_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """`process` and the rest of its group ended: SIGTERM, then SIGKILL after `grace`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_alive(process.pid):
            break
        with contextlib.suppress(OSError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
        _wait_group(process.pid, grace)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_group(pgid: int, grace: float) -> None:
    """Until the group's other members are gone too (the leader is waited for), or `grace`."""
    deadline = time.monotonic() + grace
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        status = path.stat()
    except OSError:
        return (0, -1)
    return (status.st_mtime_ns, status.st_size)


def _section(settings: Any, section: Any) -> Any:
    """The part of `settings` a dotted `section` names (all of it for none; None if absent)."""
    if not isinstance(section, str) or not section:
        return settings
    value = settings
    for key in section.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def initialize_params(root: Path, spec: ServerSpec) -> dict[str, Any]:
    """What swarm tells a server it is: a read-only client of the requests the tool sends (and
    its process, whose end pylsp and others watch for)."""
    uri = root.as_uri()
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "swarm"},
        "rootUri": uri,
        "rootPath": str(root),
        "workspaceFolders": [{"uri": uri, "name": root.name}],
        "initializationOptions": spec.initialization_options,
        "capabilities": {
            "general": {"positionEncodings": ["utf-32", "utf-16"]},
            "textDocument": {
                "synchronization": {"dynamicRegistration": False, "didSave": False},
                "definition": {"linkSupport": True},
                "implementation": {"linkSupport": True},
                "references": {},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                "callHierarchy": {},
                "publishDiagnostics": {},
            },
            "workspace": {"symbol": {}, "workspaceFolders": True, "configuration": True},
        },
    }


# the agent's servers


class LspClient:
    """An agent's language servers: one per server and root, started when first needed and
    kept; `close` stops them all. `request_timeout_s` and `startup_timeout_s`, when given, win
    over each server's own (tests make them short)."""

    def __init__(
        self,
        registry: ServerRegistry,
        request_timeout_s: float | None = None,
        startup_timeout_s: float | None = None,
    ) -> None:
        self.registry = registry
        self.request_timeout_s = request_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self._servers: dict[tuple[str, Path], LanguageServer] = {}
        self._lock = threading.Lock()
        self._closed = False

    def server_for(self, path: Path, root: Path) -> LanguageServer:
        """The running server for `path` in the workspace `root` (the agent's working
        directory), started (or started again, after it died or was stopped) if need be;
        `NoServer` or `LspError` if it cannot be. Other callers wait while one starts."""
        spec, executable = self.registry.server_for(path)
        if spec.workspace_folder:  # the configuration's own root wins
            root = root / Path(spec.workspace_folder).expanduser()
        key = (spec.name, root)
        with self._lock:
            if self._closed:
                raise LspError("the language servers were stopped with the agent")
            server = self._servers.get(key)
            if server is not None and server.running:
                return server
            if server is not None:
                server.kill()  # what is left of it: its group, its reader
            server = LanguageServer(spec, executable, root)
            self._servers[key] = server
            server.start(self.startup_timeout(spec))
            return server

    def request(self, server: LanguageServer, method: str, params: Any) -> Any:
        return server.request(method, params, self.request_timeout(server.spec))

    def request_timeout(self, spec: ServerSpec) -> float:
        return self.request_timeout_s or spec.request_timeout_s or DEFAULT_REQUEST_TIMEOUT_S

    def startup_timeout(self, spec: ServerSpec) -> float:
        return self.startup_timeout_s or spec.startup_timeout_s or DEFAULT_STARTUP_TIMEOUT_S

    def servers(self) -> list[LanguageServer]:
        with self._lock:
            return list(self._servers.values())

    def close(self) -> None:
        """Stop every server (each one's group ends); later calls say they were stopped."""
        with self._lock:
            self._closed = True
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            try:
                server.stop()
            except Exception:  # one server's trouble must not keep the others running
                log.exception("stopping language server %s", server.spec.name)
