"""Take the README's screenshots of `swarm watch`: a real team, a real terminal, rendered to PNG.

    .venv/bin/python docs/screenshots.py            # writes docs/images/watch*.png

A temporary config root gets team ``shop``: two `shell` workers and two Claude teammates whose
model is the test suite's local Messages API server (``tests/messages_api.py``, scripted turns
with token usage, no network), four tasks with a dependency. alice writes a file and so asks
the lead; bob runs a long ``make test``; cara finishes her task and idles; dan builds. Then
`swarm watch` runs in a tmux pane on a private server (150 x 46), the screen is read with
``tmux capture-pane -e -p`` and drawn by `docs/ansi_png.py`: ``watch.png`` while alice waits,
``watch-approved.png`` after ``a`` was pressed in the pane and alice went on. Everything is
stopped and removed at the end.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from ansi_png import render  # noqa: E402
from messages_api import MessagesAPI, Turn, by_agent  # noqa: E402

from protocols.paths import TeamPaths  # noqa: E402
from protocols.tasks.board import TaskBoard  # noqa: E402

SOCKET = "swarm-screenshots"
WIDTH, HEIGHT = 150, 46
OUT = REPO / "docs" / "images"


def turn(base: Turn, **usage: int) -> Turn:
    base.usage = usage
    return base


ALICE = [
    turn(
        Turn.tool("TaskUpdate", {"taskId": "4", "status": "in_progress"}, "Taking #4."),
        input_tokens=2_310,
        cache_creation_input_tokens=9_840,
        output_tokens=96,
    ),
    turn(
        Turn.tool(
            "SendMessage",
            {
                "to": "team-lead",
                "message": "Starting on schema.sql: users first, then orders.",
                "summary": "starting schema.sql",
            },
        ),
        input_tokens=180,
        cache_read_input_tokens=12_150,
        output_tokens=64,
    ),
    turn(
        Turn.tool(
            "Write",
            {
                "file_path": "schema.sql",
                "content": "CREATE TABLE users (\n"
                "  id INTEGER PRIMARY KEY,\n  email TEXT UNIQUE NOT NULL\n);\n",
            },
        ),
        input_tokens=240,
        cache_read_input_tokens=12_330,
        output_tokens=412,
    ),
    turn(
        Turn.tool(
            "SendMessage",
            {
                "to": "team-lead",
                "message": "schema.sql is written (users); orders next.",
                "summary": "schema.sql written",
            },
        ),
        input_tokens=210,
        cache_read_input_tokens=12_980,
        output_tokens=58,
    ),
    turn(
        Turn.text("Done with the users table."),
        input_tokens=120,
        cache_read_input_tokens=13_200,
        output_tokens=12,
    ),
]
BOB = [
    turn(
        Turn.tool("TaskUpdate", {"taskId": "5", "status": "in_progress"}),
        input_tokens=2_900,
        cache_creation_input_tokens=10_400,
        output_tokens=40,
    ),
    turn(
        Turn.tool("Bash", {"command": "make test", "description": "run the test suite"}),
        input_tokens=3_020,
        cache_creation_input_tokens=10_400,
        cache_read_input_tokens=4_100,
        output_tokens=143,
    ),
]


def tmux(*args: str) -> str:
    result = subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True)
    return result.stdout


def wait_for(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    sys.exit(f"screenshots: timed out waiting for {what}\n{tmux('capture-pane', '-p', '-t', 'w')}")


def swarm(*args: str, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "swarm", *args], env=env, check=True, stdout=subprocess.DEVNULL
    )


def shoot(name: str) -> None:
    screen = tmux("capture-pane", "-e", "-p", "-t", "w")
    render(screen, OUT / name)
    print(f"wrote {OUT / name}")


def main() -> int:
    if not shutil.which("tmux"):
        sys.exit("screenshots: needs tmux")
    OUT.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="swarm-shots-"))
    work = root / "shop"
    work.mkdir()
    (work / "Makefile").write_text("test:\n\tsleep 600\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SWARM_"))}
    env.update(CLAUDE_CONFIG_DIR=str(root / "config"), SWARM_TEAM="shop")
    os.environ["CLAUDE_CONFIG_DIR"] = env["CLAUDE_CONFIG_DIR"]
    api = MessagesAPI(by_agent({"alice": ALICE, "bob": BOB}))
    try:
        with api:
            env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="offline")
            swarm("team", "create", "shop", "--cwd", str(work), env=env)
            paths = TeamPaths.for_team("shop")
            board = TaskBoard(paths)
            board.create("lint", "ruff", metadata={"command": "echo lint ok"})
            board.create("build the site", "", metadata={"command": "sleep 600"})
            board.create("deploy to staging", "after the build")
            board.update("3", addBlockedBy=["2"])
            board.create("write schema.sql", "users and orders")
            board.create("run the test suite", "make test")
            for task_id, owner in (("1", "cara"), ("2", "dan"), ("4", "alice"), ("5", "bob")):
                board.update(task_id, owner=owner)
            for name in ("cara", "dan"):
                swarm(
                    "spawn",
                    name,
                    "-p",
                    "Work the board.",
                    "--backend",
                    "subprocess",
                    "--cwd",
                    str(work),
                    env=env,
                )
            swarm(
                "spawn",
                "alice",
                "-p",
                "Write schema.sql.",
                "--model",
                "sonnet",
                "--backend",
                "subprocess",
                "--cwd",
                str(work),
                env=env,
            )
            swarm(
                "spawn",
                "bob",
                "-p",
                "Run the tests.",
                "--model",
                "opus",
                "--backend",
                "subprocess",
                "--permission-mode",
                "bypassPermissions",
                "--cwd",
                str(work),
                env=env,
            )
            command = shlex.join([sys.executable, "-m", "swarm", "watch"])
            exports = " ".join(
                f"{k}={shlex.quote(env[k])}" for k in ("CLAUDE_CONFIG_DIR", "SWARM_TEAM")
            )
            tmux(
                "new-session",
                "-d",
                "-s",
                "w",
                "-x",
                str(WIDTH),
                "-y",
                str(HEIGHT),
                f"env {exports} TERM=xterm-256color COLORTERM=truecolor {command}",
            )
            screen = lambda: tmux("capture-pane", "-p", "-t", "w")  # noqa: E731
            wait_for(
                lambda: (
                    "waiting for approval" in screen()
                    and "make test" in screen()
                    and "done: lint" in screen()
                ),
                "alice's request, bob's command, cara's report",
            )
            shoot("watch.png")
            tmux("send-keys", "-t", "w", "a")
            wait_for(lambda: "schema.sql is written" in screen(), "alice's report after approval")
            shoot("watch-approved.png")
            tmux("send-keys", "-t", "w", "q")
    finally:
        # stops every member still running (also after a timeout), then removes the team
        subprocess.run(
            [sys.executable, "-m", "swarm", "team", "delete", "shop", "--force"],
            env=env,
            capture_output=True,
            check=False,
        )
        tmux("kill-server")
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
