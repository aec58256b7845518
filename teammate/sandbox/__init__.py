"""Commands in an OS sandbox: the settings (`teammate.sandbox.config`), bubblewrap
(`teammate.sandbox.bwrap`), Landlock where bubblewrap cannot run (`teammate.sandbox.landlock`:
files and TCP, no namespaces), and which agent gets one (`sandbox_for`).

A teammate's sandbox is on when its settings say ``sandbox.enabled: true``, and, when they say
nothing, when it runs in a mode that lets it act without asking (`SANDBOXED_MODES`:
acceptEdits, auto, bypassPermissions); ``sandbox.enabled: false`` turns it off. Where neither
bubblewrap nor Landlock can run, the commands run without one and the teammate says so once,
unless ``sandbox.failIfUnavailable`` is set: then it does not start.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from protocols.errors import Error
from protocols.values import PermissionMode
from teammate.sandbox.bwrap import Sandbox, unavailable
from teammate.sandbox.config import SandboxConfig

# modes in which an agent acts without asking first: its commands are sandboxed unless its
# settings say otherwise
SANDBOXED_MODES = frozenset(
    {PermissionMode.ACCEPT_EDITS, PermissionMode.AUTO, PermissionMode.BYPASS}
)


ENGINE_VAR = "SWARM_SANDBOX_ENGINE"  # bwrap or landlock: that one only (default: bwrap, else
# landlock)


class SandboxUnavailable(Error):
    """The settings require a sandbox and none can be made here; says why."""


def sandbox_for(
    config: SandboxConfig,
    cwd: Path,
    hidden: tuple[Path, ...] = (),
    say: Callable[[str], None] = lambda text: None,
    mode: str = PermissionMode.DEFAULT,
    environ: Mapping[str, str] | None = None,
) -> Sandbox | None:
    """The sandbox of an agent's commands (None: its commands run as they are): bubblewrap,
    else Landlock (module doc; ``SWARM_SANDBOX_ENGINE=bwrap|landlock`` picks one)."""
    by_mode = config.enabled is None and mode in SANDBOXED_MODES
    if not (config.enabled or by_mode):
        return None
    # loaded only for an agent that gets a sandbox: `swarm task add` imports this package (a
    # hook's sandbox), and must load neither ctypes nor socket
    from teammate.sandbox import landlock
    from teammate.sandbox.landlock import LandlockSandbox
    from teammate.sandbox.proxy import DomainProxy

    engine = (os.environ if environ is None else environ).get(ENGINE_VAR, "")
    why = unavailable() if engine != "landlock" else "SWARM_SANDBOX_ENGINE=landlock"
    abi = landlock.available() if engine != "bwrap" else None
    if why is None or abi is not None:  # (abi None: bubblewrap runs)
        tmp = Path(tempfile.mkdtemp(prefix="swarm-sandbox-"))  # its TMPDIR, writable inside
        where = (cwd.resolve(), tuple(p.resolve() for p in hidden), tmp)
        if why is None:
            proxy = None
            if config.domains:  # a list of domains: reached through its proxy, and only those
                proxy = DomainProxy(tmp / ".proxy.sock", config.domains)  # lives with the process
            return Sandbox(config, *where, proxy)
        lost = ["a pid namespace", "UDP"]
        if config.domains:
            lost.append(f"the allowed domains ({', '.join(config.domains)}): the network is off")
        assert abi is not None
        if abi < 4 and not config.network:
            lost.append(f"cutting TCP off (Landlock ABI {abi} < 4)")
        say(f"{why}: commands run under Landlock instead, without {'; '.join(lost)}")
        return LandlockSandbox(config, *where, None, abi)
    if config.fail_if_unavailable:
        raise SandboxUnavailable(f"sandbox.failIfUnavailable is set and {why}")
    reason = f"permission mode {mode} sandboxes commands" if by_mode else "sandbox.enabled is set"
    say(f"{reason} but {why} and Landlock is not there: commands run without a sandbox")
    return None
