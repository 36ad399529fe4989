"""Storage failures: disk full, read-only file system, missing directory, corrupted file.

Each must surface as a ``DatabaseError`` that says what happened (the CLI prints ``Error: …`` and no
traceback) and leave no partial rows. Disk full and read-only use real mounts (a small tmpfs, a
read-only bind mount) because the tests run as root, which ignores file permissions; where mounting
is not permitted those tests are skipped. Tests that mount or run the CLI are marked slow. Every case here is about a SQLite file;
the server's failures are in ``tests/store/postgres``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import table_counts

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.errors import DatabaseError, RobotMemError

pytestmark = pytest.mark.sqlite_only


def _open(path: Path) -> RobotMemory:
    return RobotMemory(path, embed_backend="hash", settings=Settings(home=path.parent))


def _mount(*args: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount here ({result.stderr.strip() or 'mount failed'})")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1.5 MiB tmpfs: SQLite gets a real ENOSPC when it fills."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    _mount("-t", "tmpfs", "-o", "size=1536k", "tmpfs", str(mount_point))
    try:
        yield mount_point
    finally:
        _umount(mount_point)


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """``(writable_dir, read_only_view_of_it)``: a read-only bind mount, which binds root too."""
    if os.geteuid() != 0:
        pytest.skip("bind mounts need root")
    writable, view = tmp_path / "rw", tmp_path / "ro"
    writable.mkdir()
    view.mkdir()
    _mount("--bind", str(writable), str(view))
    result = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True, text=True)
    if result.returncode != 0:
        _umount(view)
        pytest.skip(f"cannot remount read-only ({result.stderr.strip()})")
    try:
        yield writable, view
    finally:
        _umount(view)


def _cli(*args: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(env_home), "ROBOTMEM_EMBED_BACKEND": "hash"}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _assert_clean_cli_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("Error: database"), result.stderr
    for word in words:
        assert word in result.stderr


# ---- disk full -------------------------------------------------------------------------------------


def _fill(path: Path) -> None:
    """Write ``path`` until the file system has no room left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.mark.slow
def test_disk_full_is_a_database_error_and_writes_nothing(small_disk: Path) -> None:
    mem = _open(small_disk / "memory.db")
    try:
        stored = 0
        with pytest.raises(DatabaseError, match="disk is full") as caught:
            for i in range(100):
                mem.save_perception(f"camera frame {i}", data="x" * 60_000)
                stored += 1
        assert "nothing was written" in caught.value.message
        counts = table_counts(mem)
        assert counts["memories"] == counts["perception_payloads"] == stored > 0
        # A later write that needs more room than the rolled-back one left in the WAL fails the same way.
        # (A smaller one may fit in those reusable WAL frames and succeed; that is not a loss.)
        with pytest.raises(DatabaseError, match="disk is full"):
            mem.save_perception("one more frame after the disk filled", data="y" * 200_000)
        assert table_counts(mem) == counts
        report = mem.integrity_report()
        assert report["ok"], report
        assert mem.recall("camera frame", n=100)["total"] == stored
    finally:
        mem.close()


@pytest.mark.slow
def test_disk_full_reaches_the_cli_as_an_error_line(small_disk: Path) -> None:
    db = small_disk / "memory.db"
    with _open(db) as mem:
        mem.learn("grip_force=2N held the sponge")
    # Take every free block; a write then cannot even grow the WAL (it may reuse one left on disk).
    (small_disk / "memory.db-wal").unlink(missing_ok=True)
    _fill(small_disk / "filler")
    result = _cli("learn", "grip_force=4N slipped on glass", "--db", str(db), env_home=small_disk)
    _assert_clean_cli_error(result, "disk is full")


# ---- read-only -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_read_only_database_refuses_writes_and_keeps_reads(read_only_view: tuple[Path, Path]) -> None:
    writable, view = read_only_view
    with _open(writable / "memory.db") as writer:
        writer.learn("grip_force=1N dropped the cup")
        # While a writer has the file open, its -wal and -shm exist and a read-only opener can read.
        reader = _open(view / "memory.db")
        try:
            assert reader.recall("cup")["total"] == 1
            before = table_counts(writer)
            with pytest.raises(DatabaseError, match="read-only"):
                reader.learn("grip_force=2N held the cup")
            with pytest.raises(DatabaseError, match="read-only"):
                reader.forget(1, reason="wrong")
            assert table_counts(writer) == before
        finally:
            reader.close()
    # With every writer gone (no -wal or -shm left) the file is still read, as immutable.
    assert not (writable / "memory.db-wal").exists()
    with _open(view / "memory.db") as reader:
        assert reader.recall("cup")["memories"][0]["access_count"] == 0
        assert reader.integrity_report()["ok"]
        with pytest.raises(DatabaseError, match="read-only"):
            reader.learn("grip_force=3N held the cup")
    result = _cli("recall", "cup", "--db", str(view / "memory.db"), env_home=writable)
    assert result.returncode == 0 and json.loads(result.stdout)["total"] == 1, result.stderr
    copies = writable.parent / "copies"
    copies.mkdir()
    for command, key in (
        (["check"], "ok"),
        (["export", str(copies / "out.jsonl"), "--no-progress"], "memories"),
        (["backup", str(copies / "copy.db")], "memories"),
    ):
        result = _cli(*command, "--db", str(view / "memory.db"), env_home=writable)
        assert result.returncode == 0 and json.loads(result.stdout)[key], result.stderr
    assert sorted(p.name for p in view.iterdir()) == ["memory.db"]


