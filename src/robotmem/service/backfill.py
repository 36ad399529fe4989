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
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from robotmem.errors import EmbeddingError, ValidationError
from robotmem.formats.results import BackfillResult, EmbeddingStatus, ReindexResult
from robotmem.formats.serialize import backfill_result, embedder_status, reindex_result
from robotmem.formats.serialize import embedding_status as status_result
from robotmem.service.engine import Engine
from robotmem.store.protocol import EmbeddedText, StoreTx

log = logging.getLogger("robotmem")
# progress(stage, advance, total): called once with advance 0 (or the work already done) when a stage
# starts, then after every committed batch with the number of memories it covered.
Progress = Callable[[str, int, int], None]
DEFAULT_BATCH_SIZE = 64


def parse_batch_size(raw: Any) -> int:
    """Return ``raw`` as a batch size (1..10000); raises ``ValidationError`` naming ``batch_size``."""
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 10000:
        raise ValidationError(f"batch_size: must be an integer within 1..10000, got {raw!r}")
    return raw


# One job step each, bound with ``partial`` inside the batch loops.
def _without_vector(tx: StoreTx, after_id: int, limit: int) -> list[tuple[int, str]]:
    return tx.jobs.without_vector(after_id, limit)


def _store_backfilled(tx: StoreTx, items: list[EmbeddedText], model_id: str, dim: int) -> int:
    return tx.jobs.store_backfilled(items, model_id, dim)


def _unstaged(tx: StoreTx, after_id: int, limit: int) -> list[tuple[int, str]]:
    return tx.jobs.unstaged(after_id, limit)


def _stage(tx: StoreTx, items: list[EmbeddedText], model_id: str) -> None:
    tx.jobs.stage(items, model_id)


def _report(progress: Progress | None, stage: str, advance: int, total: int) -> None:
    if progress is not None:
        progress(stage, advance, total)


def backfill(
    engine: Engine, batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None
) -> BackfillResult:
    """Embed active memories that have no vector; see ``RobotMemory.backfill``."""
    return run_backfill(engine, parse_batch_size(batch_size), progress, None)


def run_backfill(
    engine: Engine, batch_size: int, progress: Progress | None, stop: threading.Event | None
) -> BackfillResult:
    """Backfill in batches of ``batch_size`` until done, the embedder fails, or ``stop`` is set."""
    model, reason = engine.vector_model()
    if model is None:
        remaining = engine.read(lambda tx: tx.jobs.count_without_vector())
        return backfill_result("unavailable", 0, remaining, None, reason)
    model_id, dim = model
    total = engine.read(lambda tx: tx.jobs.count_without_vector())
    _report(progress, "backfill", 0, total)
    embedded, after, status, reason = 0, 0, "complete", "ok"
    while stop is None or not stop.is_set():
        batch = engine.read(partial(_without_vector, after_id=after, limit=batch_size))
        if not batch:
            break
        after = batch[-1][0]
        try:
            found = engine.embed_texts([text for _, text in batch], is_query=False, dim=dim)
        except EmbeddingError as exc:
            status, reason = "stopped", exc.message
            log.warning("backfill stopped: %s", exc.message)
            break
        items = [(m, text, v) for (m, text), v in zip(batch, found, strict=True) if v is not None]
        stored = (
            engine.write(partial(_store_backfilled, items=items, model_id=model_id, dim=dim)) if items else 0
        )
        if stored == 0 and engine.read(lambda tx: tx.vectors.stored_model()) not in (None, (model_id, dim)):
            status, reason = "stopped", "the database moved to another embedding model meanwhile"
            break
        embedded += stored
        _report(progress, "backfill", len(batch), total)
    remaining = engine.read(lambda tx: tx.jobs.count_without_vector())
    return backfill_result(status, embedded, remaining, model_id, reason)


