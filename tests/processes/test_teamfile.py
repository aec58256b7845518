"""Team files and `swarm up` / `swarm down`: every validation error names the file, line, key
path and what was expected; `plan_up` resolves defaults, paths and settings; the examples run
to the end with the subprocess backend and `swarm down` leaves nothing; a failed `up` leaves
nothing either."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import swarm, wait_for

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import IdleNotification
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.backends.base import SpawnError
from swarm.team.approvals import pending_requests
from swarm.up import apply as up_module
from swarm.up.apply import UpError, bring_up, plan_up
from swarm.up.spec import TeamFileError, load_team_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "teams"
HEAD = "team: shop\nmembers:\n  - name: alice\n    prompt: Build it.\n"
MODES = "default, acceptEdits, plan, bypassPermissions, dontAsk, auto, bubble"


def write(tmp_path: Path, text: str, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(TeamFileError) as caught:
        load_team_file(path)
    return str(caught.value)


# validation: (team file, "line: key path: expectation" expected in the message)
CASES = [
    ("team: Shop\nmembers: [{name: a, prompt: p}]\n", "1: team: invalid team name 'Shop'"),
    (
        HEAD + "colour: red\n",
        "5: colour: unknown key; expected one of team, description, store, defaults, members, tasks, lead, budget",
    ),
    (
        HEAD + "    colour: red\n",
        "5: members[0].colour: unknown key; expected one of name, prompt, agent_type",
    ),
    (HEAD + "    max_turns: '30'\n", "5: members[0].max_turns: expected an integer, got '30'"),
    (HEAD + "    max_turns: 0\n", "5: members[0].max_turns: expected an integer >= 1, got 0"),
    (
        HEAD + "    plan_mode_required: maybe\n",
        "5: members[0].plan_mode_required: expected true or false, got 'maybe'",
    ),
    (
        HEAD + "    permission_mode: accept\n",
        f"5: members[0].permission_mode: expected one of {MODES}, got 'accept'",
    ),
    (
        HEAD + "    model: sonnet\n    allow: Bash\n",
        "6: members[0].allow: expected a list of permission rules (strings), got 'Bash'",
    ),
    (
        HEAD + "    model: sonnet\n    deny: ['Bash(', 3]\n",
        "6: members[0].deny[0]: malformed permission rule 'Bash('",
    ),
    (
        HEAD + "    model: sonnet\n    deny: ['Bash', 3]\n",
        "6: members[0].deny[1]: expected a string, got 3",
    ),
    (
        HEAD + "    model: two words\n",
        "5: members[0].model: expected shell, scripted, sonnet, opus, haiku or a model id",
    ),
    (
        HEAD + "defaults:\n  backend: docker\n",
        "6: defaults.backend: expected one of auto, tmux, subprocess, got 'docker'",
    ),
    (HEAD + "defaults: [model]\n", "5: defaults: expected a mapping, got a list"),
    (HEAD + "  - name: Al ice\n    prompt: x\n", "5: members[1].name: invalid agent name 'Al ice'"),
    (
        HEAD + "  - name: alice\n    prompt: x\n",
        "5: members[1].name: 'alice' is members[0]'s name; expected another",
    ),
    (
        HEAD + "  - name: team-lead\n    prompt: x\n",
        "5: members[1].name: 'team-lead' is the lead's name",
    ),
    (HEAD + "  - name: bob\n", "5: members[1].prompt: required, but missing"),
    (
        HEAD + "  - name: bob\n    prompt: '  '\n",
        "6: members[1].prompt: expected a non-empty string",
    ),
    ("team: shop\nmembers: []\n", "2: members: expected at least one entry"),
    (
        "team: shop\nmembers: alice\n",
        "2: members: expected a list of members (mappings with name and prompt), got 'alice'",
    ),
    ("members: [{name: a, prompt: p}]\n", "1: team: required, but missing"),
    (HEAD + "    name: bob\n", "5: members[0].name: duplicate key"),
    (HEAD + "    model: scripted\n", "5: members[0].model: model scripted needs script: FILE"),
    (
        HEAD + "    script: missing.yaml\n",
        "5: members[0].script: expected a script file (a YAML list of model turns): no file ",
    ),
    (HEAD + "    script: bad.yaml\n", "5: members[0].script: expected a script file: "),
    (
        HEAD + "    model: sonnet\n    script: good.yaml\n",
        "5: members[0].model: a script plays a scripted model; expected scripted, got 'sonnet'",
    ),
    (HEAD + "    cwd: nowhere\n", "5: members[0].cwd: expected a directory, but "),
    (HEAD + "defaults:\n  cwd: good.yaml\n", "6: defaults.cwd: expected a directory, but "),
    (
        HEAD + "lead:\n  auto_approve: ['Bash()']\n",
        "6: lead.auto_approve[0]: empty rule content in Bash()",
    ),
    (
        HEAD + "lead:\n  auto_deny: Read\n",
        "6: lead.auto_deny: expected a list of permission rules (strings), got 'Read'",
    ),
    (HEAD + "tasks:\n  - description: no subject\n", "6: tasks[0].subject: required, but missing"),
    (
        HEAD + "tasks:\n  - subject: a\n    blocked_by: b\n",
        "7: tasks[0].blocked_by: expected a list of task keys or 1-based positions, got 'b'",
    ),
    (
        HEAD + "tasks:\n  - subject: a\n    blocked_by: [1.5]\n",
        "7: tasks[0].blocked_by[0]: expected a task key or a 1-based position, got 1.5",
    ),
    (
        HEAD + "tasks:\n  - subject: a\n  - subject: b\n    blocked_by: [nope]\n",
        "8: tasks[1].blocked_by[0]: unknown task 'nope'; expected a position 1-2 of another task",
    ),
    (
        HEAD + "tasks:\n  - subject: a\n    key: a\n    blocked_by: [7]\n",
        "8: tasks[0].blocked_by[0]: unknown task 7; expected a key (a) or a position 1-1",
    ),
    (HEAD + "tasks:\n  - subject: a\n    blocked_by: [1]\n", "7: tasks[0].blocked_by[0]: itself"),
    (
        HEAD
        + "tasks:\n  - {subject: a, key: a, blocked_by: [c]}\n  - {subject: b, key: b, blocked_by: [a]}\n  - {subject: c, key: c, blocked_by: [2]}\n",
        "6: tasks[0].blocked_by: dependency cycle: a waits for c waits for b waits for a",
    ),
    (
        HEAD + "tasks:\n  - {subject: a, key: x}\n  - {subject: b, key: x}\n",
        "7: tasks[1].key: 'x' is tasks[0]'s key",
    ),
    (
        HEAD + "tasks:\n  - {subject: a, owner: zed}\n",
        "6: tasks[0].owner: expected a member, got 'zed'",
    ),
    (
        HEAD + "tasks:\n  - {subject: a, owner: alice}\n  - {subject: b, owner: alice}\n",
        "7: tasks[1].owner: 'alice' already owns tasks[0]; expected one task per owner",
    ),
    (HEAD + "tasks:\n  - just a string\n", "6: tasks[0]: expected a mapping, got 'just a string'"),
]


@pytest.mark.parametrize(
    ("text", "expected"), CASES, ids=[c[1].split(":")[1].strip() for c in CASES]
)
def test_each_problem_names_the_file_line_key_path_and_what_was_expected(
    tmp_path: Path, text: str, expected: str
) -> None:
    write(tmp_path, "- text: hi\n", "good.yaml")
    write(tmp_path, "- {tool: Write, inpt: {}}\n", "bad.yaml")
    path = write(tmp_path, text)
    assert f"{path}:{expected}" in error_of(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "team: shop\ndescription: a: b\n",
            ":2:15: not valid YAML: mapping values are not allowed here",
        ),
        (
            "team: shop\nmembers:\n  - name: a\n   prompt: p\n",
            ":4:4: not valid YAML: expected <block end>, but found '<block mapping start>' "
            "(while parsing a block collection from line 3)",
        ),
        ("team: shop\nmembers: [\n", ":3:1: not valid YAML:"),
        (
            "",
            ": expected a mapping with the keys team, description, store, defaults, members, tasks, lead, budget, got an empty file",
        ),
        (
            "- a\n- b\n",
            ": expected a mapping with the keys team, description, store, defaults, members, tasks, lead, budget, got a list",
        ),
    ],
)
def test_a_file_that_is_not_a_yaml_mapping_is_refused_with_its_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    assert error_of(path).startswith(f"{path}{expected}")


def test_all_problems_are_reported_at_once_in_line_order(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + "    permission_mode: x\n    colour: red\ntasks: 5\n")
    lines = error_of(path).splitlines()
    assert [line.split(": ")[0:2] for line in lines] == [
        [f"{path}:5", "members[0].permission_mode"],
        [f"{path}:6", "members[0].colour"],
        [f"{path}:7", "tasks"],
    ]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert error_of(tmp_path / "nope.yaml") == (
        f"cannot read team file {tmp_path / 'nope.yaml'}: No such file or directory"
    )


def test_plan_up_applies_defaults_resolves_paths_and_builds_settings(tmp_path: Path) -> None:
    (tmp_path / "work" / "api").mkdir(parents=True)
    (tmp_path / "scripts").mkdir()
    write(tmp_path, "- text: hi\n", "scripts/bob.yaml")
    path = write(
        tmp_path,
        """\
