"""The LSP tool against real language servers: pylsp (python-lsp-server, the dev extra) for the
operations it supports, pyright (from npm, into .cache/ as tests/claude_code.py installs Claude
Code) for workspace symbols and call hierarchies, and a fake server script for what real ones
rarely do on cue (hang, answer in UTF-16 columns, offer LocationLinks).

The projects are small Python packages in temporary directories; every server runs in one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock
import pytest

from teammate.tools.base import ToolContext, ToolError
from teammate.tools.lsp import LSP_TOOLS, lsp, lsp_tools_for
from teammate.tools.lsp_client import LanguageServer, LspClient
from teammate.tools.lsp_servers import ServerRegistry, parse_servers

VENV_BIN = str(Path(sys.executable).parent)  # pylsp is installed beside the test's Python
REPO = Path(__file__).resolve().parents[2]
PYRIGHT = "1.1.414"
WIDE = "\U0001d4b3"  # MATHEMATICAL SCRIPT CAPITAL X: one character, two UTF-16 units

UTIL = '''\
"""Helpers."""


def helper(x: int) -> int:
    """Double x."""
    return x * 2


class Shape:
    def area(self) -> float:
        return 0.0
'''
MAIN = """\
from pkg.util import helper


def run() -> int:
    return helper(3) + helper(4)
"""


def project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text(UTIL)
    (root / "main.py").write_text(MAIN)
    return root


def call(
    ctx: ToolContext, operation: str, file: str, line: int = 1, character: int = 1, **more: Any
) -> str:
    result = lsp.run(
        ctx,
        {"operation": operation, "filePath": file, "line": line, "character": character, **more},
    )
    assert isinstance(result, str)
    return result


def servers(ctx: ToolContext) -> list[LanguageServer]:
    assert ctx.lsp is not None
    return ctx.lsp.servers()


def gone(server: LanguageServer) -> bool:
    """Whether the server's process is reaped and its process group is empty."""
    assert server.process is not None
    try:
        os.killpg(server.process.pid, 0)
    except ProcessLookupError:
        return server.process.poll() is not None
    return False


@pytest.fixture
def pylsp_ctx(tmp_path: Path) -> Iterator[ToolContext]:
    root = project(tmp_path / "proj")
    client = LspClient(ServerRegistry(root, search_path=VENV_BIN))
    yield ToolContext(cwd=root, lsp=client)
    client.close()


# --- the tool's shape ---


def test_the_tool_is_claude_codes_lsp() -> None:
    schema = lsp.schema()["input_schema"]
    assert (lsp.name, lsp.kind, LSP_TOOLS) == ("LSP", "read", (lsp,))
    assert set(schema["properties"]) == {"operation", "filePath", "line", "character", "query"}
    assert schema["required"] == ["operation", "filePath", "line", "character"]
    assert schema["properties"]["operation"]["enum"] == [
        "goToDefinition", "findReferences", "hover", "documentSymbol", "workspaceSymbol",
        "goToImplementation", "prepareCallHierarchy", "incomingCalls", "outgoingCalls",
    ]  # fmt: skip
    assert schema["properties"]["line"]["exclusiveMinimum"] == 0


def test_an_operation_it_does_not_know_is_refused_naming_those_it_does(
    pylsp_ctx: ToolContext,
) -> None:
    with pytest.raises(
        ToolError, match=r"operation: Input should be 'goToDefinition'.*'outgoingCalls'"
    ):
        call(pylsp_ctx, "rename", "main.py")
    with pytest.raises(ToolError, match="line: Input should be greater than 0"):
        call(pylsp_ctx, "hover", "main.py", line=0)


# --- pylsp: the operations it supports ---


def test_definition_of_a_function_used_in_another_module(pylsp_ctx: ToolContext) -> None:
    assert call(pylsp_ctx, "goToDefinition", "main.py", 5, 13) == (
        "Found 1 definition:\n  pkg/util.py:4:5: def helper(x: int) -> int:"
    )


