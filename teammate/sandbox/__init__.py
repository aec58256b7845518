"""Commands in an OS sandbox: the settings (`teammate.sandbox.config`), bubblewrap
(`teammate.sandbox.bwrap`), and which agent gets one (`sandbox_for`).

A teammate's sandbox is on when its settings say ``sandbox.enabled: true``. Where bubblewrap
cannot run, the commands run without one and the teammate says so once, unless
``sandbox.failIfUnavailable`` is set: then it does not start.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from protocols.errors import Error
from teammate.sandbox.bwrap import Sandbox, unavailable
from teammate.sandbox.config import SandboxConfig


class SandboxUnavailable(Error):
    """The settings require a sandbox and none can be made here; says why."""


def sandbox_for(
    config: SandboxConfig,
    cwd: Path,
    hidden: tuple[Path, ...] = (),
    say: Callable[[str], None] = lambda text: None,
) -> Sandbox | None:
    """The sandbox of an agent's commands (None: its commands run as they are)."""
    if not config.enabled:
        return None
    why = unavailable()
    if why is None:
        tmp = Path(tempfile.mkdtemp(prefix="swarm-sandbox-"))  # its TMPDIR, writable inside
        return Sandbox(config, cwd.resolve(), tuple(p.resolve() for p in hidden), tmp)
    if config.fail_if_unavailable:
        raise SandboxUnavailable(f"sandbox.failIfUnavailable is set and {why}")
    say(f"sandbox.enabled is set but {why}: commands run without a sandbox")
    return None
