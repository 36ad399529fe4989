"""RobotMemory: the single API every surface (SDK, MCP, REST, CLI) calls."""

from __future__ import annotations

import itertools
import logging
import os
import queue
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from robotmem import recall as recall_pipeline
from robotmem.browse import BrowseMixin
from robotmem.classify import build_context, classify
from robotmem.config import Settings, load_settings
from robotmem.consolidation import NON_DECAYING_CATEGORIES, Candidate, decayed_confidence, plan_consolidation
from robotmem.dedup import (
    SCREEN_LIMIT,
    cosine_threshold,
    find_cosine_duplicate,
    find_jaccard_duplicate,
    same_experience_as,
)
from robotmem.embedders import Embedder, create_embedder
from robotmem.errors import DatabaseError, EmbeddingError, ValidationError
from robotmem.filters import parse_filter
from robotmem.maintenance import MaintenanceMixin
from robotmem.perception_batch import PerceptionBatchMixin
from robotmem.records import Memory
from robotmem.serialize import hit_to_dict, memory_detail, session_to_dict
from robotmem.spatial import parse_spatial_sort
from robotmem.store import health, memories, search, sessions
from robotmem.store import vectors as vector_store
from robotmem.store.access import AccessRecorder
from robotmem.store.connection import open_database, read, write
from robotmem.store.migrations import SCHEMA_VERSION, migrate
from robotmem.store.mirror import RecallMirror
from robotmem.text import content_hash, fts_query, index_text, numbers_query
from robotmem.transfer import TransferMixin
from robotmem.validation import (
    EndSessionInput,
    ForgetInput,
    LearnInput,
    RecallInput,
    StartSessionInput,
    UpdateInput,
    parse_json_object,
    parse_name,
    parse_text,
    validate_input,
)

log = logging.getLogger("robotmem")
JsonDict = dict[str, Any]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


