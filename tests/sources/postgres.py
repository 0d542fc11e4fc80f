"""A throwaway PostgreSQL server for the source tests: Debian's binaries (``scripts/setup-env``
installs them), a cluster made by ``initdb`` in a temporary folder, listening on a free loopback
port only, stopped and deleted after.

``initdb`` and ``postgres`` refuse to run as root: under root the server runs as Debian's
``postgres`` system user (or ``nobody``), through ``subprocess``'s ``user=``/``group=``; the
folder is created for it, owned by it and closed to others (mode 0700, as ``postgres`` wants).
Local (socket) connections are trusted, for ``psql`` to load the schema; TCP connections, the
ones JDBC makes, need the password.

``start_server(logical=True)`` starts it with ``wal_level=logical`` and room for replication slots
and WAL senders, as a logical-decoding reader (Debezium's PostgreSQL connector) needs; ``initdb``'s
``pg_hba.conf`` already lets the superuser make replication connections from 127.0.0.1 with the
password.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "openmirror"
DATABASE = "erp"
# A password no code path could produce by chance: a test asserts it appears nowhere.
PASSWORD = "Pg-s3cret-7c41e0b2-zq"
JAR = Path("/usr/share/java/postgresql.jar")


def binaries() -> Path | None:
    """The folder of Debian's newest PostgreSQL server binaries, or one on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def missing() -> str | None:
    """Why the PostgreSQL tests cannot run here, or ``None``."""
    if binaries() is None:
        return "PostgreSQL is not installed (scripts/setup-env installs Debian's postgresql)"
    if not JAR.exists():
        return f"the PostgreSQL JDBC driver {JAR} is missing (scripts/setup-env installs libpostgresql-jdbc-java)"
    return None


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: ``None`` for the current user, unless that is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """One running cluster: ``url`` for JDBC, ``sql`` to run statements through ``psql``."""

    bin: Path
    root: Path
    port: int
    user: pwd.struct_passwd | None
    started_in: float = 0.0
    logical: bool = False

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{DATABASE}"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def _run(self, *args: str, stdin: str | None = None) -> str:
        ids = (
            {}
            if self.user is None
            else {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        )
        done = subprocess.run(
            args, input=stdin, capture_output=True, text=True, cwd=self.root, check=False, timeout=120, **ids
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def sql(self, statements: str, *, database: str = DATABASE) -> str:
        """Run ``statements`` in one ``psql`` session (stops at the first error); its output. The
        session's table counters reach the statistics before it ends (a run after it asks them
        whether a table changed), its output not."""
        flushed = statements + "\n;SELECT pg_stat_force_next_flush() \\g /dev/null\n"
        return self._run(
            str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.root),
            "-p", str(self.port), "-U", SUPERUSER, "-d", database, "-A", "-t", stdin=flushed,
        )  # fmt: skip

    def start(self) -> None:
        began = time.monotonic()
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        self._own(pwfile)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
            "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        # Speed over durability: the cluster lives as long as the test session.
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=40"
        )
        if self.logical:
            options += " -c wal_level=logical -c max_replication_slots=10 -c max_wal_senders=10"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w",
                  "-t", "60", "-o", options, "start")  # fmt: skip
        self.sql(f"CREATE DATABASE {DATABASE};", database="postgres")
        self.started_in = time.monotonic() - began

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _own(self, path: Path) -> None:
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)


def start_server(*, logical: bool = False) -> PostgresServer:
    """A fresh cluster with an empty database ``erp``; the caller stops it. With ``logical``, ready for
    logical decoding (``wal_level=logical``)."""
    bin_dir = binaries()
    assert bin_dir is not None
    user = _server_user()
    # Not under pytest's tmp_path: its folders are the test user's, closed to the server's user.
    root = Path(tempfile.mkdtemp(prefix="openmirror-pg-"))
    for attempt in range(3):  # a free port can be taken between the probe and the start
        server = PostgresServer(bin_dir, root, _free_port(), user, logical=logical)
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        try:
            server.start()
            return server
        except RuntimeError:
            server.stop() if attempt == 2 else shutil.rmtree(server.data, ignore_errors=True)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
