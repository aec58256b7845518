"""Idle teammates for free: CPU of idle shell teammates, and a broadcast read by all of them, as
the team grows (10, 50, 100, 200), beside a baseline of processes that poll their inbox once a
second (what Claude Code does), measured side by side in the same run.

What it does
    One team of idle shell teammates (subprocesses) on a board of ``--completed`` completed
    tasks (2,000) grows through ``--counts``; beside it, a team of as many pollers: each a small
    process that reads its inbox file every second and, when something is unread, marks it all
    read under Claude Code's lock directory. At each size, once everybody is idle:

    * CPU: user+system time of every teammate and every poller from /proc, over the same
      ``--seconds`` window, as a percentage of one core; and their wake-ups (voluntary context
      switches of all their threads) per second;
    * broadcast: a message to ``*`` (`Mailbox.broadcast`, what ``swarm send '*'`` does) from the
      lead, timed until every recipient has marked it read (the entry is read, or already
      moved to the archive); then the same to the pollers; ``--broadcasts`` times (3), once
      everybody is idle again. A single broadcast's time swings with what the disk did just
      before: the table shows the median and the slowest, and the verdict takes the slowest.

    At the first size a second team of as many teammates on an empty board is measured in the
    same window: idle cost must not depend on what the board holds. The teammates that could
    not get an inotify instance (``fs.inotify.max_user_instances`` is per user, shared with
    every other process of the user) are counted: they poll their inbox's ``stat`` instead.

Figures
    A table (one row per size), ``docs/images/idle_cpu.png`` (``--plot``) with the two curves,
    and a last line of ``key=value`` pairs. Targets: 200 idle teammates under 2% of one core in
    all, a broadcast read by all 200 within 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchkit import verdict

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.store.selection import open_store
from protocols.tasks.board import NewTask, TaskBoard
from swarm.team.lifecycle import spawn_member
from swarm.team.members import member_pid
from swarm.team.signatures import lead_mailbox
from teammate.options import MemberSpec

CPU_TARGET_PERCENT = 2.0
BROADCAST_TARGET_MS = 1000.0
TICKS = os.sysconf("SC_CLK_TCK")
POLLER = r"""
import json, os, sys, time
path = sys.argv[1]
while True:
    time.sleep(1.0)  # the baseline's poll interval, as Claude Code's
    try:
        with open(path) as f:
            entries = json.load(f)
    except (OSError, ValueError):
        continue
    if all(not isinstance(e, dict) or e.get("read") for e in entries):
        continue
    try:
        os.mkdir(path + ".lock")  # Claude Code's lock directory
    except FileExistsError:
        continue  # taken: next second
    try:
        with open(path) as f:
            entries = json.load(f)
        for e in entries:
            if isinstance(e, dict):
                e["read"] = True  # Claude Code marks everything read
        with open(path + ".poll-tmp", "w") as f:
            json.dump(entries, f, indent=2)
        os.replace(path + ".poll-tmp", path)
    finally:
        os.rmdir(path + ".lock")
"""


@dataclass
class Row:
    count: int
    cpu: float  # % of one core, all teammates
    wakes: float  # per second, all teammates
    polling: int  # teammates without inotify (woken by doorbells, and a look every 2 s)
    written_ms: float  # the broadcast call itself (median of the broadcasts)
    read_ms: float  # until every teammate marked it read (median of the broadcasts)
    poll_cpu: float
    poll_wakes: float
    poll_read_ms: float
    read_max_ms: float = 0.0  # the slowest of the broadcasts
    poll_read_max_ms: float = 0.0


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime
    return total


def wakes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                text = Path(f"/proc/{pid}/task/{task}/status").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("voluntary_ctxt_switches"):
                    total += int(line.split()[1])
    return total


def alive(pid: int) -> bool:
    """Running (an exited child of this process stays a zombie until reaped: reaped here)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def inotify_instances(pid: int) -> int:
    count = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                    count += 1
            except OSError:
                continue
    except OSError:
        pass
    return count


def make_board(paths: TeamPaths, completed: int) -> None:
    board = TaskBoard(paths)
    for start in range(0, completed, 100):  # short holds of the board's lock
        batch = [NewTask(f"done {n}") for n in range(start, min(completed, start + 100))]
        for task in board.create_many(batch):
            board.update(task.id, status="completed")


