"""``MemoryTable`` on PostgreSQL: rows of ``memories`` and everything that must change with them (terms,
tags, payloads, context values).

A context is stored twice: ``context_text`` keeps its JSON text as written (what a memory reads back),
``context`` a ``jsonb`` copy that filters query. What SQLite's statements compute with a Python function
(decay) is computed here with the same function (``rows.decayed``), so both engines store the same values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from robotmem.query.regions import DEFAULT_FRAME
from robotmem.records import Memory, NewMemory, Sighting
from robotmem.rules.consolidation import Candidate
from robotmem.store.postgres import candidates, text_index
from robotmem.store.postgres.vectors import as_vector
from robotmem.store.protocol import VectorBatch
from robotmem.store.shared import rows
from robotmem.store.shared.checks import PYFORMAT
from robotmem.text.naming import context_values

_FACTS = "m.status = 'active' AND m.type = 'fact' AND m.collection = %(p_collection)s"
_COLUMNS = rows.memory_columns("context_text")


def object_text(key: str) -> str:
    """SQL over ``memories m``: the string at ``object.<key>`` of its context, else NULL."""
    node = f"m.context -> 'object' -> '{key}'"
    return f"CASE WHEN jsonb_typeof({node}) = 'string' THEN m.context -> 'object' ->> '{key}' END"


# A memory's frame (``query.regions``): its ``spatial.frame`` text, the default when it names none, else NULL.
FRAME = (
    f"(CASE WHEN jsonb_typeof(m.context -> 'spatial' -> 'frame') IS NULL THEN '{DEFAULT_FRAME}' "
    "WHEN jsonb_typeof(m.context -> 'spatial' -> 'frame') = 'string' THEN m.context -> 'spatial' ->> 'frame' "
    'END COLLATE "C")'
)
# What a memory says of the object it saw (``rows.row_to_sighting``).
_SIGHTING_COLUMNS = (
    f"SELECT m.id, {object_text('id')}, {object_text('label')}, "
    "CASE WHEN jsonb_typeof(m.context -> 'spatial' -> 'position') = 'array' "
    f"THEN (m.context -> 'spatial' -> 'position')::text END, {FRAME}, "
    "COALESCE(m.observed_at, m.created_at) FROM memories m"
)
# The array type ``insert_many`` casts each column's values to (text unless named here), and the
# expression that makes a column of the unnested row (the column itself unless named here).
_ARRAY_TYPES = {"id": "bigint", "confidence": "float8", "base_confidence": "float8", "embedding": "vector"}
_MADE = {"context": "context::jsonb"}
# The ids at which the batch that takes one gives the planner statistics of the memories and their terms.
# A new store has none until autovacuum's first visit (a minute or more): the planner then takes every
# condition for equally rare and answered learn's exact-duplicate and active-fact lookups from the
# (collection, status) index, reading every memory (5 ms each at 20k memories, 14 % of a log's import).
ANALYZE_AT = (1_000, 10_000)
# PostgreSQL's jsonb cannot hold the character U+0000 in a string: the filterable copy of a context
# carries U+FFFD there (the text copy keeps the original).
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def filterable(text: str) -> str:
    """The ``jsonb`` input for a context's JSON ``text``."""
    return _NUL_ESCAPE.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def write_values(
    conn: psycopg.Connection, memories: Sequence[tuple[int, str, Mapping[str, Any]]], *, replace: bool = False
) -> None:
    """Index the context values (``naming.context_values``) of ``(id, collection, context)`` memories.

    The SQLite engine keeps this index with triggers; here every write of a context goes through the
    store's own statements, which call this (the rule stays one piece of Python for both engines).
    """
    if replace:
        conn.execute("DELETE FROM context_values WHERE memory_id = ANY(%s)", ([m for m, _, _ in memories],))
    entries = [(c, v, m) for m, c, context in memories for v in context_values(context)]
    if entries:
        conn.execute(
            "INSERT INTO context_values (collection, value, memory_id) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) ON CONFLICT DO NOTHING",
            ([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries]),
        )


def record_access(conn: psycopg.Connection, counts: dict[int, int], now: str) -> None:
    """Add ``counts`` to ``access_count``, stamp ``last_accessed`` and restart decay from the current confidence."""
    ordered = sorted(counts)
    conn.execute(
        "UPDATE memories m SET access_count = m.access_count + a.n, last_accessed = %s, "
        "base_confidence = m.confidence FROM unnest(%s::bigint[], %s::bigint[]) AS a(id, n) WHERE m.id = a.id",
        (now, ordered, [counts[i] for i in ordered]),
    )


