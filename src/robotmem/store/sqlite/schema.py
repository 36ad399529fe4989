"""Schema versions. Each migration is applied once, in order, inside one write transaction.

The version lives in ``PRAGMA user_version``; a database newer than this code is refused.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

from robotmem.errors import DatabaseError
from robotmem.store.shared.identity import derived_robot_id
from robotmem.store.shared.terms import FTS_TOKENIZER
from robotmem.store.sqlite import regions, values
from robotmem.store.sqlite.connection import describe_error, write
from robotmem.text.taxonomy import tag_rows

# FTS5 sees the tokens text.index_text() produced; '_' and '.' stay inside words so grip_force and
# 12.5 are single terms, and porter folds English inflections (grasping → grasp).

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
_TRACKED_V3 = (
    "collection, type, content, human_summary, content_hash, category, confidence, "
    "context, scope_files, scope_entities, session_id, perception_type, status, superseded_by, merged_ids, "
    "invalidated_reason, created_at, updated_at, uid"
)
# Schema version 4 adds ``robot_id``, which recall filters on (robot scoping); 6 adds ``observed_at``.
_TRACKED_V4 = _TRACKED_V3 + ", robot_id"
_TRACKED = _TRACKED_V4 + ", observed_at"
_LOG_CHANGE = (
    "INSERT OR REPLACE INTO memory_changes (memory_id, seq) "
    "VALUES ({}, (SELECT COALESCE(MAX(seq), 0) + 1 FROM memory_changes))"
)


def _migrate_v3(conn: sqlite3.Connection) -> None:
    """``memory_changes``: the last change ``seq`` of every memory, kept by triggers.

    An in-process mirror of the recall columns (``mirror.py``) reads the rows above the last ``seq``
    it saw, so it follows every writer (this process, another process, the CLI) without reloading.
    One row per memory: the table stays as large as ``memories``, not as long as its history.
    """
    conn.execute("CREATE TABLE memory_changes (memory_id INTEGER PRIMARY KEY, seq INTEGER NOT NULL)")
    conn.execute("CREATE INDEX idx_memory_changes_seq ON memory_changes(seq)")
    triggers = {
        "memories_logged_insert": ("AFTER INSERT ON memories", "NEW.id"),
        "memories_logged_update": (f"AFTER UPDATE OF {_TRACKED_V3} ON memories", "NEW.id"),
        "memories_logged_delete": ("AFTER DELETE ON memories", "OLD.id"),
        "memory_tags_logged_insert": ("AFTER INSERT ON memory_tags", "NEW.memory_id"),
        "memory_tags_logged_delete": ("AFTER DELETE ON memory_tags", "OLD.memory_id"),
    }
    for name, (event, memory_id) in triggers.items():
        conn.execute(f"CREATE TRIGGER {name} {event} BEGIN {_LOG_CHANGE.format(memory_id)}; END")


_SESSION_LOG = (
    "INSERT OR REPLACE INTO session_changes (session_id, seq) "
    "VALUES ({}, (SELECT COALESCE(MAX(seq), 0) + 1 FROM session_changes))"
)


def _migrate_v4(conn: sqlite3.Connection) -> None:
    """Fleet identity and sync: ``robot_id`` per memory, the store's own id, change logs and peer cursors.

    ``meta.store_id`` (random, never changes) names this file as a sync peer; ``meta.robot_id`` is the
    robot its memories belong to unless the ``robot_id`` setting says otherwise. Memories written before
    this version belong to that robot. ``session_changes`` does for sessions what ``memory_changes``
    does for memories, so a sync reads only what changed; ``sync_peers`` keeps, per peer store, how far
    this store has pushed its own changes and pulled the peer's.
    """
    store_id = uuid.uuid4().hex
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', :id)", {"id": store_id})
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('robot_id', :robot)",
        {"robot": derived_robot_id(store_id)},
    )
    conn.execute("ALTER TABLE memories ADD COLUMN robot_id TEXT NOT NULL DEFAULT ''")
    conn.execute("UPDATE memories SET robot_id = (SELECT value FROM meta WHERE key = 'robot_id')")
    conn.execute("CREATE INDEX idx_mem_robot ON memories(robot_id)")
    conn.execute("DROP TRIGGER memories_logged_update")
    conn.execute(
        f"CREATE TRIGGER memories_logged_update AFTER UPDATE OF {_TRACKED_V4} ON memories "
        f"BEGIN {_LOG_CHANGE.format('NEW.id')}; END"
    )
    conn.execute("CREATE TABLE session_changes (session_id TEXT PRIMARY KEY, seq INTEGER NOT NULL)")
    conn.execute("CREATE INDEX idx_session_changes_seq ON session_changes(seq)")
    triggers = {
        "sessions_logged_insert": "AFTER INSERT ON sessions",
        "sessions_logged_update": "AFTER UPDATE ON sessions",
        "session_outcomes_logged_insert": "AFTER INSERT ON session_outcomes",
        "session_outcomes_logged_update": "AFTER UPDATE ON session_outcomes",
    }
    for name, event in triggers.items():
        column = "NEW.id" if event.endswith(" sessions") else "NEW.session_id"
        conn.execute(f"CREATE TRIGGER {name} {event} BEGIN {_SESSION_LOG.format(column)}; END")
    conn.execute(
        "INSERT INTO session_changes (session_id, seq) "
        "SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) FROM sessions"
    )
    # Memories older than the change log (schema version 2 files) get a row, so a sync sees them.
    conn.execute(
        "INSERT INTO memory_changes (memory_id, seq) "
        "SELECT id, (SELECT COALESCE(MAX(seq), 0) FROM memory_changes) + ROW_NUMBER() OVER (ORDER BY id) "
        "FROM memories WHERE id NOT IN (SELECT memory_id FROM memory_changes)"
    )
    conn.execute(
        "CREATE TABLE sync_peers ("
        "peer TEXT PRIMARY KEY, location TEXT NOT NULL, "
        "pushed_memories INTEGER NOT NULL DEFAULT 0, pushed_sessions INTEGER NOT NULL DEFAULT 0, "
        "pulled_memories INTEGER NOT NULL DEFAULT 0, pulled_sessions INTEGER NOT NULL DEFAULT 0, "
        "synced_at TEXT)"
    )


def _migrate_v5(conn: sqlite3.Connection) -> None:
    """Two derived indexes for recall.

    ``context_values``: the context values each memory carries, for the named-value boost; kept by
    triggers on ``memories`` (``store/sqlite/values.py``), filled here from every stored context.
    ``memory_episode_vectors``: like ``memory_vectors``, an optional second vector per memory — its text
    after its predecessor's in the session, embedded together — written by learn while
    ``episode_vector_weight`` is above 0; empty until then.
    """
    conn.execute(values.CREATE_TABLE)
    conn.execute(values.CREATE_INDEX)
    for trigger in values.TRIGGERS:
        conn.execute(trigger)
    values.rebuild(conn)
    conn.execute(
        "CREATE TABLE memory_episode_vectors ("
        "memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE, "
        "seq INTEGER NOT NULL, model_id TEXT NOT NULL, embedding BLOB)"
    )
    conn.execute("CREATE INDEX idx_episode_vectors_seq ON memory_episode_vectors(seq)")


def _migrate_v6(conn: sqlite3.Connection) -> None:
    """Event time: ``observed_at``, when a memory happened, beside ``created_at``, when it was stored.

    Memories stored before this version happened, as far as the store knows, when they were stored.
    The update trigger logs a change of it, so the recall mirror and sync see a corrected time.
    """
    conn.execute("ALTER TABLE memories ADD COLUMN observed_at TEXT NOT NULL DEFAULT ''")
    conn.execute("UPDATE memories SET observed_at = created_at")
    # A window alone reads the first; "the newest of a collection" (order=recent) walks the second.
    conn.execute("CREATE INDEX idx_mem_observed ON memories(observed_at)")
    conn.execute("CREATE INDEX idx_mem_observed_in ON memories(collection, observed_at)")
    conn.execute("DROP TRIGGER memories_logged_update")
    conn.execute(
        f"CREATE TRIGGER memories_logged_update AFTER UPDATE OF {_TRACKED} ON memories "
        f"BEGIN {_LOG_CHANGE.format('NEW.id')}; END"
    )


def _migrate_spatial_index(conn: sqlite3.Connection) -> None:
    """The spatial index of ``spatial.position`` (``store/sqlite/regions.py``): an R*Tree by frame and
    coordinates, kept by triggers on ``memories``, filled here from every active memory."""
    regions.create(conn)


# What ``_migrate_object_ids`` adds, undone (tests write files of earlier versions this way).
OBJECT_IDS_DROP = ("DROP INDEX idx_mem_object", "ALTER TABLE memories DROP COLUMN object_id")


def _migrate_object_ids(conn: sqlite3.Connection) -> None:
    """An object's sightings by key: ``object_id`` is the text at ``context.object.id`` (else NULL; the rule
    of ``sightings``; a damaged context names none), computed from the context, and the index finds an
    object's latest sighting and counts its sightings in a window from the index alone
    (``MemoryTable.object_track``). A virtual column: nothing is rewritten, the index is built once."""
    conn.execute(
        "ALTER TABLE memories ADD COLUMN object_id TEXT GENERATED ALWAYS AS (CASE WHEN json_valid(context) "
        "THEN CASE WHEN json_type(context, '$.object.id') = 'text' THEN json_extract(context, '$.object.id') "
        "END END) VIRTUAL"
    )
    conn.execute(
        "CREATE INDEX idx_mem_object ON memories(collection, object_id, observed_at) "
        "WHERE status = 'active' AND object_id IS NOT NULL"
    )


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_v1,
    _migrate_v2,
    _migrate_v3,
    _migrate_v4,
    _migrate_v5,
    _migrate_v6,
    _migrate_spatial_index,
    _migrate_object_ids,
)
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
