"""Schema versions. Each migration is applied once, in order, inside one write transaction.

The version lives in ``PRAGMA user_version``; a database newer than this code is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from robotmem.errors import DatabaseError
from robotmem.store.sqlite.connection import describe_error, write
from robotmem.taxonomy import tag_rows

# FTS5 sees the tokens text.index_text() produced; '_' and '.' stay inside words so grip_force and
# 12.5 are single terms, and porter folds English inflections (grasping → grasp).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars '_.'"

_V1 = f"""
CREATE TABLE memories (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    collection       TEXT    NOT NULL,
    type             TEXT    NOT NULL CHECK (type IN ('fact', 'perception')),
    content          TEXT    NOT NULL,
    human_summary    TEXT,
    content_hash     TEXT,
    category         TEXT    NOT NULL,
    confidence       REAL    NOT NULL,
    base_confidence  REAL    NOT NULL,
    context          TEXT    NOT NULL DEFAULT '{{}}',
    scope_files      TEXT    NOT NULL DEFAULT '[]',
    scope_entities   TEXT    NOT NULL DEFAULT '[]',
    session_id       TEXT,
    perception_type  TEXT,
    status           TEXT    NOT NULL DEFAULT 'active'
                             CHECK (status IN ('active', 'superseded', 'invalidated')),
    superseded_by    INTEGER REFERENCES memories(id),
    merged_ids       TEXT    NOT NULL DEFAULT '[]',
    invalidated_reason TEXT,
    embedding_model  TEXT,
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed    TEXT,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);
CREATE INDEX idx_mem_collection ON memories(collection);
CREATE INDEX idx_mem_status ON memories(status);
CREATE INDEX idx_mem_session ON memories(session_id);
CREATE INDEX idx_mem_type ON memories(type);
CREATE INDEX idx_mem_hash ON memories(content_hash) WHERE content_hash IS NOT NULL;
CREATE INDEX idx_mem_no_embed ON memories(collection) WHERE embedding_model IS NULL AND status = 'active';
CREATE INDEX idx_mem_created ON memories(collection, created_at);

CREATE TABLE perception_payloads (
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    data      TEXT,
    metadata  TEXT
);

CREATE TABLE memory_vectors (
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    model_id  TEXT    NOT NULL,
    embedding BLOB
);
CREATE INDEX idx_vectors_seq ON memory_vectors(seq);

CREATE VIRTUAL TABLE memories_fts USING fts5(body, tokenize = "{FTS_TOKENIZER}");

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    collection  TEXT NOT NULL,
    context     TEXT NOT NULL DEFAULT '{{}}',
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    summary     TEXT,
    created_at  TEXT NOT NULL,
    ended_at    TEXT
);
CREATE INDEX idx_sessions_collection ON sessions(collection, created_at);

CREATE TABLE session_outcomes (
    session_id    TEXT PRIMARY KEY REFERENCES sessions(id),
    outcome_score REAL,
    memory_count  INTEGER NOT NULL,
    summary       TEXT NOT NULL,
    created_at    TEXT NOT NULL
);

CREATE TABLE memory_tags (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    tag       TEXT    NOT NULL,
    source    TEXT    NOT NULL DEFAULT 'auto',
    PRIMARY KEY (memory_id, tag)
);
CREATE INDEX idx_memory_tags_tag ON memory_tags(tag);

