"""`make demo`: a human-led team of offline workers, end to end, no network.

The lead (this script, standing in for a person at the `swarm` command) creates a team in a
temporary config root, starts three `shell` workers together (tmux panes on a private server
when tmux is installed, else subprocesses), then puts a small dependency graph on the task board,
so the workers take its tasks as a team (the two branches run side by side). Workers claim
tasks on their own; one task deletes a directory, so its worker asks the lead first and the lead
approves it (as `swarm approve ID` would). When the board is done, a Claude teammate playing a
scripted model (examples/scripts/reviewer.yaml) reads the board with Claude Code's tools, asks the
lead before writing its report, and messages the lead. The lead prints every message as it
arrives, then shuts each worker down with the shutdown protocol and deletes the team; the tmux
panes close with it. With --keep the team is left running instead, and the demo prints how to
look at it (the tmux command of its panes) and how to end it (``swarm down``).

Usage: python examples/shell_team_demo.py [--backend auto|tmux|subprocess] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from protocols import LEAD_NAME, Mailbox, TaskBoard, TeamFile, TeamPaths
from protocols.errors import ProtocolsError
from protocols.inbox.entry import InboxEntry
from protocols.messages.models import IdleNotification, PermissionRequest
from protocols.watch.wakeup import InboxWatcher
from swarm.backends import choose_backend
from swarm.team.approvals import answer
from swarm.team.lifecycle import await_start, request_shutdown, spawn_member
from swarm.views.message_text import idle_facts
from teammate.options import MemberSpec

TEAM = "demo"
WORKERS = ("ann", "ben", "cai")
REVIEWER_SCRIPT = Path(__file__).resolve().parent / "scripts" / "reviewer.yaml"
TASKS = [  # subject, command, blocked by (1-based positions in this list)
    ("make the build directory", "mkdir -p build && echo made build/", []),
    (
        "write hello.txt",
        "echo 'hello from the swarm' > build/hello.txt && cat build/hello.txt",
        [1],
    ),
    ("write numbers.txt", "seq 1 5 > build/numbers.txt && wc -l build/numbers.txt", [1]),
    ("add up the numbers", "awk '{s+=$1} END {print \"sum:\", s}' build/numbers.txt", [3]),
    ("check both files", "ls build && grep -c . build/hello.txt build/numbers.txt", [2, 3]),
    ("clean up the build", "rm -r build && echo removed build/", [4, 5]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="auto", choices=["auto", "tmux", "subprocess"])
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave the team running (its members, tmux panes and files); print how to look at "
        "it and how to end it (swarm down)",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="swarm-demo-"))
    work = root / "work"
    work.mkdir()
    os.environ["CLAUDE_CONFIG_DIR"] = str(root)
    os.environ.pop("TMUX", None)  # never split the terminal this runs in
    paths = TeamPaths(root, TEAM)
    TeamFile(paths).create(description="a shell team demo", cwd=work)
    print(
        f"team {TEAM!r} in {root}\n(the same with the CLI: export CLAUDE_CONFIG_DIR={root} "
        f"SWARM_TEAM={TEAM}; swarm status)\n"
    )
    # the workers first, all starting at once; then the tasks, which they claim as a team
    spec = MemberSpec(backend=args.backend, cwd=str(work))
    started = [spawn_member(paths, name, "Work the board.", spec, wait_s=0) for name in WORKERS]
    for member, spawned in started:
        backend = choose_backend(spawned.backend_type, socket_name=spawned.socket_name)
        await_start(paths, member, spawned, backend)  # they start together: one wait in all
        where = f"tmux pane {spawned.pane_id}" if spawned.pane_id else "a subprocess"
        print(f"spawned {member.name} ({member.color}) in {where}, pid {spawned.pid}")
        if spawned.socket_name and spawned.pane_id and member.name == WORKERS[0]:
            watch = shlex.join(["tmux", "-L", spawned.socket_name, "attach", "-t", spawned.pane_id])
            until = "after the demo too" if args.keep else "until the demo ends (--keep: after)"
            print(f"  watch the panes from another terminal, {until}: {watch}")
    print()
    board = TaskBoard(paths)
    ids: list[str] = []
    for subject, command, blockers in TASKS:
        after = [ids[b - 1] for b in blockers]
        task = board.create(subject, metadata={"command": command}, blocked_by=after)
        ids.append(task.id)
        waits = f"  (after {', '.join('#' + i for i in after)})" if after else ""
        print(f"task #{task.id}: {subject}{waits}")
    print()
    ok = lead_loop(paths, board)
    print()
    ok = ok and review(paths, work, args.backend)
    print()
    if args.keep:
        print(f"board: {', '.join(f'#{t.id} {t.status}' for t in board.list())}")
        kept(root, paths)
        return 0 if ok else 1
    had_panes = any(m.tmuxPaneId for m in TeamFile(paths).load().members)
    for name in (*WORKERS, "dee"):
        result = request_shutdown(paths, name, "the board is done", wait_s=10, force=True)
        print(f"shutdown {name}: {result.outcome}")
    print(f"\nboard: {', '.join(f'#{t.id} {t.status}' for t in board.list())}")
    shutil.rmtree(root, ignore_errors=True)
    if had_panes:  # the private tmux server ended with its last pane
        print("the panes are gone with the team (--keep leaves the team running to look at)")
    return 0 if ok else 1


def kept(root: Path, paths: TeamPaths) -> None:
    """--keep: the team runs on; say how to look at it and how to end it."""
    print(f"\nkept: the team runs on, its files in {root}; from another terminal:")
    print(f"  export CLAUDE_CONFIG_DIR={shlex.quote(str(root))} SWARM_TEAM={TEAM}")
    print("  swarm status          # the members, the board, the messages")
    panes = [m for m in TeamFile(paths).load().members if m.tmuxPaneId]
    socket = (panes[0].model_extra or {}).get("tmuxSocket") if panes else None
    if isinstance(socket, str) and socket:
        watch = shlex.join(["tmux", "-L", socket, "attach", "-t", panes[0].tmuxPaneId])
        print(f"  {watch}   # the members' panes")
    print(f"  swarm down {TEAM}        # when done: stops them and deletes the team")
    print(f"  rm -r {shlex.quote(str(root))}")


def lead_loop(paths: TeamPaths, board: TaskBoard, timeout: float = 60.0) -> bool:
    """Show messages as they arrive and approve permission requests, until the board is done."""
    mailbox = Mailbox(paths)
    reported: set[str] = set()
    deadline = time.monotonic() + timeout
    with InboxWatcher(paths.inbox(LEAD_NAME)) as watcher:
        while time.monotonic() < deadline:
            tasks = board.list()
            if all(t.status == "completed" for t in tasks) and reported >= {t.id for t in tasks}:
                return True
            watcher.clear()
            entries = mailbox.read_unread(LEAD_NAME)
            for entry in entries:
                done = show(paths, entry)
                if done:
                    reported.add(done)
            mailbox.mark_read(LEAD_NAME, entries)
            if not entries:
                watcher.wait(1.0)
    print("the board did not finish in time")
    return False


def review(paths: TeamPaths, work: Path, backend: str, timeout: float = 60.0) -> bool:
    """Spawn the scripted Claude reviewer and answer it until its turn ends."""
    member, spawned = spawn_member(
        paths,
        "dee",
        "Review the board and write REPORT.md.",
        MemberSpec(backend=backend, cwd=str(work), script=str(REVIEWER_SCRIPT)),
    )
    print(f"spawned dee ({member.color}), a scripted Claude teammate, pid {spawned.pid}")
    mailbox = Mailbox(paths)
    deadline = time.monotonic() + timeout
    with InboxWatcher(paths.inbox(LEAD_NAME)) as watcher:
        while time.monotonic() < deadline:
            watcher.clear()
            entries = mailbox.read_unread(LEAD_NAME)
            for entry in entries:
                show(paths, entry)
            mailbox.mark_read(LEAD_NAME, entries)
            idle = [e for e in entries if e.from_ == "dee" and "idle_notification" in e.text]
            if idle:
                report = (work / "REPORT.md").read_text().strip().replace("\n", "\n       ")
                print(f"  REPORT.md: {report}")
                return True
            watcher.wait(1.0)
    print("the reviewer did not finish in time")
    return False


def show(paths: TeamPaths, entry: InboxEntry) -> str | None:
    """Print one message to the lead; returns the id of a task it reports finished."""
    try:
        message = entry.structured()
    except ProtocolsError as exc:
        print(f"  ! {exc}")
        return None
    sender = entry.from_
    if isinstance(message, PermissionRequest):
        print(
            f"  {sender:>4} asks: {message.description} "
            f"({message.request_id}) -> approved by the lead"
        )
        answer(paths, message.request_id, approve=True)
    elif isinstance(message, IdleNotification) and message.completedTaskId:
        print(f"  {sender:>4} {idle_facts(message)}")
        return message.completedTaskId
    elif message is None and not entry.text.startswith("Received"):
        text = entry.text.strip().replace("\n", "\n       ")
        print(f"  {sender:>4} says: {text}")
    return None


if __name__ == "__main__":
    sys.exit(main())