@pytest.mark.slow
def test_read_only_wal_with_changes_but_no_shm_is_a_clear_error(read_only_view: tuple[Path, Path]) -> None:
    """Changes in a -wal cannot be read without a -shm; reading the file alone would show stale data."""
    writable, view = read_only_view
    with _open(writable / "memory.db") as writer:
        writer.learn("grip_force=1N dropped the cup")
        conn = sqlite3.connect(writable / "memory.db")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("UPDATE memories SET content = content")
        conn.commit()
        shutil.copy(writable / "memory.db", writable / "copy.db")
        shutil.copy(writable / "memory.db-wal", writable / "copy.db-wal")
        conn.close()
    assert (writable / "copy.db-wal").stat().st_size > 0 and not (writable / "copy.db-shm").exists()
    with pytest.raises(DatabaseError, match="its -wal holds changes"):
        _open(view / "copy.db")
    result = _cli("recall", "cup", "--db", str(view / "copy.db"), env_home=writable)
    _assert_clean_cli_error(result, "open it once where it is writable")


def test_chmod_read_only_database_is_read_and_never_written(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions; the read-only mount test above covers root")
    home = tmp_path / "ro"
    with _open(home / "memory.db") as writer:
        writer.learn("grip_force=1N dropped the cup")
    (home / "memory.db").chmod(0o444)
    home.chmod(0o555)
    try:
        with _open(home / "memory.db") as reader:
            assert reader.recall("cup")["total"] == 1
            assert reader.recall("cup")["memories"][0]["access_count"] == 0
            assert reader.integrity_report()["ok"]
            assert reader.export_memories(tmp_path / "out.jsonl")["memories"] == 1
            assert reader.backup(tmp_path / "copy.db")["memories"] == 1
            with pytest.raises(DatabaseError, match="read-only"):
                reader.learn("grip_force=2N held the cup")
        assert sorted(p.name for p in home.iterdir()) == ["memory.db"]
    finally:
        home.chmod(0o755)
        (home / "memory.db").chmod(0o644)


@pytest.mark.slow
def test_new_database_in_read_only_directory_is_a_database_error(read_only_view: tuple[Path, Path]) -> None:
    _, view = read_only_view
    with pytest.raises(DatabaseError):
        _open(view / "new.db")
    with pytest.raises(DatabaseError, match="cannot create directory"):
        _open(view / "missing" / "new.db")


# ---- missing directory -----------------------------------------------------------------------------


def test_missing_directory_is_created(tmp_path: Path) -> None:
    with _open(tmp_path / "a" / "b" / "memory.db") as mem:
        assert mem.learn("grip_force=5N worked")["status"] == "created"


def test_directory_that_cannot_exist_is_a_database_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(DatabaseError, match="cannot be opened"):
        _open(blocker / "memory.db")


@pytest.mark.slow
def test_directory_that_cannot_exist_reaches_the_cli_as_an_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    result = _cli("learn", "grip_force=6N", "--db", str(blocker / "memory.db"), env_home=tmp_path)
    _assert_clean_cli_error(result, "cannot be opened")


# ---- corrupted file --------------------------------------------------------------------------------


def test_garbage_file_is_a_database_error(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(os.urandom(64 * 1024))
    with pytest.raises(DatabaseError, match="not a SQLite database, so not a robotmem database") as caught:
        _open(db)
    assert "repair" not in caught.value.message


@pytest.mark.slow
def test_garbage_file_reaches_the_cli_as_an_error_line(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(os.urandom(64 * 1024))
    result = _cli("recall", "anything", "--db", str(db), env_home=tmp_path)
    _assert_clean_cli_error(result, "not a robotmem database")
    assert "repair" not in result.stderr


def _populated(db: Path, count: int = 300) -> None:
    with _open(db) as mem:
        for i in range(count):
            mem.learn(f"trial {i}: grip_force={i / 10:.1f}N on the {uuid.uuid4().hex[:6]} shelf")


def test_truncated_file_fails_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _populated(db)
    size = db.stat().st_size
    with open(db, "r+b") as handle:
        handle.truncate(size // 2)
    try:
        mem = _open(db)
    except DatabaseError:
        return  # refused at open: fine
    with mem:
        report = mem.integrity_report()
        assert not report["ok"]
        for call in (
            lambda: mem.recall("grip force", n=100),
            lambda: mem.learn("a new fact grip_force=99N"),
            lambda: mem.get_memory(250),
        ):
            try:
                call()
            except RobotMemError as exc:
                assert isinstance(exc, (DatabaseError,)) or exc.code == "not_found"


def test_damaged_pages_fail_cleanly_and_are_reported(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _populated(db)
    page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    pages = db.stat().st_size // page
    with open(db, "r+b") as handle:  # scribble over a few pages in the middle, keeping the header
        for number in range(pages // 3, pages // 3 + 4):
            handle.seek(number * page)
            handle.write(b"\xa5" * page)
    try:
        mem = _open(db)
    except DatabaseError as exc:
        assert "robotmem doctor --repair" in exc.message or "not a valid" in exc.message
        return
    with mem:
        report = mem.integrity_report()  # reports the damage instead of failing on it
        assert not report["ok"]
        assert report["integrity_check"] != ["ok"]
        before = sqlite3.connect(db).execute("SELECT COUNT(*) FROM memories").fetchone()
        try:
            mem.learn("a new fact grip_force=99N")
        except DatabaseError:
            after = sqlite3.connect(db).execute("SELECT COUNT(*) FROM memories").fetchone()
            assert after == before
        try:
            mem.repair()
        except DatabaseError as exc:
            assert "restore a backup" in exc.message or "malformed" in exc.message
