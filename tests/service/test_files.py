"""Export and backup never write over the database in use, its -wal/-shm, or an existing file.

The database in use, its side files and backups are SQLite's; an existing export is refused on every engine.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder


@pytest.fixture
def live(locate: Callable[[str], Any], settings: Settings) -> Iterator[RobotMemory]:
    with RobotMemory(locate("memory.db"), settings=settings, embedder=HashingEmbedder(dim=32)) as mem:
        mem.learn("the charger is behind the blue door")
        mem.learn("lidar misses glass doors in the hallway")
        yield mem


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def still_whole(mem: RobotMemory) -> None:
    """The database in use still answers, takes a write and passes its checks."""
    assert mem.recall("charger blue door")["total"] >= 1
    assert mem.learn("grip_force=7N held the mug")["status"] == "created"
    assert mem.integrity_report()["ok"]


@pytest.mark.sqlite_only
def test_export_refuses_the_database_in_use_and_its_side_files(tmp_path: Path, live: RobotMemory) -> None:
    db = Path(live.path)
    assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
    links = tmp_path / "links"
    links.mkdir()
    (links / "to-db").symlink_to(db)
    (links / "to-wal").symlink_to(f"{db}-wal")
    (links / "to-journal").symlink_to(f"{db}-journal")  # dangling: SQLite would create it
    os.link(db, links / "hard-db")
    dotted = tmp_path / "sub" / ".." / "memory.db"
    (tmp_path / "sub").mkdir()
    header = db.read_bytes()[:16]
    targets = [
        db,
        Path(f"{db}-wal"),
        Path(f"{db}-shm"),
        links / "to-db",
        links / "to-wal",
        links / "to-journal",
        links / "hard-db",
        dotted,
    ]
    for target in targets:
        for force in (False, True):
            with pytest.raises(ValidationError, match="database in use") as caught:
                live.export_memories(target, force=force)
            assert caught.value.message.startswith("path: ")
            with pytest.raises(ValidationError, match="database in use"):
                live.backup(target)
    assert db.read_bytes()[:16] == header == b"SQLite format 3\x00"
    assert live.doctor()["memories"]["total"] == 2
    assert not (links / "to-journal").resolve().exists()
    still_whole(live)
    assert not list(tmp_path.glob("**/*.partial"))


def test_export_refuses_an_existing_file_unless_forced(tmp_path: Path, live: RobotMemory) -> None:
    target = tmp_path / "notes.jsonl"
    target.write_text("a file someone keeps\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"already exists; choose a new file name, or pass force=True"):
        live.export_memories(target)
    assert target.read_text(encoding="utf-8") == "a file someone keeps\n"
    result = live.export_memories(target, force=True)
    assert result["memories"] == 2 and target.read_text(encoding="utf-8").startswith(
        '{"format":"robotmem-export"'
    )
    # A symlink to an ordinary file: the file it names is replaced, the link stays.
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    with pytest.raises(ValidationError, match="already exists"):
        live.export_memories(link)
    assert live.export_memories(link, force=True)["path"] == str(target)
    assert link.is_symlink()
    with pytest.raises(ValidationError, match="force: must be true or false"):
        live.export_memories(tmp_path / "new.jsonl", force="yes")  # type: ignore[arg-type]


@pytest.mark.sqlite_only
def test_force_never_replaces_a_sqlite_file_or_a_directory(tmp_path: Path, live: RobotMemory) -> None:
    backup = tmp_path / "backup.db"
    live.backup(backup)
    before = digest(backup)
    with pytest.raises(ValidationError, match="holds a SQLite database"):
        live.export_memories(backup, force=True)
    assert digest(backup) == before
    with pytest.raises(ValidationError, match="already exists"):
        live.backup(backup)
    with pytest.raises(ValidationError, match="is a directory"):
        live.export_memories(tmp_path, force=True)
    with pytest.raises(ValidationError, match="does not exist"):
        live.backup(tmp_path / "missing" / "copy.db")
    with RobotMemory(backup, settings=Settings(home=tmp_path), embedder=HashingEmbedder(dim=32)) as copy:
        assert copy.doctor()["memories"]["total"] == 2


def test_export_never_replaces_a_sqlite_database_or_a_directory(tmp_path: Path, live: RobotMemory) -> None:
    """Whatever engine exports: a robot's SQLite file and a directory are never export targets."""
    robot = tmp_path / "robot.db"
    with RobotMemory(robot, settings=Settings(home=tmp_path), embedder=HashingEmbedder(dim=32)) as other:
        other.learn("the dock light blinks twice when charging")
    before = digest(robot)
    with pytest.raises(ValidationError, match="holds a SQLite database"):
        live.export_memories(robot, force=True)
    assert digest(robot) == before
    with pytest.raises(ValidationError, match="is a directory"):
        live.export_memories(tmp_path, force=True)
    still_whole(live)


@pytest.mark.sqlite_only
def test_a_refused_export_leaves_the_other_process_view_intact(tmp_path: Path, live: RobotMemory) -> None:
    """A second instance (as a server would hold it) keeps reading and writing the same file."""
    with RobotMemory(live.path, settings=Settings(home=tmp_path), embedder=HashingEmbedder(dim=32)) as server:
        with pytest.raises(ValidationError, match="database in use"):
            server.export_memories(Path(live.path), force=True)
        assert server.learn("the dock light blinks twice when charging")["status"] == "created"
    assert live.recall("dock light blinks")["memories"][0]["content"].startswith("the dock light")
    still_whole(live)
