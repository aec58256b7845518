"""Agent definitions: built-ins, Markdown files with frontmatter, precedence and error messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from protocols.values import PermissionMode
from teammate.config.definitions import (
    STORED_KEYS,
    VERDICT_LINE,
    AgentDefinition,
    AgentDefinitionError,
    available_agents,
    from_flag_json,
    load_agent,
    parse_agent_file,
    to_flag_json,
)
from teammate.config.settings import SettingsError, load_settings


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    path = tmp_path / "user-agents"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".claude" / "agents").mkdir(parents=True)
    return path


def write(directory: Path, stem: str, text: str) -> Path:
    path = directory / f"{stem}.md"
    path.write_text(text, encoding="utf-8")
    return path


def agent_text(name: str, description: str = "d", body: str = "Prompt.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def test_built_ins_exist(project: Path, user_dir: Path) -> None:
    agents = available_agents(project, user_dir)
    assert {"general-purpose", "Explore", "Plan"} <= set(agents)
    for agent in agents.values():
        assert agent.source == "built-in"
        assert agent.description and agent.system_prompt
    general = agents["general-purpose"]
    assert general.tools is None and general.disallowed_tools == ()
    assert all(general.allows(tool) for tool in ("Read", "Write", "Edit", "Bash", "Agent"))


@pytest.mark.parametrize("name", ["Explore", "Plan"])
def test_read_only_built_ins_refuse_writes(name: str, project: Path, user_dir: Path) -> None:
    agent = load_agent(name, project, user_dir)
    for tool in ("Write", "Edit", "NotebookEdit", "Agent"):
        assert not agent.allows(tool)
    for tool in ("Read", "Grep", "Glob"):
        assert agent.allows(tool)


def test_allows_with_tools_and_disallowed() -> None:
    agent = AgentDefinition("a", "d", "p", tools=("Read", "Bash"), disallowed_tools=("Bash",))
    assert agent.allows("Read")
    assert not agent.allows("Bash")
    assert not agent.allows("Write")


def test_full_file_is_parsed(project: Path, user_dir: Path) -> None:
    path = write(
        project / ".claude" / "agents",
        "reviewer",
        "---\n"
        "name: code-reviewer\n"
        "description: Reviews code\n"
        "tools: Read, Grep,Glob\n"
        "disallowedTools:\n  - Write\n  - Edit\n"
        "model: sonnet\n"
        "permissionMode: acceptEdits\n"
        "maxTurns: 7\n"
        "color: blue\n"
        "isolation: worktree\n"
        "initialPrompt: Start by reading the diff.\n"
        "someFutureKey: whatever\n"
        "---\n\n"
        "You review code.\n\nBe kind.\n\n",
    )
    agent = load_agent("code-reviewer", project, user_dir)
    assert agent == AgentDefinition(
        name="code-reviewer",
        description="Reviews code",
        system_prompt="You review code.\n\nBe kind.",
        tools=("Read", "Grep", "Glob"),
        disallowed_tools=("Write", "Edit"),
        model="sonnet",
        permission_mode="acceptEdits",
        max_turns=7,
        color="blue",
        isolation="worktree",
        initial_prompt="Start by reading the diff.",
        source=str(path),
    )


def test_tools_as_yaml_list_and_defaults(user_dir: Path, project: Path) -> None:
    write(user_dir, "lister", "---\ntools: [Read, Bash]\nmodel: inherit\n---\nBody")
    agent = load_agent("lister", project, user_dir)  # name defaults to the file stem
    assert agent.tools == ("Read", "Bash")
    assert agent.allows("Bash") and not agent.allows("Write")
    assert agent.model is None  # "inherit": the lead's model
    assert agent.description == ""
    assert agent.permission_mode is agent.max_turns is agent.isolation is None


def test_star_tools_means_all(user_dir: Path, project: Path) -> None:
    write(user_dir, "all", "---\ntools: '*'\n---\n")
    assert load_agent("all", project, user_dir).tools is None


def test_precedence_project_over_user_over_built_in(project: Path, user_dir: Path) -> None:
    project_agents = project / ".claude" / "agents"
    user_explore = write(user_dir, "explore", agent_text("Explore", body="user explore"))
    write(user_dir, "shared", agent_text("shared", body="user shared"))
    project_shared = write(project_agents, "shared", agent_text("shared", body="project shared"))
    write(user_dir, "only-user", agent_text("only-user"))

    agents = available_agents(project, user_dir)
    assert agents["Explore"].system_prompt == "user explore"
    assert agents["Explore"].source == str(user_explore)
    assert agents["shared"].system_prompt == "project shared"
    assert agents["shared"].source == str(project_shared)
    assert agents["only-user"].source == str(user_dir / "only-user.md")
    assert agents["Plan"].source == "built-in"
    assert load_agent("shared", project, user_dir).system_prompt == "project shared"


def test_default_directories(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (config_root / "agents").mkdir()
    write(config_root / "agents", "from-user", agent_text("from-user"))
    cwd = tmp_path / "cwd"
    (cwd / ".claude" / "agents").mkdir(parents=True)
    write(cwd / ".claude" / "agents", "from-project", agent_text("from-project"))
    monkeypatch.chdir(cwd)
    agents = available_agents()
    assert {"from-user", "from-project"} <= set(agents)


def test_only_md_files_directly_in_the_directory(user_dir: Path, project: Path) -> None:
    write(user_dir, "good", agent_text("good"))
    (user_dir / "notes.txt").write_text("not an agent")
    (user_dir / "nested").mkdir()
    write(user_dir / "nested", "deep", agent_text("deep"))
    agents = available_agents(project, user_dir)
    assert "good" in agents and "deep" not in agents


def test_unknown_name_lists_available(project: Path, user_dir: Path) -> None:
    write(user_dir, "mine", agent_text("mine"))
    with pytest.raises(AgentDefinitionError) as info:
        load_agent("nope", project, user_dir)
    message = str(info.value)
    assert message.startswith(
        "unknown agent type 'nope'; available: Explore, Plan, general-purpose, mine, verification "
        "(from built-in, "
    )
    assert str(user_dir) in message
    assert str(project / ".claude" / "agents") in message


# (frontmatter text, line of the problem, a fragment of the message)
ERROR_CASES = [
    ("You are an agent.\n", 1, "no YAML frontmatter"),
    ("", 1, "no YAML frontmatter"),
    ("---\nname: x\ndescription: d\n", 1, "unterminated frontmatter"),
    ("---\nname: x\ndescription: ok\n  bad: indent\n---\n", 4, "invalid YAML"),
    ("---\nname: x\n\ndescription: [a, b\ntools: Read\n---\n", 5, "invalid YAML"),
    ("---\nname: x\n\tcolor: tab\n---\n", 3, "invalid YAML"),
    ("---\n- a\n- b\n---\n", 2, "frontmatter must be a mapping"),
    ("---\njust text\n---\n", 2, "frontmatter must be a mapping"),
    (
        "---\nname: x\ndescription: d\nmaxTurns: many\n---\n",
        4,
        "maxTurns must be a positive integer",
    ),
    ("---\nname: x\n\n\nmaxTurns: 0\n---\n", 5, "maxTurns must be a positive integer"),
    ("---\nmaxTurns: -3\n---\n", 2, "maxTurns must be a positive integer"),
    ("---\nname: x\nmaxTurns: true\n---\n", 3, "maxTurns must be a positive integer"),
    ("---\nname: x\nmaxTurns: 2.5\n---\n", 3, "maxTurns must be a positive integer"),
    (
        "---\nname: x\ndescription: d\npermissionMode: yolo\n---\n",
        4,
        ", ".join(PermissionMode.names()),
    ),
    (
        "---\nname: x\nisolation: container\n---\n",
        3,
        "isolation must be one of worktree, got 'container'",
    ),
    ("---\nname: x\ntools: 5\n---\n", 3, "tools must be a comma-separated string or a list"),
    ("---\nname: x\ntools:\n  - Read\n  - 3\n---\n", 3, "tools must be"),
    ("---\nname: x\ndisallowedTools: {Write: yes}\n---\n", 3, "disallowedTools must be"),
    ("---\nname: x\ndescription: 12\n---\n", 3, "description must be a string"),
    ("---\nname: [a]\n---\n", 2, "name must be a string"),
    ("---\nname: ''\n---\n", 2, "name must not be empty"),
    ("---\nname: x\nmodel: 4\n---\n", 3, "model must be a string"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), ERROR_CASES)
def test_errors_name_file_and_line(
    text: str, line: int, fragment: str, project: Path, user_dir: Path
) -> None:
    path = write(user_dir, "bad", text)
    with pytest.raises(AgentDefinitionError) as info:
        parse_agent_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message
    # listing is strict: a malformed file anywhere fails it
    with pytest.raises(AgentDefinitionError, match="^" + re.escape(f"{path}:{line}: ")):
        available_agents(project, user_dir)
    # loading skips it, unless it is the type asked for (named after the file)
    assert load_agent("Explore", project, user_dir).name == "Explore"
    with pytest.raises(AgentDefinitionError, match="^" + re.escape(f"{path}:{line}: ")):
        load_agent("bad", project, user_dir)
    with pytest.raises(AgentDefinitionError, match="skipped as malformed: bad"):
        load_agent("nonexistent", project, user_dir)


def test_malformed_project_file_is_an_error_for_its_own_type_only(
    project: Path, user_dir: Path
) -> None:
    """A teammate never dies of someone else's broken definition (Claude Code skips it too)."""
    path = write(project / ".claude" / "agents", "broken", "---\nmaxTurns: lots\n---\n")
    with pytest.raises(AgentDefinitionError, match="^" + re.escape(f"{path}:2: maxTurns")):
        load_agent("broken", project, user_dir)
    assert load_agent("general-purpose", project, user_dir).name == "general-purpose"


