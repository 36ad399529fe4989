"""A PostgreSQL store and its server: what an operator meets when the server is away, the database is not
robotmem's or is newer, an older schema is migrated, and backups are the server's business."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.errors import DatabaseError


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def dsn(postgres_server: Any) -> Iterator[str]:
    address = str(postgres_server.create())
    yield address
    postgres_server.drop(address)


def _open(location: str, home: Path) -> RobotMemory:
    return RobotMemory(location, embed_backend="hash", settings=Settings(home=home))


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(home), "ROBOTMEM_EMBED_BACKEND": "hash"}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_an_unreachable_server_is_a_database_error_without_the_password(tmp_path: Path) -> None:
    address = f"postgresql://robot:s3cret-word@127.0.0.1:{_free_port()}/fleet"
    with pytest.raises(DatabaseError, match="cannot be reached") as caught:
        _open(address, tmp_path)
    assert caught.value.transient and "s3cret-word" not in caught.value.message
    assert "postgresql://robot@127.0.0.1" in caught.value.message
    result = _cli("recall", "cup", "--db", address, home=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("Error: database"), result.stderr
    assert "Traceback" not in result.stderr and "s3cret-word" not in result.stderr


def test_a_database_of_another_program_is_refused_and_left_alone(tmp_path: Path, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int PRIMARY KEY, total numeric)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    with pytest.raises(DatabaseError, match="tables of another program"):
        _open(dsn, tmp_path)
    with psycopg.connect(dsn) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        }
        assert tables == {"invoices"}
        assert conn.execute("SELECT total FROM invoices").fetchone() == (9.5,)


def test_a_database_of_a_newer_robotmem_is_refused(tmp_path: Path, dsn: str) -> None:
    with _open(dsn, tmp_path) as mem:
        mem.learn("the charger is behind the blue door")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(DatabaseError, match="schema version 99 is newer than this robotmem"):
        _open(dsn, tmp_path)


def test_large_numbers_keep_sqlite_s_integer_and_real_classes(tmp_path: Path, dsn: str) -> None:
    """jsonb prints a double written as 1.7e+18 as digits; the text as written keeps it a REAL."""
    with _open(dsn, tmp_path) as mem:
        for number, value in enumerate((1_700_000_000_000_000_100, 1.7000000000000003e18, 1e16), start=1):
            mem.learn(f"stamp {number} recorded", context={"t": value})
        found = mem.recall("", context_filter={"t": {"$lt": 1_700_000_000_000_000_200}}, min_confidence=0.0)
        # 1.7000000000000003e18 is the double 1700000000000000256, above the bound.
        assert sorted(m["content"] for m in found["memories"]) == ["stamp 1 recorded", "stamp 3 recorded"]
        # A REAL's text is SQLite's (1.7e+18, 1.0e+16); an INTEGER's is its digits.
        for needle, expected in ((".7e+18", "stamp 2"), ("1.0e+16", "stamp 3"), ("000100", "stamp 1")):
            shown = mem.recall("", context_filter={"t": {"$contains": needle}}, min_confidence=0.0)
            assert [m["content"] for m in shown["memories"]] == [f"{expected} recorded"], needle
        exact = mem.recall("", context_filter={"t": {"$eq": 10**16}}, min_confidence=0.0)
        assert [m["content"] for m in exact["memories"]] == ["stamp 3 recorded"]


def test_backup_of_a_server_store_names_the_server_tools(tmp_path: Path, dsn: str) -> None:
    with _open(dsn, tmp_path) as mem:
        mem.learn("the charger is behind the blue door")
        with pytest.raises(DatabaseError, match="pg_dump"):
            mem.backup(tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists()
    result = _cli("backup", str(tmp_path / "copy.db"), "--db", dsn, home=tmp_path)
    assert result.returncode == 2 and "pg_dump" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_server_that_restarts_fails_calls_cleanly_then_serves_again(tmp_path: Path) -> None:
    from tests.postgres_server import PostgresServer

    server = PostgresServer()  # a cluster of its own, to stop and start
    try:
        address = server.create()
        with _open(address, tmp_path) as mem:
            kept = mem.learn("the charger is behind the blue door")["memory_id"]
            server._run([str(server.bin / "pg_ctl"), "-D", str(server.data), "-m", "fast", "stop"])
            with pytest.raises(DatabaseError, match="cannot be reached") as caught:
                mem.recall("charger")
            assert caught.value.transient
            server._run(
                [str(server.bin / "pg_ctl"), "-D", str(server.data), "-o", f"-p {server.port} -k {server.root} "
                 "-c listen_addresses=127.0.0.1", "-l", str(server.root / "log"), "-w", "start"]
            )  # fmt: skip
            answered = None
            for _ in range(5):  # connections the restart broke are dropped as they fail
                try:
                    answered = mem.recall("charger")
                    break
                except DatabaseError as exc:
                    assert exc.transient, exc.message
            assert answered is not None and answered["memories"][0]["id"] == kept
            assert mem.learn("the dock is north of the charger")["status"] == "created"
    finally:
        server.stop()
