"""``MemoryTable`` on SQLite: rows of ``memories`` and everything that must change with them (FTS, tags,
payloads), and the SQL functions the store's statements call."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from robotmem.formats.validation import is_stored_timestamp
from robotmem.query.regions import DEFAULT_FRAME
from robotmem.records import Memory, NewMemory, Sighting
from robotmem.rules.consolidation import Candidate
from robotmem.store.protocol import VectorBatch
from robotmem.store.shared import rows
from robotmem.store.shared.checks import NAMED
from robotmem.store.sqlite import columns, search, text_index
from robotmem.store.sqlite import vectors as vector_rows
from robotmem.text.tokens import numbers_query

if TYPE_CHECKING:
    from robotmem.store.sqlite.mirror import RecallMirror

_FACTS = "m.status = 'active' AND m.type = 'fact' AND m.collection = :p_collection"
_COLUMNS = rows.memory_columns()


def text_of(path: str) -> str:
    """SQL over ``memories m``: the text at ``path`` of its context, else NULL."""
    return f"CASE WHEN json_type(m.context, '{path}') = 'text' THEN json_extract(m.context, '{path}') END"


# A memory's frame (``query.regions``): its ``spatial.frame`` text, the default when it names none, else NULL.
FRAME = (
    f"(CASE WHEN json_type(m.context, '$.spatial.frame') IS NULL THEN '{DEFAULT_FRAME}' "
    "WHEN json_type(m.context, '$.spatial.frame') = 'text' THEN json_extract(m.context, '$.spatial.frame') END)"
)
# The memories, ``m``, with a context that is valid JSON (a damaged one reads as {}), for the object reads.
_READABLE = (
    "(SELECT id, COALESCE(observed_at, created_at) AS observed_at, "
    "CASE WHEN json_valid(context) THEN context ELSE '{}' END AS context FROM memories) m"
)
# The object id and label of the memories of the JSON list :ids.
_NAMED = (
    f"SELECT {text_of('$.object.id')} AS named, {text_of('$.object.label')} AS label "
    f"FROM json_each(:ids) j JOIN {_READABLE} ON m.id = j.value"
)
# The object id and label of memories (``objects_of``; the recall mirror's copy of them reads the same).
OBJECT_COLUMNS = f"SELECT m.id, {text_of('$.object.id')}, {text_of('$.object.label')} FROM {_READABLE}"
# What a memory says of the object it saw (``rows.row_to_sighting``).
_SIGHTING_COLUMNS = (
    f"SELECT m.id, {text_of('$.object.id')}, {text_of('$.object.label')}, "
    "CASE WHEN json_type(m.context, '$.spatial.position') = 'array' "
    f"THEN json_extract(m.context, '$.spatial.position') END, {FRAME}, m.observed_at FROM {_READABLE}"
)
# The kind of each column of ``_COLUMNS``, in order (``columns.MEMORY_COLUMNS``), and the Python types
# each may have when well formed (JSON columns are text here; ``rows.row_to_memory`` reads the context).
_ROW_KINDS = tuple(columns.MEMORY_COLUMNS[name.strip().removeprefix("m.")] for name in _COLUMNS.split(","))
_ROW_TYPES = tuple(
    ({"integer": (int,), "number": (int, float)}.get(kind.rstrip("?"), (str,)))
    + ((type(None),) if kind.endswith("?") else ())
    for kind in _ROW_KINDS
)
_SIGNATURES: dict[tuple[type, ...], bool] = {}


def _repaired(row: Sequence[Any]) -> Sequence[Any]:
    """``row`` with each value of a wrong kind read as ``repair`` would rewrite it (``columns.repaired``).

    The quick test every row passes unless another program wrote it looks at the types of its values
    only: a row's tuple of value types is looked up in a small cache, so the test costs one ``map``.
    """
    signature = tuple(map(type, row))
    known = _SIGNATURES.get(signature)
    if known is None:
        known = all(t in allowed for t, allowed in zip(signature, _ROW_TYPES, strict=True))
        if len(_SIGNATURES) < 4096:
            _SIGNATURES[signature] = known
    if known:
        return row
    return [
        value if columns.problem(value, kind) is None else columns.repaired(value, kind)
        for value, kind in zip(row, _ROW_KINDS, strict=True)
    ]


def register_functions(conn: sqlite3.Connection) -> None:
    """Register the SQL functions the store's statements call on ``conn``.

    ``robotmem_decay(base, since, now, rate)`` (``rows.decayed``) and ``robotmem_is_time(text)`` (1 when
    ``text`` is a time in the stored UTC form).
    """
    conn.create_function("robotmem_decay", 4, rows.decayed, deterministic=True)
    conn.create_function(
        "robotmem_is_time", 1, lambda text: int(is_stored_timestamp(text)), deterministic=True
    )


def record_access(conn: sqlite3.Connection, counts: dict[int, int], now: str) -> None:
    """Add ``counts`` to ``access_count``, stamp ``last_accessed`` and restart decay from the current confidence."""
    conn.executemany(
        "UPDATE memories SET access_count = access_count + :n, last_accessed = :now, base_confidence = confidence "
        "WHERE id = :id",
        [{"id": memory_id, "n": n, "now": now} for memory_id, n in counts.items()],
    )


class Memories:
    """``MemoryTable`` on SQLite; with the recall mirror, the objects memories name are read from its copy."""

    def __init__(self, conn: sqlite3.Connection, mirror: RecallMirror | None = None) -> None:
        self._conn = conn
        self._mirror = mirror

    def insert_many(
        self, news: Sequence[NewMemory], vectors: VectorBatch | None = None, model_id: str | None = None
    ) -> list[int]:
        """The memory rows go in one by one (each id comes from SQLite), then each other table takes one
        statement."""
        conn = self._conn
        ids = [self._insert_row(new) for new in news]
        text_index.add(conn, [(memory_id, new.index_body) for memory_id, new in zip(ids, news, strict=True)])
        # Fresh ids (AUTOINCREMENT never reuses one) have no tags yet: nothing to replace, only to insert.
        conn.executemany(
            "INSERT OR IGNORE INTO memory_tags (memory_id, tag, source) VALUES (?, ?, 'auto')",
            rows.new_tags(ids, news),
        )
        conn.executemany(
            "INSERT INTO perception_payloads (memory_id, data, metadata) VALUES (?, ?, ?)",
            rows.new_payloads(ids, news),
        )
        if vectors is not None and model_id is not None:
            for memory_id, vector in zip(ids, vectors, strict=True):
                if vector is not None:
                    vector_rows.put(conn, memory_id, vector, model_id)
        return ids

    def get(self, memory_id: int) -> Memory:
        return rows.existing_memory(memory_id, self.fetch([memory_id]).get(memory_id))

    def get_active(self, memory_id: int) -> Memory:
        return rows.active_memory(self.get(memory_id))

    def fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        found: dict[int, Memory] = {}
        for chunk in rows.batches(ids, 500):
            marks = ",".join("?" * len(chunk))
            tags: dict[int, list[str]] = {}
            for memory_id, tag in self._conn.execute(
                f"SELECT memory_id, tag FROM memory_tags WHERE memory_id IN ({marks}) ORDER BY rowid", chunk
            ):
                tags.setdefault(memory_id, []).append(
                    tag if isinstance(tag, str) else columns.repaired(tag, "text")
                )
            for row in self._conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.id IN ({marks})", chunk
            ):
                found[row[0]] = rows.row_to_memory(row, tags.get(row[0], ()), _repaired)
        return found

    def sightings(self, ids: Sequence[int]) -> dict[int, Sighting]:
        found: dict[int, Sighting] = {}
        for chunk in rows.batches(ids, 500):
            marks = ",".join("?" * len(chunk))
            for row in self._conn.execute(f"{_SIGHTING_COLUMNS} WHERE m.id IN ({marks})", chunk):
                found[row[0]] = rows.row_to_sighting(row)
        return found

    def objects_of(self, ids: Sequence[int]) -> dict[int, tuple[str | None, str | None]]:
        if self._mirror is not None:
            self._mirror.sync(self._conn)
            return self._mirror.objects_of(self._conn, ids)
        found: dict[int, tuple[str | None, str | None]] = {}
        for chunk in rows.batches(ids, 500):
            marks = ",".join("?" * len(chunk))
            for memory_id, object_id, label in self._conn.execute(
                f"{OBJECT_COLUMNS} WHERE m.id IN ({marks})", chunk
            ):
                found[memory_id] = (object_id or None, label or None)
        return found

    def object_track(
        self, collection: str, object_id: str, since: str | None, until: str | None
    ) -> tuple[int, int] | None:
        return rows.object_track(self._conn, NAMED, collection, object_id, since, until)

    def latest_by_object(self, collection: str, since: str | None, most: int) -> list[tuple[str, int]] | None:
        return rows.latest_by_object(self._conn, NAMED, collection, since, most)

    def objects_named(self, ids: Sequence[int]) -> set[tuple[str | None, str | None]]:
        if self._mirror is not None:
            self._mirror.sync(self._conn)
            return self._mirror.objects_named(self._conn, ids)
        found = self._conn.execute(
            f"SELECT DISTINCT named, label FROM ({_NAMED})", {"ids": json.dumps(list(ids))}
        )
        return rows.named_objects(found)

    def contents(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        found: list[tuple[int, str]] = []
        for chunk in rows.batches(ids, 500):
            marks = ",".join("?" * len(chunk))
            found.extend(
                self._conn.execute(
                    f"SELECT id, content FROM memories WHERE id IN ({marks}) ORDER BY id", chunk
                )
            )
        return found

    def payload(self, memory_id: int) -> tuple[Any, Any]:
        row = self._conn.execute(
            "SELECT data, metadata FROM perception_payloads WHERE memory_id = :id", {"id": memory_id}
        ).fetchone()
        return (None, None) if row is None else rows.read_payload(row[0], row[1])

    def payloads(self, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        found = self._conn.execute(
            f"SELECT memory_id, data, metadata FROM perception_payloads WHERE memory_id IN ({marks})",
            list(ids),
        )
        return {row[0]: rows.read_payload(row[1], row[2]) for row in found}

    def find_exact(self, collection: str, digest: str) -> int | None:
        row = self._conn.execute(
            "SELECT id FROM memories WHERE content_hash = :hash AND collection = :collection "
            "AND status = 'active' AND type = 'fact' ORDER BY id LIMIT 1",
            {"hash": digest, "collection": collection},
        ).fetchone()
        return None if row is None else int(row[0])

    def facts_with_numbers(self, collection: str, text: str, limit: int) -> list[tuple[int, str]] | None:
        match = numbers_query(text)
        if match is None:
            return None
        # CROSS JOIN keeps the FTS index the outer loop; otherwise SQLite may probe it once per memory.
        found = self._conn.execute(
            "SELECT m.id, m.content FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH :match AND {_FACTS} LIMIT :limit",
            {"match": match, "p_collection": collection, "limit": limit + 1},
        ).fetchall()
        return None if len(found) > limit else [(int(m), str(content)) for m, content in found]

    def jaccard_candidates(self, collection: str, text: str, limit: int, threshold: float) -> list[int]:
        found = search.jaccard_candidates(
            self._conn, text, _FACTS, {"p_collection": collection}, limit, threshold
        )
        return [memory_id for memory_id, _ in found]

    def active_facts_among(self, ids: Sequence[int], collection: str) -> set[int]:
        return search.passing(self._conn, ids, _FACTS, {"p_collection": collection})

    def replace_content(self, memory_id: int, **fields: Any) -> None:
        self._conn.execute(
            "UPDATE memories SET content = :content, content_hash = :hash, category = :category, "
            "confidence = :confidence, base_confidence = :confidence, context = :context, scope_files = :files, "
            "scope_entities = :entities, embedding_model = NULL, updated_at = :now, "
            "observed_at = COALESCE(:observed, observed_at) WHERE id = :id",
            rows.new_content(memory_id, fields),
        )
        text_index.replace(self._conn, memory_id, fields["index_body"])
        self._set_tags(memory_id, fields["tags"])

    def invalidate(self, memory_id: int, reason: str, now: str) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'invalidated', invalidated_reason = :reason, updated_at = :now "
            "WHERE id = :id",
            {"id": memory_id, "reason": reason, "now": now},
        )
        text_index.remove(self._conn, [memory_id])

    def supersede(self, representative: int, merged: Sequence[int], now: str) -> None:
        self._conn.executemany(
            "UPDATE memories SET status = 'superseded', superseded_by = :rep, updated_at = :now WHERE id = :id",
            [{"rep": representative, "now": now, "id": memory_id} for memory_id in merged],
        )
        text_index.remove(self._conn, merged)
        row = self._conn.execute(
            "SELECT merged_ids FROM memories WHERE id = :id", {"id": representative}
        ).fetchone()
        self._conn.execute(
            "UPDATE memories SET merged_ids = :merged, updated_at = :now WHERE id = :id",
            {"merged": rows.merged_with(row[0] if row else None, merged), "now": now, "id": representative},
        )

    def decay(self, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
        """Runs ``robotmem_decay`` (``register_functions``) in SQL, so the same elapsed time always gives
        the same value however often this runs."""
        marks = ",".join("?" * len(protected))
        cursor = self._conn.execute(
            "UPDATE memories SET confidence = "
            "COALESCE(robotmem_decay(base_confidence, COALESCE(last_accessed, created_at), ?, ?), confidence) "
            f"WHERE collection = ? AND status = 'active' AND category NOT IN ({marks}) "
            "AND abs(confidence - robotmem_decay(base_confidence, COALESCE(last_accessed, created_at), ?, ?)) "
            "> 1e-9",
            [now, rate, collection, *protected, now, rate],
        )
        return int(cursor.rowcount)

    def consolidation_candidates(self, session_id: str, collection: str) -> list[Candidate]:
        found = self._conn.execute(
            "SELECT id, category, confidence, access_count, created_at, content FROM memories "
            "WHERE session_id = :session AND collection = :collection AND status = 'active' AND type = 'fact'",
            {"session": session_id, "collection": collection},
        )
        return [Candidate(*row) for row in found]

    def latest_in_session(self, session_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT content FROM memories WHERE session_id = :id AND status = 'active' "
            "ORDER BY julianday(created_at) DESC, id DESC LIMIT 1",
            {"id": session_id},
        ).fetchone()
        return None if row is None else str(row[0])

    def session_texts(self, session_id: str, limit: int) -> list[str]:
        found = self._conn.execute(
            "SELECT content FROM memories WHERE session_id = :id AND status = 'active' ORDER BY id LIMIT :limit",
            {"id": session_id, "limit": limit},
        )
        return [str(row[0]) for row in found]

    def _insert_row(self, new: NewMemory) -> int:
        row = rows.new_memory_row(new)
        cursor = self._conn.execute(
            f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join(':' + name for name in row)})", row
        )
        return int(cursor.lastrowid or 0)

    def _set_tags(self, memory_id: int, tags: Sequence[str]) -> None:
        """Replace the automatic tags of ``memory_id`` with ``tags``."""
        self._conn.execute(
            "DELETE FROM memory_tags WHERE memory_id = :id AND source = 'auto'", {"id": memory_id}
        )
        self._conn.executemany(
            "INSERT OR IGNORE INTO memory_tags (memory_id, tag, source) VALUES (:id, :tag, 'auto')",
            [{"id": memory_id, "tag": tag} for tag in dict.fromkeys(tags)],
        )
