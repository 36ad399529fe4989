"""Memories and sessions on PostgreSQL: the ``MemoryTable`` and ``SessionTable`` of the storage contract.

The SQL follows the SQLite engine's (``store/sqlite/memories.py``, ``sessions.py``) statement by
statement; what SQLite computed with a Python function (decay) is computed here in Python too, so both
engines store the same values.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from robotmem.errors import ConflictError, NotFoundError
from robotmem.formats import strict_json
from robotmem.formats.validation import read_timestamp
from robotmem.records import Memory, NewMemory
from robotmem.rules.consolidation import Candidate, decayed_confidence
from robotmem.store.postgres import text_index
from robotmem.store.postgres.vectors import as_vector
from robotmem.store.protocol import FloatArray
from robotmem.text.naming import context_values

COLUMNS = (
    "m.id, m.collection, m.type, m.content, m.human_summary, m.category, m.confidence, m.session_id, "
    "m.perception_type, m.created_at, m.updated_at, m.access_count, m.context_text, m.status, "
    "m.superseded_by, m.merged_ids, m.last_accessed, m.scope_files, m.scope_entities, "
    "m.invalidated_reason, m.embedding_model, m.robot_id, m.uid"
)
_FACTS = "m.status = 'active' AND m.type = 'fact' AND m.collection = %(p_collection)s"


def dumps(value: Any) -> str:
    """Compact JSON text, as the SQLite engine stores it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# PostgreSQL's jsonb cannot hold the character U+0000 in a string: the filterable copy of a context