def settle(paths: TeamPaths, names: list[str], timeout: float) -> None:
    """Until every one of `names` has read its inbox and is idle (on files or PostgreSQL)."""
    store = open_store(paths)
    team, mailbox = store.team_file(), store.mailbox()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        config = team.load()
        if all((m := config.member(n)) is not None and m.isActive is False for n in names) and all(
            all(e.is_read for e in mailbox.read_all(n)) for n in names
        ):
            return
        time.sleep(0.5)
    raise SystemExit(f"{paths.team}: teammates did not settle in {timeout:.0f} s")


class SwarmTeam:
    def __init__(self, root: Path, team: str, completed: int) -> None:
        self.root = root
        self.paths = TeamPaths(root, team)
        TeamFile(self.paths).create(description="idle CPU")
        make_board(self.paths, completed)
        self.names: list[str] = []

    def grow(self, count: int) -> None:
        spec = MemberSpec(backend="subprocess", cwd=str(self.root))
        while len(self.names) < count:
            name = f"w{len(self.names)}"
            spawn_member(self.paths, name, "Nothing to do yet.", spec)
            self.names.append(name)

    def pids(self) -> list[int]:
        members = TeamFile(self.paths).load().members[1:]
        return [pid for m in members if (pid := member_pid(m)) is not None]

    def settle(self, timeout: float = 300) -> None:
        settle(self.paths, self.names, timeout)

    def stop(self) -> None:
        """SIGTERM to every teammate at once (each releases what it holds and exits), then
        SIGKILL to what is left after 60 s."""
        pids, self.names = (self.pids() if self.names else []), []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.2)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Pollers:
    def __init__(self, root: Path) -> None:
        self.paths = TeamPaths(root, "pollers")
        self.team = TeamFile(self.paths)
        self.team.create(description="1 s pollers")
        self.procs: list[subprocess.Popen[bytes]] = []

    def grow(self, count: int) -> None:
        mailbox = Mailbox(self.paths)
        while len(self.procs) < count:
            name = f"p{len(self.procs)}"
            self.team.add_member(name)
            path = mailbox.inbox(name).path
            mailbox.inbox(name).load()  # makes the `[]` file
            argv = [sys.executable, "-c", POLLER, str(path)]
            self.procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL))

    @property
    def names(self) -> list[str]:
        return [f"p{n}" for n in range(len(self.procs))]

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def broadcast_ms(paths: TeamPaths, names: list[str], text: str) -> tuple[float, float]:
    """(ms the send took, ms until every one of `names` marked it read)."""
    mailbox = lead_mailbox(paths)  # signed: the teammates check the lead's signature
    started = time.monotonic()
    mailbox.broadcast(text, sender="team-lead")
    written = time.monotonic()
    waiting, seen = set(names), {}
    deadline = started + 120
    while waiting and time.monotonic() < deadline:
        for name in list(waiting):
            path = mailbox.inbox(name).path
            try:
                st = os.stat(path)
            except OSError:
                continue
            signature = (st.st_ino, st.st_size, st.st_mtime_ns)
            if seen.get(name) == signature:
                continue
            seen[name] = signature
            try:
                entries = json.loads(path.read_text())
            except (OSError, ValueError):
                seen.pop(name)
                continue
            mine = [e for e in entries if isinstance(e, dict) and e.get("text") == text]
            if not mine or all(e.get("read") for e in mine):
                waiting.discard(name)
        time.sleep(0.005)
    done = time.monotonic()
    if waiting:
        print(f"  {len(waiting)} of {len(names)} never read {text!r} within 120 s")
        return (written - started) * 1000, float("inf")
    return (written - started) * 1000, (done - started) * 1000


def measure(pids: dict[str, list[int]], seconds: float) -> dict[str, tuple[float, float]]:
    """Per group: (% of one core, wake-ups per second) over one window."""
    cpu0 = {k: cpu_seconds(v) for k, v in pids.items()}
    wake0 = {k: wakes(v) for k, v in pids.items()}
    started = time.monotonic()
    time.sleep(seconds)  # the measuring window itself, not a wait for a condition
    elapsed = time.monotonic() - started
    return {
        k: (
            (cpu_seconds(v) - cpu0[k]) / elapsed * 100,
            max(0, wakes(v) - wake0[k]) / elapsed,
        )
        for k, v in pids.items()
    }


