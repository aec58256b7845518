"""MCP servers in real Claude teammate processes, through the real `anthropic` SDK and the test
suite's Messages API server: the real `mcp-server-git` over stdio (its tools listed as
``mcp__git__*`` after the built-ins, a read-only call's result reaching the model, a write call
asking the lead first), a streamable-HTTP server the test runs, a server that crashes mid-session
(its tools gone, the teammate going on, the status file saying failed, the lead told once), a
required server that never comes up (a clear error), a sub-agent's inline server started for it and closed when it ends, the
failure in `swarm status` and its JSON, and no server process left after
``swarm team delete`` or a ``kill -9`` of its teammate."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, git, stop_teammate, swarm, wait_for
from helpers import stop_alice as stop
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import McpServerStatus, read_status
from protocols.messages.models import IdleNotification, PermissionRequest
from protocols.pids import carrying_token, pid_alive
from protocols.team.file import TeamFile

SERVER = str(Path(__file__).resolve().parent.parent / "mcp_server.py")
Start = Callable[..., subprocess.Popen[str]]


def agent_file(workdir: Path, name: str, required: list[str], extra: str = "") -> None:
    path = workdir / ".claude" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {name}\ndescription: uses MCP\nrequiredMcpServers: {json.dumps(required)}\n"
        f"{extra}---\nYou use MCP tools.\n"
    )


def mcp_json(path: Path, servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def offered(body: dict[str, Any]) -> list[str]:
    """The tools a request offers: its tools' schemas, and the MCP tools it names as deferred
    (loaded with ToolSearch or by a call: `teammate.mcp.search`) in its latest note."""
    notes = [
        b["text"]
        for m in body["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if isinstance(b, dict) and "<available-deferred-tools>" in str(b.get("text", ""))
    ]
    deferred = (
        [line for line in notes[-1].splitlines() if line.startswith("mcp__")] if notes else []
    )
    return [*tool_names(body), *deferred]


def results_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def lead_entries(team: TeamFile) -> list[Any]:
    return Mailbox(team.paths).read_all("team-lead")


def texts_to_lead(team: TeamFile) -> list[str]:
    return [e.text for e in lead_entries(team) if e.structured() is None]


def idle_notes(team: TeamFile) -> list[IdleNotification]:
    found = [e.structured() for e in lead_entries(team)]
    return [m for m in found if isinstance(m, IdleNotification)]


def servers(team: TeamFile, name: str = "alice") -> dict[str, McpServerStatus]:
    status = read_status(team.paths, name)
    return {s.name: s for s in status.mcpServers} if status else {}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def init_repo(path: Path) -> None:
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")


def git_server(repo: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}


def test_the_real_git_server_over_stdio_lists_answers_and_asks_the_lead_for_a_write(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    init_repo(workdir)
    (workdir / "new.txt").write_text("fresh\n")
    mcp_json(workdir / ".mcp.json", {"git": git_server(workdir)})
    agent_file(workdir, "gitter", ["git"])
    repo = str(workdir)

    def play(body: dict[str, Any]) -> Turn:
        done = [r["content"] for b in [body] for r in results_of(b)]
        said = sum(m["role"] == "assistant" for m in body["messages"])
        if said == 0:
            return Turn.tool("mcp__git__git_status", {"repo_path": repo})
        if said == 1:
            return Turn.tool("mcp__git__git_add", {"repo_path": repo, "files": ["new.txt"]})
        return Turn.text(f"Done: {done}")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--agent-type", "gitter")
        Mailbox(team.paths).send("alice", "Stage new.txt.", sender="team-lead", summary="job")

        def asked() -> list[PermissionRequest]:
            found = [e.structured() for e in lead_entries(team)]
            return [m for m in found if isinstance(m, PermissionRequest)]

        (request,) = wait_for(asked, "alice to ask before git_add")
        assert request.tool_name == "mcp__git__git_add"
        assert request.input == {"repo_path": repo, "files": ["new.txt"]}
        assert git(workdir, "diff", "--cached", "--name-only").strip() == ""  # not yet
        result = swarm("approve", request.request_id)
        assert result.returncode == 0, result.stderr
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    first, second, third = api.requests[:3]
    names = offered(first)
    mcp = [n for n in names if n.startswith("mcp__")]
    assert {"mcp__git__git_status", "mcp__git__git_add", "mcp__git__git_commit"} <= set(mcp)
    assert not [n for n in tool_names(first) if n.startswith("mcp__")]  # named, not loaded
    assert "ToolSearch" in tool_names(first)
    assert all(n.startswith("mcp__git__") for n in mcp)
    # a tool called is loaded: sent with the requests from then on, after the built-ins
    loaded = tool_names(second)
    assert loaded.index("Bash") < loaded.index("mcp__git__git_status")
    (status_result,) = results_of(second)
    assert "new.txt" in status_result["content"] and not status_result.get("is_error")
    (add_result,) = results_of(third)
    assert not add_result.get("is_error"), add_result
    assert git(workdir, "diff", "--cached", "--name-only").strip() == "new.txt"
    assert servers(team)["git"].state == "closed" and servers(team)["git"].tools == 0


def test_a_streamable_http_server_run_by_the_test_is_reached_from_mcp_config(
    team: TeamFile, start: Start, workdir: Path, tmp_path: Path
) -> None:
    port = free_port()
    http = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, "the HTTP MCP server to listen")
        config = mcp_json(
            tmp_path / "mcp.json", {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
        )
        agent_file(workdir, "webber", ["web"])
        script = [Turn.tool("mcp__web__echo", {"text": "over http"}), Turn.text("Heard it.")]
        with MessagesAPI(script) as api:
            proc = start("alice", api, "--agent-type", "webber", "--mcp-config", str(config))
            Mailbox(team.paths).send("alice", "Echo.", sender="team-lead", summary="job")
            wait_for(lambda: idle_notes(team), "alice to go idle")
            assert servers(team)["web"].state == "connected"
            assert servers(team)["web"].tools == 4 and servers(team)["web"].transport == "http"
            stop(team, proc)
    finally:
        http.kill()
        http.wait(10)
    assert "mcp__web__echo" in offered(api.requests[0])
    (result,) = results_of(api.requests[1])
    assert result["content"].startswith(f"echo: over http (pid {http.pid})")


def test_a_server_that_crashes_mid_session_is_reported_once_and_its_tools_disappear(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    mcp_json(workdir / ".mcp.json", {"flaky": {"command": sys.executable, "args": [SERVER]}})
    agent_file(workdir, "crasher", ["flaky"])

    def play(body: dict[str, Any]) -> Turn:
        said = sum(m["role"] == "assistant" for m in body["messages"])
        if said == 0:
            return Turn.tool("mcp__flaky__crash", {})
        return Turn.text("Carrying on without it.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--agent-type", "crasher")
        Mailbox(team.paths).send("alice", "Crash it.", sender="team-lead", summary="job")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        wait_for(lambda: servers(team).get("flaky", None), "the status file to list flaky")
        wait_for(lambda: servers(team)["flaky"].state == "failed", "flaky to be failed")
        told = wait_for(
            lambda: [t for t in texts_to_lead(team) if "MCP server flaky failed" in t],
            "the lead to be told",
        )
        Mailbox(team.paths).send("alice", "Still there?", sender="team-lead", summary="again")
        wait_for(lambda: len(idle_notes(team)) >= 2, "alice to answer again")
        stop(team, proc)
    assert len(told) == 1 and "its tools are unavailable" in told[0]
    assert len([t for t in texts_to_lead(team) if "MCP server flaky" in t]) == 1
    assert "mcp__flaky__crash" in offered(api.requests[0])
    (crash,) = results_of(api.requests[1])
    assert crash.get("is_error") is True
    last = api.requests[-1]
    assert not [n for n in offered(last) if n.startswith("mcp__flaky")]
    assert "Bash" in tool_names(last)
    assert idle_notes(team)[-1].idleReason == "available"  # it went on
    status = servers(team)["flaky"]
    assert status.error is not None and "exited" in status.error
    shown = swarm("status")
    assert "alice: MCP server flaky failed: the server process exited" in shown.stdout
    logs = swarm("logs", "alice").stdout
    assert "MCP server flaky connected (4 tools)" in logs
    assert "MCP server flaky failed: the server process exited" in logs
    listed = json.loads(swarm("status", "--json").stdout)
    (alice,) = [m for m in listed["members"] if m["name"] == "alice"]
    assert alice["mcp_servers"][0]["name"] == "flaky"
    assert alice["mcp_servers"][0]["state"] == "failed"


def test_a_required_server_that_never_comes_up_makes_the_agent_unusable_with_a_clear_error(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]}
    mcp_json(workdir / ".mcp.json", {"silent": silent, "broken": {"command": "no-such-mcp-cmd"}})
    agent_file(workdir, "needy", ["silent"])
    with MessagesAPI([Turn.text("never asked")]) as api:
        proc = start("alice", api, "--agent-type", "needy", env={"MCP_TIMEOUT": "1500"})
        Mailbox(team.paths).send("alice", "Work.", sender="team-lead", summary="job")
        (note,) = wait_for(lambda: idle_notes(team), "alice to report the failure")
        stop(team, proc)
    assert api.requests == []  # the agent could not be used: no model request
    assert note.idleReason == "failed"
    reason = note.failureReason or ""
    assert "needy cannot be used: required MCP server unavailable" in reason, reason
    assert "'silent'" in reason and "did not connect within 1.5 s" in reason
    broken = [t for t in texts_to_lead(team) if "MCP server broken failed" in t]
    assert len(broken) == 1 and "command not found: no-such-mcp-cmd" in broken[0]
    assert ".mcp.json: mcpServers.broken" in broken[0]


def spawn_with_git(team: TeamFile, workdir: Path, tmp_path: Path, api: MessagesAPI) -> int:
    """Spawn alice (subprocess backend) with the git server; the server's pid once connected."""
    config = mcp_json(tmp_path / "mcp.json", {"git": git_server(workdir)})
    env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key"}
    result = swarm(
        "spawn", "alice", "-p", "hi", "--backend", "subprocess", "--model", "sonnet",
        "--mcp-config", str(config), "--cwd", str(workdir), env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    wait_for(lambda: servers(team).get("git"), "alice's git server to be listed")
    wait_for(lambda: servers(team)["git"].state == "connected", "alice's git server")
    member = TeamFile(team.paths).load().member("alice")
    assert member is not None
    token = (member.model_extra or {}).get("processToken")
    me = read_status(team.paths, "alice")
    assert isinstance(token, str) and me is not None
    found = wait_for(lambda: [p for p in carrying_token(token) if p != me.pid], "the server pid")
    assert len(found) >= 1
    return int(found[0])


@pytest.mark.parametrize("how", ["team delete", "kill -9"])
def test_no_server_process_outlives_its_teammate(
    team: TeamFile, workdir: Path, tmp_path: Path, how: str
) -> None:
    init_repo(workdir)
    TeamFile(team.paths).remove_member("alice")
    with MessagesAPI(lambda body: Turn.text("ok")) as api:
        server = spawn_with_git(team, workdir, tmp_path, api)
        assert pid_alive(server)
        if how == "kill -9":
            status = read_status(team.paths, "alice")
            assert status is not None and status.pid is not None
            os.kill(status.pid, signal.SIGKILL)
            wait_for(lambda: not pid_alive(status.pid or 0), "alice to die")
            result = swarm("status")  # reaps the dead member: what it left running is stopped
        else:
            result = swarm("team", "delete", "t", "--force")
        assert result.returncode == 0, result.stderr
        wait_for(lambda: not pid_alive(server), f"the git server to be gone after {how}")


def test_a_sub_agents_inline_server_is_started_for_it_and_closed_when_it_ends(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    token = f"SWARM_TEST_SERVER=inline-{os.getpid()}"  # how its process is found (a sandboxed
    # server's own pid is of the sandbox's pid namespace: acceptEdits sandboxes it)
    mine_env = {"SWARM_TEST_SERVER": token.split("=", 1)[1]}
    inline = json.dumps([{"mine": {"command": sys.executable, "args": [SERVER], "env": mine_env}}])
    agent_file(workdir, "helper", ["mine"], extra=f"mcpServers: {inline}\n")
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        said = sum(m["role"] == "assistant" for m in body["messages"])
        if "You use MCP" in json.dumps(body.get("system")):  # the helper sub-agent
            if said == 0:
                return Turn.tool("mcp__mine__echo", {"text": "from the sub-agent"})
            return Turn.text(f"heard: {results_of(body)[0]['content']}")
        if said == 0:
            call = {"description": "echo", "prompt": "Echo it.", "subagent_type": "helper"}
            return Turn.tool("Agent", call)
        return Turn.text("Done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Delegate.", sender="team-lead", summary="job")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert not [n for n in servers(team) if n.endswith("/mine")]  # gone with its sub-agent
    events = [json.loads(line) for line in team.paths.transcript("alice").read_text().splitlines()]
    mine = [(e["server"], e["state"]) for e in events if e["kind"] == "mcp_server"]
    assert [state for _, state in mine] == ["connected", "closed"]
    assert mine[0][0].startswith("helper@a") and mine[0][0].endswith("/mine")
    sub = [b for b in seen if "You use MCP" in json.dumps(b.get("system"))]
    assert "mcp__mine__echo" in offered(sub[0])
    parent = [b for b in seen if b not in sub]
    assert not any(n.startswith("mcp__mine") for b in parent for n in offered(b))
    (echoed,) = [r["content"] for r in results_of(sub[1])]
    assert echoed.startswith("echo: from the sub-agent")
    assert not carrying(token.encode())  # its process is gone with its sub-agent
    assert len(api.requests) == 4


def test_a_restarted_http_server_is_reconnected_and_its_tools_come_back(tmp_path: Path) -> None:
    from teammate.mcp.client import McpError, McpManager
    from teammate.mcp.config import parse_server
    from teammate.mcp.tools import McpToolbox

    port = free_port()

    def serve() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, SERVER, "http", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, "the HTTP MCP server to listen")
        return proc

    http = serve()
    manager = McpManager(tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        manager.start([parse_server("web", {"type": "http", "url": url}, "cfg", {})])
        assert manager.wait(["web"], DEADLINE_S) == {"web": None}
        first = manager.call_tool("web", "echo", {"text": "a"}).content[0].text
        http.kill()
        http.wait(10)
        http = serve()  # a new process: it knows nothing of the old session
        with pytest.raises(McpError, match="Session not found"):
            manager.call_tool("web", "echo", {"text": "b"})
        assert manager.wait(["web"], DEADLINE_S) == {"web": None}
        again = manager.call_tool("web", "echo", {"text": "c"}).content[0].text
        assert [t.name for t in McpToolbox(manager).tools()] == [
            "mcp__web__echo",
            "mcp__web__shout",
            "mcp__web__crash",
            "mcp__web__note",
        ]
    finally:
        manager.close()
        http.kill()
        http.wait(10)
    assert first.startswith("echo: a") and again.startswith(f"echo: c (pid {http.pid})")


def test_an_sse_server_is_reached(tmp_path: Path) -> None:
    from teammate.mcp.client import McpManager
    from teammate.mcp.config import parse_server

    port = free_port()
    sse = subprocess.Popen(
        [sys.executable, SERVER, "sse", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    manager = McpManager(tmp_path)
    try:

        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, "the SSE MCP server to listen")
        url = f"http://127.0.0.1:{port}/sse"
        manager.start([parse_server("old", {"type": "sse", "url": url}, "cfg", {})])
        assert manager.wait(["old"], DEADLINE_S) == {"old": None}
        answer = manager.call_tool("old", "shout", {"text": "over sse"}).content[0].text
        (view,) = manager.views()
    finally:
        manager.close()
        sse.kill()
        sse.wait(10)
    assert answer == "OVER SSE" and view.transport == "sse" and len(view.tools) == 4


def test_tools_of_a_server_still_connecting_are_loaded_with_toolsearch_once_it_is_up(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    gate = workdir / "open-the-server"
    slow = {"command": sys.executable, "args": [SERVER, "stdio", "--gate", str(gate)]}
    mcp_json(workdir / ".mcp.json", {"slow": slow})

    def play(body: dict[str, Any]) -> Turn:
        said = sum(m["role"] == "assistant" for m in body["messages"])
        if said == 0:
            gate.write_text("")  # the server comes up while ToolSearch waits for it
            return Turn.tool("ToolSearch", {"query": "select:mcp__slow__echo"})
        if said == 1:
            return Turn.tool("mcp__slow__echo", {"text": "first turn"})
        if said == 2:
            return Turn.tool("ListMcpResources", {})
        if said == 3:
            return Turn.tool("ReadMcpResource", {"server": "slow", "uri": "memo://notes"})
        return Turn.text("Done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Echo.", sender="team-lead", summary="job")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    first, searched, echoed, listed, read = api.requests[:5]
    note = json.dumps(first["messages"])
    assert "MCP servers still connecting (ToolSearch waits): slow" in note
    assert not [n for n in tool_names(first) if n.startswith("mcp__")]
    (found,) = results_of(searched)
    assert "<functions>" in found["content"] and '"name": "mcp__slow__echo"' in found["content"]
    assert "mcp__slow__echo" in tool_names(searched)  # loaded: sent from now on
    (echo,) = results_of(echoed)
    assert echo["content"].startswith("echo: first turn") and not echo.get("is_error")
    assert "slow: memo://notes" in results_of(listed)[0]["content"]
    assert results_of(read)[0]["content"] == "remember the plum"


def test_a_direct_call_waits_for_its_server_and_tool_search_can_be_turned_off(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    gate = workdir / "open-the-server"
    slow = {"command": sys.executable, "args": [SERVER, "stdio", "--gate", str(gate)]}
    mcp_json(workdir / ".mcp.json", {"slow": slow})

    def play(body: dict[str, Any]) -> Turn:
        if sum(m["role"] == "assistant" for m in body["messages"]) == 0:
            gate.write_text("")
            return Turn.tool("mcp__slow__echo", {"text": "no search"})
        return Turn.text("Done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Echo.", sender="team-lead", summary="job")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    (echo,) = results_of(api.requests[1])
    assert echo["content"].startswith("echo: no search")
    gate.unlink()
    gate.write_text("")  # up at once this time: every tool sent up front, as before
    with MessagesAPI([Turn.text("Done.")]) as api:
        proc = start("bob", api, env={"ENABLE_TOOL_SEARCH": "false", "MCP_TIMEOUT": "30000"})
        Mailbox(team.paths).send("bob", "Look.", sender="team-lead", summary="job")
        wait_for(lambda: len(idle_notes(team)) >= 2, "bob to go idle")
        stop_teammate(team.paths, "bob", proc)
    assert "ToolSearch" not in tool_names(api.requests[0])


def carrying(needle: bytes) -> list[int]:
    """The live processes whose environment holds `needle` (``NAME=value``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found