class RobotMemory(BrowseMixin, MaintenanceMixin, TransferMixin, PerceptionBatchMixin):
    """Experience memory on one SQLite file.

    ``db_path`` defaults to ``$ROBOTMEM_HOME/memory.db``; ``collection`` is where writes go and
    recall looks unless told otherwise; ``embed_backend`` overrides the configured backend
    (``auto``, ``bundled``, ``onnx``, ``ollama``, ``openai``, ``hash``, ``none``). Settings not
    given come from ``load_settings(os.environ)``. Every method returns the JSON-ready dict of
    SPEC §2 and raises ``RobotMemError`` subclasses. One instance may be shared across threads.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        collection: str | None = None,
        embed_backend: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        base = settings if settings is not None else load_settings(os.environ)
        self.settings = base.replace(
            db_path=Path(db_path).expanduser() if db_path is not None else None,
            collection=parse_name("collection", collection) if collection is not None else None,
            embed_backend=embed_backend,
        )
        self.path = self.settings.database
        self.collection = self.settings.collection
        self._clock = clock
        self._lock = threading.RLock()
        self._conn = open_database(self.path, busy_timeout_ms=self.settings.busy_timeout_ms)
        self._conn.create_function("robotmem_decay", 3, self._decay_sql, deterministic=True)
        migrate(self._conn, self.path)
        self._embedder = embedder
        self._index: vector_store.MirroredIndex | None = None
        # Record columns, filter masks and BM25 postings recall reads (synced inside each recall).
        self._mirror = RecallMirror()
        self._current_session: str | None = None
        self._access = AccessRecorder(self.path, self._now, busy_timeout_ms=self.settings.busy_timeout_ms)
        self._closed = False
        self._idle_readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        # Guards the vector index; distinct from the write lock so recall does not queue behind writes.
        self._index_lock = self._lock if str(self.path) == ":memory:" else threading.RLock()

    # ---- plumbing -------------------------------------------------------------------------------

    def _now(self) -> str:
        return _iso(self._clock())

    def _decay_sql(self, base: float, since: str, now: str) -> float:
        elapsed = (datetime.fromisoformat(now) - datetime.fromisoformat(since)).total_seconds() / 86400.0
        return decayed_confidence(base, elapsed, self.settings.decay_rate)

    def _write(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            return write(self._conn, work, path=self.path, retries=self.settings.write_retries)

    def _read(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        if str(self.path) == ":memory:":  # one connection is the whole database
            with self._lock:
                return read(self._conn, work, path=self.path)
        # A pooled connection of its own: in WAL mode a read then never waits for a write, neither
        # another process's nor one that another thread runs (or waits to run) on ``self._conn``.
        try:
            conn = self._idle_readers.get_nowait()
        except queue.Empty:
            if self._closed:
                raise DatabaseError(f"database {self.path}: this RobotMemory is closed") from None
            conn = open_database(self.path, busy_timeout_ms=self.settings.busy_timeout_ms, create=False)
            conn.create_function("robotmem_decay", 3, self._decay_sql, deterministic=True)
        try:
            return read(conn, work, path=self.path)
        finally:
            if self._closed:
                conn.close()
            else:
                self._idle_readers.put(conn)

    @property
    def embedder(self) -> Embedder:
        """The embedder in use (created on first use)."""
        if self._embedder is None:
            self._embedder = create_embedder(self.settings)
        return self._embedder

    def warm_up(self) -> None:
        """Load the embedder, the vector index and the recall mirror now instead of on first use."""
        self._vector_state()
        if self.settings.recall_mirror:
            self._read(self._mirror.sync)

    def _vector_state(self) -> tuple[vector_store.MirroredIndex | None, str]:
        """Return the synced index when vector search can run, else None and the reason."""
        embedder = self.embedder
        if not embedder.available:
            return None, embedder.status
        with self._index_lock:
            stored = self._read(vector_store.stored_model)
            try:
                dim = embedder.dim  # an HTTP embedder may have to ask its server
            except EmbeddingError as exc:
                return None, exc.message
            if stored is not None and (stored[0] != embedder.model_id or stored[1] != dim):
                return None, (
                    f"the database holds vectors of {stored[0]} ({stored[1]}-d) but the embedder is "
                    f"{embedder.model_id} ({dim}-d); run `robotmem embed reindex` to re-embed"
                )
            if (
                self._index is None
                or self._index.model_id != embedder.model_id
                or self._index.index.dim != dim
            ):
                self._index = vector_store.MirroredIndex(embedder.model_id, dim)
            self._read(self._index.sync)
            return self._index, "ok"

    def _embed(
        self, text: str, *, is_query: bool
    ) -> tuple[np.ndarray | None, vector_store.MirroredIndex | None]:
        index, reason = self._vector_state()
        if index is None:
            return None, None
        try:
            return self.embedder.embed_one(text, is_query=is_query), index
        except EmbeddingError as exc:
            log.warning("embedding failed, continuing without a vector: %s", exc)
            return None, None

    def _store_vector(self, conn: sqlite3.Connection, memory_id: int, vector: np.ndarray | None) -> None:
        if vector is None:
            return
        embedder = self.embedder
        if vector_store.stored_model(conn) is None:
            vector_store.record_model(conn, embedder.model_id, embedder.dim)
        vector_store.put(conn, memory_id, vector, embedder.model_id)

    def _collection(self, raw: str | None) -> str:
        return self.collection if raw is None else parse_name("collection", raw)

    def _session_for_write(self, conn: sqlite3.Connection, raw: str | None) -> str | None:
        if raw is None:
            current = self._current_session
            if current is not None and sessions.get(conn, current).status != "active":
                return None  # ended through another door: later memories belong to no episode
            return current
        session_id = parse_name("session_id", raw)
        sessions.get_active(conn, session_id)
        return session_id

    # ---- the seven operations ---------------------------------------------------------------------

    def learn(
        self,
        insight: str,
        context: dict[str, Any] | str | None = None,
        collection: str | None = None,
        session_id: str | None = None,
    ) -> JsonDict:
        """Store an experience; return ``{"status": "created", ...}`` or ``{"status": "duplicate", ...}``.

        Raises ``ValidationError`` (empty or too-long insight, bad context JSON), ``NotFoundError``
        or ``ConflictError`` (unknown or ended session), ``DatabaseError``.
        """
        args = validate_input(
            LearnInput,
            {"insight": insight, "context": context, "collection": collection, "session_id": session_id},
        )
        text = parse_text("insight", args.insight, max_chars=self.settings.max_insight_chars)
        user_context = parse_json_object("context", args.context, self.settings.max_context_bytes)
        target = self._collection(args.collection)
        found = classify(text, user_context)
        stored_context = build_context(user_context, found, source="learn")
        digest = content_hash(text)
        vector, index = self._embed(text, is_query=False)
        threshold = cosine_threshold(self.embedder.model_id, self.settings.dedup_cosine)

        def work(conn: sqlite3.Connection) -> JsonDict:
            session = self._session_for_write(conn, args.session_id)
            existing = memories.find_exact(conn, target, digest)
            if existing is not None:
                return {"status": "duplicate", "method": "exact", "existing_id": existing, "similarity": 1.0}
            duplicate = self._near_duplicate(conn, text, target, vector, index, threshold)
            if duplicate is not None:
                return duplicate
            memory_id = memories.insert(
                conn,
                memories.NewMemory(
                    collection=target,
                    type="fact",
                    content=text,
                    content_hash=digest,
                    category=found.category,
                    confidence=found.confidence,
                    context=stored_context,
                    scope_files=found.scope_files,
                    scope_entities=found.scope_entities,
                    session_id=session,
                    perception_type=None,
                    tags=found.tags,
                    index_body=index_text(text),
                    created_at=self._now(),
                ),
            )
            self._store_vector(conn, memory_id, vector)
            return {
                "status": "created",
                "memory_id": memory_id,
                "auto_inferred": self._inferred(found, stored_context),
            }

        return self._write(work)  # type: ignore[no-any-return]

    @staticmethod
    def _inferred(found: Any, stored_context: dict[str, Any]) -> JsonDict:
        return {
            "category": found.category,
            "confidence": found.confidence,
            "tags": list(found.tags),
            "scope_files": list(found.scope_files),
            "scope_entities": list(found.scope_entities),
            "params": stored_context.get("params", {}),
        }

    def _near_duplicate(
        self,
        conn: sqlite3.Connection,
        text: str,
        collection: str,
        vector: np.ndarray | None,
        index: vector_store.MirroredIndex | None,
        threshold: float,
    ) -> JsonDict | None:
        where = "m.status = 'active' AND m.type = 'fact' AND m.collection = :p_collection"
        params = {"p_collection": collection}
        jaccard_threshold = self.settings.dedup_jaccard
        # Either kind of duplicate has the numbers of ``text`` (dedup.same_experience). When few stored texts
        # can have them, checking those few tells whether the ranked word search or the vector scan could
        # find one at all, and they are skipped when not.
        numbered = numbers_query(text)
        screened = (
            memories.matching_contents(conn, numbered, where, params, SCREEN_LIMIT) if numbered else None
        )
        same_as_text = same_experience_as(text)
        same = None if screened is None else [(m, c) for m, c in screened if same_as_text(c)]
        duplicate = None
        jaccard_possible = same is None or (
            bool(same) and find_jaccard_duplicate(text, same, jaccard_threshold) is not None
        )
        if jaccard_possible and fts_query(text):
            found = search.jaccard_candidates(conn, text, where, params, 20, jaccard_threshold)
            candidates = memories.contents(conn, [m for m, _ in found])
            duplicate = find_jaccard_duplicate(text, candidates, jaccard_threshold)
        if duplicate is None and vector is not None and index is not None and same != []:
            index.sync(conn)
            ranked = itertools.takewhile(
                lambda hit: not hit[1] < threshold, index.index.ranked(vector, first=5)
            )
            near = list(itertools.islice(ranked, 5))
            if near:
                allowed = search.passing(conn, [m for m, _ in near], where, params)
                texts = dict(memories.contents(conn, [m for m, _ in near if m in allowed]))
                duplicate = find_cosine_duplicate(
                    text, [(m, texts[m], s) for m, s in near if m in texts], threshold
                )
        if duplicate is None:
            return None
        return {
            "status": "duplicate",
            "method": duplicate.method,
            "existing_id": duplicate.existing_id,
            "similarity": duplicate.similarity,
        }

    def recall(
        self,
        query: str = "",
        n: int | None = None,
        min_confidence: float | None = None,
        session_id: str | None = None,
        context_filter: dict[str, Any] | str | None = None,
        spatial_sort: dict[str, Any] | str | None = None,
        collection: str | None = None,
        include_data: bool = False,
        order: str = "relevance",
    ) -> JsonDict:
        """Return ``{"memories", "total", "mode", "query_ms"}`` for the most relevant memories.

        Raises ``ValidationError`` for a bad ``n``/``min_confidence``/filter/spatial sort.
        """
        started = time.perf_counter()
        args = validate_input(
            RecallInput,
            {
                "query": query,
                "n": n,
                "min_confidence": min_confidence,
                "session_id": session_id,
                "context_filter": context_filter,
                "spatial_sort": spatial_sort,
                "collection": collection,
                "include_data": include_data,
                "order": order,
            },
        )
        text = parse_text("query", args.query, min_chars=0, max_chars=4000)
        count = self.settings.top_k if args.n is None else args.n
        if count > self.settings.max_n:
            raise ValidationError(f"n: is {count}; the limit is {self.settings.max_n}")
        plan = recall_pipeline.RecallPlan(
            query=text,
            n=count,
            min_confidence=self.settings.min_confidence
            if args.min_confidence is None
            else args.min_confidence,
            collection=self._collection(args.collection),
            session_id=None if args.session_id is None else parse_name("session_id", args.session_id),
            filter=parse_filter(args.context_filter, max_bytes=self.settings.max_filter_bytes),
            spatial=parse_spatial_sort(args.spatial_sort),
            include_data=args.include_data,
            order=args.order,
        )
        outcome = self._run_recall(plan)
        return {
            "memories": [hit_to_dict(hit, include_data=plan.include_data) for hit in outcome.hits],
            "total": len(outcome.hits),
            "mode": outcome.mode,
            "query_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    def _tuning(self) -> recall_pipeline.Tuning:
        s = self.settings
        return recall_pipeline.Tuning(
            rrf_k=s.rrf_k,
            depth=s.candidate_depth,
            bm25_weight=s.bm25_weight,
            vector_weight=s.vector_weight,
            real_world_boost=s.real_world_boost,
            bm25_min_coverage=s.bm25_min_coverage,
        )

    def _run_recall(self, plan: recall_pipeline.RecallPlan) -> recall_pipeline.RecallOutcome:
        vector, index = self._embed(plan.query, is_query=True) if plan.query else (None, None)
        outcome: recall_pipeline.RecallOutcome = self._read(
            lambda conn: recall_pipeline.run(
                conn,
                plan,
                self._tuning(),
                index=index,
                query_vector=vector,
                mirror=self._mirror if self.settings.recall_mirror else None,
            )
        )
        if outcome.hits:
            self._access.record(hit.memory.id for hit in outcome.hits)
        return outcome

    def save_perception(
        self,
        description: str,
        perception_type: str = "visual",
        data: Any = None,
        metadata: Any = None,
        collection: str | None = None,
        session_id: str | None = None,
    ) -> JsonDict:
        """Store a perception; return ``{"memory_id", "perception_type", "collection", "has_embedding"}``.

        Repeated descriptions are stored again: a sensor stream is not a duplicate.
        """
        prepared = self._prepare_perception(
            self,
            {
                "description": description,
                "perception_type": perception_type,
                "data": data,
                "metadata": metadata,
                "collection": collection,
                "session_id": session_id,
            },
        )
        vector, _ = self._embed(prepared["text"], is_query=False)

        def work(conn: sqlite3.Connection) -> JsonDict:
            return self._insert_perceptions(self, conn, [prepared], [vector], self._now())[0]

        return self._write(work)  # type: ignore[no-any-return]

    def forget(self, memory_id: int, reason: str) -> JsonDict:
        """Invalidate a memory so no search path returns it; raises ``NotFoundError``/``ConflictError``."""
        args = validate_input(ForgetInput, {"memory_id": memory_id, "reason": reason})
        why = parse_text("reason", args.reason, max_chars=1000)

        def work(conn: sqlite3.Connection) -> JsonDict:
            memory = memories.get_active(conn, args.memory_id)
            memories.invalidate(conn, memory.id, why, self._now())
            vector_store.drop(conn, memory.id)
            return {"status": "forgotten", "memory_id": memory.id, "content": memory.content, "reason": why}

        return self._write(work)  # type: ignore[no-any-return]

    def update(
        self, memory_id: int, new_content: str, context: dict[str, Any] | str | None = None
    ) -> JsonDict:
        """Replace a memory's text (and context when given) and re-index it everywhere."""
        args = validate_input(
            UpdateInput, {"memory_id": memory_id, "new_content": new_content, "context": context}
        )
        text = parse_text("new_content", args.new_content, max_chars=self.settings.max_insight_chars)
        new_context = (
            None
            if args.context is None
            else parse_json_object("context", args.context, self.settings.max_context_bytes)
        )
        vector, _ = self._embed(text, is_query=False)

        def work(conn: sqlite3.Connection) -> JsonDict:
            memory = memories.get_active(conn, args.memory_id)
            user_context = new_context if new_context is not None else _user_context(memory)
            found = classify(text, user_context)
            stored_context = build_context(user_context, found, source=memory.context.get("source", "learn"))
            memories.replace_content(
                conn,
                memory.id,
                content=text,
                digest=content_hash(text),
                category="perception" if memory.type == "perception" else found.category,
                confidence=found.confidence,
                context=stored_context,
                scope_files=found.scope_files,
                scope_entities=found.scope_entities,
                tags=found.tags,
                index_body=index_text(text),
                now=self._now(),
            )
            vector_store.drop(conn, memory.id)
            self._store_vector(conn, memory.id, vector)
            return {
                "status": "updated",
                "memory_id": memory.id,
                "old_content": memory.content,
                "new_content": text,
                "auto_inferred": self._inferred(found, stored_context),
            }

        return self._write(work)  # type: ignore[no-any-return]

    def start_session(
        self, context: dict[str, Any] | str | None = None, collection: str | None = None
    ) -> JsonDict:
        """Begin an episode; later writes of this instance without a session join it."""
        args = validate_input(StartSessionInput, {"context": context, "collection": collection})
        session_context = parse_json_object("context", args.context, self.settings.max_context_bytes)
        target = self._collection(args.collection)
        session_id = uuid.uuid4().hex

        def work(conn: sqlite3.Connection) -> JsonDict:
            sessions.create(conn, session_id, target, session_context, self._now())
            return {
                "session_id": session_id,
                "collection": target,
                "active_memories_count": sessions.active_memory_count(conn, target),
            }

        result: JsonDict = self._write(work)
        self._current_session = session_id
        return result

    def end_session(self, session_id: str, outcome_score: float | None = None) -> JsonDict:
        """End an episode: store the outcome, consolidate, decay, and return related memories."""
        args = validate_input(EndSessionInput, {"session_id": session_id, "outcome_score": outcome_score})
        target_id = parse_name("session_id", args.session_id)

        def work(conn: sqlite3.Connection) -> JsonDict:
            session = sessions.get_active(conn, target_id)
            now = self._now()
            plan = plan_consolidation(
                self._consolidation_candidates(conn, session.id, session.collection),
                self.settings.consolidation_jaccard,
            )
            for merge in plan.merges:
                memories.supersede(conn, merge.representative, merge.merged, now)
                for merged_id in merge.merged:
                    vector_store.drop(conn, merged_id)
            decayed = memories.decay(conn, session.collection, now, NON_DECAYING_CATEGORIES)
            summary = sessions.summarize(conn, session.id)
            sessions.end(conn, session.id, args.outcome_score, summary, now)
            texts = [
                row[0]
                for row in conn.execute(
                    "SELECT content FROM memories WHERE session_id = :id AND status = 'active' ORDER BY id LIMIT 20",
                    {"id": session.id},
                )
            ]
            return {
                "status": "ended",
                "session_id": session.id,
                "summary": summary,
                "decayed_count": decayed,
                "consolidated": plan.report(),
                "collection": session.collection,
                "texts": texts,
            }

        result: JsonDict = self._write(work)
        if self._current_session == target_id:
            self._current_session = None
        texts = result.pop("texts")
        collection = result.pop("collection")
        result["related_memories"] = self._related(target_id, collection, texts)
        return result

    def _consolidation_candidates(
        self, conn: sqlite3.Connection, session_id: str, collection: str
    ) -> list[Candidate]:
        rows = conn.execute(
            "SELECT id, category, confidence, access_count, created_at, content FROM memories "
            "WHERE session_id = :session AND collection = :collection AND status = 'active' AND type = 'fact'",
            {"session": session_id, "collection": collection},
        )
        return [Candidate(*row) for row in rows]

    def _related(self, session_id: str, collection: str, texts: list[str]) -> list[JsonDict]:
        if not texts:
            return []
        query = " ".join(texts)[:2000]
        plan = recall_pipeline.RecallPlan(
            query=query,
            n=self.settings.related_top_k,
            min_confidence=self.settings.min_confidence,
            collection=collection,
            exclude_session=session_id,
        )
        return [hit_to_dict(hit, include_data=False) for hit in self._run_recall(plan).hits]

    # ---- inspection -------------------------------------------------------------------------------

    def get_memory(self, memory_id: int) -> JsonDict:
        """Return the full record of a memory in any status, with perception payload and lineage."""
        args = validate_input(ForgetInput, {"memory_id": memory_id, "reason": "-"})

        def work(conn: sqlite3.Connection) -> JsonDict:
            memory = memories.get(conn, args.memory_id)
            data, metadata = memories.payload(conn, memory.id)
            return memory_detail(memory, data, metadata)

        return self._read(work)  # type: ignore[no-any-return]

    def get_session(self, session_id: str) -> JsonDict:
        """Return a session with its outcome; raises ``NotFoundError``."""
        target = parse_name("session_id", session_id)
        return self._read(lambda conn: session_to_dict(sessions.get(conn, target)))  # type: ignore[no-any-return]

    def doctor(self) -> JsonDict:
        """Return a health report: database, index consistency, embedder status and search mode."""
        embedder = self.embedder
        index, reason = self._vector_state()

        report: JsonDict = {"database": str(self.path), "expected_schema_version": SCHEMA_VERSION}
        report.update(self._read(health.index_report))
        report["embedder"] = {
            "model_id": embedder.model_id if embedder.available else None,
            "available": embedder.available,
            "status": embedder.status,
        }
        report["search_mode"] = "hybrid" if index is not None else "bm25_only"
        report["search_mode_reason"] = reason
        report["ok"] = bool(report["fts"]["in_sync"] and report["vectors"]["stale"] == 0)
        return report

    def close(self) -> None:
        """Flush queued access counts and close the database."""
        if self._closed:
            return
        self._closed = True
        self.stop_background_backfill()
        self._access.close()
        with self._lock:
            self._conn.close()
        self._mirror.close()
        while True:
            try:
                self._idle_readers.get_nowait().close()
            except queue.Empty:
                break

    def __enter__(self) -> RobotMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _user_context(memory: Memory) -> dict[str, Any]:
    context = dict(memory.context)
    context.pop("source", None)
    return context