class BackgroundBackfill:
    """A daemon thread that backfills vectors periodically (for servers); stopped by ``stop()``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop: threading.Event | None = None
        self._closed = False

    def start(self, interval_s: float = 30.0, batch_size: int = DEFAULT_BATCH_SIZE) -> bool:
        """Start the thread; see ``RobotMemory.start_background_backfill``."""
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not interval_s > 0:
            raise ValidationError(f"interval_s: must be a positive number of seconds, got {interval_s!r}")
        size = parse_batch_size(batch_size)
        with self._lock:
            if self._closed:
                raise ValidationError("start_background_backfill: this RobotMemory is closed")
            if self._thread is not None and self._thread.is_alive():
                return False
            stop = threading.Event()
            thread = threading.Thread(
                target=self._loop, args=(stop, float(interval_s), size), name="robotmem-backfill", daemon=True
            )
            self._stop, self._thread = stop, thread
        thread.start()
        return True

    def stop(self, timeout_s: float = 5.0, *, close: bool = False) -> None:
        """Stop the thread (if any) and wait up to ``timeout_s``; with ``close`` it cannot start again."""
        with self._lock:
            self._closed = self._closed or close
            stop, thread = self._stop, self._thread
        if stop is not None:
            stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        self._thread = None

    @property
    def running(self) -> bool:
        """True while the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _loop(self, stop: threading.Event, interval_s: float, batch_size: int) -> None:
        engine = self._engine
        while not stop.is_set():
            try:
                if engine.embedder.available and engine.read(lambda tx: tx.jobs.count_without_vector()) > 0:
                    result = run_backfill(engine, batch_size, None, stop)
                    if result["embedded"]:
                        log.info("background backfill embedded %d memories", result["embedded"])
            except Exception:  # a background worker must outlive a failing embedder or a busy database
                if stop.is_set():
                    break
                log.exception("background backfill failed; retrying in %.0f s", interval_s)
            stop.wait(interval_s)


def close(engine: Engine, background: BackgroundBackfill) -> None:
    """Stop the background backfill for good, then close the engine; see ``RobotMemory.close``."""
    background.stop(close=True)
    engine.close()


def reindex(
    engine: Engine, batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None
) -> ReindexResult:
    """Re-embed every active memory with the configured embedder; see ``RobotMemory.reindex``."""
    size = parse_batch_size(batch_size)
    embedder = engine.embedder
    if not embedder.available:
        raise EmbeddingError(
            f"cannot re-embed: {embedder.status}; fix the embedder and run the command again"
        )
    model_id, dim = embedder.model_id, embedder.dim
    previous = engine.read(lambda tx: tx.vectors.stored_model())
    if previous is None or tuple(previous) == (model_id, dim):
        filled = backfill(engine, size, progress)
        if filled["status"] == "stopped":
            raise EmbeddingError(f"cannot re-embed: {filled['reason']}")
        return reindex_result(
            model_id, dim, previous, "up_to_date", filled["embedded"], False, None, filled["remaining"]
        )
    resumed = engine.write(lambda tx: tx.jobs.begin_reindex(model_id, dim))
    staged, total = engine.read(lambda tx: tx.jobs.staging_progress())
    _report(progress, "reindex", staged, total)
    embedded, after = 0, 0
    while True:
        batch = engine.read(partial(_unstaged, after_id=after, limit=size))
        if not batch:
            if after == 0:
                break
            after = 0  # one more sweep from the start picks up memories changed during the run
            continue
        after = batch[-1][0]
        found = engine.embed_texts([text for _, text in batch], is_query=False, dim=dim)
        items = [(m, text, v) for (m, text), v in zip(batch, found, strict=True) if v is not None]
        engine.write(partial(_stage, items=items, model_id=model_id))
        embedded += len(batch)
        _report(progress, "reindex", len(batch), total)
    # Searches notice the new model on their next call and build a fresh index from the new rows.
    stored, left = engine.write(lambda tx: tx.jobs.swap_reindex(model_id, dim))
    return reindex_result(model_id, dim, previous, "complete", embedded, resumed, stored, left)


def embedding_status(engine: Engine, background: bool) -> EmbeddingStatus:
    """Return the stored model, the embedder, memories without a vector and any unfinished reindex."""
    embedder = engine.embedder
    model, reason = engine.vector_model()

    def work(tx: StoreTx) -> tuple[tuple[str, int] | None, tuple[str, int] | None, tuple[int, int], int]:
        return (
            tx.vectors.stored_model(),
            tx.jobs.reindex_target(),
            tx.jobs.staging_progress(),
            tx.jobs.count_without_vector(),
        )

    stored, target, (staged, total), without = engine.read(work)
    status = embedder_status(embedder.model_id, embedder.available, embedder.status)
    return status_result(
        stored, target, staged, total, without, status, searchable=model is not None, reason=reason,
        background=background,
    )  # fmt: skip
