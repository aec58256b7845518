"""A teammate's commands in an OS sandbox: bubblewrap (``bwrap``) on Linux.

`Sandbox.wrap` turns ``bash -c COMMAND`` into the same command under bwrap:

- the whole file system read-only (``--ro-bind / /``, ``/tmp`` too), a fresh ``/dev`` and
  ``/proc`` (so ``/proc/self/root`` is the sandbox's own root);
- writable: the working directory (a worktree, for a teammate in one), a temporary directory of
  the agent's own (``TMPDIR``) and the settings' ``filesystem.allowWrite``;
  ``filesystem.denyWrite`` read-only again inside those;
- unreadable: ``filesystem.denyRead`` and always the lead's signing keys (an empty directory, or
  ``/dev/null`` for a file, is mounted over each);
- no network (``--unshare-net``: only a loopback of its own) unless ``network.allowedDomains``
  holds ``"*"``; a list of domains is reached through the agent's proxy
  (`teammate.sandbox.proxy`: ``HTTP_PROXY`` and ``HTTPS_PROXY`` inside), and only those;
- its own pid namespace, a new session (no ``TIOCSTI`` into the teammate's terminal), and it
  dies with the teammate.

Everything the command starts, a background ``&`` included, stays inside: the rules hold for
every descendant. A symbolic link made inside points at the read-only outside world.
`unavailable` says, once per process, why bwrap cannot run here (None: it can).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from teammate.sandbox.config import SandboxConfig

if TYPE_CHECKING:
    from teammate.sandbox.proxy import DomainProxy

READ_ONLY = "Read-only file system"
NO_NETWORK = (
    "Network is unreachable",
    "Connection refused",  # its loopback is its own: the machine's servers are not on it
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "getaddrinfo failed",
)


def unavailable() -> str | None:
    """Why no sandbox can be made on this machine (None: bwrap works here)."""
    path = shutil.which("bwrap")
    if path is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    return _probe(path)


@functools.cache
def _probe(path: str) -> str | None:
    """Why the bwrap at `path` cannot make a sandbox (None: it can); tried once per process."""
    probe = [path, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bwrap cannot make a sandbox here: {said[-1] if said else done.returncode}"
    return None


@dataclass(frozen=True)
class Sandbox:
    """The sandbox of one agent's commands, run in `cwd`."""

    config: SandboxConfig
    cwd: Path
    hidden: tuple[Path, ...] = ()  # never readable inside (the lead's keys)
    tmp: Path | None = None  # its writable temporary directory (TMPDIR inside)
    proxy: DomainProxy | None = None  # its domain proxy (allowedDomains: a list of them)

    def excluded(self, command: str) -> bool:
        """Whether `command` runs outside the sandbox (``excludedCommands``: ``docker`` or
        ``docker *`` for it and what starts with it)."""
        text = command.strip()
        for pattern in self.config.excluded_commands:
            bare = pattern.strip().removesuffix("*").strip()
            if fnmatch.fnmatchcase(text, pattern) or text == bare or text.startswith(bare + " "):
                return True
        return False

    def wrap(self, argv: Sequence[str], cwd: Path | None = None) -> list[str]:
        """`argv` run inside the sandbox (module doc), in `cwd` (default: its working
        directory; a sub-agent's worktree is another). Where it may write is the sandbox's,
        whatever `cwd` is."""
        bwrap = shutil.which("bwrap") or "bwrap"
        wrapped = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if self.tmp is not None:
            wrapped += ["--setenv", "TMPDIR", str(self.tmp)]
        for path in self._writable():
            wrapped += ["--bind", str(path), str(path)]
        for path in self._existing(self.config.deny_write):
            wrapped += ["--ro-bind", str(path), str(path)]
        hidden = [p for p in self.hidden if p.exists()]
        unreadable = [*self._existing(self.config.deny_read), *hidden]
        for path in unreadable:
            if path.is_dir():
                wrapped += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                wrapped += ["--ro-bind", "/dev/null", str(path)]
        if not self.config.network:
            wrapped.append("--unshare-net")
        if self.proxy is not None:  # the allowed domains, through the proxy only
            from teammate.sandbox.proxy import FORWARD, PORT

            address = f"http://127.0.0.1:{PORT}"
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                wrapped += ["--setenv", name, address]
            socket = str(self.proxy.socket_path)
            argv = [sys.executable, "-S", "-c", FORWARD, socket, str(PORT), *argv]
        wrapped += ["--unshare-pid", "--unshare-ipc", "--new-session", "--die-with-parent"]
        wrapped += ["--chdir", str(cwd or self.cwd), "--", *argv]
        return wrapped

    def why(self, output: str) -> str | None:
        """One line for the model when `output` shows the sandbox stopped the command."""
        writable = ", ".join(str(p) for p in self._writable())
        if READ_ONLY in output:
            return (
                f"[sandbox] commands may write only in {writable} (TMPDIR is the last) "
                "(sandbox.filesystem.allowWrite adds places; dangerouslyDisableSandbox asks "
                "to run one outside)"
            )
        domains = self.config.domains
        refused = self.proxy.take_refused() if self.proxy is not None else []
        if domains and (refused or any(sign in output for sign in NO_NETWORK)):
            hosts = f"; {', '.join(dict.fromkeys(refused))} refused" if refused else ""
            return (
                f"[sandbox] the network allows only {', '.join(domains)}, through the proxy "
                f"that HTTP_PROXY and HTTPS_PROXY name{hosts} (sandbox.network.allowedDomains "
                "adds domains)"
            )
        if not self.config.network and any(sign in output for sign in NO_NETWORK):
            return (
                "[sandbox] the network is off for sandboxed commands, and the machine's own "
                'servers are out of reach (sandbox.network.allowedDomains: ["*"] turns it on)'
            )
        return None

    def _writable(self) -> list[Path]:
        """Where its commands may write: the working directory, allowWrite, its TMPDIR."""
        tmp = [self.tmp] if self.tmp is not None else []
        return [self.cwd, *self._existing(self.config.allow_write), *tmp]

    def _existing(self, given: Iterable[str]) -> list[Path]:
        """`given` as absolute paths (``~`` is the home, relative is from the working
        directory), those that exist: bwrap mounts only what is there."""
        found = []
        for text in given:
            path = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
            path = path if path.is_absolute() else self.cwd / path
            if path.exists():
                found.append(path.resolve())
        return found
