"""`swarm host serve`: the agent that starts and stops a PostgreSQL team's teammates on this
machine, on requests filed through the store (`protocols.pg.hosts`).

It registers its host name with a lease, heartbeated every third of the lease by a thread with a
connection of its own (which also sweeps the team's expired member leases, as any live member
does). It waits on the team's ``LISTEN`` channel for ``@host:<name>``, and looks again every
`rescan_s` seconds whatever it heard. Each pending request is done in order and answered:

- spawn: `swarm.team.lifecycle.spawn_member`, as ``swarm spawn`` here would, with the local
  backends, this machine's config root and the request's options; the member is recorded as
  this host's (``swarmHost``), and the teammate gets the requesting lead's verify key and its
  signed first message (`RemoteLead`). Answered with the pid, or the error. A spawn with
  ``resume`` (``swarm spawn --resume --host``, ``swarm restart`` of a member here) carries on
  with the conversation of the member's transcript on this machine.
- stop: its teammate is stopped (SIGTERM to its process group, SIGKILL after the timeout).

Every hour (at its start first) it prunes the team's history that retention no longer keeps
(`protocols.pg.retention.Pruner`: read messages past ``$SWARM_HISTORY_DAYS`` or the cap, and
records of finished work), a few batches at a time between requests.

It watches the teammates it started. One that exits is recorded on its spawn request (its exit
code); if it is still a live member, it is declared dead at once (`Leases.end`: its tasks go back,
the lead is told), or, if it stopped cleanly, its lease is ended for the next sweep. One whose
member was declared dead (its lease ran out while it was cut off) or removed is stopped: it must
not go on with work that is another's now.

A store out of reach (this machine's network is down) stops nothing: each unit of work gives up
after `Database.reconnect_s`, and the agent says so and tries again, for as long as it takes; its
teammates, cut off too, are judged by their leases meanwhile.

On SIGTERM or SIGINT it stops its teammates (each hands its tasks back as it stops), declares
them dead, marks the host gone, and exits 0; a signal whose raise Python lost
(`protocols.stop_request`) ends its wait and is raised again by its loop. A host killed
outright leaves its teammates to their leases.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.errors import Error, StoreUnavailable
from protocols.inbox.entry import InboxEntry
from protocols.paths import TeamPaths
from protocols.pg.database import Database
from protocols.pg.hosts import Hosts, Request, host_channel
from protocols.pg.leases import Leases, lease_seconds
from protocols.pg.mailbox import append_entry
from protocols.pg.notify import Listener
from protocols.pg.retention import Pruner
from protocols.pg.store import PgStore
from protocols.stop_request import StopRequest
from protocols.values import MemberState
from swarm.backends import SpawnBackend, Spawned, choose_backend
from swarm.backends.base import wait_until
from swarm.team.lifecycle import RemoteLead, spawn_member
from swarm.team.members import stop_member
from teammate.options import MemberSpec

DEFAULT_RESCAN_S = 5.0


class Stopping(BaseException):
    """SIGTERM or SIGINT arrived: the agent winds down (not an `Exception`: no handler of a
    request takes it for that request's failure)."""


@dataclass
class Child:
    """A teammate this agent started, and the request that started it."""

    request_id: int
    spawned: Spawned
    backend: SpawnBackend


class HostAgent:
    """Host `name` of the team at `paths` (a PostgreSQL team), starting teammates in `cwd`."""

    def __init__(
        self,
        paths: TeamPaths,
        name: str,
        cwd: Path,
        say: Callable[[str], None],
        rescan_s: float = DEFAULT_RESCAN_S,
        lease_s: float | None = None,
    ) -> None:
        self.paths = paths
        self.name = name
        self.cwd = cwd
        self.say = say
        self.rescan_s = rescan_s
        self.lease_s = lease_seconds() if lease_s is None else lease_s
        self.store = PgStore(paths)
        self.hosts = Hosts(self.store.db, paths.team)
        self.leases = Leases(self.store.db, paths.team)
        self.children: dict[str, Child] = {}
        self.pruner = Pruner(self.store.db, paths.team, say)  # the team's history, hourly

    def serve(self) -> int:
        """Serve until SIGTERM or SIGINT; returns the exit code (module doc)."""
        if not self.store.team_exists():
            raise Error(f"team {self.paths.team!r} not found in the store {self.store.where()}")
        info = {"machine": socket.gethostname(), "pid": os.getpid(), "cwd": str(self.cwd)}
        request = StopRequest(Stopping)
        wake = request.open()

        def stopping(signum: int, frame: object) -> None:
            raise request.ask(signal.Signals(signum).name)

        previous = {s: signal.signal(s, stopping) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.hosts.register(self.name, info, self.lease_s)
            self.say(f"host {self.name} serving team {self.paths.team!r} ({self.store.where()})")
            with self._heartbeating(), Listener(Database(self.store.url), self.paths.team) as ear:
                while True:
                    request.check()
                    try:
                        self.step()
                        ear.heard({host_channel(self.name)}, self.rescan_s, wake_fds=(wake,))
                    except StoreUnavailable as exc:  # its network is down: it serves on
                        self.say(f"{exc}; trying again")
        except Stopping as why:
            self.say(f"{why}: stopping {len(self.children)} teammate(s)")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            request.close()
            os.close(wake)
            self._wind_down()
        return 0

    def step(self) -> None:
        """One pass: every pending request, then the teammates' processes, then the team's
        history when due (`protocols.pg.retention`)."""
        for request in self.hosts.pending(self.name):
            self.handle(request)
        self.check_children()
        self.pruner.maybe()

    # requests

    def handle(self, request: Request) -> None:
        try:
            outcome = self._spawn(request) if request.kind == "spawn" else self._stop(request)
        except Exception as exc:  # any failure is the request's answer; the agent serves on
            self.say(f"request #{request.id} ({request.kind} {request.member}) failed: {exc}")
            self.hosts.answer(request.id, False, {"error": str(exc) or type(exc).__name__})
            return
        self.say(f"request #{request.id}: {request.kind} {request.member}: {outcome}")
        self.hosts.answer(request.id, True, outcome)

    def _spawn(self, request: Request) -> dict[str, Any]:
        spec = MemberSpec.from_value(request.body.get("spec"))
        prompt = InboxEntry.from_json_dict(request.body["prompt"])
        if spec is None:
            raise Error("the request holds no member options (spec)")
        if spec.cwd is None:
            spec = dataclasses.replace(spec, cwd=str(self.cwd))
        elif not Path(spec.cwd).is_dir():  # a path on the lead's machine, not this one
            raise Error(f"its directory {spec.cwd} is not a directory on this host")
        stale = self.children.get(request.member)
        if stale is not None and self.store.team_file().load().member(request.member) is None:
            self._retire(request.member, stale)  # its member is gone: never beside the new one
        self._clear_child(request.member)
        key = request.body.get("leadVerifyKey")
        lead = RemoteLead(self.name, key if isinstance(key, str) else None, self._deliver(prompt))
        backend = choose_backend(spec.backend, socket_name=os.environ.get("SWARM_TMUX_SOCKET"))
        member, spawned = spawn_member(
            self.paths, request.member, prompt.text, spec, backend=backend, lead=lead
        )
        self.children[request.member] = Child(request.id, spawned, backend)
        return {
            "host": self.name,
            "machine": socket.gethostname(),
            "pid": spawned.pid,
            "backend": spawned.backend_type,
            "pane": spawned.pane_id or None,
            "socket": spawned.socket_name,
            "color": member.color,
        }

    def _clear_child(self, name: str) -> None:
        """Before a teammate of `name` is started again here (a restart, a resume): the one
        this agent started before must be gone, and its exit recorded now, not later on the
        new instance's name."""
        old = self.children.get(name)
        if old is None:
            return
        if old.backend.is_alive(old.spawned):
            pid = old.spawned.pid
            raise Error(f"{name!r} is still running on host {self.name!r} (pid {pid})")
        self._exited(name, old)

    def _deliver(self, entry: InboxEntry) -> Callable[[str], None]:
        def deliver(name: str) -> None:
            self.store.db.run(
                lambda c: append_entry(c, self.paths.team, name, entry), "deliver the prompt"
            )

        return deliver

    def _stop(self, request: Request) -> dict[str, Any]:
        timeout = float(request.body.get("timeout", 5.0))
        child = self.children.get(request.member)
        if child is not None:
            grace = float(request.body.get("grace", 0.0))  # it approved a shutdown: it is going
            wait_until(lambda: not child.backend.is_alive(child.spawned), grace)
            if not child.backend.is_alive(child.spawned):
                return {"stopped": False, "why": "it had exited"}
            child.backend.stop(child.spawned, timeout)
            return {"stopped": True, "pid": child.spawned.pid}
        member = self.store.team_file().load().member(request.member)
        if member is None:
            return {"stopped": False, "why": "no such member"}
        stop_member(self.paths, member, timeout, here=True)  # started by an earlier agent
        return {"stopped": True, "pid": (member.model_extra or {}).get("pid")}

    # its teammates

    def check_children(self) -> None:
        leases = self.leases.view()
        for name, child in list(self.children.items()):
            if child.backend.is_alive(child.spawned):
                lease = leases.get(name)
                if lease is None or not lease.alive:  # removed, or declared dead: stop it
                    self.say(f"{name} is no longer a live member: stopping pid {child.spawned.pid}")
                    child.backend.stop(child.spawned)
                continue
            self._exited(name, child)

    def _retire(self, name: str, child: Child) -> None:
        """Stop what is left of a teammate whose member was removed, and forget it."""
        if child.backend.is_alive(child.spawned):
            self.say(f"{name} is no longer a member: stopping pid {child.spawned.pid}")
            child.backend.stop(child.spawned)
        self.hosts.record_exit(child.request_id, _exit_code(child))
        del self.children[name]

    def _exited(self, name: str, child: Child) -> None:
        code = _exit_code(child)
        self.hosts.record_exit(child.request_id, code)
        del self.children[name]
        status = self.store.read_status(name)
        if status is not None and status.state == MemberState.STOPPED:
            self.leases.drop(name)  # a clean stop: dead at once, the next sweep tells the lead
            self.say(f"{name} stopped (exit code {code})")
            return
        self.leases.end(name, f"its process on host {self.name} exited, code {code}")
        self.say(f"{name} exited (code {code}); declared dead")

    def _wind_down(self) -> None:
        """Stop every teammate, declare each dead, leave (fresh connections: a signal may have
        cut the old one's work short)."""
        self.store.db.close()
        with Database(self.store.url, reconnect_s=5.0) as db:
            hosts, leases = Hosts(db, self.paths.team), Leases(db, self.paths.team)
            for name, child in list(self.children.items()):
                with contextlib.suppress(Error, OSError):
                    child.backend.stop(child.spawned)
                    hosts.record_exit(child.request_id, _exit_code(child))
                    leases.end(name, f"its host {self.name} stopped serving")
            with contextlib.suppress(Error):
                hosts.leave(self.name)
        self.say(f"host {self.name} left team {self.paths.team!r}")

    @contextlib.contextmanager
    def _heartbeating(self) -> Iterator[None]:
        stop = threading.Event()

        def beat() -> None:
            with Database(self.store.url) as db:
                hosts, leases = Hosts(db, self.paths.team), Leases(db, self.paths.team)
                while not stop.wait(self.lease_s / 3):
                    try:
                        hosts.heartbeat(self.name, self.lease_s)
                        leases.sweep()  # as any live member does: the dead's tasks go back
                    except Error as exc:  # the server is away: the next beat tries again
                        self.say(f"heartbeat: {exc}")

        thread = threading.Thread(target=beat, name=f"host-{self.name}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)


def _exit_code(child: Child) -> int | None:
    """Its exit status when its backend knows it (a subprocess; not a tmux pane)."""
    exit_code = getattr(child.backend, "exit_code", None)
    return exit_code(child.spawned) if callable(exit_code) else None
