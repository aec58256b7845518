"""A temporary PostgreSQL server for the tests and the benchmark: initdb into a fresh directory,
``pg_ctl start`` listening on a Unix socket in that directory (and, when asked, on TCP at given
addresses), stopped and removed after.

PostgreSQL refuses to run as root, so as root the server's files belong to, and its commands run
as, the system user ``postgres`` (Debian's package creates it; created here with ``useradd`` if
missing), through ``runuser``. Its superuser is called `SUPERUSER` whoever runs it, and local
connections are trusted: by default nothing listens on a network address, and the socket's
directory is readable by its owner (and root) only. `TemporaryServer(tcp=...)` also listens on
TCP at those addresses (a test's own veth ends, `netns.Namespace`), trusting connections from
the networks given with them and from nowhere else.

The binaries are found on ``PATH`` (``initdb``) or under ``/usr/lib/postgresql/<version>/bin``
(Debian installs them there, off ``PATH``); `find_bin_dir` names what is missing.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

SUPERUSER = "swarm"
SERVICE_USER = "postgres"  # who runs the server when we are root
PORT = 5432  # names the socket file; the TCP port too, on the addresses a server is given
START_TIMEOUT_S = 60


class ServerUnavailable(RuntimeError):
    """No PostgreSQL binaries here, or the server would not start."""


def find_bin_dir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1].parent
    raise ServerUnavailable(
        "no PostgreSQL server binaries (initdb) on PATH or under /usr/lib/postgresql/*/bin; "
        "install them: apt-get install -y postgresql (make test does this when run as root)"
    )


def _service_user() -> pwd.struct_passwd | None:
    """The user the server runs as when we are root (created if missing); None otherwise."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            check=True,
        )
        return pwd.getpwnam(SERVICE_USER)


class TemporaryServer:
    """One PostgreSQL server in a temporary directory. `start`, then `stop` (or use `running`)."""

    def __init__(
        self,
        fsync: bool = True,
        settings: dict[str, str] | None = None,
        tcp: Sequence[tuple[str, str]] = (),
    ) -> None:
        """`settings`: more ``postgresql.conf`` lines (a benchmark's); `tcp`: (address to listen
        on, network to trust) pairs, e.g. a veth end and the address of its other end; none by
        default (a Unix socket only)."""
        self.bin_dir = find_bin_dir()
        self.user = _service_user()
        self.base = Path(tempfile.mkdtemp(prefix="swarm-pg-"))  # /tmp: reachable by `user`
        self.data = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.log = self.base / "server.log"
        self.fsync = fsync
        self.settings = dict(settings or {})
        self.tcp = list(tcp)

    @property
    def host(self) -> str:
        return str(self.socket_dir)

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host={self.host} port={PORT} user={SUPERUSER} dbname={dbname}"

    def tcp_url(self, address: str, dbname: str) -> str:
        """A store URL reaching database `dbname` over TCP at `address` (one of `tcp`)."""
        assert address in (listen for listen, _ in self.tcp), address
        return f"postgresql://{SUPERUSER}@{address}:{PORT}/{dbname}"

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user.pw_name, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise ServerUnavailable(
                f"{' '.join(argv[:2])} failed ({result.returncode}): "
                f"{result.stderr.strip() or result.stdout.strip()}\n{log}"
            )
        return result

    def start(self) -> None:
        self.socket_dir.mkdir(mode=0o700)
        if self.user is not None:
            for path in (self.base, self.socket_dir):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
            self.base.chmod(0o700)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8")
        listen = ",".join(address for address, _ in self.tcp)
        settings = {
            "listen_addresses": f"'{listen}'",
            "unix_socket_directories": f"'{self.socket_dir}'",
            "port": str(PORT),
            "fsync": "on" if self.fsync else "off",
            "synchronous_commit": "on",
            "max_connections": "200",
            "shared_buffers": "32MB",
            **self.settings,
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("".join(f"{key} = {value}\n" for key, value in settings.items()))
        if self.tcp:  # initdb's own lines trust the local socket only (and loopback, unused)
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write("".join(f"host all all {net} trust\n" for _, net in self.tcp))
        self._pg_ctl("start")

    def _pg_ctl(self, action: str, mode: str = "fast") -> None:
        argv = ["pg_ctl", action, "-D", str(self.data), "-l", str(self.log), "-w"]
        argv += ["-t", str(START_TIMEOUT_S)]
        if action in ("stop", "restart"):
            argv += ["-m", mode]
        self._run(*argv)

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart``: every client connection is cut; `mode` ``immediate`` is a crash
        (the server recovers from its WAL on start)."""
        self._pg_ctl("restart", mode)

    def crash(self) -> None:
        """Stop the server at once (``pg_ctl stop -m immediate``), keeping its files: every
        connection is cut and new ones are refused until `start_again`."""
        self._pg_ctl("stop", "immediate")

    def start_again(self) -> None:
        """Start the server `crash` stopped (it recovers from its WAL)."""
        self._pg_ctl("start")

    def pause(self) -> None:
        """SIGSTOP the server's processes (the postmaster leads their process group): a host
        that no longer answers. Connections stay open and what is sent to them waits;
        `resume` lets them go on."""
        os.killpg(self._postmaster(), signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self._postmaster(), signal.SIGCONT)

    def _postmaster(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(OSError, ValueError):  # a paused server could not stop
                self.resume()
            self._pg_ctl("stop", "immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def version(self) -> str:
        text = self._run("postgres", "--version").stdout
        found = re.search(r"\d+(\.\d+)?", text)
        return found.group(0) if found else text.strip()

    def create_database(self, prefix: str = "db") -> str:
        """A new empty database; returns its conninfo."""
        import psycopg  # only code that talks to the server imports the driver

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.conninfo(name)


@contextmanager
def running(
    fsync: bool = True, settings: dict[str, str] | None = None
) -> Iterator[TemporaryServer]:
    """A started `TemporaryServer` (`settings`: more ``postgresql.conf`` lines), stopped and
    removed on the way out."""
    server = TemporaryServer(fsync=fsync, settings=settings)
    try:
        server.start()
        yield server
    finally:
        server.stop()
