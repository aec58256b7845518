"""Model requests made by an idle Claude teammate: after its prompt turn, over 60 s, target 0.

What it measures
    One real teammate process (``python -m teammate --model sonnet``) talks through the real
    `anthropic` SDK to the test suite's local Messages API server (``tests/messages_api.py``,
    pointed at with ``ANTHROPIC_BASE_URL``; nothing reaches the network). The lead sends it one
    prompt; the scripted model answers with a ``SendMessage`` to the lead, then ends its turn.
    Once the teammate's ``idle_notification`` is in the lead's inbox, the server's request count
    is noted and the teammate is left idle for ``--seconds``. Halfway through that window a task
    owned by someone else (``bob``) appears on the board and is then completed: the board
    changes wake the teammate, which finds nothing of its own to do and calls no model.
    The figure is the requests the server received during the window (target 0); the requests
    the prompt turn took are printed too.

Baseline
    Claude Code's teammate polls its inbox file every 1 s but only calls the model when a
    message arrives, so an idle Claude Code teammate also makes 0 model requests.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR``), never ``~/.claude``. The
teammate is shut down with a ``shutdown_request`` at the end. The last line is ``key=value``
pairs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchkit import verdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import lead_messages, start_claude_teammate
from helpers import wait_for as wait_until
from messages_api import MessagesAPI, Turn

from protocols import LEAD_NAME, Mailbox, TaskBoard, TeamFile, TeamPaths
from protocols.clock import now_iso
from protocols.member.status import read_status
from protocols.messages.models import IdleNotification, ShutdownApproved, ShutdownRequest

TEAM = "idle-requests"
NAME = "alice"
OTHER = "bob"
TARGET_REQUESTS = 0
BASELINE_REQUESTS = 0  # Claude Code: inbox polled every 1 s, the model called only for a message
DEADLINE_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the idle window, s")
    args = parser.parse_args()

    script = [
        Turn.tool(
            "SendMessage",
            {"to": LEAD_NAME, "message": "Ready, nothing to do yet.", "summary": "ready"},
        ),
        Turn.text("Told the lead I am ready."),
    ]
    with (
        tempfile.TemporaryDirectory(prefix="swarm-bench-idle-requests-") as root,
        MessagesAPI(script) as api,
    ):
        os.environ["CLAUDE_CONFIG_DIR"] = root
        workdir = Path(root) / "work"
        workdir.mkdir()
        paths = TeamPaths(Path(root), TEAM)
        team = TeamFile(paths)
        team.create(description="idle model requests", cwd=workdir)
        team.add_member(NAME, cwd=workdir)
        team.add_member(OTHER, cwd=workdir)  # owns the task that appears; never started
        mailbox = Mailbox(paths)
        board = TaskBoard(paths, mailbox)

        log_path = Path(root) / f"{NAME}.log"
        proc = start_claude_teammate(NAME, TEAM, root, workdir, api.url)
        try:
            started = time.monotonic()
            mailbox.send(NAME, "Say you are ready, then wait.", sender=LEAD_NAME, summary="hi")
            wait_until(lambda: lead_messages(mailbox, IdleNotification), "alice to go idle")
            turn_s = time.monotonic() - started
            prompt_requests = len(api.requests)
            print(
                f"prompt turn: {prompt_requests} model requests; idle_notification "
                f"{turn_s:.2f} s after the process started (start-up and SDK import included)"
            )

            print(f"idle window: {args.seconds:g} s (a task owned by {OTHER} appears halfway) ...")
            window_start = time.monotonic()
            # the measuring window itself, not a wait for a condition
            time.sleep(args.seconds / 2)
            # created hidden (`_internal`) and handed to bob in one rewrite, so alice never
            # sees it unowned and cannot claim it
            task = board.create(
                "bob's job", "not for alice", metadata={"_internal": True, "bench": True}
            )
            board.update(task.id, owner=OTHER, status="in_progress", metadata={"_internal": None})
            board.update(task.id, status="completed")
            time.sleep(max(0.0, window_start + args.seconds - time.monotonic()))
            elapsed = time.monotonic() - window_start
            idle_requests = len(api.requests) - prompt_requests
            status = read_status(paths, NAME)
            reported = status.requests if status is not None else -1
            print(
                f"  requests while idle {idle_requests:5d}     target {TARGET_REQUESTS}   "
                f"{verdict(idle_requests <= TARGET_REQUESTS)}"
            )
            print(
                f"  board changes in the window: 3 (task #{task.id} created, given to {OTHER}, "
                f"completed); alice's own status file counts {reported} model requests in all"
            )
            print(
                f"baseline (Claude Code): inbox polled every 1 s, model called only when a "
                f"message arrives: {BASELINE_REQUESTS} requests while idle   "
                f"target {TARGET_REQUESTS}"
            )
            request = ShutdownRequest(
                requestId=f"shutdown-1@{NAME}", from_=LEAD_NAME, timestamp=now_iso()
            )
            mailbox.send(NAME, request, sender=LEAD_NAME)
            code = proc.wait(timeout=DEADLINE_S)
            approved = lead_messages(mailbox, ShutdownApproved)
            if code != 0 or not approved:
                raise SystemExit(
                    f"alice did not shut down cleanly (exit code {code}, approved: "
                    f"{bool(approved)}):\n{log_path.read_text()}"
                )
            print(f"shut down: shutdown_approved, exit code {code}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    print(f"idle_requests={idle_requests} prompt_requests={prompt_requests} seconds={elapsed:.0f}")


if __name__ == "__main__":
    main()