def test_crlf_and_bom_files(user_dir: Path, project: Path) -> None:
    path = user_dir / "win.md"
    path.write_bytes("\ufeff---\r\nname: win\r\ntools: Read\r\n---\r\nBody\r\n".encode())
    agent = load_agent("win", project, user_dir)
    assert agent.tools == ("Read",) and agent.system_prompt == "Body"


def test_undecodable_file(user_dir: Path) -> None:
    path = user_dir / "binary.md"
    path.write_bytes(b"---\nname: \xff\xfe\n---\n")
    with pytest.raises(AgentDefinitionError, match="^" + re.escape(f"{path}:1: cannot read")):
        parse_agent_file(path)


def test_duplicate_name_in_one_directory(user_dir: Path, project: Path) -> None:
    write(user_dir, "a", agent_text("same"))
    second = write(user_dir, "b", agent_text("same"))
    with pytest.raises(
        AgentDefinitionError, match="^" + re.escape(f"{second}:1: agent 'same' is already defined")
    ):
        available_agents(project, user_dir)


EVERY_FIELD = (
    "---\n"
    "name: full\n"
    "description: Has every field\n"
    "tools: [Read, 'Bash(npm test:*)']\n"
    "disallowedTools: Write\n"
    "model: opus\n"
    "permissionMode: bubble\n"
    "maxTurns: 3\n"
    "background: true\n"
    "isolation: worktree\n"
    "memory: project\n"
    "mcpServers:\n  - github\n  - local: {command: ./srv, args: [--x]}\n"
    "requiredMcpServers: [github]\n"
    "hooks: {PreToolUse: [{matcher: Bash, hooks: [{type: command, command: ./check}]}]}\n"
    "skills: [deploy]\n"
    "initialPrompt: Look first.\n"
    "effort: high\n"
    "color: green\n"
    "---\nBody.\n"
)


