"""Which language server serves a file, for an agent's LSP tool: the servers configured under
``lspServers`` and those known on ``PATH`` (the registry), and their errors.

Which server. Claude Code 2.1.330 takes language servers from plugins only (a plugin's
``.lsp.json``, or ``lspServers`` in its ``plugin.json``), each one an object of server name ->
``{"command", "args", "extensionToLanguage", "transport", "env", "initializationOptions",
"settings", "workspaceFolder", "startupTimeout", "shutdownTimeout", "requestTimeout",
"restartOnCrash", "maxRestarts", "diagnostics"}`` (times in milliseconds; ``command`` has no
spaces unless it is a path; ``extensionToLanguage`` maps ``".py"`` to a language id and is
required). swarm reads the same object under ``lspServers`` in the settings files an agent reads
(`ServerRegistry.from_settings`), later files winning by name; swarm runs ``stdio`` servers
only and accepts, without using, ``restartOnCrash``, ``maxRestarts`` and ``diagnostics`` (it
restarts a dead server at the next call and pushes no diagnostics). A server that is not
configured is looked for on ``PATH`` by the file's extension (`KNOWN_SERVERS`). A bad entry
is not fatal: it is left out and named when a file it would have served has no server.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.errors import Error
from protocols.fs import safefs

SERVER_FIELDS = (
    "command",
    "args",
    "extensionToLanguage",
    "transport",
    "env",
    "initializationOptions",
    "settings",
    "workspaceFolder",
    "startupTimeout",
    "shutdownTimeout",
    "requestTimeout",
    "restartOnCrash",
    "maxRestarts",
    "diagnostics",
)


class LspError(Error):
    """A language server could not answer: not found, not started, failed, timed out."""


class NoServer(LspError):
    """No language server serves a file: the message says which were looked for."""


class LspTimeout(LspError):
    """A server missed a deadline; it was stopped."""


class Unsupported(LspError):
    """The server does not do what was asked (it said so, or never offered it)."""


@dataclass(frozen=True)
class ServerSpec:
    """One language server: how to start it, which files it serves, its deadlines (seconds)."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    languages: Mapping[str, str] = field(default_factory=dict)  # ".py" -> "python"
    env: Mapping[str, str] = field(default_factory=dict)
    initialization_options: Any = None
    settings: Any = None  # sent with workspace/didChangeConfiguration, and as its sections
    workspace_folder: str | None = None
    startup_timeout_s: float | None = None
    shutdown_timeout_s: float | None = None
    request_timeout_s: float | None = None
    origin: str = "PATH"  # where it came from: "lspServers.x in FILE", or PATH


PYTHON = {".py": "python", ".pyi": "python"}
SCRIPTS = {
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".mjs": "javascript",
    ".cjs": "javascript",
}
C_FAMILY = {
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
}
# looked for on PATH, in this order, when no configured server takes a file's extension
KNOWN_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec("pyright", "pyright-langserver", ("--stdio",), PYTHON),
    ServerSpec("basedpyright", "basedpyright-langserver", ("--stdio",), PYTHON),
    ServerSpec("pylsp", "pylsp", (), PYTHON),
    ServerSpec("typescript", "typescript-language-server", ("--stdio",), SCRIPTS),
    ServerSpec("gopls", "gopls", (), {".go": "go"}),
    ServerSpec("rust-analyzer", "rust-analyzer", (), {".rs": "rust"}),
    ServerSpec("clangd", "clangd", (), C_FAMILY),
)


def config_example(extension: str, known: Iterable[ServerSpec] = KNOWN_SERVERS) -> str:
    """An ``lspServers`` setting for files with `extension`: the first known server's, or one
    to fill in."""
    name, server = "<name>", {"command": "<server>", "args": ["<arg>"]}
    language = "<language id>"
    for spec in known:
        if extension in spec.languages:
            name, server = spec.name, {"command": spec.command, "args": list(spec.args)}
            language = spec.languages[extension]
            break
    entry = {**server, "extensionToLanguage": {extension: language}}
    return json.dumps({"lspServers": {name: entry}})


# the configuration: lspServers in settings files


def parse_servers(value: Any, where: str) -> tuple[dict[str, ServerSpec], list[str]]:
    """The servers of one ``lspServers`` object, and a problem (naming `where`) for each entry
    that cannot be used."""
    if not isinstance(value, dict):
        return {}, [f"{where}: 'lspServers' must be an object of server name -> server"]
    servers: dict[str, ServerSpec] = {}
    problems: list[str] = []
    for name, entry in value.items():
        try:
            servers[name] = parse_server(name, entry, f"lspServers.{name} in {where}")
        except LspError as exc:
            problems.append(str(exc))
    return servers, problems