class Memories:
    """``MemoryTable`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def insert_many(
        self, news: Sequence[NewMemory], vectors: VectorBatch | None = None, model_id: str | None = None
    ) -> list[int]:
        """One statement a table for the whole batch: ``unnest`` keeps the arrays' order, row by row."""
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
        records = [rows.new_memory_row(new) for new in news]
        columns = {name: [record[name] for record in records] for name in records[0]}
        columns["context_text"] = columns["context"]
        columns["context"] = [filterable(text) for text in columns["context_text"]]
        stored = (
            [None] * len(news)
            if vectors is None or model_id is None
            else [None if v is None else as_vector(v) for v in vectors]
        )
        columns.update(
            id=ids, embedding=stored, embedding_model=[None if v is None else model_id for v in stored]
        )
        names = ", ".join(columns)
        # Binary parameters: a vector travels as its 4-byte floats, not as digits the server parses, and
        # no text is quoted into an array literal (the same values arrive; the client's time halves).
        arrays = ", ".join(f"%({name})b::{_ARRAY_TYPES.get(name, 'text')}[]" for name in columns)
        made = ", ".join(_MADE.get(name, name) for name in columns)
        tagged = rows.new_tags(ids, news)
        payloads = rows.new_payloads(ids, news)
        entries = [text_index.encode(n.index_body) for n in news]
        # Nothing below reads a result: the statements go in one pipeline, one round trip for all of them
        # (a failure still raises, at the pipeline's end, and the write rolls back).
        with conn.pipeline():
            conn.execute(
                f"INSERT INTO memories ({names}) SELECT {made} FROM unnest({arrays}) AS x({names})", columns
            )
            if tagged:
                conn.execute(
                    "INSERT INTO memory_tags (memory_id, tag, source) SELECT m, t, 'auto' "
                    "FROM unnest(%s::bigint[], %s::text[]) AS x(m, t) ON CONFLICT DO NOTHING",
                    ([m for m, _ in tagged], [t for _, t in tagged]),
                )
            if payloads:
                conn.execute(
                    "INSERT INTO perception_payloads (memory_id, data, metadata) "
                    "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[])",
                    ([p[0] for p in payloads], [p[1] for p in payloads], [p[2] for p in payloads]),
                )
            text_index.insert(conn, ids, [n.collection for n in news], entries)
            write_values(conn, [(m, n.collection, n.context) for m, n in zip(ids, news, strict=True)])
        if any(ids[0] <= mark <= ids[-1] for mark in ANALYZE_AT):
            conn.execute("ANALYZE memories, memory_terms")
        return ids

    def get(self, memory_id: int) -> Memory:
        return rows.existing_memory(memory_id, self.fetch([memory_id]).get(memory_id))

    def get_active(self, memory_id: int) -> Memory:
        return rows.active_memory(self.get(memory_id))

    def fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        if not ids:
            return {}
        wanted = list(ids)
        tags: dict[int, list[str]] = {}
        for memory_id, tag in self._conn.execute(
            "SELECT memory_id, tag FROM memory_tags WHERE memory_id = ANY(%s) ORDER BY position", (wanted,)
        ):
            tags.setdefault(memory_id, []).append(tag)
        return {
            row[0]: rows.row_to_memory(row, tags.get(row[0], ()))
            for row in self._conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.id = ANY(%s)", (wanted,)
            )
        }

    def sightings(self, ids: Sequence[int]) -> dict[int, Sighting]:
        if not ids:
            return {}
        found = self._conn.execute(f"{_SIGHTING_COLUMNS} WHERE m.id = ANY(%s)", (list(ids),))
        return {int(row[0]): rows.row_to_sighting(row) for row in found}

    def objects_of(self, ids: Sequence[int]) -> dict[int, tuple[str | None, str | None]]:
        if not ids:
            return {}
        found = self._conn.execute(
            f"SELECT m.id, {object_text('id')}, {object_text('label')} FROM memories m WHERE m.id = ANY(%s)",
            (list(ids),),
        )
        return {int(memory_id): (object_id or None, label or None) for memory_id, object_id, label in found}

    def object_track(
        self, collection: str, object_id: str, since: str | None, until: str | None
    ) -> tuple[int, int] | None:
        return rows.object_track(self._conn, PYFORMAT, collection, object_id, since, until)

    def latest_by_object(self, collection: str, since: str | None, most: int) -> list[tuple[str, int]] | None:
        return rows.latest_by_object(self._conn, PYFORMAT, collection, since, most)

    def objects_named(self, ids: Sequence[int]) -> set[tuple[str | None, str | None]]:
        if not ids:
            return set()
        found = self._conn.execute(
            f"SELECT DISTINCT {object_text('id')}, {object_text('label')} FROM memories m "
            "WHERE m.id = ANY(%s)",
            (list(ids),),
        )
        return rows.named_objects(found)

    def contents(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        found = self._conn.execute(
            "SELECT id, content FROM memories WHERE id = ANY(%s) ORDER BY id", (list(ids),)
        )
        return [(int(m), str(c)) for m, c in found]

    def payload(self, memory_id: int) -> tuple[Any, Any]:
        row = self._conn.execute(
            "SELECT data, metadata FROM perception_payloads WHERE memory_id = %s", (memory_id,)
        ).fetchone()
        return (None, None) if row is None else rows.read_payload(row[0], row[1])

    def payloads(self, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        if not ids:
            return {}
        found = self._conn.execute(
            "SELECT memory_id, data, metadata FROM perception_payloads WHERE memory_id = ANY(%s)",
            (list(ids),),
        )
        return {row[0]: rows.read_payload(row[1], row[2]) for row in found}

    def find_exact(self, collection: str, digest: str) -> int | None:
        row = self._conn.execute(
            "SELECT id FROM memories WHERE content_hash = %s AND collection = %s "
            "AND status = 'active' AND type = 'fact' ORDER BY id LIMIT 1",
            (digest, collection),
        ).fetchone()
        return None if row is None else int(row[0])

    def facts_with_numbers(self, collection: str, text: str, limit: int) -> list[tuple[int, str]] | None:
        query = text_index.numbers_query(text)
        if query is None:
            return None
        found = self._conn.execute(
            "SELECT m.id, m.content FROM memory_terms t JOIN memories m ON m.id = t.memory_id "
            f"WHERE t.terms @@ %(q)s::tsquery AND t.collection = %(p_collection)s AND {_FACTS} LIMIT %(limit)s",
            {"q": query, "p_collection": collection, "limit": limit + 1},
        ).fetchall()
        return None if len(found) > limit else [(int(m), str(content)) for m, content in found]

    def jaccard_candidates(self, collection: str, text: str, limit: int, threshold: float) -> list[int]:
        return candidates.jaccard_candidates(
            self._conn, text, _FACTS, {"p_collection": collection}, limit, threshold, collection=collection
        )

    def active_facts_among(self, ids: Sequence[int], collection: str) -> set[int]:
        found = self._conn.execute(
            f"SELECT m.id FROM memories m WHERE m.id = ANY(%(ids)s) AND {_FACTS}",
            {"ids": list(ids), "p_collection": collection},
        )
        return {int(r[0]) for r in found}

    def replace_content(self, memory_id: int, **fields: Any) -> None:
        params = rows.new_content(memory_id, fields)
        row = self._conn.execute(
            "UPDATE memories SET content = %(content)s, content_hash = %(hash)s, category = %(category)s, "
            "confidence = %(confidence)s, base_confidence = %(confidence)s, context = %(filterable)s::jsonb, "
            "context_text = %(context)s, scope_files = %(files)s, scope_entities = %(entities)s, "
            "embedding_model = NULL, embedding = NULL, updated_at = %(now)s, "
            "observed_at = COALESCE(%(observed)s::text, observed_at) WHERE id = %(id)s RETURNING collection",
            {**params, "filterable": filterable(params["context"])},
        ).fetchone()
        text_index.replace(self._conn, memory_id, fields["index_body"])
        self._set_tags(memory_id, fields["tags"])
        if row is not None:
            write_values(self._conn, [(memory_id, str(row[0]), fields["context"])], replace=True)

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
        self._conn.execute(
            "UPDATE memories SET merged_ids = %s, updated_at = %s WHERE id = %s",
            (rows.merged_with(row[0] if row else None, merged), now, representative),
        )

    def decay(self, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
        changed: list[tuple[float, int]] = []
        with self._conn.cursor(name="robotmem_decay") as cursor:
            cursor.itersize = 5000
            cursor.execute(
                "SELECT id, base_confidence, COALESCE(last_accessed, created_at), confidence FROM memories "
                "WHERE collection = %s AND status = 'active' AND NOT (category = ANY(%s))",
                (collection, list(protected)),
            )
            for memory_id, base, since, confidence in cursor:
                value = rows.decayed(base, since, now, rate)
                if value is not None and abs(float(confidence) - value) > 1e-9:
                    changed.append((value, int(memory_id)))
        if changed:
            with self._conn.cursor() as cursor:
                cursor.executemany("UPDATE memories SET confidence = %s WHERE id = %s", changed)
        return len(changed)

    def consolidation_candidates(self, session_id: str, collection: str) -> list[Candidate]:
        found = self._conn.execute(
            "SELECT id, category, confidence, access_count, created_at, content FROM memories "
            "WHERE session_id = %s AND collection = %s AND status = 'active' AND type = 'fact' ORDER BY id",
            (session_id, collection),
        )
        return [Candidate(*row) for row in found]

    def latest_in_session(self, session_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT content FROM memories WHERE session_id = %s AND status = 'active' "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        return None if row is None else str(row[0])

    def session_texts(self, session_id: str, limit: int) -> list[str]:
        found = self._conn.execute(
            "SELECT content FROM memories WHERE session_id = %s AND status = 'active' ORDER BY id LIMIT %s",
            (session_id, limit),
        )
        return [str(row[0]) for row in found]

    def _set_tags(self, memory_id: int, tags: Sequence[str]) -> None:
        """Replace the automatic tags of ``memory_id`` with ``tags``."""
        self._conn.execute("DELETE FROM memory_tags WHERE memory_id = %s AND source = 'auto'", (memory_id,))
        with self._conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_tags (memory_id, tag, source) VALUES (%s, %s, 'auto') ON CONFLICT DO NOTHING",
                [(memory_id, tag) for tag in dict.fromkeys(tags)],
            )
