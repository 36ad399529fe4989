"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary directory, a loopback port, pgvector.

The server binaries come from Debian's ``postgresql-15`` (any ``/usr/lib/postgresql/<version>/bin``)
and pgvector must be installed into that server (``.ci/run`` builds it). ``initdb`` and ``pg_ctl``
refuse to run as root, so as root the cluster runs as the ``postgres`` user. Each test gets a database
of its own, dropped afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

USER = "robotmem"


def binaries() -> Path:
    """Return the directory of ``initdb``/``pg_ctl`` (the newest installed server)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise RuntimeError(
        "PostgreSQL server binaries not found (apt-get install postgresql-15, and pgvector; see .ci/run); "
        "set ROBOTMEM_TEST_ENGINES=sqlite to run the SQLite engine's tests only"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# The tests' server: no durable commits (a test's database is dropped anyway), many connections.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"


class PostgresServer:
    """One cluster for the test session; ``settings`` are the server's ``-c`` options (``FAST`` by default;
    a benchmark of writes wants the server's durable defaults)."""

    def __init__(self, settings: str = FAST) -> None:
        self.bin = binaries()
        self.root = Path(tempfile.mkdtemp(prefix="robotmem-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        self._names = itertools.count(1)
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
            ]
        )
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {settings}"
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                options,
                "-l",
                str(self.root / "log"),
                "-w",
                "start",
            ]
        )
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE robotmem_template")
        with psycopg.connect(self.dsn("robotmem_template"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")

    def _run(self, command: list[str]) -> None:
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {result.stdout}{result.stderr}")

    def dsn(self, database: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create(self) -> str:
        """Create an empty database (with the vector extension) and return its DSN."""
        name = f"robotmem_test_{next(self._names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
            conn.execute(f"CREATE DATABASE {name} TEMPLATE robotmem_template")
        return self.dsn(name)

    def drop(self, dsn: str) -> None:
        name = dsn.rsplit("/", 1)[1]
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(self.dsn("postgres"), autocommit=True) as conn,
        ):
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"])
        shutil.rmtree(self.root, ignore_errors=True)