def parse_server(name: str, entry: Any, where: str) -> ServerSpec:
    """One server entry, checked; `LspError` names the field and what it may be."""
    if not isinstance(entry, dict):
        raise LspError(f"{where}: a server must be an object with 'command' and more")
    unknown = sorted(set(entry) - set(SERVER_FIELDS))
    if unknown:
        raise LspError(
            f"{where}: unknown field {unknown[0]!r}; allowed: {', '.join(SERVER_FIELDS)}"
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise LspError(f"{where}: 'command' must be a non-empty string")
    if " " in command and not command.startswith("/"):
        raise LspError(f"{where}: 'command' has spaces: put its arguments in 'args'")
    if entry.get("transport", "stdio") != "stdio":
        raise LspError(f"{where}: 'transport' {entry['transport']!r}: swarm runs stdio only")
    return ServerSpec(
        name=name,
        command=command,
        args=tuple(_strings(entry.get("args", []), f"{where}: 'args'")),
        languages=_languages(entry.get("extensionToLanguage"), where),
        env=_string_map(entry.get("env", {}), f"{where}: 'env'"),
        initialization_options=entry.get("initializationOptions"),
        settings=entry.get("settings"),
        workspace_folder=_optional_string(entry.get("workspaceFolder"), where),
        startup_timeout_s=_seconds(entry.get("startupTimeout"), f"{where}: 'startupTimeout'"),
        shutdown_timeout_s=_seconds(entry.get("shutdownTimeout"), f"{where}: 'shutdownTimeout'"),
        request_timeout_s=_seconds(entry.get("requestTimeout"), f"{where}: 'requestTimeout'"),
        origin=where,
    )


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise LspError(f"{where} must be a list of strings")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise LspError(f"{where} must be an object of string values")
    return dict(value)


def _languages(value: Any, where: str) -> dict[str, str]:
    """``extensionToLanguage``: at least one ``".ext": "language id"``, extensions lowercased."""
    problem = f"{where}: 'extensionToLanguage' must map extensions to language ids"
    if not isinstance(value, dict) or not value:
        raise LspError(f'{problem}, at least one (e.g. {{".py": "python"}})')
    for extension, language in value.items():
        if not extension.startswith(".") or len(extension) < 2:
            raise LspError(f"{problem}: {extension!r} is not an extension such as '.py'")
        if not isinstance(language, str) or not language:
            raise LspError(f"{problem}: {extension!r} has no language id")
    return {extension.lower(): language for extension, language in value.items()}


def _optional_string(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise LspError(f"{where}: 'workspaceFolder' must be a path")
    return value


def _seconds(value: Any, where: str) -> float | None:
    """A positive number of milliseconds, in seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise LspError(f"{where} must be a positive whole number of milliseconds")
    return value / 1000


def read_lsp_servers(path: Path) -> tuple[dict[str, ServerSpec], list[str]]:
    """The ``lspServers`` of one settings file (none where it has none)."""
    try:
        value = json.loads(safefs.read_regular(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        return {}, [f"{path}: cannot read its lspServers: {exc}"]
    if not isinstance(value, dict) or "lspServers" not in value:
        return {}, []
    return parse_servers(value["lspServers"], str(path))


# the registry: which server serves a file


class ServerRegistry:
    """The configured servers and those found on ``PATH``: which one serves a file."""

    def __init__(
        self,
        cwd: Path,
        configured: Mapping[str, ServerSpec] | None = None,
        problems: Iterable[str] = (),
        search_path: str | None = None,
        known: Iterable[ServerSpec] = KNOWN_SERVERS,
    ) -> None:
        self.cwd = cwd
        self.configured = dict(configured or {})
        self.problems = list(problems)
        self.search_path = search_path  # None: $PATH
        self.known = tuple(known)
        self._found: dict[str, str | None] = {}  # command -> its path (None: not found)

    @classmethod
    def from_settings(
        cls, cwd: Path, files: Iterable[Path], search_path: str | None = None
    ) -> ServerRegistry:
        """The servers under ``lspServers`` in `files` (lowest precedence first), and PATH's."""
        configured: dict[str, ServerSpec] = {}
        problems: list[str] = []
        for path in files:
            found, wrong = read_lsp_servers(path)
            configured.update(found)
            problems += wrong
        return cls(cwd, configured, problems, search_path)

    def executable(self, spec: ServerSpec) -> str | None:
        """The path of `spec`'s command, if it can run here (looked up once)."""
        if spec.command not in self._found:
            command = spec.command
            if "/" in command and not command.startswith("/"):
                command = str(self.cwd / command)
            self._found[spec.command] = shutil.which(command, path=self.search_path)
        return self._found[spec.command]

    def available(self) -> bool:
        """Whether any server can run here: whether to offer the LSP tool at all."""
        specs = [*self.configured.values(), *self.known]
        return any(self.executable(spec) is not None for spec in specs)

    def server_for(self, path: Path) -> tuple[ServerSpec, str]:
        """The server for `path` and its executable; `NoServer` says what was looked for."""
        extension = path.suffix.lower()
        configured = [s for s in self.configured.values() if extension in s.languages]
        for spec in [*configured, *(s for s in self.known if extension in s.languages)]:
            executable = self.executable(spec)
            if executable is not None:
                return spec, executable
        raise NoServer(self._none_for(extension, configured))

    def _none_for(self, extension: str, configured: list[ServerSpec]) -> str:
        shown = extension or "extension-less"
        tried = [f"{s.command} ({s.origin})" for s in configured]
        tried += [s.command for s in self.known if extension in s.languages]
        looked = (
            f"looked for {', '.join(tried)}: none can be run here"
            if tried
            else "no known language server takes that extension"
        )
        problems = "".join(f"\nA configuration that was left out: {p}" for p in self.problems)
        example = config_example(extension or ".ext", self.known)
        return (
            f"No language server for {shown} files: {looked}. Install one on PATH, or configure "
            f"one under 'lspServers' in a settings file (.claude/settings.json), e.g. "
            f"{example}{problems}"
        )
