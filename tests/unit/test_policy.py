"""Permission policy: modes x tool kinds, Claude Code rule syntax, compound Bash, updates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.values import PermissionMode
from teammate.permissions.command_split import split_command
from teammate.permissions.policy import KINDS, PLAN_MODE_DENIAL, PermissionPolicy, Rule, parse_rule

CWD = Path("/work/project")


def policy(mode: str = "default", **rules: list[str]) -> PermissionPolicy:
    return PermissionPolicy(
        mode,
        CWD,
        allow=map(parse_rule, rules.get("allow", [])),
        deny=map(parse_rule, rules.get("deny", [])),
        ask=map(parse_rule, rules.get("ask", [])),
    )


def bash(p: PermissionPolicy, command: str) -> str:
    return p.decide("Bash", "execute", {"command": command}).behavior


def edit(p: PermissionPolicy, path: str | Path, tool: str = "Edit") -> str:
    return p.decide(tool, "edit", {"file_path": str(path)}).behavior


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "read": ("Read", {"file_path": str(CWD / "README.md")}),
    "edit": ("Edit", {"file_path": str(CWD / "src" / "a.py")}),
    "execute": ("Bash", {"command": "make"}),
    "team": ("SendMessage", {"to": "team-lead", "message": "hi"}),
    "web": ("WebFetch", {"url": "https://example.com/", "prompt": "summary"}),
}
EXPECTED = {  # mode -> behavior for read, edit, execute, team, web (no rules)
    "default": ("allow", "ask", "ask", "allow", "ask"),
    "acceptEdits": ("allow", "allow", "ask", "allow", "ask"),
    "plan": ("allow", "deny", "deny", "allow", "ask"),
    "bypassPermissions": ("allow", "allow", "allow", "allow", "allow"),
    "dontAsk": ("allow", "deny", "deny", "allow", "deny"),
    # the policy's own decision: in auto mode the agent loop then puts an ask to the judge
    "auto": ("allow", "ask", "ask", "allow", "ask"),
    "bubble": ("allow", "ask", "ask", "allow", "ask"),  # a teammate's parent is the lead
}


@pytest.mark.parametrize(
    ("mode", "kind", "expected"),
    [(mode, kind, row[i]) for mode, row in EXPECTED.items() for i, kind in enumerate(KINDS)],
)
def test_mode_by_kind(mode: str, kind: str, expected: str) -> None:
    tool, tool_input = CALLS[kind]
    decision = policy(mode).decide(tool, kind, tool_input)
    assert decision.behavior == expected
    assert decision.reason


def test_every_mode_is_in_the_table() -> None:
    assert set(EXPECTED) == set(PermissionMode.names())


def test_plan_mode_reason() -> None:
    decision = policy("plan", allow=["Bash"]).decide("Bash", "execute", {"command": "ls"})
    assert decision.behavior == "deny"
    assert decision.reason == PLAN_MODE_DENIAL
    exit_plan = policy("plan").decide("ExitPlanMode", "team", {})
    assert exit_plan.behavior == "allow"


def test_dont_ask_denies_what_would_ask() -> None:
    decision = policy("dontAsk").decide("Bash", "execute", {"command": "make"})
    assert decision.behavior == "deny"
    assert decision.reason.startswith("dontAsk mode: Bash would need approval")
    assert bash(policy("dontAsk", allow=["Bash(make)"]), "make") == "allow"


def test_deny_beats_bypass() -> None:
    p = policy("bypassPermissions", deny=["Bash(rm:*)", "Edit(secrets/**)"])
    assert bash(p, "rm -rf build") == "deny"
    assert "Bash(rm:*)" in p.decide("Bash", "execute", {"command": "rm x"}).reason
    assert bash(p, "ls") == "allow"
    assert edit(p, CWD / "secrets" / "key") == "deny"
    assert edit(p, CWD / "src" / "a.py") == "allow"


def test_deny_beats_allow() -> None:
    assert bash(policy(allow=["Bash"], deny=["Bash(git push:*)"]), "git push origin") == "deny"


@pytest.mark.parametrize(
    ("rule", "command", "matched"),
    [
        ("Bash(npm test:*)", "npm test", True),
        ("Bash(npm test:*)", "npm test --watch", True),
        ("Bash(npm test:*)", "  npm   test  -k x ", True),
        ("Bash(npm test:*)", "npm testing", False),
        ("Bash(npm test:*)", "npm", False),
        ("Bash(npm test:*)", "pnpm test", False),
        ("Bash(git status)", "git status", True),
        ("Bash(git status)", "git  status ", True),
        ("Bash(git status)", "git status -s", False),
        ("Bash(git * main)", "git push origin main", True),
        ("Bash(git * main)", "git push origin dev", False),
        ("Bash(ls *)", "ls", True),
        ("Bash(ls *)", "ls -la", True),
        ("Bash", "anything at all", True),
        ("Bash(*)", "anything at all", True),
    ],
)
def test_bash_rule_matching(rule: str, command: str, matched: bool) -> None:
    assert bash(policy(allow=[rule]), command) == ("allow" if matched else "ask")


@pytest.mark.parametrize(
    "command",
    [
        "npm test && rm -rf /",
        "npm test || rm -rf /",
        "npm test; rm -rf /",
        "npm test | rm -rf /",
        "npm test & rm -rf /",
        "npm test\nrm -rf /",
        "npm test $(rm -rf /)",
        "npm test `rm -rf /`",
        'npm test "$(rm -rf /)"',
        "(rm -rf /)",
        "{ rm -rf /; }",
        "echo 'a\\' && rm -rf /",
    ],
)
def test_compound_commands(command: str) -> None:
    assert bash(policy(allow=["Bash(npm test:*)", "Bash(echo:*)"]), command) == "ask"
    assert bash(policy(allow=["Bash(npm test:*)"], deny=["Bash(rm:*)"]), command) == "deny"
    assert bash(policy(ask=["Bash(rm:*)"], allow=["Bash"]), command) == "ask"


def test_compound_allowed_when_every_part_is() -> None:
    p = policy(allow=["Bash(npm test:*)", "Bash(git status)"])
    assert bash(p, "npm test && git status") == "allow"
    assert bash(p, "npm test 2>&1 | npm test -- -q") == "allow"
    reason = p.decide("Bash", "execute", {"command": "npm test; git status"}).reason
    assert "Bash(npm test:*)" in reason and "Bash(git status)" in reason
    assert bash(p, "") == "ask"


def test_quoted_separators_do_not_split() -> None:
    p = policy(allow=["Bash(git commit:*)"], deny=["Bash(rm:*)"])
    assert bash(p, "git commit -m 'fix && rm -rf /'") == "allow"
    assert bash(p, 'git commit -m "a; b | c"') == "allow"


def test_split_command() -> None:
    assert split_command("a && b || c; d | e & f\ng") == list("abcdefg")
    assert split_command("make 2>&1 >out &>err") == ["make 2>&1 >out &>err"]
    assert split_command("echo $(date) done") == ["date", "echo $(date) done"]
    assert split_command("echo 'x; y' \"$(id)\"") == ["id", "echo 'x; y' \"$(id)\""]
    assert split_command("  ") == []


@pytest.mark.parametrize("tool", ["Edit", "Write", "MultiEdit", "NotebookEdit"])
def test_edit_rule_covers_file_editing_tools(tool: str) -> None:
    p = policy(allow=["Edit(src/**)"])
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    assert p.decide(tool, "edit", {key: str(CWD / "src/a/b.py")}).behavior == "allow"
    assert p.decide(tool, "edit", {key: str(CWD / "other/x.py")}).behavior == "ask"


def test_edit_rule_paths() -> None:
    p = policy(allow=["Edit(src/**)"])
    assert edit(p, "src/a/b.py") == "allow"  # relative to cwd
    assert edit(p, CWD / "src/../other/x.py") == "ask"
    assert edit(p, CWD / "lib/src/x.py") == "ask"  # "src/**" is anchored at the project
    assert edit(p, "/elsewhere/src/x.py") == "ask"


def test_write_rule_is_only_for_write() -> None:
    p = policy(allow=["Write(//tmp/out/**)"])
    assert edit(p, "/tmp/out/a.txt", tool="Write") == "allow"
    assert edit(p, "/tmp/out/a.txt", tool="Edit") == "ask"


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        ("//etc/**", "/etc/passwd", True),
        ("//etc/**", str(CWD / "etc/passwd"), False),
        ("/etc/**", str(CWD / "etc/passwd"), True),  # "/" is the project root
        ("/etc/**", "/etc/passwd", False),
        (f"{CWD}/**", str(CWD / "x.py"), True),  # absolute inside the project, as CC writes it
        ("./docs/*.md", str(CWD / "docs/a.md"), True),
        ("./docs/*.md", str(CWD / "docs/sub/a.md"), False),
        ("docs/*.md", str(CWD / "docs/a.md"), True),
        ("*.env", str(CWD / ".env"), True),
        ("*.env", str(CWD / "deep/er/prod.env"), True),  # a bare name matches at any depth
        ("./*.env", str(CWD / "deep/prod.env"), False),
        ("secrets", str(CWD / "a/secrets/key"), True),  # a matched directory covers its files
        ("src/**/*.ts", str(CWD / "src/a.ts"), True),
        ("src/**/*.ts", str(CWD / "src/a/b/c.ts"), True),
        ("src/**/*.ts", str(CWD / "src/a/b/c.js"), False),
        ("src/[ab].py", str(CWD / "src/b.py"), True),
        ("src/[!ab].py", str(CWD / "src/b.py"), False),
        ("src/?.py", str(CWD / "src/c.py"), True),
    ],
)
def test_read_path_patterns(pattern: str, path: str, matched: bool) -> None:
    p = policy(deny=[f"Read({pattern})"])
    assert p.decide("Read", "read", {"file_path": path}).behavior == (
        "deny" if matched else "allow"
    )


def test_home_pattern(tmp_path: Path) -> None:
    p = policy(deny=["Read(~/.ssh/**)"])
    key = Path.home() / ".ssh" / "id_ed25519"
    assert p.decide("Read", "read", {"file_path": str(key)}).behavior == "deny"
    assert p.decide("Read", "read", {"file_path": "~/.ssh/config"}).behavior == "deny"
    assert p.decide("Read", "read", {"file_path": str(tmp_path / "x")}).behavior == "allow"


@pytest.mark.parametrize("tool", ["Glob", "Grep"])
def test_read_rules_cover_glob_and_grep(tool: str) -> None:
    p = policy(deny=["Read(secrets/**)"])
    assert p.decide(tool, "read", {"pattern": "*", "path": str(CWD / "secrets")}).behavior == "deny"
    assert p.decide(tool, "read", {"pattern": "*", "path": "src"}).behavior == "allow"
    assert policy(deny=["Read"]).decide(tool, "read", {"pattern": "*"}).behavior == "deny"


def test_symlink_out_of_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "src" / "link").symlink_to(outside)
    p = PermissionPolicy("acceptEdits", project, allow=[parse_rule("Edit(src/**)")])
    assert edit(p, project / "src" / "a.py") == "allow"
    assert edit(p, project / "src" / "link" / "x.py") == "ask"


def test_accept_edits_only_inside_cwd() -> None:
    p = policy("acceptEdits")
    assert edit(p, CWD / "a" / "b.py") == "allow"
    assert edit(p, "relative.py") == "allow"
    outside = p.decide("Write", "edit", {"file_path": "/etc/hosts"})
    assert outside.behavior == "ask"
    assert "outside the working directory" in outside.reason
    assert edit(p, CWD / ".." / "sibling" / "x.py") == "ask"
    assert p.decide("Edit", "edit", {}).behavior == "ask"
    assert bash(p, "make") == "ask"


def test_ask_rule_asks_even_when_allowed() -> None:
    p = policy(allow=["Bash"], ask=["Bash(git push:*)"])
    assert bash(p, "git push") == "ask"
    assert bash(p, "git status") == "allow"
    assert (
        policy(ask=["Read(.env)"]).decide("Read", "read", {"file_path": ".env"}).behavior == "ask"
    )
    bypass = policy("bypassPermissions", ask=["Bash"])
    assert bash(bypass, "ls") == "allow"


def test_other_rule_kinds() -> None:
    p = policy(allow=["WebFetch(domain:example.com)", "mcp__github"])
    fetch = {"url": "https://example.com/x"}
    assert p.decide("WebFetch", "web", fetch).behavior == "allow"
    # that host alone, as Claude Code: a subdomain needs domain:*.example.com
    sub = {"url": "https://docs.example.com/x"}
    assert p.decide("WebFetch", "web", sub).behavior == "ask"
    assert p.decide("WebFetch", "web", {"url": "https://evil.com"}).behavior == "ask"
    assert p.decide("mcp__github__create_pr", "execute", {}).behavior == "allow"
    assert p.decide("mcp__gitlab__create_pr", "execute", {}).behavior == "ask"


def test_add_rules_and_mode() -> None:
    p = policy()
    assert bash(p, "npm test") == "ask"
    p.add_rules(["Bash(npm test:*)", {"toolName": "Edit"}], "allow")
    p.add_rules([Rule("Bash", "npm test:*")], "allow")  # duplicates are dropped
    assert p.rules("allow") == (Rule("Bash", "npm test:*"), Rule("Edit"))
    assert bash(p, "npm test") == "allow"
    assert edit(p, "/anywhere.py") == "allow"
    p.add_rules(["Bash(npm test -- --update:*)"], "deny")
    assert bash(p, "npm test -- --update") == "deny"
    p.mode = "plan"
    assert bash(p, "npm test") == "deny"
    with pytest.raises(ValueError, match="unknown permission mode"):
        p.mode = "yolo"
    with pytest.raises(ValueError, match="unknown rule behavior"):
        p.add_rules(["Bash"], "maybe")
    with pytest.raises(ValueError, match="unknown tool kind"):
        p.decide("Bash", "dangerous", {})
    with pytest.raises(ValueError, match="unknown permission mode"):
        PermissionPolicy("autopilot", CWD)  # (auto is Claude Code's, and known)


def test_apply_updates() -> None:
    p = policy()
    p.apply_updates(
        [
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
                "behavior": "allow",
                "destination": "session",
            },
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "rm:*"}],
                "behavior": "deny",
            },
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "git push:*"}],
                "behavior": "ask",
            },
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
            {"type": "addDirectories", "directories": ["/x"], "destination": "session"},
        ]
    )
    assert p.mode == "acceptEdits"
    assert bash(p, "npm test") == "allow"
    assert bash(p, "rm x") == "deny"
    assert bash(p, "git push") == "ask"
    p.apply_updates(
        [
            {
                "type": "removeRules",
                "rules": [{"toolName": "Bash", "ruleContent": "rm:*"}],
                "behavior": "deny",
            }
        ]
    )
    assert p.rules("deny") == ()
    p.apply_updates(
        [{"type": "replaceRules", "rules": [{"toolName": "Read"}], "behavior": "allow"}]
    )
    assert p.rules("allow") == (Rule("Read"),)


def test_team_permission_update_from_claude_code() -> None:
    """The update of the Claude Code 2.1.88 sample: an absolute path inside the project."""
    p = PermissionPolicy("default", Path("/home/user/project"))
    update = {
        "type": "addRules",
        "rules": [{"toolName": "Edit", "ruleContent": "/home/user/project/**"}],
        "behavior": "allow",
        "destination": "session",
    }
    p.apply_updates([update])
    assert edit(p, "/home/user/project/src/main.py") == "allow"
    assert edit(p, "/home/user/other/main.py") == "ask"


@pytest.mark.parametrize(
    "updates",
    [
        [{"type": "setMode", "mode": "yolo"}],
        [{"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "maybe"}],
        [{"type": "addRules", "rules": "Bash", "behavior": "allow"}],
        [{"type": "addRules", "rules": [{"ruleContent": "x"}], "behavior": "allow"}],
        ["setMode"],
    ],
)
def test_bad_updates_change_nothing(updates: list[Any]) -> None:
    p = policy()
    good = {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow"}
    with pytest.raises(ValueError):
        p.apply_updates([good, *updates])
    assert p.rules("allow") == () and p.mode == "default"


def test_suggestions() -> None:
    p = policy(allow=["Bash(git status)"])
    assert p.suggestions("Bash", {"command": "npm test -- -k foo"}) == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]
    compound = p.suggestions("Bash", {"command": "git status && make && make all && ls"})
    assert compound[0]["rules"] == [
        {"toolName": "Bash", "ruleContent": "make:*"},
        {"toolName": "Bash", "ruleContent": "make all:*"},
        {"toolName": "Bash", "ruleContent": "ls:*"},
    ]
    quoted = p.suggestions("Bash", {"command": "echo 'hello world'"})
    assert quoted[0]["rules"] == [{"toolName": "Bash", "ruleContent": "echo 'hello world'"}]
    assert p.suggestions("Bash", {"command": "git status"}) == []
    assert p.suggestions("Bash", {"command": "rm *.o"}) == []
    mode = [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    assert p.suggestions("Edit", {"file_path": "a"}) == mode
    assert p.suggestions("Write", {"file_path": "a"}) == mode
    assert p.suggestions("Read", {"file_path": "a"}) == []


def test_applying_a_suggestion_allows_the_call() -> None:
    p = policy()
    call = {"command": "cargo build --release && cargo test"}
    assert p.decide("Bash", "execute", call).behavior == "ask"
    p.apply_updates(p.suggestions("Bash", call))
    assert p.decide("Bash", "execute", call).behavior == "allow"


def test_rule_values_round_trip() -> None:
    rule = Rule.from_value({"toolName": "Bash", "ruleContent": "npm test:*"})
    assert rule == parse_rule("Bash(npm test:*)")
    assert rule.to_value() == {"toolName": "Bash", "ruleContent": "npm test:*"}
    assert str(rule) == "Bash(npm test:*)"
    assert Rule.from_value({"toolName": "Edit"}).to_value() == {"toolName": "Edit"}
    assert parse_rule("  Read(./docs/*.md) ") == Rule("Read", "./docs/*.md")
    assert parse_rule("Bash(*)") == Rule("Bash")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "Bash(",
        "Bash(npm test",
        "Bash()",
        "Bash( )",
        "Bash(:*)",
        "(ls)",
        "Ba sh",
        "Bash)x(",
    ],
)
def test_malformed_rules(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(text)


@pytest.mark.parametrize(
    "value", [{}, {"toolName": 3}, {"toolName": "Bash", "ruleContent": 5}, "Bash", {"toolName": ""}]
)
def test_malformed_rule_values(value: Any) -> None:
    with pytest.raises(ValueError):
        Rule.from_value(value)


TOOLS = st.sampled_from(["Bash", "Read", "Edit", "Write", "Glob", "SendMessage", "WebFetch"])
INPUTS = st.fixed_dictionaries(
    {},
    optional={
        "command": st.text(max_size=40),
        "file_path": st.text(max_size=40),
        "path": st.text(max_size=20),
    },
)


@given(
    tool=TOOLS,
    mode=st.sampled_from(PermissionMode.names()),
    kind=st.sampled_from(KINDS),
    tool_input=INPUTS,
)
def test_a_deny_rule_on_a_tool_denies_it_in_every_mode(
    tool: str, mode: str, kind: str, tool_input: dict[str, Any]
) -> None:
    p = PermissionPolicy(mode, CWD, allow=[Rule(tool)], deny=[Rule(tool)])
    assert p.decide(tool, kind, tool_input).behavior == "deny"


SAFE = st.sampled_from(["ls", "npm test", "git status", "echo hi", "make -j4"])
SEPARATORS = st.sampled_from([" && ", " || ", "; ", " | ", " & ", "\n"])


@given(
    before=st.lists(st.tuples(SAFE, SEPARATORS), max_size=4),
    after=st.lists(st.tuples(SEPARATORS, SAFE), max_size=4),
    mode=st.sampled_from(PermissionMode.names()),
)
def test_a_denied_command_anywhere_in_a_compound_denies_it(
    before: list[tuple[str, str]], after: list[tuple[str, str]], mode: str
) -> None:
    command = "".join(a + b for a, b in before) + "rm -rf /" + "".join(a + b for a, b in after)
    p = PermissionPolicy(mode, CWD, allow=[Rule("Bash")], deny=[Rule("Bash", "rm:*")])
    assert p.decide("Bash", "execute", {"command": command}).behavior == "deny"
    allowed_only_safe = PermissionPolicy(mode, CWD, allow=[parse_rule("Bash(ls:*)")])
    if mode not in ("bypassPermissions",):
        assert allowed_only_safe.decide("Bash", "execute", {"command": command}).behavior != "allow"


@given(
    tool=TOOLS,
    mode=st.sampled_from(PermissionMode.names()),
    kind=st.sampled_from(KINDS),
    tool_input=INPUTS,
)
def test_decide_never_fails_on_odd_input(
    tool: str, mode: str, kind: str, tool_input: dict[str, Any]
) -> None:
    rules = ["Edit(src/**)", "Read(*.env)", "Bash(npm:*)", "Bash(git * main)", "Write(~/x/**)"]
    p = policy(mode, allow=rules[:3], deny=rules[3:], ask=["Read(//etc/**)"])
    assert p.decide(tool, kind, tool_input).behavior in ("allow", "deny", "ask")
    assert isinstance(p.suggestions(tool, tool_input), list)
