"""A spawn backend that starts nothing, for unit tests of what surrounds a spawn.

`StubBackend` records every `SpawnRequest` it is given (the command line, directory and
environment a teammate would get) and hands back a `Spawned` for a process that does not exist,
so the code around a spawn (the member entry, the first inbox message, the recorded spec, undoing
a failed spawn, shutting a member down) runs without starting a teammate. ``fail_with`` makes
the next spawn fail as a real backend would. It is not offered to users (`BACKEND_KINDS`); a
member it "started" is stopped by `choose_backend("stub")`, which does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swarm.backends.base import Spawned, SpawnError, SpawnRequest

NO_PROCESS = 0  # the pid of what a stub "started": no process has it


@dataclass
class StubBackend:
    backend_type: str = "stub"
    requests: list[SpawnRequest] = field(default_factory=list)
    stopped: list[Spawned] = field(default_factory=list)
    fail_with: str | None = None  # the next spawn raises SpawnError with this text

    def spawn(self, request: SpawnRequest) -> Spawned:
        if self.fail_with is not None:
            reason, self.fail_with = self.fail_with, None
            raise SpawnError(f"cannot start {request.name!r}: {reason}")
        self.requests.append(request)
        return Spawned(self.backend_type, "", NO_PROCESS, None, None, request.token)

    def is_alive(self, spawned: Spawned) -> bool:
        return spawned not in self.stopped

    def stop(self, spawned: Spawned, timeout: float = 5.0) -> None:
        self.stopped.append(spawned)
