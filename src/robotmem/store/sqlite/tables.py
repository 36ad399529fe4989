"""The tables of one SQLite transaction (``robotmem.store.protocol``), over the modules that hold the SQL.

Each class binds a connection inside the caller's transaction to the functions of one module; the SQL
itself, and its tests, stay in those modules.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from robotmem.records import (
    IndexHealth,
    IntegrityReport,
    Memory,
    MemoryQuery,
    NewMemory,
    Session,
    SessionCounts,
    SessionRow,
)
from robotmem.rules.consolidation import Candidate
from robotmem.store.protocol import (
    CollectionRow,
    EmbeddedText,
    FloatArray,
    StoreIdentity,
    SyncCursor,
    VectorQuery,
)
from robotmem.store.sqlite import (
    browse,
    health,
    maintenance,
    memories,
    reembedding,
    search,
    sessions,
    sync,
    transfer,
)
from robotmem.store.sqlite import vectors as vector_rows
from robotmem.store.sqlite.vectors import MirroredIndex
from robotmem.text.tokens import numbers_query

_FACTS = "m.status = 'active' AND m.type = 'fact' AND m.collection = :p_collection"


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
        ids = memories.insert_many(self._conn, news)
        if vectors is not None and model_id is not None:
            for memory_id, vector in zip(ids, vectors, strict=True):
                if vector is not None:
                    vector_rows.put(self._conn, memory_id, vector, model_id)
        return ids

    def get(self, memory_id: int) -> Memory:
        return memories.get(self._conn, memory_id)

    def get_active(self, memory_id: int) -> Memory:
        return memories.get_active(self._conn, memory_id)

    def fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        return memories.fetch(self._conn, ids)

    def contents(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        return memories.contents(self._conn, ids)

    def payload(self, memory_id: int) -> tuple[Any, Any]:
        return memories.payload(self._conn, memory_id)

    def payloads(self, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        return memories.payloads(self._conn, ids)

    def find_exact(self, collection: str, digest: str) -> int | None:
        return memories.find_exact(self._conn, collection, digest)

    def facts_with_numbers(self, collection: str, text: str, limit: int) -> list[tuple[int, str]] | None:
        match = numbers_query(text)
        if match is None:
            return None
        return memories.matching_contents(self._conn, match, _FACTS, {"p_collection": collection}, limit)

    def jaccard_candidates(self, collection: str, text: str, limit: int, threshold: float) -> list[int]:
        found = search.jaccard_candidates(
            self._conn, text, _FACTS, {"p_collection": collection}, limit, threshold
        )
        return [memory_id for memory_id, _ in found]

    def active_facts_among(self, ids: Sequence[int], collection: str) -> set[int]:
        return search.passing(self._conn, ids, _FACTS, {"p_collection": collection})

    def replace_content(self, memory_id: int, **fields: Any) -> None:
        memories.replace_content(self._conn, memory_id, **fields)

    def invalidate(self, memory_id: int, reason: str, now: str) -> None:
        memories.invalidate(self._conn, memory_id, reason, now)

    def supersede(self, representative: int, merged: Sequence[int], now: str) -> None:
        memories.supersede(self._conn, representative, merged, now)

    def decay(self, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
        return memories.decay(self._conn, collection, now, protected, rate)

    def consolidation_candidates(self, session_id: str, collection: str) -> list[Candidate]:
        return memories.consolidation_candidates(self._conn, session_id, collection)

    def session_texts(self, session_id: str, limit: int) -> list[str]:
        return memories.session_texts(self._conn, session_id, limit)

    def latest_in_session(self, session_id: str) -> str | None:
        return memories.latest_in_session(self._conn, session_id)


class Sessions:
    """``SessionTable`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        sessions.create(self._conn, session_id, collection, context, now)

    def get(self, session_id: str) -> Session:
        return sessions.get(self._conn, session_id)

    def get_active(self, session_id: str) -> Session:
        return sessions.get_active(self._conn, session_id)

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        sessions.end(self._conn, session_id, outcome_score, summary, now)

    def summarize(self, session_id: str) -> SessionCounts:
        return sessions.summarize(self._conn, session_id)

    def active_memory_count(self, collection: str) -> int:
        return sessions.active_memory_count(self._conn, collection)


class Vectors:
    """``VectorTable`` on SQLite: blob rows, searched through the process's synced in-memory index."""

    def __init__(self, conn: sqlite3.Connection, index_for: Callable[[str, int], MirroredIndex]) -> None:
        self._conn = conn
        self._index_for = index_for

    def put(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        vector_rows.put(self._conn, memory_id, vector, model_id)

    def put_episode(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        vector_rows.put_episode(self._conn, memory_id, vector, model_id)

    def drop(self, memory_id: int) -> None:
        vector_rows.drop(self._conn, memory_id)

    def stored_model(self) -> tuple[str, int] | None:
        return vector_rows.stored_model(self._conn)

    def record_model(self, model_id: str, dim: int) -> None:
        vector_rows.record_model(self._conn, model_id, dim)

    def most_similar(self, query: VectorQuery, first: int, min_similarity: float) -> list[tuple[int, float]]:
        index = self._index_for(query.model_id, query.dim)
        index.sync(self._conn)
        found: list[tuple[int, float]] = []
        for memory_id, similarity in itertools.islice(index.index.ranked(query.vector, first=first), first):
            if similarity < min_similarity:
                break
            found.append((int(memory_id), float(similarity)))
        return found


class Jobs:
    """``EmbeddingJobs`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def count_without_vector(self) -> int:
        return reembedding.count_without_vector(self._conn)

    def without_vector(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        return reembedding.without_vector(self._conn, after_id, limit)

    def store_backfilled(self, items: Sequence[EmbeddedText], model_id: str, dim: int) -> int:
        return reembedding.store_backfilled(self._conn, items, model_id, dim)

    def reindex_target(self) -> tuple[str, int] | None:
        return reembedding.reindex_target(self._conn)

    def begin_reindex(self, model_id: str, dim: int) -> bool:
        return reembedding.begin_reindex(self._conn, model_id, dim)

    def unstaged(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        return reembedding.unstaged(self._conn, after_id, limit)

    def stage(self, items: Sequence[EmbeddedText], model_id: str) -> None:
        reembedding.stage(self._conn, items, model_id)

    def staging_progress(self) -> tuple[int, int]:
        return reembedding.staging_progress(self._conn)

    def swap_reindex(self, model_id: str, dim: int) -> tuple[int, int]:
        return reembedding.swap_reindex(self._conn, model_id, dim)


class Transfer:
    """``TransferRows`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def count_memories(self, collection: str | None) -> int:
        return transfer.count_memories(self._conn, collection)

    def count_sessions(self, collection: str | None) -> int:
        return transfer.count_sessions(self._conn, collection)

    def iter_sessions(self, collection: str | None) -> Iterator[dict[str, Any]]:
        return transfer.iter_sessions(self._conn, collection)

    def iter_memories(self, collection: str | None, *, with_vectors: bool) -> Iterator[dict[str, Any]]:
        return transfer.iter_memories(self._conn, collection, with_vectors=with_vectors)

    def ids_of(self, uids: Sequence[str]) -> dict[str, int]:
        return transfer.ids_of(self._conn, uids)

    def insert_memory(self, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
        return transfer.insert_memory(self._conn, uid, fields, keep_id)

    def overwrite_memory(self, memory_id: int, fields: dict[str, Any]) -> None:
        transfer.overwrite_memory(self._conn, memory_id, fields)

    def write_derived(
        self,
        memory_id: int,
        *,
        index_body: str | None,
        tags: Sequence[tuple[str, str]],
        perception: tuple[str | None, str | None] | None,
    ) -> None:
        transfer.write_derived(self._conn, memory_id, index_body=index_body, tags=tags, perception=perception)

    def set_lineage(
        self, memory_id: int, superseded_by: int | None, merged_ids: Sequence[int], *, fill_only: bool
    ) -> None:
        transfer.set_lineage(self._conn, memory_id, superseded_by, list(merged_ids), fill_only=fill_only)

    def session_exists(self, session_id: str) -> bool:
        return transfer.session_exists(self._conn, session_id)

    def write_session(self, fields: dict[str, Any], outcome: dict[str, Any] | None) -> None:
        transfer.write_session(self._conn, fields, outcome)


class Sync:
    """``SyncRows`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def identity(self) -> StoreIdentity:
        return sync.identity(self._conn)

    def last_change(self) -> tuple[int, int]:
        return sync.last_change(self._conn)

    def changed_memories(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        return sync.changed_memories(self._conn, after, limit)

    def changed_sessions(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        return sync.changed_sessions(self._conn, after, limit)

    def memories_by_uid(
        self, uids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, tuple[int, dict[str, Any]]]:
        return sync.memories_by_uid(self._conn, uids, with_vectors=with_vectors)

    def sessions_by_id(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return sync.sessions_by_id(self._conn, session_ids)

    def cursor(self, peer: str) -> SyncCursor:
        return sync.cursor(self._conn, peer)

    def save_cursor(self, peer: str, location: str, cursor: SyncCursor, now: str) -> None:
        sync.save_cursor(self._conn, peer, location, cursor, now)


class Browse:
    """``BrowseQueries`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def list_memories(self, query: MemoryQuery, limit: int, offset: int) -> tuple[list[Memory], int]:
        return browse.list_memories(self._conn, query, limit, offset)

    def totals(self, collection: str | None, since: str) -> dict[str, Any]:
        return browse.totals(self._conn, collection, since)

    def category_counts(self, collection: str | None) -> list[tuple[str, int]]:
        return browse.category_counts(self._conn, collection)

    def collection_rows(self) -> list[CollectionRow]:
        return browse.collection_rows(self._conn)

    def list_sessions(
        self, collection: str | None, status: str | None, limit: int, offset: int, newest_first: bool = True
    ) -> tuple[list[SessionRow], int]:
        return browse.list_sessions(self._conn, collection, status, limit, offset, newest_first)

    def session_row(self, session_id: str) -> SessionRow | None:
        return browse.session_row_by_id(self._conn, session_id)

    def session_memory_ids(self, session_id: str) -> list[int]:
        return browse.session_memory_ids(self._conn, session_id)

    def failed_sessions(self, collection: str | None, max_outcome: float, limit: int) -> list[SessionRow]:
        return browse.failed_sessions(self._conn, collection, max_outcome, limit)

    def failure_memory_ids(self, collection: str | None, limit: int) -> list[int]:
        return browse.failure_memory_ids(self._conn, collection, limit)

    def spatial_fields(self, collection: str | None) -> list[str]:
        return browse.spatial_fields(self._conn, collection)

    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]:
        return browse.spatial_points(self._conn, key, collection, limit)


class Maintenance:
    """``Maintenance`` on SQLite: ``integrity_check``, the index checks, and their rebuild."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def check(self) -> IntegrityReport:
        return maintenance.check(self._conn)

    def repair(self, report: IntegrityReport, now: str) -> dict[str, Any]:
        actions: dict[str, Any] = {"reindexed": False}
        if report.integrity != ("ok",):
            maintenance.reindex(self._conn)
            actions["reindexed"] = True
        # Values first (a restored memory needs its text indexed), then the derived indexes.
        actions.update(maintenance.repair_columns(self._conn))
        actions.update(maintenance.repair_references(self._conn, now))
        actions.update(maintenance.repair_values(self._conn, now))
        actions["fts_rows_indexed"] = maintenance.rebuild_fts(self._conn)
        actions["context_values_indexed"] = maintenance.rebuild_context_values(self._conn)
        actions.update(maintenance.repair_vectors(self._conn))
        return actions

    def index_report(self) -> IndexHealth:
        return health.index_report(self._conn)