def plot(rows: list[Row], out: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    font_dir = Path("/usr/share/fonts/truetype/dejavu")
    font = ImageFont.truetype(str(font_dir / "DejaVuSans.ttf"), 15)
    bold = ImageFont.truetype(str(font_dir / "DejaVuSans-Bold.ttf"), 16)
    width, height, pad = 1100, 460, 70
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    panels = [
        ("idle CPU, % of one core (all teammates)", "cpu", "poll_cpu", CPU_TARGET_PERCENT),
        ("broadcast to '*': ms until all read", "read_ms", "poll_read_ms", BROADCAST_TARGET_MS),
    ]
    counts = [r.count for r in rows]
    panel_w = (width - pad) // 2
    for index, (title, mine, base, target) in enumerate(panels):
        left, top = pad + index * panel_w, 50
        right, bottom = left + panel_w - pad, height - 60
        values = [getattr(r, k) for r in rows for k in (mine, base)]
        finite = [v for v in values if v != float("inf")]
        top_value = max([*finite, target]) * 1.1 or 1.0
        draw.text((left, 15), title, fill="black", font=bold)
        draw.line([(left, top), (left, bottom), (right, bottom)], fill="black", width=2)

        def xy(
            count: int,
            value: float,
            box: tuple[int, int, int, int] = (left, top, right, bottom),
            scale: float = top_value,
        ) -> tuple[float, float]:
            left, top, right, bottom = box
            x = left + (right - left) * (count - min(counts)) / max(1, max(counts) - min(counts))
            y = bottom - (bottom - top) * min(value, scale) / scale
            return x, y

        for step in range(5):
            value = top_value * step / 4
            _, y = xy(counts[0], value)
            draw.line([(left - 5, y), (left, y)], fill="black")
            label = f"{value:,.0f}" if value >= 100 else f"{value:.2g}"
            draw.text((left - 8, y), label, fill="black", font=font, anchor="rm")
        for count in counts:
            x, _ = xy(count, 0)
            draw.line([(x, bottom), (x, bottom + 5)], fill="black")
            draw.text((x, bottom + 8), str(count), fill="black", font=font, anchor="mt")
        draw.text(((left + right) / 2, bottom + 30), "teammates", fill="black", font=font)
        _, ty = xy(counts[0], target)
        draw.line([(left, ty), (right, ty)], fill=(200, 200, 200), width=1)
        draw.text((right, ty - 4), f"target {target:g}", fill="gray", font=font, anchor="rb")
        series = [(mine, "swarm (inotify)", (31, 119, 180)), (base, "1 s poller", (214, 39, 40))]
        for key, _, color in series:
            points = [xy(r.count, getattr(r, key)) for r in rows]
            draw.line(points, fill=color, width=3)
            for x, y in points:
                draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=color)
        for n, (_, label, color) in enumerate(series):
            y = top + 5 + n * 22
            draw.line([(left + 15, y + 8), (left + 45, y + 8)], fill=color, width=3)
            draw.text((left + 52, y), label, fill="black", font=font)
    out.parent.mkdir(parents=True, exist_ok=True)
    image.save(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="10,50,100,200")
    parser.add_argument("--completed", type=int, default=2000, help="tasks on the board")
    parser.add_argument("--seconds", type=float, default=30.0, help="each CPU window")
    parser.add_argument("--plot", type=Path, default=Path("docs/images/idle_cpu.png"))
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--broadcasts",
        type=int,
        default=3,
        help="broadcasts at each size (the figures are their median; the verdict takes the "
        "slowest: every one must be read by all within the target)",
    )
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="swarm-bench-idle-") as directory:
        root = Path(directory)
        os.environ["CLAUDE_CONFIG_DIR"] = directory
        os.environ.pop("TMUX", None)
        mates = SwarmTeam(root, "idle", args.completed)
        empty = SwarmTeam(root, "empty", 0)
        pollers = Pollers(root)
        try:
            for count in counts:
                mates.grow(count)
                pollers.grow(count)
                if count == counts[0]:
                    empty.grow(count)
                    empty.settle()
                mates.settle()
                groups = {"swarm": mates.pids(), "poll": [p.pid for p in pollers.procs]}
                if count == counts[0]:
                    groups["empty"] = empty.pids()
                figures = measure(groups, args.seconds)
                if count == counts[0]:
                    empty_cpu, full_cpu = figures["empty"][0], figures["swarm"][0]
                    empty.stop()
                polling = sum(1 for pid in groups["swarm"] if inotify_instances(pid) == 0)
                timings, poll_timings = [], []
                for n in range(args.broadcasts):
                    if n:
                        mates.settle()
                    timings.append(broadcast_ms(mates.paths, mates.names, f"hello {count}.{n}"))
                    poll_timings.append(
                        broadcast_ms(pollers.paths, pollers.names, f"hello {count}.{n}")
                    )
                written = statistics.median(t[0] for t in timings)
                read = statistics.median(t[1] for t in timings)
                poll_read = statistics.median(t[1] for t in poll_timings)
                rows.append(
                    Row(
                        count,
                        figures["swarm"][0],
                        figures["swarm"][1],
                        polling,
                        written,
                        read,
                        figures["poll"][0],
                        figures["poll"][1],
                        poll_read,
                        max(t[1] for t in timings),
                        max(t[1] for t in poll_timings),
                    )
                )
                print(
                    f"{count:>4} teammates: {figures['swarm'][0]:.2f}% of a core, "
                    f"broadcast read by all in {read:.0f} ms; pollers {figures['poll'][0]:.2f}%, "
                    f"{poll_read:.0f} ms",
                    flush=True,
                )
                if count != counts[-1]:
                    mates.settle()
            report(rows, counts, args, empty_cpu, full_cpu)
        finally:
            mates.stop()
            empty.stop()
            pollers.stop()


