"""The ``Engine``: what every feature module of the service works with.

It holds the store (transactions), the settings, the clock, the embedder (created on first use), the
default collection and the session writes join. Feature modules (``memories``, ``sessions``, ``recall``,
``browse``, ``maintenance``, ``transfer``, ``backfill``) are functions that take the engine as their
first argument; ``RobotMemory`` is the facade that owns one engine and delegates to them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

from robotmem.config import Settings
from robotmem.embedders import Embedder, create_embedder
from robotmem.embedders.rerank import HttpReranker
from robotmem.errors import EmbeddingError, NotFoundError
from robotmem.formats.validation import parse_name
from robotmem.query.vectors import unit_vector, vector_problem
from robotmem.records import NewMemory
from robotmem.rules.inheritance import session_robot_id
from robotmem.store.protocol import FloatArray, Store, StoreTx, VectorQuery

log = logging.getLogger("robotmem")
T = TypeVar("T")


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """Return ``moment`` as the ISO 8601 UTC text every stored time uses (microseconds, ``+00:00``)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


class Engine:
    """Store, settings, clock and embedder of one ``RobotMemory``; safe to share across threads."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.settings = settings
        self.collection = settings.collection
        self.clock = clock
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        # The session most recently started through this engine and not yet ended: writes without a
        # session_id join it.
        self.current_session: str | None = None
        self._reranker: HttpReranker | None = None
        self._reranker_key: tuple[str, str, str, float] | None = None
        self._stored_robot_id: str | None = None

    @property
    def robot_id(self) -> str:
        """The robot this engine writes for: the ``robot_id`` setting, else the id stored in the store."""
        if self.settings.robot_id:
            return self.settings.robot_id
        if self._stored_robot_id is None:
            self._stored_robot_id = self.read(lambda tx: tx.sync.identity().robot_id)
        return self._stored_robot_id

    def now(self) -> str:
        """Return the clock's time as stored text."""
        return iso(self.clock())

    @property
    def embedder(self) -> Embedder:
        """The embedder in use (created on first use from the settings, once however many threads ask)."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    self._embedder = create_embedder(self.settings)
        return self._embedder

    @property
    def reranker(self) -> HttpReranker | None:
        """The reranker of the settings (``rerank_url``), or None when reranking is off."""
        s = self.settings
        if not s.rerank_url:
            return None
        key = (s.rerank_url, s.rerank_model, s.rerank_api_key, s.rerank_timeout_s)
        if self._reranker is None or key != self._reranker_key:
            if self._reranker is not None:
                self._reranker.close()
            self._reranker = HttpReranker(
                s.rerank_url, model=s.rerank_model, timeout_s=s.rerank_timeout_s, api_key=s.rerank_api_key
            )
            self._reranker_key = key
        return self._reranker

    def read(self, work: Callable[[StoreTx], T]) -> T:
        """Run ``work`` on one snapshot of the store."""
        return self.store.read(work)

    def write(self, work: Callable[[StoreTx], T]) -> T:
        """Run ``work`` in one write transaction (all or nothing)."""
        return self.store.write(work)

    def collection_or_default(self, raw: str | None) -> str:
        """Return the validated collection ``raw``, or the engine's default for None."""
        return self.collection if raw is None else parse_name("collection", raw)

    def collection_for(self, name: str | None) -> str:
        """Return the checked collection ``name`` of an operation's input, or the engine's default for None."""
        return self.collection if name is None else name

    def vector_model(self) -> tuple[tuple[str, int] | None, str]:
        """Return ``((model_id, dim), "ok")`` when vector search can run, else ``(None, reason)``.

        It cannot when the embedder is unavailable or differs from the model the stored vectors were
        made with (re-embedding fixes that; vectors of two models are never compared).
        """
        embedder = self.embedder
        if not embedder.available:
            return None, embedder.status
        stored = self.read(lambda tx: tx.vectors.stored_model())
        try:
            dim = embedder.dim  # an HTTP embedder may have to ask its server
        except EmbeddingError as exc:
            return None, exc.message
        if stored is not None and (stored[0] != embedder.model_id or stored[1] != dim):
            return None, (
                f"the database holds vectors of {stored[0]} ({stored[1]}-d) but the embedder is "
                f"{embedder.model_id} ({dim}-d); run `robotmem embed reindex` to re-embed"
            )
        return (embedder.model_id, dim), "ok"

    def embed(self, text: str, *, is_query: bool) -> VectorQuery | None:
        """Embed ``text`` when vector search can run; None otherwise or when the embedder fails.

        A failing embedder never fails the operation: a write is stored without a vector (backfill adds it
        later) and a recall runs on BM25 alone.
        """
        model, _ = self.vector_model()
        if model is None:
            return None
        try:
            (vector,) = self.embed_texts([text], is_query=is_query, dim=model[1])
        except EmbeddingError as exc:
            log.warning("embedding failed, continuing without a vector: %s", exc)
            return None
        return None if vector is None else VectorQuery(vector, model[0], model[1])

    def embed_texts(self, texts: Sequence[str], *, is_query: bool, dim: int) -> list[FloatArray | None]:
        """Return the vector of each text through the vector rule (``vectors.unit_vector``): unit length,
        or None for a text whose vector breaks it (NaN, all zeros, another dimension), left for backfill.

        Raises ``EmbeddingError`` when the embedder fails.
        """
        matrix = self.embedder.embed_batch(list(texts), is_query=is_query)
        if len(matrix) != len(texts):
            raise EmbeddingError(
                f"{self.embedder.model_id}: sent {len(texts)} texts, got {len(matrix)} vectors"
            )
        out: list[FloatArray | None] = []
        for text, row in zip(texts, matrix, strict=True):
            problem = vector_problem(row, dim)
            if problem is not None:
                log.warning(
                    "the vector %s gave %.40r %s; stored without one", self.embedder.model_id, text, problem
                )
            out.append(None if problem is not None else unit_vector(row, dim))
        return out

    def insert(
        self, tx: StoreTx, news: Sequence[NewMemory], vectors: Sequence[FloatArray | None]
    ) -> list[int]:
        """Insert ``news`` with their ``vectors`` (None: none); record the embedder's model on the first vector."""
        if all(vector is None for vector in vectors):
            return tx.memories.insert_many(news)
        embedder = self.embedder
        if tx.vectors.stored_model() is None:
            tx.vectors.record_model(embedder.model_id, embedder.dim)
        return tx.memories.insert_many(news, vectors, embedder.model_id)

    def store_vector(self, tx: StoreTx, memory_id: int, vector: FloatArray | None) -> None:
        """Store ``vector`` for ``memory_id`` (recording the embedder's model on the first vector)."""
        if vector is None:
            return
        embedder = self.embedder
        if tx.vectors.stored_model() is None:
            tx.vectors.record_model(embedder.model_id, embedder.dim)
        tx.vectors.put(memory_id, vector, embedder.model_id)

    def session_for_write(self, tx: StoreTx, session_id: str | None) -> str | None:
        """Return the session a write joins: ``session_id`` (a checked name; the session must be active), else
        the current one if still active."""
        if session_id is None:
            current = self.current_session
            if current is not None and tx.sessions.get(current).status != "active":
                return None  # ended through another door: later memories belong to no episode
            return current
        tx.sessions.get_active(session_id)
        return session_id

    def inheritance(self, tx: StoreTx, session: str | None, own_robot: str) -> tuple[str, dict[str, Any]]:
        """Return the robot id and the context a memory written in ``session`` takes from it: the session
        context's robot id, else ``own_robot`` (``robot_id``, read before the write), and the session's
        context (``{}`` outside a session). The rule is ``robotmem.rules.inheritance``'s."""
        if session is None:
            return own_robot, {}
        context = tx.sessions.get(session).context
        return session_robot_id(context) or own_robot, context

    def acting_robot(self) -> str:
        """The robot this engine acts for now: the current session's, when its context names one and it is
        still active, else ``robot_id``. Recall's ``"self"`` and its own-robot boost mean this robot."""
        own = self.robot_id
        current = self.current_session
        if current is None:
            return own

        def work(tx: StoreTx) -> str | None:
            try:
                session = tx.sessions.get(current)
            except NotFoundError:
                return None
            return session_robot_id(session.context) if session.status == "active" else None

        return self.read(work) or own

    def warm_up(self) -> None:
        """Load the embedder, the vector index and any recall cache now instead of on first use."""
        model, _ = self.vector_model()
        self.store.warm_up(*(model if model is not None else (None, None)))

    def close(self) -> None:
        """Close the store (queued access counts are written first) and the reranker's connections."""
        if self._reranker is not None:
            self._reranker.close()
        self.store.close()