def test_a_definition_with_every_field_keeps_each_and_survives_the_flag_json(
    user_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(user_dir, "full", EVERY_FIELD)
    agent = parse_agent_file(path)
    assert (agent.model, agent.permission_mode, agent.max_turns) == ("opus", "bubble", 3)
    assert agent.background and agent.effort == "high" and agent.color == "green"
    assert agent.memory == "project" and agent.skills == ("deploy",)
    assert agent.mcp_servers == ("github", {"local": {"command": "./srv", "args": ["--x"]}})
    assert agent.required_mcp_servers == ("github",)
    assert agent.hooks is not None and "PreToolUse" in agent.hooks
    assert agent.tools == ("Read", "Bash(npm test:*)") and agent.disallowed_tools == ("Write",)
    kept = [r.getMessage() for r in caplog.records if "does not act on it yet" in r.getMessage()]
    # what swarm does not act on yet, said once each (memory, skills, hooks, MCP are acted on)
    assert sorted(k.split("'")[1] for k in kept) == sorted(STORED_KEYS)
    assert not {"memory", "skills", "hooks", "mcpServers", "requiredMcpServers"} & STORED_KEYS
    (again,) = from_flag_json(to_flag_json(agent)).values()
    assert again == AgentDefinition(**{**agent.__dict__, "source": "--agents[full]"})


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("background: yes please", "background must be true or false"),
        ("effort: extreme", "effort must be one of low, medium, high"),
        ("memory: team", "memory must be one of user, project, local"),
        ("hooks: [a]", "hooks must be a mapping"),
        ("mcpServers: [3]", "mcpServers must list server names"),
    ],
)
def test_a_bad_value_of_a_new_field_names_file_line_and_what_is_allowed(
    user_dir: Path, line: str, problem: str
) -> None:
    path = write(user_dir, "bad", f"---\nname: bad\ndescription: d\n{line}\n---\nBody.\n")
    with pytest.raises(AgentDefinitionError, match=re.escape(f"{path}:4: {problem}")):
        parse_agent_file(path)


def test_settings_agents_win_over_the_flag_which_wins_over_files(
    project: Path, user_dir: Path, tmp_path: Path
) -> None:
    write(project / ".claude" / "agents", "r", agent_text("reviewer", body="From the project."))
    flag = from_flag_json('{"reviewer": {"description": "d", "prompt": "From the flag."}}')
    assert load_agent("reviewer", project, user_dir, flag=flag).system_prompt == "From the flag."
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(
        '{"agents": {"reviewer": {"description": "d", "prompt": "From settings.", "model": "haiku"}}}'
    )
    settings = load_settings(settings_file)
    found = load_agent("reviewer", project, user_dir, flag=flag, settings=settings.agents)
    assert (found.system_prompt, found.model) == ("From settings.", "haiku")
    settings_file.write_text('{"agents": {"reviewer": {"description": "d", "maxTurns": 0}}}')
    with pytest.raises(
        SettingsError,
        match=r"settings.json: agents\[reviewer\]:\d+: maxTurns must be a positive integer",
    ):
        load_settings(settings_file)


def test_the_verification_built_in_runs_in_the_background_and_cannot_edit_the_project(
    project: Path, user_dir: Path
) -> None:
    agent = load_agent("verification", project, user_dir)
    assert agent.background and "VERDICT: PASS" in agent.system_prompt
    assert "Write(./**)" in agent.disallowed_tools and "Edit(./**)" in agent.disallowed_tools
    assert VERDICT_LINE.search("All checks ran.\nVERDICT: PARTIAL\n")
