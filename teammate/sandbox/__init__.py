"""Commands in an OS sandbox: the settings (`teammate.sandbox.config`), bubblewrap
(`teammate.sandbox.bwrap`), and which agent gets one (`sandbox_for`).

A teammate's sandbox is on when its settings say ``sandbox.enabled: true``, and, when they say
nothing, when it runs in a mode that lets it act without asking (`SANDBOXED_MODES`:
acceptEdits, auto, bypassPermissions); ``sandbox.enabled: false`` turns it off. Where
bubblewrap cannot run, the commands run without one and the teammate says so once, unless
``sandbox.failIfUnavailable`` is set: then it does not start.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from protocols.errors import Error
from protocols.values import PermissionMode
from teammate.sandbox.bwrap import Sandbox, unavailable
from teammate.sandbox.config import SandboxConfig
from teammate.sandbox.proxy import DomainProxy

# modes in which an agent acts without asking first: its commands are sandboxed unless its
# settings say otherwise
SANDBOXED_MODES = frozenset(
    {PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO, PermissionMode.BYPASS}
)


class SandboxUnavailable(Error):
    """The settings require a sandbox and none can be made here; says why."""


def sandbox_for(
    config: SandboxConfig,
    cwd: Path,
    hidden: tuple[Path, ...] = (),
    say: Callable[[str], None] = lambda text: None,
    mode: str = PermissionMode.DEFAULT,
) -> Sandbox | None:
    """The sandbox of an agent's commands (None: its commands run as they are)."""
    by_mode = config.enabled is None and mode in SANDBOXED_MODES
    if not (config.enabled or by_mode):
        return None
    why = unavailable()
    if why is None:
        tmp = Path(tempfile.mkdtemp(prefix="swarm-sandbox-"))  # its TMPDIR, writable inside
        proxy = None
        if config.domains:  # a list of domains: reached through its proxy, and only those
            proxy = DomainProxy(tmp / ".proxy.sock", config.domains)  # lives with the process
        return Sandbox(config, cwd.resolve(), tuple(p.resolve() for p in hidden), tmp, proxy)
    if config.fail_if_unavailable:
        raise SandboxUnavailable(f"sandbox.failIfUnavailable is set and {why}")
    reason = f"permission mode {mode} sandboxes commands" if by_mode else "sandbox.enabled is set"
    say(f"{reason} but {why}: commands run without a sandbox")
    return None
