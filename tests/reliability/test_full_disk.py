"""A full disk leaves nothing behind: a failed backup, export, MCAP export or import leaves no file
(no partial copy, no journal, WAL or shared-memory file beside it) and the database unchanged.

The disk is a small tmpfs (a real ``ENOSPC``; mounting needs root). Where mounting is refused, the same
commands run under a file-size limit (``RLIMIT_FSIZE``: writes beyond it fail with ``EFBIG``), which
needs no privilege, so the property is tested everywhere.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import table_counts

import robotmem
from robotmem import RobotMemError, RobotMemory
from robotmem.config import Settings

pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]

FILE_SIZE_LIMIT = 512 * 1024  # above an empty database (about 200 KiB), below every copy made here


def _open(path: Path) -> RobotMemory:
    return RobotMemory(path, embed_backend="hash", settings=Settings(home=path.parent))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of about 1.9 MiB (40 memories with 40 KB contexts of random text) and its export."""
    directory = tmp_path_factory.mktemp("full-disk-source")
    with _open(directory / "source.db") as mem:
        for i in range(40):
            mem.learn(f"lesson number {i} about the gripper", context={"blob": os.urandom(20_000).hex()})
        mem.export_memories(directory / "source.jsonl")
    return directory


def _fill(path: Path, leave_kib: int = 0) -> None:
    """Write ``path`` until the file system is full, then give back ``leave_kib`` KiB."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    if leave_kib:
        os.truncate(path, max(0, path.stat().st_size - leave_kib * 1024))


def _mount_small_disk(mount_point: Path, size: str = "1536k") -> bool:
    if os.geteuid() != 0:
        return False
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True
    )
    return done.returncode == 0


def _umount(mount_point: Path) -> None:
    subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1.5 MiB tmpfs."""
    mount_point = tmp_path / "small"
    if not _mount_small_disk(mount_point):
        pytest.skip("cannot mount a tmpfs here; the file-size-limit runs below cover this")
    try:
        yield mount_point
    finally:
        _umount(mount_point)


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---- in process: the SDK ------------------------------------------------------------------------------


@pytest.mark.parametrize("free_kib", [0, 100, 400, 1000])
def test_a_backup_that_fills_the_disk_leaves_nothing(source: Path, small_disk: Path, free_kib: int) -> None:
    _fill(small_disk / "filler", free_kib)
    with _open(source / "source.db") as mem, pytest.raises(RobotMemError, match="disk is full"):
        mem.backup(small_disk / "copy.db")
    assert _names(small_disk) == ["filler"]


@pytest.mark.parametrize("free_kib", [0, 100, 1000])
def test_an_export_that_fills_the_disk_leaves_nothing(source: Path, small_disk: Path, free_kib: int) -> None:
    _fill(small_disk / "filler", free_kib)
    with _open(source / "source.db") as mem, pytest.raises(RobotMemError, match="No space left on device"):
        mem.export_memories(small_disk / "out.jsonl")
    assert _names(small_disk) == ["filler"]


def test_an_mcap_export_that_fills_the_disk_leaves_nothing(source: Path, small_disk: Path) -> None:
    from robotmem.integrations.mcap_export import export_mcap

    _fill(small_disk / "filler", 100)
    with _open(source / "source.db") as mem:
        records = mem.recall("", n=100)["memories"]
    with pytest.raises(RobotMemError, match="No space left on device"):
        export_mcap(records, small_disk / "out.mcap")
    assert _names(small_disk) == ["filler"]


def test_an_import_that_fills_the_disk_changes_nothing(source: Path, small_disk: Path) -> None:
    with _open(small_disk / "memory.db") as mem:
        mem.learn("grip_force=2N held the sponge")
        before = table_counts(mem)
        files = _names(small_disk)
        with pytest.raises(RobotMemError, match="disk is full"):
            mem.import_memories(source / "source.jsonl")
        assert table_counts(mem) == before
        assert mem.integrity_report()["ok"]
    assert _names(small_disk) == [name for name in files if name.startswith("memory.db")]


# ---- real processes: the CLI, on a tmpfs or under a file-size limit ----------------------------------------


@dataclass
class Limited:
    """A directory where writes fail: on a full tmpfs, or beyond ``RLIMIT_FSIZE`` for the command."""

    directory: Path
    preexec: Callable[[], None] | None
    kind: str


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write beyond the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


@pytest.fixture(params=["tmpfs", "file-size limit"])
def limited(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Limited]:
    if request.param == "file-size limit":
        directory = tmp_path / "limited"
        directory.mkdir()
        yield Limited(directory, _limit_file_size, "file-size limit")
        return
    mount_point = tmp_path / "small"
    if not _mount_small_disk(mount_point):
        pytest.skip("cannot mount a tmpfs here; the file-size-limit variant runs instead")
    try:
        yield Limited(mount_point, None, "tmpfs")
    finally:
        _umount(mount_point)


def _cli(limited: Limited, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(robotmem.__file__).resolve().parents[1]),
        "ROBOTMEM_HOME": str(limited.directory.parent / "home"),
        "ROBOTMEM_EMBED_BACKEND": "hash",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=limited.preexec,
    )


def _one_error_line(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["backup", "{out}/copy.db"],
        ["export", "{out}/out.jsonl", "--vectors", "--no-progress"],
        ["export-mcap", "{out}/out.mcap", "", "-n", "100"],
    ],
)
def test_cli_copies_onto_a_full_disk_leave_nothing(
    source: Path, limited: Limited, command: list[str]
) -> None:
    if limited.kind == "tmpfs":
        _fill(limited.directory / "filler", 100)
    before = _names(limited.directory)
    args = [part.format(out=limited.directory) for part in command]
    result = _cli(limited, *args, "--db", str(source / "source.db"))
    _one_error_line(result)
    assert _names(limited.directory) == before


def test_cli_import_onto_a_full_disk_changes_nothing(source: Path, limited: Limited) -> None:
    db = limited.directory / "memory.db"
    with _open(db) as mem:
        mem.learn("grip_force=2N held the sponge")
        before = table_counts(mem)
    files = _names(limited.directory)
    result = _cli(limited, "import", str(source / "source.jsonl"), "--no-progress", "--db", str(db))
    _one_error_line(result)
    with _open(db) as mem:
        assert table_counts(mem) == before
        assert mem.integrity_report()["ok"]
    assert [name for name in _names(limited.directory) if not name.startswith("memory.db")] == [
        name for name in files if not name.startswith("memory.db")
    ]
