"""Wake-up to model request: a message written into an idle Claude teammate's inbox, to that
teammate's next model request; a swarm teammate and a real Claude Code side by side.

What it measures
    One team, one run. Its members: an idle swarm Claude teammate (``python -m teammate --model
    sonnet``, the real `anthropic` SDK) and an idle real Claude Code teammate per version
    (2.1.88 and 2.1.330, installed from npm into .cache/, run offline in tmux panes on a private
    server, started with ``swarm spawn --teammate-command``). Every model is the test suite's
    local Messages API server (``tests/messages_api.py``, with ``keep_alive``: HTTP/1.1 as the
    real API speaks it), which notes the monotonic time each request arrives, per agent. Each
    round writes one message into one teammate's inbox the way ``swarm send`` does
    (`Mailbox.post`), notes when the write commits (the rename that makes the message visible)
    and when it returns, and waits for the first request of that agent whose newest message
    holds the round's token: the figures are that request's arrival minus those times. Then
    it waits for the teammate's ``idle_notification`` and leaves it idle for a random gap
    (``--gap`` seconds on average, 0.5x to 1.5x: Claude Code polls its inbox every 1 s, so the
    phase must vary) before the next round. The swarm rounds (``--rounds``) and the Claude
    Code rounds (``--cc-rounds`` per version) are interleaved, so both sides see the same load.
    ``--also-swarm LABEL=PYTHON`` adds a swarm teammate run by another checkout's Python (its
    venv's ``python``): before and after a change, in the same run.

Figures
    median, p90 and max per side, in ms, from the write's commit and from its end, and Claude
    Code's median over swarm's (target: 100x the 2.1.88 median). From the commit is the figure
    the ratio uses: a reader sees the message at the rename, while the sender still fsyncs the
    directory, records the message and lets go of the lock (a few ms on a loaded machine), so a
    teammate that answers at once has its request out before the write returns (a figure from
    the end below zero). The commit's time comes from wrapping ``os.replace`` in this process
    during the write. The load average is printed at the start and the end: the machine is
    shared, and only the side-by-side ratio means much on it.

Everything runs under a temporary config root and HOME; nothing leaves this machine
(``--claude-code none`` measures swarm alone, with no tmux, node or npm needed). The last line
printed is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchkit import percentile, start_claude_teammate, verdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import claude_code
from claude_code import MODEL, reacting
from helpers import wait_for
from messages_api import AGENT_KEY, MessagesAPI, Turn, by_agent

from protocols import LEAD_NAME, Mailbox, TeamFile, TeamPaths
from protocols.pids import pid_alive

TEAM = "wake"
SWARM = "mate"
TARGET_RATIO = 100.0
START_S = 120.0  # a Claude Code's first start, on a loaded machine
TURN_S = 60.0
PROMPT = "You are idle; answer each message."


@dataclass
class Member:
    """One idle teammate being measured."""

    name: str
    label: str
    latencies_ms: list[float] = field(default_factory=list)  # from the write's commit
    after_write_ms: list[float] = field(default_factory=list)  # from its end


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="swarm rounds")
    parser.add_argument("--cc-rounds", type=int, default=10, help="rounds per Claude Code")
    parser.add_argument("--gap", type=float, default=1.0, help="mean idle gap between rounds, s")
    parser.add_argument(
        "--also-swarm",
        metavar="LABEL=PYTHON",
        type=lambda text: tuple(text.split("=", 1)),
        action="append",
        default=[],
        help="one more swarm teammate, run by PYTHON (another checkout's venv: before/after)",
    )
    parser.add_argument(
        "--claude-code",
        choices=[*claude_code.VERSIONS, "all", "none"],
        default="all",
        help="which Claude Code to run next to swarm's teammate",
    )
    args = parser.parse_args()
    versions = {"all": claude_code.VERSIONS, "none": ()}.get(args.claude_code, (args.claude_code,))
    programs: dict[str, Path] = {}
    for version in versions:
        try:
            programs[version] = claude_code.install(version)
        except claude_code.Unavailable as exc:
            print(f"wake_to_request: Claude Code {version} skipped: {exc}")
    if programs and shutil.which("tmux") is None:
        print("wake_to_request: Claude Code skipped: tmux is not installed")
        programs = {}
    load_before = os.getloadavg()
    members = run(programs, args)
    load_after = os.getloadavg()
    return report(members, args, load_before, load_after)


def run(programs: dict[str, Path], args: argparse.Namespace) -> list[Member]:
    root = Path(tempfile.mkdtemp(prefix="swarm-bench-wake-"))
    config, home, work = root / "config", root / "home", root / "work"
    for directory in (config, home, work):
        directory.mkdir()
    socket = f"swarm-bench-wake-{os.getpid()}"
    os.environ.update(CLAUDE_CONFIG_DIR=str(config), HOME=str(home))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # else each start compiles every module
    env = {**os.environ, "SWARM_TEAM": TEAM, "SWARM_TMUX_SOCKET": socket}
    pythons = {SWARM: sys.executable} | {f"{SWARM}-{k}": v for k, v in args.also_swarm}
    swarm_members = [Member(SWARM, "swarm teammate")]
    swarm_members += [
        Member(n, f"swarm ({n.removeprefix(SWARM + '-')})") for n in list(pythons)[1:]
    ]
    cc_members = [Member(f"cc-{v.replace('.', '-')}", f"Claude Code {v}") for v in programs]
    members = [*swarm_members, *cc_members]
    scripts: dict[str, Any] = {m.name: lambda body: Turn.text("Noted.") for m in swarm_members}
    scripts.update({m.name: reacting([]) for m in cc_members})
    procs: list[subprocess.Popen[bytes]] = []
    try:
        paths = TeamPaths.for_team(TEAM)
        TeamFile(paths).create(description="wake-up to model request", cwd=work)
        claude_code.trust(config, work)
        (home / ".claude.json").write_text((config / ".claude.json").read_text())
        mailbox = Mailbox(paths)
        with MessagesAPI(by_agent(scripts), keep_alive=True) as api:
            for name, python in pythons.items():
                TeamFile(paths).add_member(name, cwd=work)
                url = api.url_for(name)
                procs.append(start_claude_teammate(name, TEAM, str(config), work, url, python))
                mailbox.post(name, PROMPT, sender=LEAD_NAME)
            # one Claude Code at a time, each idle before the next is added, and 2.1.88 last:
            # it rewrites config.json in place without the lock, from a read made a moment
            # before (fire and forget, landing even after its idle notification), so a member
            # added while it runs can be dropped (CI lost 2.1.330 so); once it runs, nobody joins
            for member, program in sorted(
                zip(cc_members, programs.values(), strict=True),
                key=lambda pair: not claude_code.is_newest(pair[1]),
            ):
                spawn_claude_code(member.name, program, work, api, env)
                wait_idle(mailbox, member)
            for member in swarm_members:
                wait_idle(mailbox, member)
            for round_no, member in enumerate(schedule(swarm_members, cc_members, args)):
                time.sleep(args.gap * random.uniform(0.5, 1.5))  # idle, on purpose
                start, end = one_round(api, mailbox, member, round_no)
                member.latencies_ms.append(start)
                member.after_write_ms.append(end)
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        stop_panes(socket)
        shutil.rmtree(root, ignore_errors=True)
    return members


def stop_panes(socket: str) -> None:
    """Kill the private tmux server, and wait for the programs in its panes to exit (Claude
    Code writes a backup of its settings as it exits: into the config root, were it removed)."""
    listed = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_pid}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    for pid in (int(p) for p in listed if p.isdigit()):
        wait_for(lambda pid=pid: not pid_alive(pid), f"pane process {pid} to exit", TURN_S)


def spawn_claude_code(
    name: str, program: Path, work: Path, api: MessagesAPI, env: dict[str, str]
) -> None:
    """A Claude Code teammate in a tmux pane (``swarm spawn --teammate-command``), offline."""
    argv = [sys.executable, "-m", "swarm", "spawn", name, "-p", PROMPT]
    argv += ["--model", MODEL, "--teammate-command", claude_code.command(program)]
    argv += ["--backend", "tmux", "--permission-mode", "acceptEdits", "--cwd", str(work)]
    spawn_env = {**env, "ANTHROPIC_BASE_URL": api.url_for(name)}
    spawn_env["ANTHROPIC_API_KEY"] = claude_code.API_KEY
    done = subprocess.run(argv, env=spawn_env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"wake_to_request: swarm spawn {name} failed:\n{done.stderr}")


def schedule(swarm: list[Member], cc: list[Member], args: argparse.Namespace) -> list[Member]:
    """Every swarm round (the swarm teammates taking turns first), with the Claude Code rounds
    spread evenly between them."""
    order: list[Member] = [
        m for r in range(args.rounds) for m in (swarm if r % 2 == 0 else swarm[::-1])
    ]
    extra = [m for _ in range(args.cc_rounds) for m in cc]
    for i, member in enumerate(extra):
        order.insert(round((i + 0.5) * len(order) / len(extra)) + i, member)
    return order


def one_round(
    api: MessagesAPI, mailbox: Mailbox, member: Member, round_no: int
) -> tuple[float, float]:
    """Write one message to `member`, wait for its request and its return to idle; the ms
    from the write's commit (its rename), and from its end, to the request's arrival."""
    token = f"wake-{round_no}-{random.getrandbits(32):08x}"
    idle_before = idle_count(mailbox, member.name)
    seen = len(api.arrivals)
    with commit_clock(f"{member.name}.json") as committed:
        mailbox.post(member.name, f"Ping {token}: say noted.", sender=LEAD_NAME, summary="ping")
    written = time.monotonic()

    def arrival() -> float | None:
        for at, body in api.arrivals[seen:]:
            if body.get(AGENT_KEY) == member.name and token in json.dumps(body["messages"][-1]):
                return at
        return None

    arrived = wait_for(arrival, f"{member.label}'s request for {token}", TURN_S)
    wait_for(
        lambda: idle_count(mailbox, member.name) > idle_before,
        f"{member.label} idle after {token}",
        TURN_S,
    )
    return (arrived - committed[0]) * 1000, (arrived - written) * 1000


@contextlib.contextmanager
def commit_clock(name: str) -> Iterator[list[float]]:
    """The time at which a write in this process commits file `name`: the rename that makes
    it visible to readers (`protocols.fs.jsonio` renames with ``os.replace``, wrapped meanwhile)."""
    noted: list[float] = []
    real = os.replace

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        real(src, dst, *args, **kwargs)
        if os.path.basename(os.fsdecode(dst)) == name and not noted:
            noted.append(time.monotonic())

    os.replace = replace
    try:
        yield noted
    finally:
        os.replace = real
    if not noted:
        raise SystemExit(f"wake_to_request: no rename of {name} seen (has the write changed?)")


def wait_idle(mailbox: Mailbox, member: Member) -> None:
    """Until `member` has told the lead it is idle after its prompt."""
    wait_for(
        lambda: idle_count(mailbox, member.name) >= 1,
        f"{member.label} to go idle after its prompt",
        START_S,
    )


def idle_count(mailbox: Mailbox, name: str) -> int:
    """How many idle notifications `name` has sent the lead (raw entries: no model parsed)."""
    items = mailbox.inbox(LEAD_NAME).peek().items
    return sum(
        1
        for item in items
        if isinstance(item, dict)
        and item.get("from") == name
        and '"idle_notification"' in str(item.get("text", ""))
    )


def report(
    members: list[Member],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> int:
    def loads(values: tuple[float, float, float]) -> str:
        return " ".join(f"{v:.2f}" for v in values)

    def stats(values: list[float]) -> tuple[float, float, float]:
        return percentile(values, 50), percentile(values, 90), max(values)

    def tag(member: Member) -> str:
        if member.name.startswith("cc-"):
            return member.name.replace("cc-", "v").replace("-", "_")
        return "swarm" + member.name.removeprefix(SWARM).replace("-", "_")

    print(
        f"message written -> that teammate's next model request, ms ({os.cpu_count()} cores; "
        f"load average {loads(load_before)} before, {loads(load_after)} after)"
    )
    heading = ("from the write's commit (rename)", "from the write's end")
    print(f"  {'':28}  {heading[0]:^30}  {heading[1]:^30}")
    figures: dict[str, Any] = {}
    for member in members:
        median, p90, top = stats(member.latencies_ms)
        end_median, end_p90, end_top = stats(member.after_write_ms)
        print(
            f"  {member.label:22} n={len(member.latencies_ms):3}  median {median:6.1f} "
            f"p90 {p90:6.1f} max {top:6.1f}  median {end_median:6.1f} p90 {end_p90:6.1f} "
            f"max {end_top:6.1f}"
        )
        figures.update(
            {f"{tag(member)}_median_ms": f"{median:.1f}", f"{tag(member)}_p90_ms": f"{p90:.1f}"}
            | {f"{tag(member)}_max_ms": f"{top:.1f}"}
            | {f"{tag(member)}_after_write_median_ms": f"{end_median:.1f}"}
            | {f"{tag(member)}_n": len(member.latencies_ms)}
        )
    for cc in (m for m in members if m.name.startswith("cc-")):
        for mate in (m for m in members if not m.name.startswith("cc-")):
            ratio = percentile(cc.latencies_ms, 50) / percentile(mate.latencies_ms, 50)
            target = f"target >= {TARGET_RATIO:g}x  {verdict(ratio >= TARGET_RATIO)}"
            print(
                f"  {cc.label} median / {mate.label} median: {ratio:6.1f}x"
                f"{'   ' + target if cc.name == 'cc-2-1-88' else ''}"
            )
            figures[f"{tag(cc)}_over_{tag(mate)}"] = f"{ratio:.1f}"
    figures["load"] = f"{load_before[0]:.2f}"
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