# carries U+FFFD there (the text copy keeps the original).
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def filterable(text: str) -> str:
    """The ``jsonb`` input for a context's JSON ``text``."""
    return _NUL_ESCAPE.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def row_to_memory(row: Sequence[Any], tags: Sequence[str]) -> Memory:
    """Return the ``Memory`` for a row selected with ``COLUMNS``."""
    return Memory(
        id=int(row[0]),
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
        access_count=int(row[11]),
        context=strict_json.loads(row[12]) if row[12] else {},
        status=row[13],
        superseded_by=None if row[14] is None else int(row[14]),
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


def _payload(raw: str | None) -> Any:
    return strict_json.loads(raw) if raw is not None else None


class Memories:
    """``MemoryTable`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def insert_many(
        self,
        news: Sequence[NewMemory],
        vectors: Sequence[FloatArray | None] | None = None,
        model_id: str | None = None,
    ) -> list[int]:
        if not news:
            return []
        conn = self._conn
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('memories', 'id')) FROM generate_series(1, %s)",
                (len(news),),
            )
        ]
        entries = [text_index.encode(new.index_body) for new in news]
        stored = (
            [None] * len(news)
            if vectors is None or model_id is None
            else [None if v is None else as_vector(v) for v in vectors]
        )
        columns: dict[str, tuple[str, list[Any]]] = {
            "id": ("bigint", ids),
            "collection": ("text", [n.collection for n in news]),
            "type": ("text", [n.type for n in news]),
            "content": ("text", [n.content for n in news]),
            "human_summary": ("text", [n.human_summary for n in news]),
            "content_hash": ("text", [n.content_hash for n in news]),
            "category": ("text", [n.category for n in news]),
            "confidence": ("float8", [n.confidence for n in news]),
            "base_confidence": ("float8", [n.confidence for n in news]),
            "context": ("text", [filterable(dumps(n.context)) for n in news]),
            "context_text": ("text", [dumps(n.context) for n in news]),
            "scope_files": ("text", [dumps(list(n.scope_files)) if n.scope_files else "[]" for n in news]),
            "scope_entities": (
                "text",
                [dumps(list(n.scope_entities)) if n.scope_entities else "[]" for n in news],
            ),
            "session_id": ("text", [n.session_id for n in news]),
            "perception_type": ("text", [n.perception_type for n in news]),
            "created_at": ("text", [n.created_at for n in news]),
            "updated_at": ("text", [n.created_at for n in news]),
            "uid": ("text", [uuid.uuid4().hex for _ in news]),
            "robot_id": ("text", [n.robot_id for n in news]),
            "embedding": ("vector", stored),
            "embedding_model": ("text", [None if v is None else model_id for v in stored]),
        }
        made = {"context": "context::jsonb"}
        names = list(columns)
        # One statement for the batch: unnest keeps the arrays' order, row by row.
        conn.execute(
            f"INSERT INTO memories ({', '.join(names)}) SELECT "
            + ", ".join(made.get(name, name) for name in names)
            + " FROM unnest("
            + ", ".join(f"%({name})s::{kind}[]" for name, (kind, _) in columns.items())
            + f") AS x({', '.join(names)})",
            {name: values for name, (_, values) in columns.items()},
        )
        tagged = [(m, tag) for m, new in zip(ids, news, strict=True) for tag in dict.fromkeys(new.tags)]
        if tagged:
            conn.execute(
                "INSERT INTO memory_tags (memory_id, tag, source) SELECT m, t, 'auto' "
                "FROM unnest(%s::bigint[], %s::text[]) AS x(m, t) ON CONFLICT DO NOTHING",
                ([m for m, _ in tagged], [t for _, t in tagged]),
            )
        payloads = [
            (m, n.data_json, n.metadata_json)
            for m, n in zip(ids, news, strict=True)
            if n.type == "perception"
        ]
        if payloads:
            conn.execute(
                "INSERT INTO perception_payloads (memory_id, data, metadata) "
                "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[])",
                ([p[0] for p in payloads], [p[1] for p in payloads], [p[2] for p in payloads]),
            )
        text_index.insert(conn, ids, [n.collection for n in news], entries)
        write_values(conn, [(m, n.collection, n.context) for m, n in zip(ids, news, strict=True)])
        return ids

    def set_tags(self, memory_id: int, tags: Sequence[str], source: str = "auto") -> None:
        """Replace the ``source`` tags of ``memory_id`` with ``tags``."""
        self._conn.execute(
            "DELETE FROM memory_tags WHERE memory_id = %s AND source = %s", (memory_id, source)
        )
        with self._conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_tags (memory_id, tag, source) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(memory_id, tag, source) for tag in dict.fromkeys(tags)],
            )

    def fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        if not ids:
            return {}
        wanted = list(ids)
        tags: dict[int, list[str]] = {}
        for memory_id, tag in self._conn.execute(
            "SELECT memory_id, tag FROM memory_tags WHERE memory_id = ANY(%s) ORDER BY position", (wanted,)
        ):
            tags.setdefault(int(memory_id), []).append(tag)
        return {
            int(row[0]): row_to_memory(row, tags.get(int(row[0]), ()))
            for row in self._conn.execute(f"SELECT {COLUMNS} FROM memories m WHERE m.id = ANY(%s)", (wanted,))
        }

    def get(self, memory_id: int) -> Memory:
        memory = self.fetch([memory_id]).get(memory_id)
        if memory is None:
            raise NotFoundError(f"memory_id {memory_id}: no memory with this id")
        return memory

    def get_active(self, memory_id: int) -> Memory:
        memory = self.get(memory_id)
        if memory.status != "active":
            detail = f" by memory {memory.superseded_by}" if memory.superseded_by else ""
            raise ConflictError(
                f"memory_id {memory_id}: the memory is {memory.status}{detail}; only active memories change"
            )
        return memory

    def contents(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        rows = self._conn.execute(
            "SELECT id, content FROM memories WHERE id = ANY(%s) ORDER BY id", (list(ids),)
        )
        return [(int(m), str(c)) for m, c in rows]

    def payload(self, memory_id: int) -> tuple[Any, Any]:
        row = self._conn.execute(
            "SELECT data, metadata FROM perception_payloads WHERE memory_id = %s", (memory_id,)
        ).fetchone()
        return (None, None) if row is None else (_payload(row[0]), _payload(row[1]))

    def payloads(self, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        if not ids:
            return {}
        rows = self._conn.execute(
            "SELECT memory_id, data, metadata FROM perception_payloads WHERE memory_id = ANY(%s)",
            (list(ids),),
        )
        return {int(r[0]): (_payload(r[1]), _payload(r[2])) for r in rows}

    def find_exact(self, collection: str, digest: str) -> int | None:
        row = self._conn.execute(
            "SELECT id FROM memories WHERE content_hash = %s AND collection = %s AND status = 'active' "
            "AND type = 'fact' ORDER BY id LIMIT 1",
            (digest, collection),
        ).fetchone()
        return None if row is None else int(row[0])

    def facts_with_numbers(self, collection: str, text: str, limit: int) -> list[tuple[int, str]] | None:
        query = text_index.numbers_query(text)
        if query is None:
            return None
        rows = self._conn.execute(
            "SELECT m.id, m.content FROM memory_terms t JOIN memories m ON m.id = t.memory_id "
            f"WHERE t.terms @@ %(q)s::tsquery AND t.collection = %(p_collection)s AND {_FACTS} LIMIT %(limit)s",
            {"q": query, "p_collection": collection, "limit": limit + 1},
        ).fetchall()
        return None if len(rows) > limit else [(int(m), str(c)) for m, c in rows]

    def jaccard_candidates(self, collection: str, text: str, limit: int, threshold: float) -> list[int]:
        from robotmem.store.postgres import candidates  # candidates reads this module's columns

        return candidates.jaccard_candidates(
            self._conn, text, _FACTS, {"p_collection": collection}, limit, threshold, collection=collection
        )

    def active_facts_among(self, ids: Sequence[int], collection: str) -> set[int]:
        rows = self._conn.execute(
            f"SELECT m.id FROM memories m WHERE m.id = ANY(%(ids)s) AND {_FACTS}",
            {"ids": list(ids), "p_collection": collection},
        )
        return {int(r[0]) for r in rows}

    def replace_content(
        self,
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
        self._conn.execute(
            "UPDATE memories SET content = %(content)s, content_hash = %(hash)s, category = %(category)s, "
            "confidence = %(confidence)s, base_confidence = %(confidence)s, context = %(filterable)s::jsonb, "
            "context_text = %(context)s, "
            "scope_files = %(files)s, scope_entities = %(entities)s, embedding_model = NULL, embedding = NULL, "
            "updated_at = %(now)s WHERE id = %(id)s",
            {
                "id": memory_id,
                "content": content,
                "hash": digest,
                "category": category,
                "confidence": confidence,
                "context": dumps(context),
                "filterable": filterable(dumps(context)),
                "files": dumps(list(scope_files)),
                "entities": dumps(list(scope_entities)),
                "now": now,
            },
        )
        text_index.replace(self._conn, memory_id, index_body)
        self.set_tags(memory_id, tags)
        row = self._conn.execute("SELECT collection FROM memories WHERE id = %s", (memory_id,)).fetchone()
        if row is not None:
            write_values(self._conn, [(memory_id, str(row[0]), context)], replace=True)

    def invalidate(self, memory_id: int, reason: str, now: str) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'invalidated', invalidated_reason = %s, updated_at = %s WHERE id = %s",
            (reason, now, memory_id),
        )
        text_index.remove(self._conn, [memory_id])

    def supersede(self, representative: int, merged: Sequence[int], now: str) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = %s, updated_at = %s WHERE id = ANY(%s)",
            (representative, now, list(merged)),
        )
        text_index.remove(self._conn, list(merged))
        row = self._conn.execute(
            "SELECT merged_ids FROM memories WHERE id = %s", (representative,)
        ).fetchone()
        merged_ids = list(dict.fromkeys([*json.loads((row[0] if row else None) or "[]"), *merged]))
        self._conn.execute(
            "UPDATE memories SET merged_ids = %s, updated_at = %s WHERE id = %s",
            (dumps(merged_ids), now, representative),
        )

    def decay(self, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
        end = read_timestamp(now)
        if end is None or not math.isfinite(rate):
            return 0
        changed: list[tuple[float, int]] = []
        with self._conn.cursor(name="robotmem_decay") as cursor:
            cursor.itersize = 5000
            cursor.execute(
                "SELECT id, base_confidence, COALESCE(last_accessed, created_at), confidence FROM memories "
                "WHERE collection = %s AND status = 'active' AND NOT (category = ANY(%s))",
                (collection, list(protected)),
            )
            for memory_id, base, since, confidence in cursor:
                start = read_timestamp(since)
                if start is None or base is None or not math.isfinite(base):
                    continue  # an odd row keeps its confidence; `robotmem check` reports it
                value = decayed_confidence(float(base), (end - start).total_seconds() / 86400.0, float(rate))
                if abs(float(confidence) - value) > 1e-9:
                    changed.append((value, int(memory_id)))
        if changed:
            with self._conn.cursor() as cursor:
                cursor.executemany("UPDATE memories SET confidence = %s WHERE id = %s", changed)
        return len(changed)

    def consolidation_candidates(self, session_id: str, collection: str) -> list[Candidate]:
        rows = self._conn.execute(
            "SELECT id, category, confidence, access_count, created_at, content FROM memories "
            "WHERE session_id = %s AND collection = %s AND status = 'active' AND type = 'fact' ORDER BY id",
            (session_id, collection),
        )
        return [Candidate(int(r[0]), r[1], r[2], int(r[3]), r[4], r[5]) for r in rows]

    def latest_in_session(self, session_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT content FROM memories WHERE session_id = %s AND status = 'active' "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        return None if row is None else str(row[0])

    def session_texts(self, session_id: str, limit: int) -> list[str]:
        rows = self._conn.execute(
            "SELECT content FROM memories WHERE session_id = %s AND status = 'active' ORDER BY id LIMIT %s",
            (session_id, limit),
        )
        return [str(r[0]) for r in rows]


def write_values(
    conn: psycopg.Connection, memories: Sequence[tuple[int, str, Mapping[str, Any]]], *, replace: bool = False
) -> None:
    """Index the context values (``naming.context_values``) of ``(id, collection, context)`` memories.

    The SQLite engine keeps this index with triggers; here every write of a context goes through the
    store's own statements, which call this (the rule stays one piece of Python for both engines).
    """
    if replace:
        conn.execute("DELETE FROM context_values WHERE memory_id = ANY(%s)", ([m for m, _, _ in memories],))
    rows = [(c, v, m) for m, c, context in memories for v in context_values(context)]
    if rows:
        conn.execute(
            "INSERT INTO context_values (collection, value, memory_id) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) ON CONFLICT DO NOTHING",
            ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
        )


def record_access(conn: psycopg.Connection, counts: dict[int, int], now: str) -> None:
    """Add ``counts`` to ``access_count``, stamp ``last_accessed`` and restart decay from the current confidence."""
    ordered = sorted(counts)
    conn.execute(
        "UPDATE memories m SET access_count = m.access_count + a.n, last_accessed = %s, "
        "base_confidence = m.confidence FROM unnest(%s::bigint[], %s::bigint[]) AS a(id, n) WHERE m.id = a.id",
        (now, ordered, [counts[i] for i in ordered]),
    )