team: shop
description: a shop
defaults: {model: sonnet, backend: subprocess, permission_mode: acceptEdits, cwd: work}
members:
  - name: alice
    prompt: Build it.
    allow: ["Bash(npm test:*)"]
    ask: ["Bash(git push:*)"]
    cwd: work/api
    max_turns: 30
  - name: bob
    prompt: Review it.
    agent_type: Explore
    script: scripts/bob.yaml
    backend: tmux
    permission_mode: plan
    plan_mode_required: true
tasks:
  - {subject: test, command: npm test, blocked_by: [schema, 3]}
  - {subject: schema, key: schema, description: the tables, owner: alice}
  - {subject: docs}
lead: {model: opus, auto_approve: [Read], auto_deny: ["Bash(rm:*)"]}
""",
    )
    plan = plan_up(load_team_file(path))
    alice, bob = plan.members
    assert (plan.team, plan.description, plan.cwd, plan.source) == (
        "shop",
        "a shop",
        tmp_path / "work",
        path,
    )
    assert (alice.spec.model, alice.spec.backend, alice.spec.permission_mode) == (
        "sonnet",
        "subprocess",
        "acceptEdits",
    )
    assert alice.spec.agent_type == "general-purpose"
    assert (alice.spec.cwd, alice.spec.script, alice.spec.max_turns) == (
        str(tmp_path / "work" / "api"),
        None,
        30,
    )
    assert not alice.spec.plan_mode_required
    assert alice.settings == {
        "permissions": {"allow": ["Bash(npm test:*)"], "deny": [], "ask": ["Bash(git push:*)"]}
    }
    assert (bob.spec.model, bob.spec.backend, bob.spec.permission_mode, bob.spec.agent_type) == (
        "scripted",
        "tmux",
        "plan",
        "Explore",
    )
    assert (bob.spec.cwd, bob.spec.script, bob.settings, bob.spec.plan_mode_required) == (
        str(tmp_path / "work"),
        str(tmp_path / "scripts" / "bob.yaml"),
        None,
        True,
    )
    assert [(t.subject, t.blocked_by, t.metadata, t.owner) for t in plan.tasks] == [
        ("test", (1, 2), {"command": "npm test"}, None),
        ("schema", (), None, "alice"),
        ("docs", (), None, None),
    ]
    assert plan.lead == {"model": "opus", "autoApprove": ["Read"], "autoDeny": ["Bash(rm:*)"]}
    members = plan_up(load_team_file(path), backend="auto").members
    assert {m.spec.backend for m in members} == {"auto"}
    assert json.loads(json.dumps(plan.to_json()))["members"][1]["script"] == bob.spec.script


def test_plan_up_defaults_to_shell_workers_in_the_team_files_folder(tmp_path: Path) -> None:
    plan = plan_up(load_team_file(write(tmp_path, HEAD)))
    (alice,) = plan.members
    assert (alice.spec.model, alice.spec.backend, alice.spec.permission_mode) == (
        "shell",
        "auto",
        None,
    )
    assert alice.spec.cwd == str(tmp_path)
    assert (plan.cwd, plan.lead, plan.tasks) == (tmp_path, None, ())


def test_up_runs_the_shell_pipeline_to_the_end_and_down_leaves_nothing(
    config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    team_file = Path(shutil.copy(EXAMPLES / "shell-pipeline.yaml", work))
    result = swarm("up", str(team_file), "--backend", "subprocess", team=None)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # the members first, joining together (said in any order), in the file's colours; then tasks
    assert sorted(line.split(", ")[0] for line in lines[:3]) == [
        "spawned ann (blue",
        "spawned ben (green",
        "spawned cai (yellow",
    ]
    assert lines[3:5] == [
        "task #1: write the numbers 1 to 100",
        "task #2: pick the even numbers (after #1)",
    ]
    assert sum(line.startswith("task #") for line in lines) == 5
    paths = TeamPaths(config_root, "pipeline")
    pids = [m.model_extra["pid"] for m in TeamFile(paths).load().members[1:]]
    board = TaskBoard(paths)
    wait_for(
        lambda: len(board.list()) == 5 and all(t.status == "completed" for t in board.list()),
        "every task completed",
        timeout=60,
    )
    assert (work / "out" / "total.txt").read_text() == "total 5050: ok\n"
    down = swarm("down", str(team_file), "--wait", "10", team=None)  # the file names the team
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines() == [
        "ann: agreed to shut down; stopped",
        "ben: agreed to shut down; stopped",
        "cai: agreed to shut down; stopped",
        "deleted team 'pipeline'",
    ]
    assert not paths.team_dir.exists() and not paths.tasks_dir.exists()
    assert not any(pid_alive(pid) for pid in pids)


PARALLEL = """
team: fan
members:
  - {name: ann, prompt: Work the board.}
  - {name: ben, prompt: Work the board.}
  - {name: cai, prompt: Work the board.}
