"""`swarm web` measured: a request to the page, an answer to the teammate, the idle server's CPU,
and what telemetry costs a wake-up; each beside its baseline, measured in the same run.

What it measures
    a. A request to the page. One real shell teammate (``python -m teammate --model shell``)
       is given a task whose command, ``rm -rf gone-N``, matches a default ask rule, so it
       asks the lead. The time zero is the rename that commits the request into the lead's
       inbox file (an inotify reader of this script's own, on the inboxes directory, reads the
       file at each rename). Then: when the request's id arrives in the page's event stream
       (``GET /api/events``, read by an HTTP client thread here, as the page's EventSource
       would); beside it, the baselines, watching the same request in the same rounds:
       ``swarm watch``'s way (its team watcher, inotify on the team, then `snapshot`, in a
       thread here, the frame not drawn), and a lead that reads its inbox file once a second
       (Claude Code's way: its inbox poller).
    b. An answer to the teammate. The request approved, until the teammate goes on: its
       command removes the directory ``gone-N`` (the same inotify reader times the removal).
       Rounds take turns: ``POST /api/requests/ID/approve`` with the full token (what the
       page's Approve sends), and the baseline, ``swarm approve ID`` (a new process, as a
       person types it), timed from its start.
    c. The idle server. A team of ``--members`` (200) members built as ``bench/dashboard.py``
       builds it (each with a live pid and a status file, ``--tasks`` tasks, 3 requests
       waiting), ``swarm web`` serving it with one page connected over server-sent events;
       the server process's user+system CPU (/proc) over ``--cpu-seconds``; beside it, in the
       same window, ``swarm watch`` on the same team in a 120x40 tmux pane.
    d. Telemetry on a wake-up. ``bench/wake_to_request.py``'s measurement (its `run`: a
       message into an idle swarm Claude teammate's inbox, to that teammate's next model
       request) with telemetry off and on (``CLAUDE_CODE_ENABLE_TELEMETRY=1``, OTLP/HTTP to
       the test suite's local receiver, ``tests/otlp_receiver.py``), in alternating blocks;
       the medians from the write's commit and their ratio.

Figures
    Medians, p90 and max in ms (CPU in % of one core), each with its target: (a) and (b)
    under 200 ms, (c) under 1% of a core, (d) the ratio under 1.05. The last line is one line
    of ``key=value`` pairs. The machine is shared: the load average is printed at the start
    and the end.

Everything runs under temporary config roots and HOME; nothing leaves this machine.
``--quick`` runs a smaller version (about a minute and a half on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchkit import percentile, verdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import dashboard
import httpx2
import wake_to_request
from helpers import Processes, teammate_argv, wait_for
from idle_cpu import TICKS, cpu_seconds
from otlp_receiver import OtlpReceiver
from web_server import WebServer, stop

from protocols import LEAD_NAME, Mailbox, TeamFile, TeamPaths
from protocols.errors import ProtocolsError
from protocols.store.selection import open_store
from protocols.tasks.board import TaskBoard
from swarm.views.snapshot import snapshot
from swarm.web.feed import RESCAN_S as WEB_RESCAN_S

TEAM = "webbench"
MATE = "mate"
TARGET_MS = 200.0
CPU_TARGET_PERCENT = 1.0
TELEMETRY_TARGET_RATIO = 1.05
RESCAN_S = 5.0  # the watch-like baseline's safety-net rescan
POLL_S = 1.0  # the polling lead's interval (Claude Code's inbox poller)
ROUND_S = 60.0
IN_CLOEXEC = 0o2000000
IN_CLOSE_WRITE, IN_MOVED_TO, IN_DELETE = 0x8, 0x80, 0x200
EVENT = struct.Struct("iIII")
TELEMETRY_ENV = ("CLAUDE_CODE_ENABLE_TELEMETRY", "OTEL_EXPORTER_OTLP_ENDPOINT")


@contextlib.contextmanager
def config_root(prefix: str) -> Iterator[Path]:
    """A temporary config root and HOME (in this process's environment, inherited by every
    process it starts) for the duration; the environment as it was after."""
    saved = dict(os.environ)
    root = Path(tempfile.mkdtemp(prefix=prefix))
    (root / "config").mkdir()
    (root / "home").mkdir()
    os.environ.update(CLAUDE_CONFIG_DIR=str(root / "config"), HOME=str(root / "home"))
    try:
        yield root
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(root, ignore_errors=True)


class FileClock(threading.Thread):
    """An inotify reader of its own (not the process's shared notifier, which the `swarm
    watch` baseline uses): at each rename into the inboxes directory of the lead's inbox, the
    time and the permission requests the file holds then (`requests`: id -> first seen); at
    each removal of a directory in `work`, the time (`removed`: name -> when)."""

    def __init__(self, paths: TeamPaths, work: Path) -> None:
        super().__init__(name="file-clock", daemon=True)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.fd = libc.inotify_init1(IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.inbox = paths.inbox(LEAD_NAME)
        mask = IN_MOVED_TO | IN_CLOSE_WRITE
        self.inbox_wd = libc.inotify_add_watch(self.fd, os.fsencode(paths.inboxes), mask)
        self.work_wd = libc.inotify_add_watch(self.fd, os.fsencode(work), IN_DELETE)
        if self.inbox_wd < 0 or self.work_wd < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
        self.requests: dict[str, float] = {}
        self.removed: dict[str, float] = {}

    def run(self) -> None:
        while True:
            data = os.read(self.fd, 65536)
            at = time.monotonic()
            offset = 0
            while offset < len(data):
                wd, _mask, _cookie, size = EVENT.unpack_from(data, offset)
                name = data[offset + EVENT.size : offset + EVENT.size + size].rstrip(b"\0")
                offset += EVENT.size + size
                if wd == self.work_wd:
                    self.removed.setdefault(os.fsdecode(name), at)
                elif name == os.fsencode(self.inbox.name):
                    for rid in inbox_requests(self.inbox):
                        self.requests.setdefault(rid, at)


def inbox_requests(path: Path) -> list[str]:
    """The ids of the permission requests in the inbox file at `path`, read raw."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    found = []
    for entry in entries if isinstance(entries, list) else []:
        text = entry.get("text") if isinstance(entry, dict) else None
        if isinstance(text, str) and '"permission_request"' in text:
            with contextlib.suppress(ValueError, AttributeError):
                found.append(str(json.loads(text)["request_id"]))
    return found


class EventStream(threading.Thread):
    """The page's event stream (``GET /api/events``) as an HTTP client reads it: each state's
    ``data:`` line with the time it arrived."""

    def __init__(self, base: str, token: str) -> None:
        super().__init__(name="event-stream", daemon=True)
        self.base, self.token = base, token
        self.events: list[tuple[float, str]] = []

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with (
            contextlib.suppress(httpx2.HTTPError),
            httpx2.Client(base_url=self.base, timeout=httpx2.Timeout(30, read=None)) as client,
            client.stream("GET", "/api/events", headers=headers) as response,
        ):
            for line in response.iter_lines():
                if line.startswith("data: "):
                    self.events.append((time.monotonic(), line))

    def first(self, text: str, since: int) -> float | None:
        """When the first state from the `since`-th on that holds `text` arrived."""
        return next((at for at, line in self.events[since:] if text in line), None)


class WatchLike(threading.Thread):
    """Baseline: `swarm watch`'s way to see a request (its team watcher, then `snapshot`),
    without drawing the frame; `seen`: request id -> when first seen."""

    def __init__(self, paths: TeamPaths) -> None:
        super().__init__(name="watch-like", daemon=True)
        self.paths = paths
        self.seen: dict[str, float] = {}

    def run(self) -> None:
        watcher = open_store(self.paths).team_watcher(RESCAN_S)
        with watcher, contextlib.suppress(ProtocolsError, OSError):
            while True:  # until the team is removed at the end
                watcher.clear()
                view = snapshot(self.paths)
                at = time.monotonic()
                for request in view.requests:
                    self.seen.setdefault(request.id, at)
                watcher.wait(RESCAN_S)


class PollingLead(threading.Thread):
    """Baseline: a lead that reads its inbox file once a second (Claude Code's inbox poller)."""

    def __init__(self, paths: TeamPaths) -> None:
        super().__init__(name="polling-lead", daemon=True)
        self.inbox = paths.inbox(LEAD_NAME)
        self.seen: dict[str, float] = {}

    def run(self) -> None:
        time.sleep(random.uniform(0, POLL_S))  # any phase
        while True:
            at = time.monotonic()
            for rid in inbox_requests(self.inbox):
                self.seen.setdefault(rid, at)
            time.sleep(POLL_S)  # the baseline's poll interval, on purpose


def requests_and_answers(rounds: int) -> dict[str, list[float]]:
    """Parts (a) and (b): ms per round, by what measured it."""
    got: dict[str, list[float]] = {
        k: [] for k in ("page", "watch", "poll", "web_approve", "cli_approve", "cli_run")
    }
    with config_root("swarm-bench-web-") as root:
        work = root / "work"
        work.mkdir()
        paths = TeamPaths.for_team(TEAM)
        team = TeamFile(paths)
        team.create(description="swarm web benchmark", cwd=work)
        team.add_member(MATE, cwd=work)
        paths.inboxes.mkdir(parents=True, exist_ok=True)
        board, mailbox = TaskBoard(paths), Mailbox(paths)
        procs = Processes(work)
        web = WebServer(procs, team=TEAM)
        try:
            clock = FileClock(paths, work)
            stream = EventStream(web.base, web.token)
            watch, poll = WatchLike(paths), PollingLead(paths)
            seen_by = {"watch": watch.seen, "poll": poll.seen}  # baseline -> what it saw when
            for thread in (clock, stream, watch, poll):
                thread.start()
            wait_for(lambda: stream.events, "the page's first state", ROUND_S)
            mate = procs.start(teammate_argv(MATE, team=TEAM))
            mailbox.post(MATE, "Work the board.", sender=LEAD_NAME)
            wait_for(
                lambda: wake_to_request.idle_count(mailbox, MATE) >= 1 or mate.poll() is not None,
                "the teammate idle",
                ROUND_S,
            )
            if mate.poll() is not None:
                raise SystemExit(f"web: the teammate exited: {mate.communicate()[0]}")
            for n in range(rounds):
                one_round(n, work, board, mailbox, web, clock, stream, seen_by, got)
        finally:
            stop(web)
            procs.close()
    return got


def one_round(
    n: int,
    work: Path,
    board: TaskBoard,
    mailbox: Mailbox,
    web: WebServer,
    clock: FileClock,
    stream: EventStream,
    seen_by: dict[str, dict[str, float]],
    got: dict[str, list[float]],
) -> None:
    """One request, seen by the page and the baselines, and approved: the figures into `got`."""
    time.sleep(random.uniform(0.2, 0.6))  # idle between rounds, on purpose: any phase
    gone = work / f"gone-{n}"
    gone.mkdir()
    known, since = set(clock.requests), len(stream.events)
    idle_before = wake_to_request.idle_count(mailbox, MATE)
    task = board.create(f"round {n}", metadata={"command": f"rm -rf {gone.name}"})
    rid = wait_for(lambda: next(iter(set(clock.requests) - known), None), "a request", ROUND_S)
    committed = clock.requests[rid]
    page = wait_for(lambda: stream.first(rid, since), f"{rid} on the page", ROUND_S)
    got["page"].append((page - committed) * 1000)
    for key, seen_at in seen_by.items():
        seen = wait_for(functools.partial(seen_at.get, rid), f"{rid} seen ({key})", ROUND_S)
        got[key].append((seen - committed) * 1000)
    started = time.monotonic()
    if n % 2 == 0:
        answered = web.post(rid, "approve")
        if answered.status_code != 200:
            raise SystemExit(f"web: approve {rid}: {answered.status_code} {answered.text}")
    else:
        argv = [sys.executable, "-m", "swarm", "approve", rid, "--team", TEAM]
        subprocess.run(argv, check=True, capture_output=True)
        got["cli_run"].append((time.monotonic() - started) * 1000)
    went_on = wait_for(lambda: clock.removed.get(gone.name), "the command to run", ROUND_S)
    got["web_approve" if n % 2 == 0 else "cli_approve"].append((went_on - started) * 1000)
    wait_for(lambda: board.require(task.id).status == "completed", f"task {task.id}", ROUND_S)
    wait_for(lambda: wake_to_request.idle_count(mailbox, MATE) > idle_before, "idle again", ROUND_S)


def idle_server(members: int, tasks: int, seconds: float) -> dict[str, float]:
    """Part (c): % of one core of the idle server (one page connected) and of `swarm watch`."""
    socket = f"swarm-bench-web-{os.getpid()}"
    with config_root("swarm-bench-web-idle-") as root:
        dashboard.build(root / "config", members, tasks)
        procs = Processes(root)
        web = WebServer(procs, team=dashboard.TEAM)
        try:
            stream = EventStream(web.base, web.token)
            stream.start()
            wait_for(lambda: stream.events, "the page's first state", ROUND_S)
            watch_pid = start_watch(socket, dashboard.TEAM)
            time.sleep(2 * RESCAN_S)  # both past their first looks, on purpose
            pids = {"web": web.proc.pid, "watch": watch_pid}
            before = {k: cpu_seconds([p]) for k, p in pids.items()}
            events_before = len(stream.events)
            time.sleep(seconds)  # the window measured, on purpose
            after = {k: cpu_seconds([p]) for k, p in pids.items()}
            sent = stream.events[events_before:]
            if web.proc.poll() is not None:
                raise SystemExit("web: the server exited during the window")
        finally:
            stop(web)
            procs.close()
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    figures = {k: (after[k] - before[k]) / seconds * 100 for k in pids}
    figures["events"] = len(sent)
    figures["event_kb"] = sum(len(line) for _, line in sent) / 1024
    return figures


def start_watch(socket: str, team: str) -> int:
    """`swarm watch` in a 120x40 pane of a private tmux server; its pid."""
    command = f"exec {sys.executable} -m swarm watch --team {team}"
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-x", "120", "-y", "40", command], check=True
    )
    listed = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_pid}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(listed[0])


def telemetry_overhead(blocks: int, rounds: int, gap: float) -> dict[str, Any]:
    """Part (d): `wake_to_request.run` with telemetry off and on, in alternating blocks."""
    latencies: dict[bool, list[float]] = {False: [], True: []}
    medians: dict[bool, list[float]] = {False: [], True: []}  # each block's: the noise
    receiver = OtlpReceiver()
    saved = dict(os.environ)
    try:
        for block in range(blocks):
            for on in (False, True) if block % 2 == 0 else (True, False):
                os.environ.clear()
                os.environ.update(saved)
                for name in TELEMETRY_ENV:
                    os.environ.pop(name, None)
                if on:
                    os.environ.update(
                        CLAUDE_CODE_ENABLE_TELEMETRY="1",
                        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                    )
                args = argparse.Namespace(rounds=rounds, cc_rounds=0, gap=gap, also_swarm=[])
                (member,) = wake_to_request.run({}, args)
                latencies[on] += member.latencies_ms
                medians[on].append(percentile(member.latencies_ms, 50))
    finally:
        os.environ.clear()
        os.environ.update(saved)
        receiver.close()
    return {
        "off": latencies[False],
        "on": latencies[True],
        "off_blocks": medians[False],
        "on_blocks": medians[True],
        "spans": len(receiver.received()),
    }


def stats(values: list[float]) -> str:
    median, p90 = percentile(values, 50), percentile(values, 90)
    return f"n={len(values):3}  median {median:7.1f}  p90 {p90:7.1f}  max {max(values):7.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run (about 1.5 min)")
    parser.add_argument("--rounds", type=int, help="request rounds, (a) and (b) (default 16)")
    parser.add_argument("--members", type=int, default=200, help="members of the idle team (c)")
    parser.add_argument("--tasks", type=int, default=200, help="tasks on the idle team's board")
    parser.add_argument("--cpu-seconds", type=float, help="the CPU window of (c) (default 60)")
    parser.add_argument("--wake-blocks", type=int, help="off/on block pairs of (d) (default 2)")
    parser.add_argument("--wake-rounds", type=int, help="wake-ups per block of (d) (default 15)")
    parser.add_argument("--wake-gap", type=float, default=0.5, help="mean idle gap in (d), s")
    parser.add_argument("--parts", default="abcd", help="which parts to run (default: abcd)")
    args = parser.parse_args()
    quick = args.quick
    rounds = args.rounds or (6 if quick else 16)
    cpu_window = args.cpu_seconds or (WEB_RESCAN_S if quick else 4 * WEB_RESCAN_S)
    wake_blocks = args.wake_blocks or (1 if quick else 2)
    wake_rounds = args.wake_rounds or (8 if quick else 15)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # else each start compiles every module
    load_before = os.getloadavg()
    pairs: dict[str, Any] = {}
    print(f"swarm web ({os.cpu_count()} cores; load average {load_before[0]:.2f} at the start)")
    if "a" in args.parts or "b" in args.parts:
        got = requests_and_answers(rounds)
        pairs |= report_requests(got)
    if "c" in args.parts:
        cpu = idle_server(args.members, args.tasks, cpu_window)
        pairs |= report_cpu(cpu, args.members, args.tasks, cpu_window)
    if "d" in args.parts:
        wake = telemetry_overhead(wake_blocks, wake_rounds, args.wake_gap)
        pairs |= report_telemetry(wake, wake_blocks)
    load_after = os.getloadavg()
    print(f"load average {load_after[0]:.2f} at the end")
    pairs["load"] = f"{load_before[0]:.2f}"
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))
    return 0


def report_requests(got: dict[str, list[float]]) -> dict[str, Any]:
    page, web, cli = (percentile(got[k], 50) for k in ("page", "web_approve", "cli_approve"))
    page_p90, web_p90 = percentile(got["page"], 90), percentile(got["web_approve"], 90)
    print("(a) request committed in the lead's inbox -> seen, ms")
    print(f"  the page's event stream       {stats(got['page'])}   target p90 < {TARGET_MS:g}"
          f"  {verdict(page_p90 < TARGET_MS)}")  # fmt: skip
    print(f"  baseline: swarm watch's way   {stats(got['watch'])}   (team watcher + snapshot)")
    print(f"  baseline: 1 s inbox poll      {stats(got['poll'])}   (Claude Code's lead)")
    print("(b) approved -> the teammate's command runs, ms")
    print(f"  POST .../approve (the page)   {stats(got['web_approve'])}   target p90 < "
          f"{TARGET_MS:g}  {verdict(web_p90 < TARGET_MS)}")  # fmt: skip
    print(f"  baseline: swarm approve       {stats(got['cli_approve'])}   (a new process; "
          f"the command itself took {percentile(got['cli_run'], 50):.0f} ms)")  # fmt: skip
    return {
        "page_median_ms": f"{page:.1f}",
        "page_p90_ms": f"{page_p90:.1f}",
        "watch_median_ms": f"{percentile(got['watch'], 50):.1f}",
        "poll_median_ms": f"{percentile(got['poll'], 50):.1f}",
        "web_approve_median_ms": f"{web:.1f}",
        "web_approve_p90_ms": f"{web_p90:.1f}",
        "cli_approve_median_ms": f"{cli:.1f}",
    }


def report_cpu(cpu: dict[str, float], members: int, tasks: int, seconds: float) -> dict[str, Any]:
    print(f"(c) idle, {members} members, {tasks} tasks, {seconds:g} s window: % of one core")
    print(f"  swarm web, one page connected  {cpu['web']:5.2f}%   target < "
          f"{CPU_TARGET_PERCENT:g}%  {verdict(cpu['web'] < CPU_TARGET_PERCENT)}"
          f"   ({cpu['events']:.0f} states sent, {cpu['event_kb']:.0f} KiB)")  # fmt: skip
    print(f"  baseline: swarm watch (120x40)  {cpu['watch']:5.2f}%")
    per_look = cpu["web"] / 100 * WEB_RESCAN_S * 1000
    print(f"  (the server: about {per_look:.0f} ms of CPU per {WEB_RESCAN_S:g} s rescan;"
          f" /proc counts in ticks of {1000 / TICKS:.0f} ms)")  # fmt: skip
    return {"web_idle_cpu_pct": f"{cpu['web']:.2f}", "watch_idle_cpu_pct": f"{cpu['watch']:.2f}"}


def report_telemetry(wake: dict[str, Any], blocks: int) -> dict[str, Any]:
    off, on = percentile(wake["off"], 50), percentile(wake["on"], 50)
    ratio = on / off
    print(f"(d) bench/wake_to_request.py (swarm teammate), {blocks} off/on block pairs: "
          "message committed -> model request, ms")  # fmt: skip
    print(f"  telemetry off                 {stats(wake['off'])}")
    print(f"  telemetry on (OTLP, local)    {stats(wake['on'])}   ({wake['spans']} spans received)")
    blocks_text = "; ".join(
        f"{k} " + ", ".join(f"{m:.1f}" for m in wake[f"{k}_blocks"]) for k in ("off", "on")
    )
    print(f"  each block's median (the noise between runs of one setting): {blocks_text}")
    print(f"  on / off medians: {ratio:.3f} ({on - off:+.1f} ms)   target < "
          f"{TELEMETRY_TARGET_RATIO:g}  {verdict(ratio < TELEMETRY_TARGET_RATIO)}")  # fmt: skip
    return {
        "wake_off_median_ms": f"{off:.1f}",
        "wake_on_median_ms": f"{on:.1f}",
        "telemetry_ratio": f"{ratio:.3f}",
        "spans": wake["spans"],
    }


if __name__ == "__main__":
    sys.exit(main())