def test_references_across_files_with_their_code(pylsp_ctx: ToolContext) -> None:
    absolute = str(pylsp_ctx.cwd / "main.py")
    assert call(pylsp_ctx, "findReferences", absolute, 5, 13) == textwrap.dedent("""\
        Found 4 references in 2 files:
          main.py:1:22: from pkg.util import helper
          main.py:5:12: return helper(3) + helper(4)
          main.py:5:24: return helper(3) + helper(4)
          pkg/util.py:4:5: def helper(x: int) -> int:""")


def test_hover_is_the_signature_and_docstring(pylsp_ctx: ToolContext) -> None:
    text = call(pylsp_ctx, "hover", "main.py", 5, 13)
    assert text.startswith("Hover at main.py:5:13:\n")
    assert "helper(x: int) -> int" in text and "Double x." in text


def test_document_symbols_are_a_tree(pylsp_ctx: ToolContext) -> None:
    # pylsp answers flat SymbolInformation: nested here by their ranges
    assert call(pylsp_ctx, "documentSymbol", "pkg/util.py") == textwrap.dedent("""\
        Found 3 symbols in pkg/util.py:
          helper (Function) 4:1
          Shape (Class) 9:1
            area (Method) 10:5""")


def test_what_the_server_does_not_offer_is_said_with_what_it_does(pylsp_ctx: ToolContext) -> None:
    for operation in ("workspaceSymbol", "goToImplementation", "incomingCalls"):
        with pytest.raises(ToolError) as caught:
            call(pylsp_ctx, operation, "main.py", 5, 13, query="help")
        assert f"pylsp does not support {operation}" in str(caught.value)
        assert "what it supports: goToDefinition, findReferences, hover, documentSymbol" in str(
            caught.value
        )


def test_a_file_changed_on_disk_is_sent_again(pylsp_ctx: ToolContext) -> None:
    util, main = pylsp_ctx.cwd / "pkg" / "util.py", pylsp_ctx.cwd / "main.py"
    assert "  helper (Function) 4:1\n" in call(pylsp_ctx, "documentSymbol", "pkg/util.py")
    assert call(pylsp_ctx, "goToDefinition", "main.py", 5, 13).endswith(
        "pkg/util.py:4:5: def helper(x: int) -> int:"
    )
    util.write_text("\n\n" + UTIL + "\n\nLIMIT = 3\n")
    # the open util.py changed: brought up to date before a request about main.py
    assert call(pylsp_ctx, "goToDefinition", "main.py", 5, 13) == (
        "Found 1 definition:\n  pkg/util.py:6:5: def helper(x: int) -> int:"
    )
    after = call(pylsp_ctx, "documentSymbol", "pkg/util.py")
    assert "  helper (Function) 6:1\n" in after and "LIMIT (Variable) 16:1" in after
    main.write_text(MAIN.replace("helper(3)", "helper(300)"))  # the file asked about changed
    assert call(pylsp_ctx, "findReferences", "main.py", 5, 13).splitlines()[2:4] == [
        "  main.py:5:12: return helper(300) + helper(4)",
        "  main.py:5:26: return helper(300) + helper(4)",
    ]
    (server,) = servers(pylsp_ctx)
    assert sorted(d.version for d in server._documents.values()) == [2, 2]


def test_a_missing_file_and_positions_out_of_range(pylsp_ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"^File does not exist: nope\.py$"):
        call(pylsp_ctx, "hover", "nope.py")
    with pytest.raises(ToolError, match=r"^Not a regular file: pkg$"):
        call(pylsp_ctx, "hover", "pkg")
    with pytest.raises(ToolError, match=r"^line 50 is out of range: main\.py has 5 lines"):
        call(pylsp_ctx, "hover", "main.py", 50, 1)
    with pytest.raises(
        ToolError,
        match=r"^character 40 is out of range: line 5 of main\.py has 32 characters \(1-based: at most 33",
    ):
        call(pylsp_ctx, "hover", "main.py", 5, 40)
    assert servers(pylsp_ctx) == []  # none was started for those


