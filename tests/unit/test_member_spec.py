"""One `MemberSpec` says how a member starts: it round-trips through the teammate command line,
is recorded in the member entry by a spawn, and drives the spawn's command line. These run on
the stub backend: nothing is started."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from protocols.team.signing import LeadSigner
from protocols.values import ModelKind, PermissionMode
from swarm.backends.base import SpawnError
from swarm.backends.stub import StubBackend
from swarm.errors import SwarmError
from swarm.team.lifecycle import request_shutdown, spawn_member
from swarm.team.members import member_spec
from teammate.options import MemberSpec, UsageError, command_line, parse
from teammate.permissions.policy import rule_or_command_pattern

words = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1
)


def usable(text: str) -> bool:
    """An --ask text the command line accepts (a blank one is a usage error, tested below)."""
    try:
        rule_or_command_pattern(text)
    except ValueError:
        return False
    return True


specs = st.builds(
    MemberSpec,
    model=st.sampled_from(["shell", "sonnet", "claude-opus-4-1", "haiku"]),
    agent_type=st.none() | st.sampled_from(["general-purpose", "Explore", "reviewer"]),
    permission_mode=st.none() | st.sampled_from(list(PermissionMode)),
    plan_mode_required=st.booleans(),
    max_turns=st.none() | st.integers(1, 500),
    settings=st.none() | words.map(lambda w: "/s/" + w),
    mcp_config=st.none() | words.map(lambda w: "/m/" + w),
    agents=st.none() | st.just('{"x": {"description": "d", "prompt": "p"}}'),
    ask=st.lists((words | words.map(lambda w: "-" + w)).filter(usable), max_size=3).map(tuple),
    task_timeout_s=st.sampled_from([600.0, 0.5, 30.0]),
    permission_timeout_s=st.sampled_from([900.0, 2.0]),
    resume=st.booleans(),
    effort=st.none() | st.sampled_from(["low", "medium", "high", "xhigh", "max"]),
    restricted=st.booleans(),
    max_cost=st.none() | st.floats(0.001, 1000, allow_nan=False),
    max_tokens=st.none() | st.integers(1, 10**9),
    max_time=st.none() | st.floats(0.5, 10**7, allow_nan=False),
).filter(lambda spec: not ((spec.resume or spec.restricted) and spec.model == "shell"))


@given(specs)
def test_a_spec_round_trips_through_the_teammate_command_line(spec: MemberSpec) -> None:
    if spec.model == "shell":  # a shell worker has no budget (refused: tested in test_budget)
        spec = dataclasses.replace(spec, max_cost=None, max_tokens=None, max_time=None)
    argv = command_line(["prog"], spec, name="alice", team="t", color="red")
    options = parse(argv[1:])
    assert options.spec == spec
    assert (options.agent_name, options.team_name, options.color) == ("alice", "t", "red")


def test_claude_code_2_1_330s_teammate_command_line_parses() -> None:
    """What a Claude Code 2.1.330 lead runs for a pane teammate (its spawn code, spec
    section 9): the key, the new permission modes, --effort, an inline --mcp-config JSON,
    --restricted, and flags swarm has never heard of."""
    key = LeadSigner.generate().verify_key(ms=1795551673208)
    for mode in ("acceptEdits", "auto", "default", "bubble"):
        argv = [
            "--agent-id", "alice@session-1a2b3c4d", "--agent-name", "alice",
            "--team-name", "session-1a2b3c4d", "--agent-color", "blue",
            "--parent-session-id", "1a2b3c4d-0000-4000-8000-000000000000",
            "--lead-verify-key", key, "--plan-mode-required", "--agent-type", "general-purpose",
            "--permission-mode", mode, "--effort", "xhigh",
            "--mcp-config", '{"mcpServers":{}}', "--restricted",
            "--hold-repository-while-parked", "--future-flag", "value",
            "--model", "claude-sonnet-4-5",
        ]  # fmt: skip
        options = parse(argv)
        assert options.lead_verify_key == key
        assert options.spec.permission_mode == mode
        assert (options.spec.effort, options.spec.restricted) == ("xhigh", True)
        assert options.spec.mcp_config == '{"mcpServers":{}}'
        assert options.spec.model == "claude-sonnet-4-5" and options.spec.plan_mode_required
        assert "--future-flag" in options.ignored
    # an effort Claude Code does not know is ignored with a warning, as Claude Code does
    assert parse([*argv[:-2], "--effort", "extreme", "--model", "opus"]).spec.effort is None
    with pytest.raises(UsageError, match="--lead-verify-key"):
        parse(["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t",
               "--lead-verify-key", "12.not-a-key", "--model", "opus"])  # fmt: skip
    with pytest.raises(UsageError, match="--restricted"):
        parse(["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t", "--restricted"])


def test_the_lead_verify_key_goes_after_the_parent_session_as_claude_code_puts_it() -> None:
    argv = command_line(
        ["claude"], MemberSpec(model="opus"), name="a", team="t",
        parent_session_id="p", lead_verify_key="1.k",
    )  # fmt: skip
    assert argv[argv.index("--parent-session-id") + 2 :][:2] == ["--lead-verify-key", "1.k"]


def test_a_scripted_spec_round_trips_and_the_json_value_too() -> None:
    spec = MemberSpec(model="scripted", script="/x/turns.yaml", max_turns=3, backend="tmux")
    assert parse(command_line(["p"], spec, name="a", team="t")[1:]).spec == spec.process_part()
    assert MemberSpec.from_value(spec.to_value()) == spec
    assert MemberSpec.from_value({"model": "shell", "permission_mode": "yolo"}) is None
    assert MemberSpec.from_value("not a spec") is None
    assert MemberSpec.from_value({"ask": [1, "$(rm -rf /)"]}) is None
    assert spec.kind is ModelKind.SCRIPTED and ModelKind.of("opus") is ModelKind.CLAUDE


def test_a_spawn_records_its_spec_and_starts_the_command_line_it_says(
    paths: TeamPaths, tmp_path: Path
) -> None:
    TeamFile(paths).create(cwd=tmp_path)
    stub = StubBackend()
    spec = MemberSpec(
        permission_mode=PermissionMode.ACCEPT_EDITS,
        ask=("git push*",),
        task_timeout_s=30.0,
        cwd=str(tmp_path),
    )
    member, spawned = spawn_member(paths, "alice", "Do it.", spec, backend=stub, wait_s=0)
    (request,) = stub.requests
    options = parse(request.argv[3:])  # after: python -m teammate
    assert request.argv[1:3] == ["-m", "teammate"]
    assert options.spec == dataclasses.replace(spec, agent_type="general-purpose").process_part()
    recorded = member_spec(TeamFile(paths).load().member("alice"))  # type: ignore[arg-type]
    assert recorded == dataclasses.replace(spec, agent_type=None, model="shell")
    assert member.mode == "acceptEdits" and spawned.backend_type == "stub"
    assert [e.text for e in Mailbox(paths).peek_all("alice")] == ["Do it."]
    result = request_shutdown(paths, "alice", "done", wait_s=0, force=True)
    assert result.stopped and TeamFile(paths).load().member("alice") is None


def test_a_spawn_that_fails_leaves_no_member_and_a_bad_spec_is_refused_first(
    paths: TeamPaths, tmp_path: Path
) -> None:
    TeamFile(paths).create(cwd=tmp_path)
    stub = StubBackend(fail_with="no such terminal")
    with pytest.raises(SpawnError, match="no such terminal"):
        spawn_member(paths, "bob", "x", MemberSpec(cwd=str(tmp_path)), backend=stub, wait_s=0)
    assert TeamFile(paths).load().member("bob") is None
    with pytest.raises(SwarmError, match="needs --script FILE"):
        spawn_member(paths, "bob", "x", MemberSpec(model="scripted"), backend=stub)
    with pytest.raises(SwarmError, match="belong to swarm's own teammate"):
        foreign = MemberSpec(model="sonnet", max_turns=2, teammate_command=sys.executable)
        spawn_member(paths, "bob", "x", foreign, backend=stub)
    assert stub.requests == [] and TeamFile(paths).load().member("bob") is None


@pytest.mark.parametrize("bad", ["", "   ", "Bash()", "Bash( )", "--"])
def test_a_bad_ask_rule_is_a_clear_usage_error_on_both_sides(
    bad: str, paths: TeamPaths, tmp_path: Path
) -> None:
    """A rule that cannot be used is refused where it is given: the teammate's command line
    (exit 2, not a traceback) and the spawn, before anything is made."""
    with pytest.raises(UsageError, match="--ask"):
        parse(["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t", f"--ask={bad}"])
    TeamFile(paths).create(cwd=tmp_path)
    stub = StubBackend()
    with pytest.raises(SwarmError, match="--ask"):
        spawn_member(paths, "a", "x", MemberSpec(ask=(bad,), cwd=str(tmp_path)), backend=stub)
    assert stub.requests == [] and TeamFile(paths).load().member("a") is None


def test_restricted_and_effort_shape_a_claude_teammate(paths: TeamPaths, tmp_path: Path) -> None:
    """--restricted: no Bash, file tools kept in the working directory, no user settings file;
    --effort: the extended-thinking budget. And no teammate's file tools reach the lead's key."""
    from teammate.cli import build_brain
    from teammate.reporter import StatusReporter

    script = tmp_path / "turns.yaml"
    script.write_text("- text: hi\n")
    (paths.root / "settings.json").write_text('{"permissions": {"allow": ["Bash(make *)"]}}')
    base = ["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t", "--model", "scripted"]

    def brain(*flags: str) -> Any:
        options = parse([*base, "--script", str(script), *flags])
        return build_brain(options, paths, StatusReporter(None, "a", "scripted"), print)

    restricted = brain("--restricted", "--effort", "max")
    assert "Bash" not in restricted.loop.tools and "Read" in restricted.loop.tools
    assert restricted.policy.confined and restricted.loop.settings.thinking == {
        "type": "enabled",
        "budget_tokens": 48_000,
    }
    assert not restricted.policy.rules("allow")  # the user's settings file was not read
    usual = brain()
    assert "Bash" in usual.loop.tools and not usual.policy.confined
    assert usual.loop.settings.thinking is None and usual.policy.rules("allow")
    key = str(paths.lead_key)
    decision = usual.policy.decide("Read", "read", {"file_path": key})
    assert decision.behavior == "deny"
    restricted.stop()
    usual.stop()


def test_a_shell_teammate_starts_without_the_claude_brains_modules(paths: TeamPaths) -> None:
    """A shell teammate never loads the agent loop, its tools, the MCP client or the SDK (each
    start would pay ~75 ms for them); a Claude one does, through the same function."""
    code = """if True:
        import sys
        from protocols.paths import config_root
        from protocols.store.selection import locate
        from teammate.cli import build_brain
        from teammate.options import parse
        from teammate.reporter import StatusReporter

        paths = locate("t", config_root(), None)
        options = parse(["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t",
                         "--model", sys.argv[1], *sys.argv[2:]])
        brain = build_brain(options, paths, StatusReporter(None, "a", sys.argv[1]), print)
        heavy = ("teammate.brains.claude", "teammate.agent.loop", "teammate.mcp.client", "mcp",
                 "anthropic")
        print(type(brain).__name__, *[name for name in heavy if name in sys.modules])
        brain.stop()
    """
    script = paths.root / "turns.yaml"
    script.write_text("- text: hi\n")

    def loaded(*argv: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert loaded("shell") == "ShellBrain"
    assert loaded("scripted", "--script", str(script)) == (
        "ClaudeBrain teammate.brains.claude teammate.agent.loop teammate.mcp.client"
    )
