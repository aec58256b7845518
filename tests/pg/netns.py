"""A "host" that is a network namespace of its own, reaching this machine over a veth pair.

`Namespace` makes (as root, with iproute2) a namespace named ``swarm-<pid>-<n>``, a veth pair
whose one end stays here and whose other end goes into the namespace, a private /30 from
``10.213.0.0/16`` for the pair (``.1`` here, ``.2`` there), and brings both ends and the
namespace's ``lo`` up. The namespace has no other route: from inside, only the address here
(`outside`) is reachable. Nothing else of this machine's network changes: the only route added
here is the /30's own, which the kernel adds with the address and removes with the veth.

`cut` takes the namespace's end of the link down (from inside, the network is gone: connecting
fails and whatever was sent is never answered, as on a machine whose network dropped); `restore`
brings it up again, with its route. `argv` wraps a command to run inside (``ip netns exec``).
`close` deletes the namespace, which deletes the veth pair with it; it is safe to call twice,
and the context manager calls it whatever happened.

Subnets are handed out under an exclusive lock on a file in ``/tmp``, skipping any /30 that
already has an address here, so parallel test processes (and other runs on the machine) never
get the same one. `unavailable` says why namespaces cannot be made here (not root, no ``ip``,
no right to ``ip netns add``), or None.
"""

from __future__ import annotations

import fcntl
import ipaddress
import itertools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

NETWORK = ipaddress.IPv4Network("10.213.0.0/16")
SUBNETS = 1 << (30 - NETWORK.prefixlen)  # /30s in NETWORK
LOCK = Path("/tmp/swarm-test-netns.lock")

_counter = itertools.count(1)


class NamespaceError(RuntimeError):
    """An ``ip`` command failed."""


def ip(*args: str) -> str:
    """``ip ARGS``; its output, or `NamespaceError` with its error."""
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NamespaceError(f"ip {' '.join(args)}: {result.stderr.strip() or result.returncode}")
    return result.stdout


def unavailable() -> str | None:
    """Why a namespace cannot be made here, or None when it can (tried once, then removed)."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2): apt-get install -y iproute2"
    try:
        with Namespace():
            pass
    except (NamespaceError, OSError) as exc:
        return f"cannot make a network namespace with a veth pair here: {exc}"
    return None


def _taken(subnet: ipaddress.IPv4Network) -> bool:
    """Whether any address of `subnet` is on an interface here."""
    return bool(ip("-o", "-4", "addr", "show", "to", str(subnet)).strip())


class Namespace:
    """A network namespace with a veth link to this machine (module doc)."""

    def __init__(self) -> None:
        n = next(_counter)
        pid = os.getpid()
        self.name = f"swarm-{pid}-{n}"
        # interface names are at most 15 bytes: "sw" + pid (<= 7 digits) + "n" + n + side
        self.here_link = f"sw{pid}n{n}h"[:15]
        self.there_link = f"sw{pid}n{n}t"[:15]
        if self.here_link == self.there_link:  # n too long to tell the ends apart
            raise NamespaceError(f"cannot name the veth ends of {self.name}")
        self.subnet: ipaddress.IPv4Network | None = None
        self._made = False
        try:
            self._make(pid * 7919 + n)
        except BaseException:
            self.close()
            raise

    @property
    def outside(self) -> str:
        """The address of this machine's end, as the namespace reaches it."""
        assert self.subnet is not None
        return str(self.subnet.network_address + 1)

    @property
    def inside(self) -> str:
        """The namespace's own address."""
        assert self.subnet is not None
        return str(self.subnet.network_address + 2)

    def _make(self, seed: int) -> None:
        with LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            ip("netns", "add", self.name)
            self._made = True
            ip("link", "add", self.here_link, "type", "veth", "peer", "name", self.there_link)
            ip("link", "set", self.there_link, "netns", self.name)
            for i in range(SUBNETS):
                index = (seed + i) % SUBNETS
                subnet = ipaddress.IPv4Network((int(NETWORK.network_address) + 4 * index, 30))
                if not _taken(subnet):
                    break
            else:
                raise NamespaceError(f"every /30 of {NETWORK} is in use here")
            self.subnet = subnet
            ip("addr", "add", f"{self.outside}/30", "dev", self.here_link)
        ip("link", "set", self.here_link, "up")
        ip("-n", self.name, "addr", "add", f"{self.inside}/30", "dev", self.there_link)
        ip("-n", self.name, "link", "set", self.there_link, "up")
        ip("-n", self.name, "link", "set", "lo", "up")

    def argv(self, command: Sequence[str]) -> list[str]:
        """`command` run inside the namespace."""
        return ["ip", "netns", "exec", self.name, *command]

    def cut(self) -> None:
        """The namespace loses its network: its end of the link goes down (with its route)."""
        ip("-n", self.name, "link", "set", self.there_link, "down")

    def restore(self) -> None:
        """The link comes back up, and with it the route to `outside`."""
        ip("-n", self.name, "link", "set", self.there_link, "up")

    def close(self) -> None:
        """Delete the namespace (and so the veth pair); nothing happens the second time."""
        if self._made:
            self._made = False
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)
        # a veth not moved into the namespace yet is still here
        subprocess.run(["ip", "link", "del", self.here_link], capture_output=True, check=False)

    def __enter__(self) -> Namespace:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
