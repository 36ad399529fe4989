"""Where ``backup`` and ``export`` may write: the one guard both pass their target through.

A copy of the memory must never destroy the memory. The guard refuses the live database and its
``-wal``/``-shm``/``-journal`` files — by resolved path (through symlinks) and by inode (hard
links) — and any existing file unless the caller allows replacing it; even then only an ordinary
file that holds no SQLite database or WAL is replaced. ``new_file`` writes a new file under a
temporary name beside it and renames it only once complete.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from robotmem.errors import ValidationError

SIDE_FILES = ("", "-wal", "-shm", "-journal")
_SQLITE_HEADER = b"SQLite format 3\x00"
_WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def live_files(database: str) -> list[Path]:
    """Return the files SQLite uses for ``database``, as given and resolved (none for ``:memory:``)."""
    if database == ":memory:":
        return []
    given = Path(database).expanduser().absolute()
    bases = {given, Path(os.path.realpath(given))}
    return [Path(f"{base}{suffix}") for base in sorted(bases) for suffix in SIDE_FILES]


def _same_file(left: Path, right: Path) -> bool:
    try:
        return os.path.samefile(left, right)
    except OSError:
        return False


def _holds_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE_HEADER))
    except OSError:
        return False
    return head == _SQLITE_HEADER or head[:4] in _WAL_MAGIC


def output_path(raw: Any, database: str, *, replace: bool, hint: str = "") -> Path:
    """Return the resolved file ``raw`` names once it is safe to write there for a copy of ``database``.

    Raises ``ValidationError`` naming ``path`` when ``raw`` is the live database or one of its side
    files (whatever ``replace`` says), a directory, a missing directory, or an existing file while
    ``replace`` is False (``hint`` says how to allow it); with ``replace`` an existing file must be
    an ordinary file that holds no SQLite database.
    """
    if not isinstance(raw, (str, os.PathLike)) or not str(raw).strip():
        raise ValidationError("path: must name the file to write")
    target = Path(raw).expanduser().absolute()
    resolved = Path(os.path.realpath(target))
    for live in live_files(database):
        if resolved == Path(os.path.realpath(live)) or _same_file(resolved, live):
            raise ValidationError(
                f"path: {target} is the database in use ({database}) or one of its -wal/-shm files; "
                "robotmem never writes a copy over it — choose another file"
            )
    if resolved.exists():
        if resolved.is_dir():
            raise ValidationError(f"path: {target} is a directory; name a file inside it")
        if not replace:
            raise ValidationError(f"path: {target} already exists; choose a new file name{hint}")
        if not resolved.is_file():
            raise ValidationError(f"path: {target} is not an ordinary file; choose another file")
        if _holds_sqlite(resolved):
            raise ValidationError(
                f"path: {target} holds a SQLite database or its WAL; robotmem never writes over one"
            )
    if not resolved.parent.is_dir():
        raise ValidationError(f"path: directory {resolved.parent} does not exist; create it first")
    return resolved


@contextmanager
def new_file(target: Path, what: str = "path") -> Iterator[Path]:
    """Yield a temporary path beside ``target`` to write; it becomes ``target`` only when the block ends
    without an error, and is removed otherwise, so a failed write leaves no file behind.

    The rename never replaces a file that appeared at ``target`` meanwhile. Raises ``ValidationError``
    naming ``what`` when ``target`` exists or the file cannot be written (a full disk, no permission).
    """
    if target.exists():
        raise ValidationError(f"{what}: {target} exists; choose a new file name")
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        yield partial
        _rename_new(partial, target, what)
    except OSError as exc:
        raise ValidationError(f"{what}: cannot write {target} ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _rename_new(partial: Path, target: Path, what: str) -> None:
    try:
        os.link(partial, target)  # unlike a rename, fails when target exists
    except FileExistsError:
        raise ValidationError(
            f"{what}: {target} appeared while it was written; choose a new file name"
        ) from None
    except OSError:  # a file system without hard links
        if target.exists():
            raise ValidationError(
                f"{what}: {target} appeared while it was written; choose a new file name"
            ) from None
        os.replace(partial, target)