def report(
    rows: list[Row], counts: list[int], args: argparse.Namespace, empty_cpu: float, full_cpu: float
) -> None:
    print()
    print(f"{args.seconds:g} s windows, board of {args.completed:,} completed tasks")
    print(
        "teammates | swarm: CPU %  wakes/s  no-inotify  broadcast sent / all read ms (max) | "
        "1 s pollers: CPU %  wakes/s  all read ms (max)"
    )
    for r in rows:
        print(
            f"{r.count:>9} | {r.cpu:>12.2f} {r.wakes:>8.0f} {r.polling:>11} "
            f"{r.written_ms:>14.0f} / {r.read_ms:.0f} ({r.read_max_ms:.0f}) | "
            f"{r.poll_cpu:>18.2f} {r.poll_wakes:>8.0f} {r.poll_read_ms:>8.0f} "
            f"({r.poll_read_max_ms:.0f})"
        )
    last = rows[-1]
    cpu_ok = last.cpu < CPU_TARGET_PERCENT
    read_ok = last.read_max_ms < BROADCAST_TARGET_MS
    print(
        f"{last.count} idle teammates: {last.cpu:.2f}% of a core  target < {CPU_TARGET_PERCENT}%"
        f"  {verdict(cpu_ok)}; {args.broadcasts} broadcasts read by all in {last.read_ms:.0f} ms"
        f" (median), {last.read_max_ms:.0f} ms (slowest)  target < "
        f"{BROADCAST_TARGET_MS:.0f} ms  {verdict(read_ok)}"
    )
    print(
        f"{counts[0]} teammates on an empty board {empty_cpu:.2f}% vs on {args.completed:,} done "
        f"tasks {full_cpu:.2f}% (same window)"
    )
    if not args.no_plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    pairs = [f"cpu_percent_{r.count}={r.cpu:.2f}" for r in rows]
    pairs += [f"broadcast_ms_{r.count}={r.read_ms:.0f}" for r in rows]
    pairs += [f"broadcast_max_ms_{r.count}={r.read_max_ms:.0f}" for r in rows]
    pairs += [f"poller_cpu_percent_{r.count}={r.poll_cpu:.2f}" for r in rows]
    pairs += [f"poller_broadcast_ms_{r.count}={r.poll_read_ms:.0f}" for r in rows]
    pairs += [f"polling_{last.count}={last.polling}", f"empty_board_cpu_percent={empty_cpu:.2f}"]
    print(" ".join(pairs) + f" verdict={verdict(cpu_ok and read_ok)}")


if __name__ == "__main__":
    main()
