"""Vectors for memories stored without one (backfill) and re-embedding with another model (reindex).

A memory written while the embedder was down is stored without a vector; ``backfill`` embeds those
once the embedder is back (``start_background_backfill`` does it periodically for a server).
``reindex`` moves the database to the configured model: it stages the new vectors batch by batch
(each batch committed, so an interrupted run continues where it stopped), keeps the old vectors in
use until every active memory has a new one, then swaps them in with one transaction. Until the
swap, a process whose embedder differs from the recorded model searches with BM25 only.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from robotmem.embedders import Embedder
from robotmem.errors import EmbeddingError, ValidationError
from robotmem.store import reembedding as jobs_store
from robotmem.store import vectors as vector_store

log = logging.getLogger("robotmem")
JsonDict = dict[str, Any]
# progress(stage, advance, total): called once with advance 0 (or the work already done) when a stage
# starts, then after every committed batch with the number of memories it covered.
Progress = Callable[[str, int, int], None]
DEFAULT_BATCH_SIZE = 64


def parse_batch_size(raw: Any) -> int:
    """Return ``raw`` as a batch size (1..10000); raises ``ValidationError`` naming ``batch_size``."""
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 10000:
        raise ValidationError(f"batch_size: must be an integer within 1..10000, got {raw!r}")
    return raw


def _report(progress: Progress | None, stage: str, advance: int, total: int) -> None:
    if progress is not None:
        progress(stage, advance, total)


class ReembeddingMixin:
    """Backfill and re-embedding methods of ``RobotMemory``."""

    _backfill_thread: threading.Thread | None = None
    _backfill_stop: threading.Event | None = None

    if TYPE_CHECKING:  # provided by RobotMemory
        _lock: Any
        _closed: bool

        def _now(self) -> str: ...

        @property
        def embedder(self) -> Embedder: ...

        def _vector_state(self) -> tuple[vector_store.MirroredIndex | None, str]: ...

        def _read(self, work: Callable[[sqlite3.Connection], Any]) -> Any: ...

        def _write(self, work: Callable[[sqlite3.Connection], Any]) -> Any: ...

    def backfill(self, batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None) -> JsonDict:
        """Embed active memories that have no vector; return what was done.

        Returns ``{"status": "complete"|"stopped"|"unavailable", "embedded", "remaining", "model_id",
        "reason"}``: ``unavailable`` when the embedder cannot run or differs from the database's model
        (``reason`` says why and what to do), ``stopped`` when the embedder failed part-way. Raises
        ``ValidationError`` for a bad ``batch_size`` and ``DatabaseError``.
        """
        return self._run_backfill(parse_batch_size(batch_size), progress, None)

    def _run_backfill(
        self, batch_size: int, progress: Progress | None, stop: threading.Event | None
    ) -> JsonDict:
        index, reason = self._vector_state()
        if index is None:
            remaining = int(self._read(jobs_store.count_without_vector))
            return {
                "status": "unavailable",
                "embedded": 0,
                "remaining": remaining,
                "model_id": None,
                "reason": reason,
            }
        embedder = self.embedder
        model_id, dim = embedder.model_id, embedder.dim
        total = int(self._read(jobs_store.count_without_vector))
        _report(progress, "backfill", 0, total)
        embedded, after, status, reason = 0, 0, "complete", "ok"
        while stop is None or not stop.is_set():
            batch: list[tuple[int, str]] = self._read(
                partial(jobs_store.without_vector, after_id=after, limit=batch_size)
            )
            if not batch:
                break
            after = batch[-1][0]
            try:
                matrix = embedder.embed_batch([text for _, text in batch], is_query=False)
            except EmbeddingError as exc:
                status, reason = "stopped", exc.message
                log.warning("backfill stopped: %s", exc.message)
                break
            items = [(memory_id, text, matrix[row]) for row, (memory_id, text) in enumerate(batch)]
            stored = int(
                self._write(partial(jobs_store.store_backfilled, items=items, model_id=model_id, dim=dim))
            )
            if stored == 0 and self._read(vector_store.stored_model) not in (None, (model_id, dim)):
                status, reason = "stopped", "the database moved to another embedding model meanwhile"
                break
            embedded += stored
            _report(progress, "backfill", len(batch), total)
        remaining = int(self._read(jobs_store.count_without_vector))
        return {
            "status": status,
            "embedded": embedded,
            "remaining": remaining,
            "model_id": model_id,
            "reason": reason,
        }

    def start_background_backfill(
        self, interval_s: float = 30.0, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> bool:
        """Start a daemon thread that backfills vectors every ``interval_s`` seconds; stops on ``close()``.

        Each round runs only while the embedder is available and matches the database's model, and
        embeds batches of memories that have no vector. Returns False when the thread already runs.
        Raises ``ValidationError`` for a non-positive interval or a bad batch size.
        """
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not interval_s > 0:
            raise ValidationError(f"interval_s: must be a positive number of seconds, got {interval_s!r}")
        size = parse_batch_size(batch_size)
        with self._lock:
            if self._closed:
                raise ValidationError("start_background_backfill: this RobotMemory is closed")
            if self._backfill_thread is not None and self._backfill_thread.is_alive():
                return False
            stop = threading.Event()
            thread = threading.Thread(
                target=self._backfill_loop,
                args=(stop, float(interval_s), size),
                name="robotmem-backfill",
                daemon=True,
            )
            self._backfill_stop, self._backfill_thread = stop, thread
        thread.start()
        return True

    def stop_background_backfill(self, timeout_s: float = 5.0) -> None:
        """Stop the background backfill thread (if any) and wait up to ``timeout_s`` for it to finish."""
        stop, thread = self._backfill_stop, self._backfill_thread
        if stop is not None:
            stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        self._backfill_thread = None

    @property
    def background_backfill_running(self) -> bool:
        """True while the background backfill thread is alive."""
        return self._backfill_thread is not None and self._backfill_thread.is_alive()

    def _backfill_loop(self, stop: threading.Event, interval_s: float, batch_size: int) -> None:
        while not stop.is_set():
            try:
                if self.embedder.available and self._read(jobs_store.count_without_vector) > 0:
                    result = self._run_backfill(batch_size, None, stop)
                    if result["embedded"]:
                        log.info("background backfill embedded %d memories", result["embedded"])
            except Exception:  # a background worker must outlive a failing embedder or a busy database
                if stop.is_set():
                    break
                log.exception("background backfill failed; retrying in %.0f s", interval_s)
            stop.wait(interval_s)

    def reindex(self, batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None) -> JsonDict:
        """Re-embed every active memory with the configured embedder and make its model the database's.

        Resumable: vectors are staged and committed per batch; a rerun with the same model continues
        where an interrupted one stopped. The old vectors stay in use until the swap. Returns
        ``{"status": "complete"|"up_to_date", "model_id", "dim", "previous_model", "embedded",
        "resumed", "vectors", "without_vector"}``. Raises ``EmbeddingError`` when the embedder cannot
        run (staged batches are kept), ``ValidationError`` for a bad ``batch_size``, ``DatabaseError``.
        """
        size = parse_batch_size(batch_size)
        embedder = self.embedder
        if not embedder.available:
            raise EmbeddingError(
                f"cannot re-embed: {embedder.status}; fix the embedder and run the command again"
            )
        model_id, dim = embedder.model_id, embedder.dim
        previous = self._read(vector_store.stored_model)
        result: JsonDict = {
            "model_id": model_id,
            "dim": dim,
            "previous_model": None if previous is None else list(previous),
        }
        if previous is None or tuple(previous) == (model_id, dim):
            filled = self.backfill(size, progress)
            if filled["status"] == "stopped":
                raise EmbeddingError(f"cannot re-embed: {filled['reason']}")
            return {
                **result,
                "status": "up_to_date",
                "embedded": filled["embedded"],
                "resumed": False,
                "vectors": None,
                "without_vector": filled["remaining"],
            }
        resumed = bool(self._write(lambda conn: jobs_store.begin_reindex(conn, model_id, dim)))
        staged, total = self._read(jobs_store.staging_progress)
        _report(progress, "reindex", staged, total)
        embedded, after = 0, 0
        while True:
            batch: list[tuple[int, str]] = self._read(
                partial(jobs_store.unstaged, after_id=after, limit=size)
            )
            if not batch:
                if after == 0:
                    break
                after = 0  # one more sweep from the start picks up memories changed during the run
                continue
            after = batch[-1][0]
            matrix = embedder.embed_batch([text for _, text in batch], is_query=False)
            items = [(memory_id, text, matrix[row]) for row, (memory_id, text) in enumerate(batch)]
            self._write(partial(jobs_store.stage, items=items, model_id=model_id))
            embedded += len(batch)
            _report(progress, "reindex", len(batch), total)

        # Searches notice the new model on their next call and build a fresh index from the new rows.
        stored, left = self._write(partial(jobs_store.swap_reindex, model_id=model_id, dim=dim))
        return {
            **result,
            "status": "complete",
            "embedded": embedded,
            "resumed": resumed,
            "vectors": stored,
            "without_vector": left,
        }

    def embedding_status(self) -> JsonDict:
        """Return the database's model, the embedder, memories without a vector and any unfinished reindex."""
        embedder = self.embedder
        index, reason = self._vector_state()

        def work(conn: Any) -> JsonDict:
            stored = vector_store.stored_model(conn)
            target = jobs_store.reindex_target(conn)
            staged, total = jobs_store.staging_progress(conn)
            return {
                "database_model": None if stored is None else {"model_id": stored[0], "dim": stored[1]},
                "without_vector": jobs_store.count_without_vector(conn),
                "reindex": None
                if target is None
                else {"model_id": target[0], "dim": target[1], "staged": staged, "total": total},
            }

        report: JsonDict = self._read(work)
        report["embedder"] = {
            "model_id": embedder.model_id,
            "available": embedder.available,
            "status": embedder.status,
        }
        report["search_mode"] = "hybrid" if index is not None else "bm25_only"
        report["search_mode_reason"] = reason
        report["background_backfill"] = self.background_backfill_running
        return report