tasks:
  - {key: start, subject: start, command: "echo go > started"}
  - {subject: left, command: "%(barrier)s", blocked_by: [start]}
  - {subject: right, command: "%(barrier)s", blocked_by: [start]}
"""
# each branch marks itself, then waits (at most 60 s) for the other's mark: it succeeds only
# if the two ran at the same time, by two members
BARRIER = (
    "touch $$.mark; for i in $(seq 600); do [ $(ls *.mark | wc -l) -ge 2 ] && exit 0;"
    " sleep 0.1; done; exit 1"
)


def test_up_starts_the_members_together_so_parallel_branches_run_in_parallel(
    config_root: Path, tmp_path: Path
) -> None:
    (tmp_path / "fan.yaml").write_text(PARALLEL % {"barrier": BARRIER})
    result = swarm("up", str(tmp_path / "fan.yaml"), "--backend", "subprocess", team=None)
    assert result.returncode == 0, result.stderr
    board = TaskBoard(TeamPaths(config_root, "fan"))
    try:
        wait_for(
            lambda: all(t.status == "completed" or t.failed for t in board.list()),
            "every task done",
            timeout=90,
        )
        tasks = {t.subject: t for t in board.list()}
        assert not any(t.failed for t in tasks.values()), [t.metadata for t in tasks.values()]
        assert tasks["left"].owner != tasks["right"].owner
    finally:
        swarm("down", "fan", "--wait", "5", team=None)


def test_up_runs_the_scripted_coders_with_approvals_until_each_member_is_idle(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    work = Path(shutil.copytree(EXAMPLES, tmp_path / "project"))
    result = swarm("up", str(work / "scripted-coders.yaml"), "--backend", "subprocess", team=None)
    assert result.returncode == 0, result.stderr
    paths = TeamPaths(config_root, "scripted-coders")
    tester = json.loads((paths.team_dir / "settings" / "tester.json").read_text())
    assert tester == {
        "permissions": {
            "allow": ["Bash(python3 test_slugify.py)"],
            "deny": ["Edit(slugify.py)"],
            "ask": ["Bash(pip install:*)"],
        }
    }
    lead = json.loads((paths.team_dir / "swarm-lead.json").read_text())
    assert lead["autoDeny"] == ["Bash(rm:*)", "Bash(git push:*)"]
    approved: list[tuple[str, str, str]] = []
    mailbox = Mailbox(paths)

    def idle_reports() -> dict[str, str | None]:
        found = {}
        for entry in mailbox.peek_all(LEAD_NAME):
            message = entry.structured()
            if isinstance(message, IdleNotification):
                found[entry.from_] = message.completedTaskId
        return found

    def approve_and_check() -> bool:
        for request in pending_requests(paths):
            mode = ["--mode", "acceptEdits"] if request.kind == "plan_approval_request" else []
            answer = swarm("approve", request.id, "--team", paths.team, *mode, team=None)
            assert answer.returncode == 0, answer.stderr
            approved.append((request.kind, request.teammate, request.tool))
        return idle_reports() == {"coder": "1", "tester": "2"}

    wait_for(approve_and_check, "both members idle after their tasks", timeout=60)
    # Bash(python3 test_slugify.py) is allowed by the tester's settings: only the write asked
    assert approved == [
        ("plan_approval_request", "coder", "ExitPlanMode"),
        ("permission_request", "tester", "Write"),
    ]
    assert all(t.status == "completed" for t in TaskBoard(paths).list())
    assert TeamFile(paths).load().member("coder").mode == "acceptEdits"
    ran = subprocess.run(
        [sys.executable, "test_slugify.py"], cwd=work, capture_output=True, text=True, timeout=30
    )
    assert ran.stdout == "ok\n", ran.stderr
    down = swarm("down", "scripted-coders", "--wait", "10", team=None)
    assert down.returncode == 0, down.stderr
    assert not paths.team_dir.exists()


def test_dry_run_prints_the_plan_and_starts_nothing(config_root: Path) -> None:
    team_file = str(EXAMPLES / "claude-coders.yaml")
    text = swarm("up", team_file, "--dry-run", team=None)
    assert text.returncode == 0, text.stderr
    assert "(dry run: nothing was started)" in text.stdout
    assert (
        "member coder: general-purpose, model sonnet, backend auto, acceptEdits mode, plan first"
        in text.stdout
    )
    assert "task #2: Write the tests and run them (after #1) [assigned to tester]" in text.stdout
    plan = json.loads(
        swarm("up", team_file, "--dry-run", "--json", "--backend", "tmux", team=None).stdout
    )
    assert [(m["name"], m["backend"]) for m in plan["members"]] == [
        ("coder", "tmux"),
        ("tester", "tmux"),
    ]
    assert plan["tasks"][1]["blocked_by"] == [0]
    misuse = swarm("up", team_file, "--dry-run", "--resume", team=None)
    assert misuse.returncode != 0 and "--dry-run" in misuse.stderr
    assert not (config_root / "teams").exists() and not (config_root / "tasks").exists()


def test_a_bad_team_file_is_one_clear_error_without_a_traceback(
    config_root: Path, tmp_path: Path
) -> None:
    path = write(tmp_path, HEAD + "    permission_mode: sometimes\n")
    result = swarm("up", str(path), team=None)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        f"swarm: error: {path}:5: members[0].permission_mode: expected one of"
    )
    assert not (config_root / "teams").exists()


def test_up_twice_refuses_the_second_time_and_down_stops_a_dead_member_too(
    config_root: Path, tmp_path: Path
) -> None:
    path = write(tmp_path, HEAD + "  - name: bob\n    prompt: Work the board.\n")
    first = swarm("up", str(path), "--backend", "subprocess", team=None)
    assert first.returncode == 0, first.stderr
    paths = TeamPaths(config_root, "shop")
    pids = {m.name: m.model_extra["pid"] for m in TeamFile(paths).load().members[1:]}
    again = swarm("up", str(path), "--backend", "subprocess", team=None)
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"swarm: error: team 'shop' already exists at {paths.team_dir}; run `swarm down shop` "
        "first (it stops its members and deletes it), or rename the team"
    )
    assert TeamFile(paths).load().member_names() == ["team-lead", "alice", "bob"]
    os.kill(pids["bob"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(pids["bob"]), "bob to die")
    down = swarm("down", "shop", "--wait", "10", team=None)
    assert down.stdout.splitlines() == [
        "alice: agreed to shut down; stopped",
        "bob: had already stopped; removed",
        "deleted team 'shop'",
    ]
    assert not paths.team_dir.exists() and not pid_alive(pids["alice"])
    missing = swarm("down", "shop", team=None)
    assert missing.returncode == 1 and "team 'shop' not found" in missing.stderr


def test_a_failing_spawn_stops_the_members_already_started_and_deletes_the_team(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path,
        HEAD + "  - name: bob\n    prompt: x\n    model: sonnet\n    allow: [Read]\n"
        "tasks:\n  - {subject: a, command: 'true'}\nlead: {model: opus}\n",
    )
    started: list[int] = []
    real = up_module.spawn_member

    def spawn_then_fail(*args: object, **kwargs: object) -> object:
        if args[1] == "bob":  # alice is started first
            raise SpawnError("cannot start 'bob': no such terminal")
        member, spawned = real(*args, **kwargs)  # type: ignore[arg-type]
        started.append(spawned.pid)
        return member, spawned

    monkeypatch.setattr(up_module, "spawn_member", spawn_then_fail)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-never-used")
    with pytest.raises(SpawnError, match="no such terminal"):
        bring_up(plan_up(load_team_file(path), backend="subprocess"))
    paths = TeamPaths(config_root, "shop")
    assert len(started) == 1 and not pid_alive(started[0])
    assert not paths.team_dir.exists() and not paths.tasks_dir.exists()


def test_a_member_that_could_not_run_is_refused_before_anything_is_made(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    path = write(tmp_path, HEAD + "  - {name: bob, prompt: x, model: sonnet}\n")
    result = swarm("up", str(path), team=None)
    assert result.returncode == 1
    assert result.stderr.startswith(
        "swarm: error: member 'bob' cannot start: --model sonnet needs ANTHROPIC_API_KEY"
    )
    write(tmp_path, "- text: hi\n", "s.yaml")
    bad = write(tmp_path, HEAD + "  - {name: bob, prompt: x, script: s.yaml, agent_type: Nope}\n")
    with pytest.raises(UpError, match="member 'bob' cannot start: unknown agent type"):
        bring_up(load_team_file(bad))
    assert not (config_root / "teams").exists()


def test_help_teaches_with_an_example() -> None:
    for command in ("up", "down"):
        result = swarm(command, "--help", team=None)
        assert result.returncode == 0 and "Example:" in result.stdout
    assert "blocked_by" in swarm("up", "--help", team=None).stdout


def test_isolation_and_task_worktrees_reach_the_plan(tmp_path: Path) -> None:
    text = (
        "team: shop\nmembers:\n  - name: alice\n    prompt: Build it.\n    isolation: worktree\n"
        "  - name: bob\n    prompt: Help.\n"
        "tasks:\n  - subject: fix\n    command: make fix\n    worktree: user/fix\n"
    )
    plan = plan_up(load_team_file(write(tmp_path, text)))
    assert [m.spec.worktree for m in plan.members] == ["alice", None]
    assert plan.tasks[0].metadata == {"command": "make fix", "worktree": "user/fix"}
    bad = error_of(
        write(
            tmp_path, HEAD.replace("Build it.\n", "Build it.\n    isolation: docker\n"), "bad.yaml"
        )
    )
    assert "members[0].isolation" in bad


def test_a_tasks_for_names_who_may_take_it(tmp_path: Path) -> None:
    text = HEAD + (
        "  - {name: rev, prompt: Review., agent_type: reviewer}\n"
        "tasks:\n"
        "  - {subject: build, command: make, for: shell}\n"
        "  - {subject: review, for: [claude, alice]}\n"
        "  - {subject: ship, for: reviewer}\n"
    )
    plan = plan_up(load_team_file(write(tmp_path, text)))
    assert [t.metadata for t in plan.tasks] == [
        {"command": "make", "for": ["shell"]},
        {"for": ["claude", "alice"]},
        {"for": ["reviewer"]},
    ]
    wrong = HEAD + "tasks:\n  - {subject: a, for: [shell, alcie]}\n"
    said = error_of(write(tmp_path, wrong))
    assert "team.yaml:6: tasks[0].for[1]: " in said and "got 'alcie'" in said, said
    assert "expected one of alice, claude, scripted, shell" in said
