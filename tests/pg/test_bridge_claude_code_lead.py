"""A Claude Code 2.1.330 lead on a bridged host leads a team that spans machines. The lead (the
real program from npm, offline, its model scripted by the local Messages API server) makes its
own session team, ``session-<hex>``; ``swarm bridge --session`` mirrors the PostgreSQL team into
it. A swarm teammate lives under another config root (another machine: its own ``HOME`` and
``CLAUDE_CONFIG_DIR``), on the store only. The lead's message reaches it once, its answer
reaches the lead's model, and the lead's read comes back to the store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import claude_code
import pytest
from claude_code import MODEL, Rule, reacting
from helpers import Processes, claude_env, new_session, screen, wait_for
from messages_api import MessagesAPI, Turn, by_agent
from pg_cli import bridged_claude_code, ok, swarm

from protocols.bridge.session import live_session
from protocols.paths import TeamPaths
from protocols.pg import Database, PgMailbox, PgTeamFile
from protocols.team.file import TeamFile

pytestmark = [pytest.mark.slow, pytest.mark.interop]
START_S = 60.0  # Claude Code's first start in a fresh config root takes a few seconds


def test_a_claude_code_lead_on_a_bridged_host_talks_with_a_teammate_elsewhere(
    conninfo: str, db: Database, tmp_path: Path, config_root: Path, tmux_socket: str
) -> None:
    claude, work, store_url = bridged_claude_code(tmp_path, config_root, conninfo)
    other_root, other_home = tmp_path / "other-root", tmp_path / "other-home"
    other_root.mkdir()
    other_home.mkdir()
    elsewhere = {"CLAUDE_CONFIG_DIR": str(other_root), "HOME": str(other_home)}
    lead_seen: list[str] = []
    # 2.1.330's lead reads its inbox only while a teammate it started itself is in its
    # session (its inbox poller runs only then): so it starts sam here first
    lead_rules: list[Rule] = [
        (
            "Ping bob",
            lambda _: [
                Turn.tool(
                    "Agent",
                    {
                        "name": "sam",
                        "description": "sam stands by",
                        "prompt": "Stand by.",
                        "model": "sonnet",
                    },
                ),
                Turn.tool(
                    "SendMessage",
                    {"to": "bob", "message": "Ping from the lead", "summary": "ping"},
                ),
            ],
        ),
    ]
    bob_rules: list[Rule] = [
        (
            "Ping from the lead",
            lambda _: Turn.tool(
                "SendMessage", {"to": "team-lead", "message": "pong from bob", "summary": "pong"}
            ),
        ),
    ]
    store = PgMailbox(db, "t")
    env = {k: v for k, v in os.environ.items() if k != "SWARM_STORE"}
    env["SWARM_TEAM"] = "t"
    procs = Processes(work)
    scripts = {
        "team-lead": reacting(lead_rules, lead_seen),
        "bob": reacting(bob_rules),
        "sam": reacting([]),
    }
    teammate_command = Path(sys.executable).with_name("swarm-teammate")
    try:
        with MessagesAPI(by_agent(scripts)) as api:
            # bob, a swarm teammate on the other machine: it knows only the store
            spawned = swarm(
                "spawn", "bob", "-p", "Wait for the lead.", "--model", "sonnet",
                "--backend", "subprocess", "--cwd", str(other_home), "--store", store_url,
                cwd=other_home, env={**claude_env(api.url_for("bob")), **elsewhere},
            )  # fmt: skip
            ok(spawned)
            argv = [sys.executable, "-m", "swarm", "bridge", "--member", "team-lead",
                    "--session", "--rescan", "1"]  # fmt: skip
            procs.start(argv, env=env)
            environment = {  # sam, swarm's teammate program, in a tmux pane beside the lead
                "PATH": f"{teammate_command.parent}:{os.environ['PATH']}",
                "CLAUDE_CODE_TEAMMATE_COMMAND": str(teammate_command),
                "HOME": os.environ["HOME"],
                "TERM": "xterm-256color",
                "SHELL": "/bin/sh",
                "CLAUDE_CONFIG_DIR": str(config_root),
                "ANTHROPIC_BASE_URL": api.url_for("team-lead"),
                "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
                **claude_code.OFFLINE_ENV,
            }
            (config_root / "settings.json").write_text('{"teammateMode": "tmux"}')
            lead = f"cd {work} && exec {claude} --model {MODEL} --permission-mode acceptEdits"
            new_session(tmux_socket, "lead", lead, (200, 50), env=environment)
            wait_for(lambda: "\u276f" in screen(tmux_socket, "lead"), "the lead's prompt", START_S)
            session = wait_for(lambda: live_session(config_root), "the lead's session team")
            files = TeamPaths(config_root, session)
            wait_for(
                lambda: TeamFile(files).load().member("bob"), "bob in the session team", START_S
            )
            for keys in (["-l", "Ping bob, please."], ["Enter"]):
                subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "lead", *keys],
                               check=True)  # fmt: skip
            try:
                wait_for(lambda: "pong from bob" in lead_seen, "bob's answer at the lead", START_S)
            except AssertionError:
                print("SCREEN", screen(tmux_socket, "lead"))
                print("LEAD'S INBOX ON THE STORE", [e.text for e in store.peek_all("team-lead")])
                raise
            assert TeamFile(files).load().member("sam")  # the lead's own, on this host only
            wait_for(lambda: not store.read_unread("team-lead"), "the lead's read on the store")
    finally:
        procs.close()
        gone = swarm(
            "shutdown", "bob", "--force", "--store", store_url, cwd=other_home, env=elsewhere
        )
    ok(gone)  # bob stopped: nothing outlives the test
    pings = [e for e in store.peek_all("bob") if e.text == "Ping from the lead"]
    assert [(e.from_, e.msg_id is not None) for e in pings] == [("team-lead", True)]  # once
    pongs = [e for e in store.peek_all("team-lead") if e.text == "pong from bob"]
    assert [(e.from_, e.read) for e in pongs] == [("bob", True)]
    assert not (config_root / "teams" / "t" / "config.json").exists()  # the session team only
    assert "sam" not in [m.name for m in PgTeamFile(db, "t").load().members]
