"""The mirror's invariants (``store/sqlite/mirror.py``): every field a recall filters on is logged or volatile."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.filters import RECORD_FIELDS
from robotmem.store.sqlite import migrations, mirror


def _tracked() -> set[str]:
    return {column.strip() for column in migrations._TRACKED.split(",")}


def _columns(tmp_path: Path, settings: Settings) -> set[str]:
    with RobotMemory(tmp_path / "m.db", settings=settings, embed_backend="none"):
        pass
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        return {str(row[1]) for row in conn.execute("PRAGMA table_info(memories)")}
    finally:
        conn.close()


def test_every_filterable_record_field_is_tracked_volatile_or_fixed() -> None:
    tracked = _tracked()
    for field, column in RECORD_FIELDS.items():
        name = column.removeprefix("m.")
        covered = name in tracked or field in mirror._VOLATILE or field in ("id", "tags")
        assert covered, f"filter field {field!r} ({column}) changes without a logged write"


def test_every_column_the_mirror_reads_is_tracked() -> None:
    read = set(re.findall(r"\b([a-z_]+)\b", mirror._ROWS.split("FROM")[0].removeprefix("SELECT")))
    read -= {"id", "status", "active", "json_extract", "julianday", "env", "sim_or_real", "real"}
    assert read, mirror._ROWS
    assert read | {"status", "context"} <= _tracked()


def test_only_bookkeeping_columns_are_left_out_of_the_change_log(tmp_path: Path, settings: Settings) -> None:
    untracked = _columns(tmp_path, settings) - _tracked()
    # id never changes; the access columns change on every recall (and are volatile or unfilterable);
    # base_confidence moves with confidence; embedding_model follows the vector rows, which carry a seq.
    assert untracked == {"id", "access_count", "last_accessed", "base_confidence", "embedding_model"}


def test_fts_rows_are_written_only_through_the_fts_module() -> None:
    store_dir = Path(mirror.__file__).parent
    offenders = [
        path.name
        for path in store_dir.glob("*.py")
        if path.name not in ("fts.py", "migrations.py")
        and re.search(r"(INSERT INTO|DELETE FROM|UPDATE) memories_fts", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