def test_nothing_at_a_position_is_said(pylsp_ctx: ToolContext) -> None:
    assert call(pylsp_ctx, "goToDefinition", "main.py", 2, 1) == (
        "No definition found at main.py:2:1: the position may not be on a symbol, or the "
        "server may not have indexed the project yet"
    )


def test_close_stops_the_server_and_its_group(pylsp_ctx: ToolContext) -> None:
    client = pylsp_ctx.lsp
    assert client is not None
    call(pylsp_ctx, "hover", "main.py", 5, 13)
    (server,) = client.servers()
    assert server.running and not gone(server)
    client.close()
    assert gone(server)
    with pytest.raises(ToolError, match="the language servers were stopped with the agent"):
        call(pylsp_ctx, "hover", "main.py", 5, 13)


# --- which server: PATH and lspServers ---


def test_a_server_is_found_on_path_by_extension(tmp_path: Path) -> None:
    registry = ServerRegistry(tmp_path, search_path=VENV_BIN)
    spec, executable = registry.server_for(tmp_path / "a.py")
    assert (spec.name, executable) == ("pylsp", shutil.which("pylsp", path=VENV_BIN))
    assert registry.available()


def test_no_server_says_what_it_looked_for_and_how_to_configure_one(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    registry = ServerRegistry(tmp_path, search_path=str(empty))
    assert not registry.available()
    (tmp_path / "a.go").write_text("package a\n")
    client = LspClient(registry)
    with pytest.raises(ToolError) as caught:
        call(ToolContext(cwd=tmp_path, lsp=client), "hover", "a.go")
    assert str(caught.value) == (
        "No language server for .go files: looked for gopls: none can be run here. Install one "
        "on PATH, or configure one under 'lspServers' in a settings file (.claude/settings.json), "
        'e.g. {"lspServers": {"gopls": {"command": "gopls", "args": [], "extensionToLanguage": '
        '{".go": "go"}}}}'
    )
    with pytest.raises(
        ToolError,
        match=r"No language server for \.txt files: no known language server takes that extension.*\"\.txt\": \"<language id>\"",
    ):
        (tmp_path / "a.txt").write_text("hi\n")
        call(ToolContext(cwd=tmp_path, lsp=client), "hover", "a.txt")


def test_the_tool_is_offered_only_where_a_server_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert lsp_tools_for(tmp_path) == ()
    monkeypatch.setenv("PATH", VENV_BIN)
    assert lsp_tools_for(tmp_path) == (lsp,)
    monkeypatch.setenv("PATH", str(empty))
    settings = tmp_path / "settings.json"
    server = {"command": sys.executable, "extensionToLanguage": {".fake": "fake"}}
    settings.write_text(json.dumps({"lspServers": {"fake": server}}))
    assert lsp_tools_for(tmp_path, [settings]) == (lsp,)


def test_lsp_servers_in_settings_follow_claude_codes_fields(tmp_path: Path) -> None:
    low, high = tmp_path / "user.json", tmp_path / "project.json"
    low.write_text(
        json.dumps(
            {"lspServers": {"py": {"command": "pylsp", "extensionToLanguage": {".py": "python"}}}}
        )
    )
    entry = {
        "command": "pylsp",
        "args": ["-v"],
        "extensionToLanguage": {".PY": "python", ".pyi": "python"},
        "env": {"X": "1"},
        "initializationOptions": {"a": 1},
        "settings": {"pylsp": {"plugins": {}}},
        "startupTimeout": 5000,
        "requestTimeout": 1500,
        "restartOnCrash": True,
        "maxRestarts": 2,
        "diagnostics": False,
    }
    high.write_text(json.dumps({"permissions": {}, "lspServers": {"py": entry}}))
    registry = ServerRegistry.from_settings(tmp_path, [low, high], search_path=VENV_BIN)
    spec, _ = registry.server_for(tmp_path / "x.py")
    assert (spec.args, dict(spec.languages), spec.request_timeout_s, spec.startup_timeout_s) == (
        ("-v",), {".py": "python", ".pyi": "python"}, 1.5, 5.0,
    )  # fmt: skip
    assert spec.origin == f"lspServers.py in {high}"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"command": "x y", "extensionToLanguage": {".a": "a"}},
            "'command' has spaces: put its arguments in 'args'",
        ),
        (
            {"command": "x"},
            "'extensionToLanguage' must map extensions to language ids, at least one",
        ),
        (
            {"command": "x", "extensionToLanguage": {"a": "a"}},
            "'a' is not an extension such as '.py'",
        ),
        (
            {"command": "x", "extensionToLanguage": {".a": "a"}, "transport": "socket"},
            "'transport' 'socket': swarm runs stdio only",
        ),
        (
            {"command": "x", "extensionToLanguage": {".a": "a"}, "port": 1},
            "unknown field 'port'; allowed: command, args, extensionToLanguage,",
        ),
        (
            {"command": "x", "extensionToLanguage": {".a": "a"}, "requestTimeout": "5"},
            "'requestTimeout' must be a positive whole number of milliseconds",
        ),
        (
            {"command": "x", "extensionToLanguage": {".a": "a"}, "args": "-v"},
            "'args' must be a list of strings",
        ),
    ],
)
def test_a_bad_server_entry_is_named_and_left_out(entry: dict[str, Any], problem: str) -> None:
    servers, problems = parse_servers({"bad": entry}, "/s.json")
    assert servers == {}
    (said,) = problems
    assert said.startswith("lspServers.bad in /s.json: ") and problem in said


