"""The web server's remote-client rules: Host names, body depth, and error messages without paths."""

from __future__ import annotations

import sqlite3

import pytest

pytest.importorskip("flask")

from robotmem import DatabaseError, NotFoundError, ValidationError  # noqa: E402
from robotmem.adapters.web.remote import (  # noqa: E402
    allowed_hosts,
    host_allowed,
    json_depth,
    remote_error,
    scrub_paths,
)
from robotmem.store.sqlite.connection import describe_error  # noqa: E402


def test_host_names_of_this_server_and_ip_literals_are_allowed() -> None:
    hosts = allowed_hosts("0.0.0.0", ["robot.lan"])
    for header in (
        "localhost:7878",
        "127.0.0.1",
        "[::1]:7878",
        "ROBOT.lan:80",
        "192.168.1.20:7878",
        "[fe80::1]",
    ):
        assert host_allowed(header, hosts), header
    for header in ("evil.example", "localhost.evil.example:7878", "robot.lan.evil.example", "0.0.0.0.nip.io"):
        assert not host_allowed(header, hosts), header
    assert "arm-01.local" in allowed_hosts("arm-01.local", [])


def test_json_depth_ignores_brackets_inside_strings() -> None:
    assert json_depth(b'{"a": "[[[[{{{{", "b": [1, [2]]}') == 3
    assert json_depth(b'"plain"') == 0
    assert json_depth(b"[" * 1000 + b"]" * 1000) == 1000
    assert json_depth(b'{"q": "say \\"[\\" twice"}') == 1


def test_remote_errors_never_show_a_filesystem_path() -> None:
    error = DatabaseError(
        "database /srv/robot/home/memory.db: the disk is full (sqlite: database or disk is full)"
    )
    code, message, status = remote_error(error, ["/srv/robot/home/memory.db"])
    assert (code, status) == ("storage", 500) and "/srv" not in message and "<path>" in message
    _, message, _ = remote_error(DatabaseError("backup /tmp/x/y.db: cannot write the copy"))
    assert "/tmp" not in message
    assert scrub_paths("use POST /api/recall or C:\\Users\\me\\memory.db") == "use POST /api/recall or <path>"
    assert remote_error(NotFoundError("no session 'x'"))[2] == 404
    assert remote_error(KeyError("/etc/passwd")) == (
        "internal",
        "unexpected server error (KeyError); see the server log",
        500,
    )


def test_only_a_busy_database_is_a_503() -> None:
    locked = describe_error(sqlite3.OperationalError("database is locked"), "/data/m.db")
    assert isinstance(locked, DatabaseError) and locked.transient and remote_error(locked)[2] == 503
    corrupt = describe_error(sqlite3.DatabaseError("file is not a database"), "/data/m.db")
    assert remote_error(corrupt)[2] == 500


def test_a_statement_beyond_sqlites_limits_is_a_validation_error() -> None:
    conn = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as raised:
        conn.execute("SELECT " + "(" * 200 + "1" + ")" * 200)
    error = describe_error(raised.value, "/data/m.db")
    assert isinstance(error, ValidationError) and remote_error(error)[2] == 400
    assert "/data" not in error.message
