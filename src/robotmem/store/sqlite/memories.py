"""Rows of ``memories`` and everything that must change with them: FTS, tags, payloads."""

from __future__ import annotations

import json
import math
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from robotmem.errors import ConflictError, NotFoundError
from robotmem.formats import strict_json
from robotmem.formats.validation import is_stored_timestamp, read_timestamp
from robotmem.records import Memory, NewMemory
from robotmem.rules.consolidation import Candidate, decayed_confidence
from robotmem.store.protocol import FloatArray
from robotmem.store.sqlite import columns, search, text_index
from robotmem.store.sqlite import vectors as vector_rows
from robotmem.text.tokens import numbers_query

_FACTS = "m.status = 'active' AND m.type = 'fact' AND m.collection = :p_collection"

COLUMNS = (
    "m.id, m.collection, m.type, m.content, m.human_summary, m.category, m.confidence, m.session_id, "
    "m.perception_type, m.created_at, m.updated_at, m.access_count, m.context, m.status, m.superseded_by, "
    "m.merged_ids, m.last_accessed, m.scope_files, m.scope_entities, m.invalidated_reason, m.embedding_model, "
    "m.robot_id, m.uid"
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def row_to_memory(row: Sequence[Any], tags: Iterable[str]) -> Memory:
    """Return the ``Memory`` for a row selected with ``COLUMNS``.

    A value of a wrong kind (a BLOB, text in a number column, a context that is not a JSON object:
    written by another program, reported by ``check``) is read as ``repair`` would rewrite it
    (``columns.repaired``), so one odd row cannot break a recall or a listing.
    """
    if not _well_typed(row):
        row = [_as_kind(value, kind) for value, kind in zip(row, _ROW_KINDS, strict=True)]
    context = _context(row[12])
    return Memory(
        id=row[0],
        collection=row[1],
        type=row[2],
        content=row[3],
        human_summary=row[4],
        category=row[5],
        confidence=row[6],
        session_id=row[7],
        perception_type=row[8],
        created_at=row[9],
        updated_at=row[10],
        access_count=row[11],
        context=context,
        status=row[13],
        superseded_by=row[14],
        merged_ids=tuple(json.loads(row[15] or "[]")),
        last_accessed=row[16],
        scope_files=tuple(json.loads(row[17] or "[]")),
        scope_entities=tuple(json.loads(row[18] or "[]")),
        invalidated_reason=row[19],
        has_embedding=row[20] is not None,
        robot_id=row[21],
        uid=row[22],
        tags=tuple(tags),
    )


# The kind of each column of ``COLUMNS``, in order (``columns.MEMORY_COLUMNS``), and the Python types
# each may have when well formed (JSON columns are text here; ``_context`` reads the object).
_ROW_KINDS = tuple(columns.MEMORY_COLUMNS[name.strip().removeprefix("m.")] for name in COLUMNS.split(","))
_ROW_TYPES = tuple(
    ({"integer": (int,), "number": (int, float)}.get(kind.rstrip("?"), (str,)))
    + ((type(None),) if kind.endswith("?") else ())
    for kind in _ROW_KINDS
)
_SIGNATURES: dict[tuple[type, ...], bool] = {}


def _well_typed(row: Sequence[Any]) -> bool:
    """The quick test every row passes unless another program wrote it: the types of its values only.

    A row's tuple of value types is looked up in a small cache, so the test costs one ``map``.
    """
    signature = tuple(map(type, row))
    known = _SIGNATURES.get(signature)
    if known is None:
        known = all(t in allowed for t, allowed in zip(signature, _ROW_TYPES, strict=True))
        if len(_SIGNATURES) < 4096:
            _SIGNATURES[signature] = known
    return known


def _as_kind(value: Any, kind: str) -> Any:
    return value if columns.problem(value, kind) is None else columns.repaired(value, kind)


def _context(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = strict_json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    return dict(strict_json.loads(columns.repaired(text, "object")))


def insert(conn: sqlite3.Connection, new: NewMemory) -> int:
    """Insert ``new`` with its FTS row, tags and payload; return its id."""
    return insert_many(conn, [new])[0]


def insert_many(conn: sqlite3.Connection, news: Sequence[NewMemory]) -> list[int]:
    """Insert every memory of ``news`` as ``insert`` would, in order; return their ids.

    The memory rows go in one by one (each id comes from SQLite), then each other table takes one statement.
    """
    ids = [_insert_row(conn, new) for new in news]
    text_index.add(conn, [(memory_id, new.index_body) for memory_id, new in zip(ids, news, strict=True)])
    # Fresh ids (AUTOINCREMENT never reuses one) have no tags yet: nothing to replace, only to insert.
    conn.executemany(
        "INSERT OR IGNORE INTO memory_tags (memory_id, tag, source) VALUES (:id, :tag, 'auto')",
        [
            {"id": memory_id, "tag": tag}
            for memory_id, new in zip(ids, news, strict=True)
            for tag in dict.fromkeys(new.tags)
        ],
    )
    conn.executemany(
        "INSERT INTO perception_payloads (memory_id, data, metadata) VALUES (:id, :data, :metadata)",
        [
            {"id": memory_id, "data": new.data_json, "metadata": new.metadata_json}
            for memory_id, new in zip(ids, news, strict=True)
            if new.type == "perception"
        ],
    )
    return ids


def _insert_row(conn: sqlite3.Connection, new: NewMemory) -> int:
    cursor = conn.execute(
        "INSERT INTO memories (collection, type, content, human_summary, content_hash, category, confidence, "
        "base_confidence, context, scope_files, scope_entities, session_id, perception_type, created_at, updated_at, "
        "uid, robot_id) VALUES (:collection, :type, :content, :summary, :hash, :category, :confidence, :confidence, :context, "
        ":files, :entities, :session_id, :perception_type, :now, :now, :uid, :robot_id)",
        {
            "uid": uuid.uuid4().hex,
            "robot_id": new.robot_id,
            "collection": new.collection,
            "type": new.type,
            "content": new.content,
            "summary": new.human_summary,
            "hash": new.content_hash,
            "category": new.category,
            "confidence": new.confidence,
            "context": _dumps(new.context),
            "files": _dumps(list(new.scope_files)) if new.scope_files else "[]",
            "entities": _dumps(list(new.scope_entities)) if new.scope_entities else "[]",
            "session_id": new.session_id,
            "perception_type": new.perception_type,
            "now": new.created_at,
        },
    )
    return int(cursor.lastrowid or 0)


def set_tags(conn: sqlite3.Connection, memory_id: int, tags: Iterable[str], source: str = "auto") -> None:
    """Replace the ``source`` tags of ``memory_id`` with ``tags``."""
    conn.execute(
        "DELETE FROM memory_tags WHERE memory_id = :id AND source = :source",
        {"id": memory_id, "source": source},
    )
    conn.executemany(
        "INSERT OR IGNORE INTO memory_tags (memory_id, tag, source) VALUES (:id, :tag, :source)",
        [{"id": memory_id, "tag": tag, "source": source} for tag in dict.fromkeys(tags)],
    )


def fetch(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, Memory]:
    """Return id → Memory for the existing ids among ``ids`` (any status)."""
    found: dict[int, Memory] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        tags: dict[int, list[str]] = {}
        for memory_id, tag in conn.execute(
            f"SELECT memory_id, tag FROM memory_tags WHERE memory_id IN ({marks}) ORDER BY rowid", chunk
        ):
            tags.setdefault(memory_id, []).append(
                tag if isinstance(tag, str) else columns.repaired(tag, "text")
            )
        for row in conn.execute(f"SELECT {COLUMNS} FROM memories m WHERE m.id IN ({marks})", chunk):
            found[row[0]] = row_to_memory(row, tags.get(row[0], ()))
    return found


def contents(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[int, str]]:
    """Return ``(id, content)`` of the existing ids among ``ids`` (any status), by id."""
    found: list[tuple[int, str]] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        found.extend(
            conn.execute(f"SELECT id, content FROM memories WHERE id IN ({marks}) ORDER BY id", chunk)
        )
    return found


def matching_contents(
    conn: sqlite3.Connection, match: str, predicate: str, params: dict[str, Any], limit: int
) -> list[tuple[int, str]] | None:
    """Return ``(id, content)`` of every row matching the FTS5 expression ``match`` and ``predicate``.

    Returns None, without reading them all, when more than ``limit`` rows do.
    """
    # CROSS JOIN keeps the FTS index the outer loop; otherwise SQLite may probe it once per memory.
    rows = conn.execute(
        "SELECT m.id, m.content FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid "
        f"WHERE memories_fts MATCH :screen_match AND {predicate} LIMIT :screen_limit",
        {**params, "screen_match": match, "screen_limit": limit + 1},
    ).fetchall()
    return None if len(rows) > limit else [(int(m), str(content)) for m, content in rows]


def get(conn: sqlite3.Connection, memory_id: int) -> Memory:
    """Return the memory ``memory_id`` in any status; raises ``NotFoundError`` if there is none."""
    memory = fetch(conn, [memory_id]).get(memory_id)
    if memory is None:
        raise NotFoundError(f"memory_id {memory_id}: no memory with this id")
    return memory


def get_active(conn: sqlite3.Connection, memory_id: int) -> Memory:
    """Return the active memory ``memory_id``; raises ``NotFoundError`` or ``ConflictError`` (not active)."""
    memory = get(conn, memory_id)
    if memory.status != "active":
        detail = f" by memory {memory.superseded_by}" if memory.superseded_by else ""
        raise ConflictError(
            f"memory_id {memory_id}: the memory is {memory.status}{detail}; only active memories change"
        )
    return memory


def payload(conn: sqlite3.Connection, memory_id: int) -> tuple[Any, Any]:
    """Return the parsed ``(data, metadata)`` of a perception (``(None, None)`` when absent)."""
    row = conn.execute(
        "SELECT data, metadata FROM perception_payloads WHERE memory_id = :id", {"id": memory_id}
    ).fetchone()
    if row is None:
        return None, None
    return (
        strict_json.loads(row[0]) if row[0] is not None else None,
        strict_json.loads(row[1]) if row[1] is not None else None,
    )


def payloads(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
    """Return id → parsed ``(data, metadata)`` for the perceptions among ``ids``."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT memory_id, data, metadata FROM perception_payloads WHERE memory_id IN ({marks})", list(ids)
    )
    return {
        row[0]: (
            strict_json.loads(row[1]) if row[1] is not None else None,
            strict_json.loads(row[2]) if row[2] is not None else None,
        )
        for row in rows
    }


def find_exact(conn: sqlite3.Connection, collection: str, digest: str) -> int | None:
    """Return the id of an active fact in ``collection`` with this content hash, if any."""
    row = conn.execute(
        "SELECT id FROM memories WHERE content_hash = :hash AND collection = :collection AND status = 'active' "
        "AND type = 'fact' ORDER BY id LIMIT 1",
        {"hash": digest, "collection": collection},
    ).fetchone()
    return None if row is None else int(row[0])


def replace_content(
    conn: sqlite3.Connection,
    memory_id: int,
    *,
    content: str,
    digest: str,
    category: str,
    confidence: float,
    context: dict[str, Any],
    scope_files: tuple[str, ...],
    scope_entities: tuple[str, ...],
    tags: tuple[str, ...],
    index_body: str,
    now: str,
) -> None:
    """Rewrite the text of ``memory_id`` and everything derived from it (hash, FTS, category, tags)."""
    conn.execute(
        "UPDATE memories SET content = :content, content_hash = :hash, category = :category, "
        "confidence = :confidence, base_confidence = :confidence, context = :context, scope_files = :files, "
        "scope_entities = :entities, embedding_model = NULL, updated_at = :now WHERE id = :id",
        {
            "id": memory_id,
            "content": content,
            "hash": digest,
            "category": category,
            "confidence": confidence,
            "context": _dumps(context),
            "files": _dumps(list(scope_files)),
            "entities": _dumps(list(scope_entities)),
            "now": now,
        },
    )
    text_index.replace(conn, memory_id, index_body)
    set_tags(conn, memory_id, tags)


def invalidate(conn: sqlite3.Connection, memory_id: int, reason: str, now: str) -> None:
    """Mark ``memory_id`` invalidated and take it out of the text index."""
    conn.execute(
        "UPDATE memories SET status = 'invalidated', invalidated_reason = :reason, updated_at = :now WHERE id = :id",
        {"id": memory_id, "reason": reason, "now": now},
    )
    text_index.remove(conn, [memory_id])


def supersede(conn: sqlite3.Connection, representative: int, merged: Sequence[int], now: str) -> None:
    """Mark ``merged`` superseded by ``representative`` and record them on it."""
    for memory_id in merged:
        conn.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = :rep, updated_at = :now WHERE id = :id",
            {"rep": representative, "now": now, "id": memory_id},
        )
    text_index.remove(conn, merged)
    row = conn.execute("SELECT merged_ids FROM memories WHERE id = :id", {"id": representative}).fetchone()
    merged_ids = list(dict.fromkeys([*json.loads(row[0] or "[]"), *merged]))
    conn.execute(
        "UPDATE memories SET merged_ids = :merged, updated_at = :now WHERE id = :id",
        {"merged": _dumps(merged_ids), "now": now, "id": representative},
    )


def record_access(conn: sqlite3.Connection, counts: dict[int, int], now: str) -> None:
    """Add ``counts`` to ``access_count``, stamp ``last_accessed`` and restart decay from the current confidence."""
    conn.executemany(
        "UPDATE memories SET access_count = access_count + :n, last_accessed = :now, base_confidence = confidence "
        "WHERE id = :id",
        [{"id": memory_id, "n": n, "now": now} for memory_id, n in counts.items()],
    )


def decay(conn: sqlite3.Connection, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
    """Recompute confidence from ``base_confidence`` and days since last access; return how many changed.

    Uses the SQL function ``robotmem_decay(base, since, now, rate)`` (``register_functions``), so the same
    elapsed time always gives the same value however often this runs.
    """
    marks = ",".join("?" * len(protected))
    cursor = conn.execute(
        "UPDATE memories SET confidence = "
        "COALESCE(robotmem_decay(base_confidence, COALESCE(last_accessed, created_at), ?, ?), confidence) "
        f"WHERE collection = ? AND status = 'active' AND category NOT IN ({marks}) "
        "AND abs(confidence - robotmem_decay(base_confidence, COALESCE(last_accessed, created_at), ?, ?)) > 1e-9",
        [now, rate, collection, *protected, now, rate],
    )
    return int(cursor.rowcount)


def _decay(base: Any, since: Any, now: Any, rate: Any) -> float | None:
    """The decayed confidence, or None (the row keeps its confidence) when a stored value is unusable.

    One odd row — a time that is not ISO 8601, a confidence that is not a finite number — must not
    fail the decay of every other memory; ``robotmem check`` reports such rows.
    """
    start, end = read_timestamp(since), read_timestamp(now)
    if start is None or end is None:
        return None
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base):
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
        return None
    return decayed_confidence(float(base), (end - start).total_seconds() / 86400.0, float(rate))


def _is_stored_timestamp(value: Any) -> int:
    return int(is_stored_timestamp(value))


def register_functions(conn: sqlite3.Connection) -> None:
    """Register the SQL functions the store's statements call on ``conn``.

    ``robotmem_decay(base, since, now, rate)`` and ``robotmem_is_time(text)`` (1 when ``text`` is a
    time in the stored UTC form).
    """
    conn.create_function("robotmem_decay", 4, _decay, deterministic=True)
    conn.create_function("robotmem_is_time", 1, _is_stored_timestamp, deterministic=True)


def consolidation_candidates(conn: sqlite3.Connection, session_id: str, collection: str) -> list[Candidate]:
    """Return the active facts of the session in ``collection`` (what consolidation may merge)."""
    rows = conn.execute(
        "SELECT id, category, confidence, access_count, created_at, content FROM memories "
        "WHERE session_id = :session AND collection = :collection AND status = 'active' AND type = 'fact'",
        {"session": session_id, "collection": collection},
    )
    return [Candidate(*row) for row in rows]


def latest_in_session(conn: sqlite3.Connection, session_id: str) -> str | None:
    """Return the content of the session's latest active memory (``created_at``, then id), if any."""
    row = conn.execute(
        "SELECT content FROM memories WHERE session_id = :id AND status = 'active' "
        "ORDER BY julianday(created_at) DESC, id DESC LIMIT 1",
        {"id": session_id},
    ).fetchone()
    return None if row is None else str(row[0])


def session_texts(conn: sqlite3.Connection, session_id: str, limit: int) -> list[str]:
    """Return the contents of the session's active memories, smallest id first, up to ``limit``."""
    rows = conn.execute(
        "SELECT content FROM memories WHERE session_id = :id AND status = 'active' ORDER BY id LIMIT :limit",
        {"id": session_id, "limit": limit},
    )
    return [str(row[0]) for row in rows]


class Memories:
    """``MemoryTable`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def insert_many(
        self,
        news: Sequence[NewMemory],
        vectors: Sequence[FloatArray | None] | None = None,
        model_id: str | None = None,
    ) -> list[int]:
        ids = insert_many(self._conn, news)
        if vectors is not None and model_id is not None:
            for memory_id, vector in zip(ids, vectors, strict=True):
                if vector is not None:
                    vector_rows.put(self._conn, memory_id, vector, model_id)
        return ids

    def get(self, memory_id: int) -> Memory:
        return get(self._conn, memory_id)

    def get_active(self, memory_id: int) -> Memory:
        return get_active(self._conn, memory_id)

    def fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        return fetch(self._conn, ids)

    def contents(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        return contents(self._conn, ids)

    def payload(self, memory_id: int) -> tuple[Any, Any]:
        return payload(self._conn, memory_id)

    def payloads(self, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        return payloads(self._conn, ids)

    def find_exact(self, collection: str, digest: str) -> int | None:
        return find_exact(self._conn, collection, digest)

    def facts_with_numbers(self, collection: str, text: str, limit: int) -> list[tuple[int, str]] | None:
        match = numbers_query(text)
        if match is None:
            return None
        return matching_contents(self._conn, match, _FACTS, {"p_collection": collection}, limit)

    def jaccard_candidates(self, collection: str, text: str, limit: int, threshold: float) -> list[int]:
        found = search.jaccard_candidates(
            self._conn, text, _FACTS, {"p_collection": collection}, limit, threshold
        )
        return [memory_id for memory_id, _ in found]

    def active_facts_among(self, ids: Sequence[int], collection: str) -> set[int]:
        return search.passing(self._conn, ids, _FACTS, {"p_collection": collection})

    def replace_content(self, memory_id: int, **fields: Any) -> None:
        replace_content(self._conn, memory_id, **fields)

    def invalidate(self, memory_id: int, reason: str, now: str) -> None:
        invalidate(self._conn, memory_id, reason, now)

    def supersede(self, representative: int, merged: Sequence[int], now: str) -> None:
        supersede(self._conn, representative, merged, now)

    def decay(self, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
        return decay(self._conn, collection, now, protected, rate)

    def consolidation_candidates(self, session_id: str, collection: str) -> list[Candidate]:
        return consolidation_candidates(self._conn, session_id, collection)

    def session_texts(self, session_id: str, limit: int) -> list[str]:
        return session_texts(self._conn, session_id, limit)

    def latest_in_session(self, session_id: str) -> str | None:
        return latest_in_session(self._conn, session_id)