def test_a_left_out_server_is_named_where_its_files_find_none(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "lspServers": {
                    "ruby": {"command": "solargraph stdio", "extensionToLanguage": {".rb": "ruby"}}
                }
            }
        )
    )
    registry = ServerRegistry.from_settings(tmp_path, [settings], search_path=str(tmp_path))
    (tmp_path / "a.rb").write_text("x = 1\n")
    with pytest.raises(
        ToolError,
        match=r"(?s)No language server for \.rb files.*A configuration that was left out: lspServers\.ruby in .*'command' has spaces",
    ):
        call(ToolContext(cwd=tmp_path, lsp=LspClient(registry)), "hover", "a.rb")


# --- a fake server: hanging, UTF-16 columns, LocationLinks ---

FAKE_SERVER = r"""
import json, os, sys

answers = json.load(open(sys.argv[1]))  # method -> result; a method not there is never answered
log = open(sys.argv[2], "a")

def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))

while True:
    message = read()
    log.write(json.dumps(message) + "\n")
    log.flush()
    method = message.get("method")
    if method == "exit":
        sys.exit(0)
    if "id" in message and method in answers:
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answers[method]}).encode()
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sys.stdout.buffer.flush()
"""


class Fake:
    """A fake language server for ``.fake`` files, configured as Claude Code's lspServers
    configure one: `answer` sets what it answers (at its next start), `messages` what it got."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.script = root / "fake_server.py"
        self.script.write_text(FAKE_SERVER)
        self.answers_file = root / "answers.json"
        self.log = root / "received.jsonl"
        self.answer({})

    def answer(self, answers: dict[str, Any]) -> None:
        self.answers_file.write_text(json.dumps(answers))

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def client(self, timeout_s: float, startup_s: float | None = None) -> LspClient:
        """A client of the fake server: requests time out after `timeout_s`, its start (a
        Python process, its initialize answered) after `startup_s` (default: the same)."""
        settings = self.root / "settings.json"
        server = {
            "command": sys.executable,
            "args": [str(self.script), str(self.answers_file), str(self.log)],
            "extensionToLanguage": {".fake": "fake"},
            "shutdownTimeout": 1000,
        }
        settings.write_text(json.dumps({"lspServers": {"fake": server}}))
        registry = ServerRegistry.from_settings(self.root, [settings], search_path="")
        startup = timeout_s if startup_s is None else startup_s
        return LspClient(registry, request_timeout_s=timeout_s, startup_timeout_s=startup)


INITIALIZED = {
    "capabilities": {
        "hoverProvider": True,
        "definitionProvider": True,
        "workspaceSymbolProvider": True,
    }
}


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    (tmp_path / "a.fake").write_text("x = 1\n")
    return Fake(tmp_path)


def test_a_server_that_never_answers_initialize_is_stopped(fake: Fake) -> None:
    client = fake.client(timeout_s=0.3)
    ctx = ToolContext(cwd=fake.root, lsp=client)
    with pytest.raises(
        ToolError,
        match=r"^fake did not answer initialize within 0\.3 s; it was stopped, and the next call starts it again$",
    ):
        call(ctx, "hover", "a.fake")
    (server,) = client.servers()
    assert gone(server)
    client.close()


def test_a_server_that_exits_at_once_is_reported_with_its_last_words(fake: Fake) -> None:
    fake.script.write_text(
        "import sys\nsys.stderr.write('cannot index: no project here')\nsys.exit(3)\n"
    )
    client = fake.client(timeout_s=30)
    with pytest.raises(
        ToolError,
        match=r"^fake exited with status 3; its last output:\ncannot index: no project here$",
    ):
        call(ToolContext(cwd=fake.root, lsp=client), "hover", "a.fake")
    client.close()


def test_a_server_that_hangs_is_killed_and_started_again_next_time(fake: Fake) -> None:
    fake.answer({"initialize": INITIALIZED})
    # a request hangs after 0.3 s; a start may take longer on a loaded machine (make test)
    client = fake.client(timeout_s=0.3, startup_s=30)
    ctx = ToolContext(cwd=fake.root, lsp=client)
    with pytest.raises(ToolError, match=r"^fake did not answer textDocument/hover within 0\.3 s"):
        call(ctx, "hover", "a.fake")
    (hung,) = client.servers()
    assert gone(hung)
    fake.answer(
        {"initialize": INITIALIZED, "textDocument/hover": {"contents": "x: int"}, "shutdown": None}
    )
    assert call(ctx, "hover", "a.fake") == "Hover at a.fake:1:1:\nx: int"
    (again,) = client.servers()
    assert again is not hung and again.running
    messages = fake.messages()
    methods = [m.get("method") for m in messages]
    last_start = len(methods) - 1 - methods[::-1].index("initialize")
    # the new server got the file again (whether the hung one logged its copy before it was
    # killed is a race on a loaded machine)
    opened = [m for m in messages[last_start:] if m.get("method") == "textDocument/didOpen"]
    assert opened and opened[0]["params"]["textDocument"]["languageId"] == "fake"
    client.close()
    assert gone(again)
    assert [m["method"] for m in fake.messages()[-2:]] == ["shutdown", "exit"]


def test_the_server_has_the_teammates_environment(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_PROCESS_TOKEN", "token-of-the-teammate")
    fake.answer({"initialize": INITIALIZED, "textDocument/hover": None})
    client = fake.client(timeout_s=30)
    call(ToolContext(cwd=fake.root, lsp=client), "hover", "a.fake")
    (server,) = client.servers()
    assert server.process is not None
    environ = Path(f"/proc/{server.process.pid}/environ").read_bytes().split(b"\0")
    assert b"SWARM_PROCESS_TOKEN=token-of-the-teammate" in environ
    assert os.getpgid(server.process.pid) == server.process.pid  # a group of its own
    client.close()


def test_utf16_columns_and_location_links(fake: Fake) -> None:
    # a character outside the BMP is two UTF-16 units: the server counts units, the tool
    # characters
    (fake.root / "a.fake").write_text(f"{WIDE} = f({WIDE})\n")
    link = {
        "targetUri": (fake.root / "a.fake").as_uri(),
        "targetRange": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 9}},
        "targetSelectionRange": {
            "start": {"line": 0, "character": 7},
            "end": {"line": 0, "character": 9},
        },
    }
    fake.answer({"initialize": INITIALIZED, "textDocument/definition": [link]})
    client = fake.client(timeout_s=30)
    assert call(ToolContext(cwd=fake.root, lsp=client), "goToDefinition", "a.fake", 1, 7) == (
        f"Found 1 definition:\n  a.fake:1:7: {WIDE} = f({WIDE})"
    )
    (request,) = [m for m in fake.messages() if m.get("method") == "textDocument/definition"]
    assert request["params"]["position"] == {"line": 0, "character": 7}
    client.close()


def test_workspace_symbols_need_a_query(fake: Fake) -> None:
    fake.answer({"initialize": INITIALIZED})
    client = fake.client(timeout_s=30)
    with pytest.raises(ToolError, match="workspaceSymbol needs a query"):
        call(ToolContext(cwd=fake.root, lsp=client), "workspaceSymbol", "a.fake")
    client.close()


# --- pyright: workspace symbols and call hierarchies ---


def pyright_langserver() -> Path:
    """pyright-langserver from npm, installed once into .cache/ (skipped without node or npm,
    as Claude Code's interop tests are; a failed install fails)."""
    directory = REPO / ".cache" / f"pyright-{PYRIGHT}"
    program = directory / "node_modules" / ".bin" / "pyright-langserver"
    directory.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(directory) + ".lock"):
        if not program.exists():
            missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
            if missing:
                pytest.skip(f"{' and '.join(missing)} not installed: needed to install pyright")
            result = subprocess.run(
                ["npm", "install", "--prefix", str(directory), "--no-audit", "--no-fund", f"pyright@{PYRIGHT}"],
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            if result.returncode != 0 or not program.exists():
                raise RuntimeError(f"npm install pyright failed:\n{result.stdout}\n{result.stderr}")
    return program


@pytest.fixture
def pyright_ctx(tmp_path: Path) -> Iterator[ToolContext]:
    program = pyright_langserver()
    root = project(tmp_path / "proj")
    client = LspClient(ServerRegistry(root, search_path=str(program.parent)))
    yield ToolContext(cwd=root, lsp=client)
    client.close()


def test_pyright_workspace_symbols_with_a_query(pyright_ctx: ToolContext) -> None:
    # pyright answers workspace/symbol before it has found the workspace's files (an empty
    # answer); its document requests wait for that, so one comes first
    call(pyright_ctx, "documentSymbol", "main.py")
    assert call(pyright_ctx, "workspaceSymbol", "main.py", query="help") == (
        "Found 1 symbol matching 'help' in 1 file:\n  helper (Function) pkg/util.py:4:5"
    )
    (server,) = servers(pyright_ctx)
    assert server.spec.name == "pyright"


def test_pyright_document_symbols_are_its_tree(pyright_ctx: ToolContext) -> None:
    assert call(pyright_ctx, "documentSymbol", "pkg/util.py") == textwrap.dedent("""\
        Found 4 symbols in pkg/util.py:
          helper (Function) 4:5
            x (Variable) 4:12
          Shape (Class) 9:7
            area (Method) 10:9""")


def test_pyright_call_hierarchy(pyright_ctx: ToolContext) -> None:
    assert call(pyright_ctx, "prepareCallHierarchy", "pkg/util.py", 4, 6) == (
        "Found 1 call hierarchy item:\n  helper (Function) [(util.py)] pkg/util.py:4:5"
    )
    assert call(pyright_ctx, "incomingCalls", "pkg/util.py", 4, 6) == (
        "Found 1 incoming call to helper:\n"
        "  run (Function) [(main.py)] main.py:4:5, calls at 5:12, 5:24"
    )
    outgoing = call(pyright_ctx, "outgoingCalls", "main.py", 4, 6)
    assert outgoing.startswith("Found 1 outgoing call from run:\n  helper (Function) ")
    assert outgoing.endswith(" pkg/util.py:4:5, called at 5:12, 5:24")
    assert call(pyright_ctx, "incomingCalls", "main.py", 4, 6) == (
        "No incoming calls found: nothing calls run (Function) [(main.py)] main.py:4:5"
    )
