"""Export, import and the read commands through a real ``robotmem`` subprocess: a copy never destroys
the database, a bad import changes nothing, and a read-only database can still be read."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Spawns processes; left out of `make test-fast`.
pytestmark = pytest.mark.slow


def run(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(home), "ROBOTMEM_EMBED_BACKEND": "hash"}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for text in ("the charger is behind the blue door", "lidar misses glass doors in the hallway"):
        assert run(home, "learn", text).returncode == 0
    return home


def test_export_onto_the_live_database_is_refused_and_the_database_survives(home: Path) -> None:
    # The command a user types inside ROBOTMEM_HOME.
    refused(run(home, "export", "memory.db", cwd=home), "database in use")
    refused(run(home, "export", "memory.db", "--force", cwd=home), "database in use")
    refused(run(home, "export", "memory.db-wal", "--force", cwd=home), "database in use")
    (home / "link.jsonl").symlink_to(home / "memory.db")
    refused(run(home, "export", str(home / "link.jsonl"), "--force"), "database in use")
    refused(run(home, "backup", "memory.db", cwd=home), "database in use")
    assert (home / "memory.db").read_bytes()[:16] == b"SQLite format 3\x00"
    found = json.loads(run(home, "recall", "charger blue door").stdout)
    assert found["memories"][0]["content"] == "the charger is behind the blue door"
    check = run(home, "check")
    assert check.returncode == 0 and json.loads(check.stdout)["ok"]


def test_export_onto_an_existing_file_needs_force(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "notes.jsonl"
    target.write_text("keep me\n", encoding="utf-8")
    refused(run(home, "export", str(target)), "already exists", "--force")
    assert target.read_text(encoding="utf-8") == "keep me\n"
    result = run(home, "export", str(target), "--force", "--no-progress")
    assert result.returncode == 0 and json.loads(result.stdout)["memories"] == 2


def test_a_bad_import_is_one_error_line_and_changes_nothing(home: Path, tmp_path: Path) -> None:
    exported = tmp_path / "out.jsonl"
    assert run(home, "export", str(exported), "--no-progress").returncode == 0
    lines = exported.read_text(encoding="utf-8").splitlines()
    second = json.loads(lines[2])
    second["memory"]["created_at"] = "2020-01-01T00:00:00"  # fine: read as UTC
    first = json.loads(lines[1])
    first["memory"]["uid"] = "f" * 32
    first["memory"]["collection"] = "lab\nother"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(second), json.dumps(first)]) + "\n", encoding="utf-8")
    other = tmp_path / "other"
    assert run(other, "learn", "the dock is north of the charger").returncode == 0
    before = run(other, "export", str(tmp_path / "before.jsonl"), "--no-progress")
    assert before.returncode == 0
    refused(run(other, "import", str(bad), "--no-progress"), "bad.jsonl:3: memory.collection", "printable")
    (tmp_path / "bad.bin").write_bytes(
        lines[0].encode() + b"\n" + b'{"record": "memory", "memory": ' + b"[" * 50_000
    )
    refused(run(other, "import", str(tmp_path / "bad.bin"), "--no-progress"), "bad.bin:2: invalid JSON")
    assert run(other, "export", str(tmp_path / "after.jsonl"), "--no-progress").returncode == 0
    strip = [json.loads(line) for line in (tmp_path / "before.jsonl").read_text().splitlines()]
    again = [json.loads(line) for line in (tmp_path / "after.jsonl").read_text().splitlines()]
    strip[0].pop("exported_at"), again[0].pop("exported_at")
    assert again == strip
    # Without the bad line (and with the header counting what is left) the same file imports whole.
    header = {**json.loads(lines[0]), "memories": 1}
    bad.write_text("\n".join([json.dumps(header), json.dumps(second)]) + "\n", encoding="utf-8")
    result = run(other, "import", str(bad), "--no-progress")
    assert result.returncode == 0 and json.loads(result.stdout)["memories"]["created"] == 1


@pytest.fixture
def read_only_home(home: Path) -> Iterator[Path]:
    """The database's directory and file made read-only with chmod (meaningful only without root)."""
    if os.geteuid() == 0:
        pytest.skip(
            "root ignores file permissions; tests/reliability/test_failures.py uses a read-only mount"
        )
    db = home / "memory.db"
    db.chmod(stat.S_IRUSR | stat.S_IRGRP)
    home.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        yield home
    finally:
        home.chmod(stat.S_IRWXU)
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_read_commands_work_on_a_chmod_read_only_database(read_only_home: Path, tmp_path: Path) -> None:
    home = read_only_home
    listing = sorted(p.name for p in home.iterdir())
    found = run(home, "recall", "charger blue door")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["memories"][0]["access_count"] == 0
    check = run(home, "check")
    assert check.returncode == 0 and json.loads(check.stdout)["ok"], check.stderr
    exported = run(home, "export", str(tmp_path / "out.jsonl"), "--no-progress")
    assert exported.returncode == 0 and json.loads(exported.stdout)["memories"] == 2, exported.stderr
    backup = run(home, "backup", str(tmp_path / "copy.db"))
    assert backup.returncode == 0 and json.loads(backup.stdout)["memories"] == 2, backup.stderr
    refused(run(home, "learn", "grip_force=3N held the cup"), "read-only")
    assert sorted(p.name for p in home.iterdir()) == listing


def test_a_file_that_is_not_a_database_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("shopping list: grippers, cable ties\n" * 200, encoding="utf-8")
    for command in (
        ["recall", "x"],
        ["check"],
        ["export", str(tmp_path / "o.jsonl")],
        ["backup", str(tmp_path / "b.db")],
    ):
        result = run(tmp_path, *command, "--db", str(tmp_path / "notes.txt"))
        refused(result, "not a SQLite database, so not a robotmem database")
        assert "repair" not in result.stderr
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8").startswith("shopping list")
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    conn.commit()
    conn.close()
    refused(run(tmp_path, "check", "--db", str(other)), "another program, not a robotmem database")
    conn = sqlite3.connect(other)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["orders"]
    conn.close()