CREATE TABLE tag_meta (
    tag         TEXT PRIMARY KEY,
    parent      TEXT,
    dimension   TEXT NOT NULL,
    description TEXT NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def _migrate_v1(conn: sqlite3.Connection) -> None:
    # One statement at a time: executescript() would commit the surrounding transaction first.
    for statement in _V1.split(";\n"):
        if statement.strip():
            conn.execute(statement)
    conn.executemany(
        "INSERT OR IGNORE INTO tag_meta (tag, parent, dimension, description) VALUES (?, ?, ?, ?)", tag_rows()
    )


def _migrate_v2(conn: sqlite3.Connection) -> None:
    """A stable ``uid`` per memory (export/import identity) and the staging table of ``embed reindex``."""
    conn.execute("ALTER TABLE memories ADD COLUMN uid TEXT")
    conn.execute("UPDATE memories SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL")
    conn.execute("CREATE UNIQUE INDEX idx_mem_uid ON memories(uid)")
    conn.execute(
        "CREATE TABLE reindex_vectors ("
        "memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE, "
        "model_id TEXT NOT NULL, content TEXT NOT NULL, embedding BLOB NOT NULL)"
    )


# Columns whose change can alter what a recall returns: every column but the access bookkeeping
# (``access_count``, ``last_accessed``, rewritten by every recall) and ``embedding_model`` (vectors
# carry their own ``seq``).
_TRACKED = (
    "collection, type, content, human_summary, content_hash, category, confidence, "
    "context, scope_files, scope_entities, session_id, perception_type, status, superseded_by, merged_ids, "
    "invalidated_reason, created_at, updated_at, uid"
)
_LOG_CHANGE = (
    "INSERT OR REPLACE INTO memory_changes (memory_id, seq) "
    "VALUES ({}, (SELECT COALESCE(MAX(seq), 0) + 1 FROM memory_changes))"
)


def _migrate_v3(conn: sqlite3.Connection) -> None:
    """``memory_changes``: the last change ``seq`` of every memory, kept by triggers.

    An in-process mirror of the recall columns (``store.mirror``) reads the rows above the last ``seq``
    it saw, so it follows every writer (this process, another process, the CLI) without reloading.
    One row per memory: the table stays as large as ``memories``, not as long as its history.
    """
    conn.execute("CREATE TABLE memory_changes (memory_id INTEGER PRIMARY KEY, seq INTEGER NOT NULL)")
    conn.execute("CREATE INDEX idx_memory_changes_seq ON memory_changes(seq)")
    triggers = {
        "memories_logged_insert": ("AFTER INSERT ON memories", "NEW.id"),
        "memories_logged_update": (f"AFTER UPDATE OF {_TRACKED} ON memories", "NEW.id"),
        "memories_logged_delete": ("AFTER DELETE ON memories", "OLD.id"),
        "memory_tags_logged_insert": ("AFTER INSERT ON memory_tags", "NEW.memory_id"),
        "memory_tags_logged_delete": ("AFTER DELETE ON memory_tags", "OLD.memory_id"),
    }
    for name, (event, memory_id) in triggers.items():
        conn.execute(f"CREATE TRIGGER {name} {event} BEGIN {_LOG_CHANGE.format(memory_id)}; END")


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_migrate_v1, _migrate_v2, _migrate_v3)
SCHEMA_VERSION = len(MIGRATIONS)


def _is_foreign(conn: sqlite3.Connection) -> bool:
    """True when the file holds tables but no ``memories`` table: another program's database."""
    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return bool(names) and "memories" not in names


def migrate(conn: sqlite3.Connection, path: Path | str, *, read_only: bool = False) -> int:
    """Bring the schema up to ``SCHEMA_VERSION``; return the version found before.

    Raises ``DatabaseError`` if the file is another program's SQLite database, was written by a
    newer robotmem, or (``read_only``) needs an upgrade that cannot be written.
    """
    try:
        foreign = _is_foreign(conn)
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        raise describe_error(exc, path) from None
    if foreign:
        raise DatabaseError(
            f"database {path}: the file is a SQLite database of another program, not a robotmem database; "
            "check --db and ROBOTMEM_HOME (robotmem changes nothing in it)"
        )
    if read_only and current != SCHEMA_VERSION:
        if current > SCHEMA_VERSION:
            raise DatabaseError(
                f"database {path}: schema version {current} is newer than this robotmem ({SCHEMA_VERSION}); upgrade robotmem"
            )
        raise DatabaseError(
            f"database {path}: the file is read-only and its schema version {current} needs an upgrade to "
            f"{SCHEMA_VERSION}; open it once where it is writable"
        )

    def apply(c: sqlite3.Connection) -> int:
        found = int(c.execute("PRAGMA user_version").fetchone()[0])
        if found > SCHEMA_VERSION:
            raise DatabaseError(
                f"database {path}: schema version {found} is newer than this robotmem ({SCHEMA_VERSION}); upgrade robotmem"
            )
        for version in range(found, SCHEMA_VERSION):
            MIGRATIONS[version](c)
            c.execute(f"PRAGMA user_version = {version + 1}")
        return found

    if current == SCHEMA_VERSION:
        return current
    return write(conn, apply, path=path)
