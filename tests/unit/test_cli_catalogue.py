"""`swarm` loads only what a command needs: `--help` lists the commands from the summaries kept in
`swarm.cli.main.COMMANDS` (each must be its command's own short help), and the commands agents
call most (`send`, `inbox`, `task`, `status`) import neither libtmux, rich, anthropic, mcp nor
the lead. Start-up time itself is measured by bench/cli_startup.py, not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from swarm.cli.main import COMMANDS, cli

HEAVY = (
    "libtmux",
    "rich",
    "anthropic",
    "mcp",
    "yaml",
    "swarm.lead",
    "swarm.backends.tmux",
    "teammate.brains",
)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_summary_in_the_catalogue_is_the_commands_own(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert COMMANDS[name][1] == command.get_short_help_str(10_000), (
        f"COMMANDS[{name!r}] in swarm/cli/main.py no longer matches `swarm {name} --help`; "
        "copy its first sentence there"
    )


def test_help_lists_every_command_without_importing_them(tmp_path: Path) -> None:
    loaded = _modules_after(["--help"], tmp_path)
    entry = ("swarm.cli.main", "swarm.cli.quick", "swarm.cli.exits")  # exits: how both end
    assert not [m for m in loaded if m.startswith("swarm.cli.") and m not in entry]
    out = subprocess.run(
        [sys.executable, "-m", "swarm", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name in COMMANDS:
        assert f"  {name} " in out


@pytest.mark.parametrize(
    "argv",
    [
        ["send", "alice", "hello"],
        ["inbox", "alice"],
        ["task", "add", "a task", "--command", "true"],
        ["task", "list"],
        ["status"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_the_everyday_commands_load_nothing_heavy(argv: list[str], tmp_path: Path) -> None:
    loaded = _modules_after(argv, tmp_path)
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == [], f"`swarm {' '.join(argv)}` imported {heavy}"


# what a plain `swarm status` leaves out, each a few ms of its ~90 (bench/dashboard.py): click
# (`swarm.cli.quick` answers it), dataclasses (each class is code compiled at import, ~1 ms;
# its views are NamedTuples) and the inspect it loads, uuid (it loads platform)
NOT_FOR_A_STATUS = ("click", "swarm.cli.main", "dataclasses", "inspect", "uuid")


@pytest.mark.parametrize("argv", [["status"], ["status", "--json"], ["status", "-t", "t"]])
def test_a_plain_status_loads_no_click_and_no_dataclasses(argv: list[str], tmp_path: Path) -> None:
    loaded = _modules_after(argv, tmp_path)
    found = sorted(
        m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_FOR_A_STATUS)
    )
    assert found == [], f"`swarm {' '.join(argv)}` imported {found}"


# what `swarm send` and `swarm task add` leave out besides: the models (pydantic builds them for
# tens of ms), filelock's package (~12 ms; protocols.fs.locks calls fcntl.flock itself) and socket
# (~3 ms: only a send that waits in the spool rings or listens, `protocols.inbox.spool_wake`)
NOT_FOR_A_SEND = ("pydantic", "pydantic_core", "filelock", "protocols.messages.models", "socket")


@pytest.mark.parametrize(
    "argv",
    [
        ["send", "alice", "hello"],
        ["send", "*", "to everyone"],
        ["send", "alice", "-"],
        ["task", "add", "a task"],
        ["task", "add", "a task", "--command", "make test", "-d", "what to do"],
    ],
    ids=["send", "send to everyone", "send stdin", "task add", "task add --command"],
)
def test_send_and_task_add_load_no_model(argv: list[str], tmp_path: Path) -> None:
    loaded = _modules_after(argv, tmp_path)
    found = sorted(
        m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_FOR_A_SEND)
    )
    assert found == [], f"`swarm {' '.join(argv)}` imported {found}"


def _modules_after(argv: list[str], tmp_path: Path) -> list[str]:
    """The modules a `swarm ARGV` process had loaded when it finished (exit status 0), in team
    ``t`` (``$SWARM_TEAM``) of members team-lead and alice."""
    program = (
        "import json, sys\n"
        "from swarm.cli.quick import main\n"  # the `swarm` script's entry point
        f"code = main({argv!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path), "HOME": str(tmp_path)}
    env["SWARM_TEAM"] = "t"
    setup = (
        "from protocols.paths import TeamPaths, config_root; from protocols.team.file import TeamFile; "
        "f = TeamFile(TeamPaths(config_root(), 't')); f.create() if not f.exists() else None; "
        "f.member_names() and None or f.add_member('alice', agent_type='worker')"
    )
    subprocess.run([sys.executable, "-c", setup], env=env, check=True)
    done = subprocess.run(
        [sys.executable, "-c", program],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        input="from standard input",
    )
    code, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == 0, done.stderr
    return list(modules)
