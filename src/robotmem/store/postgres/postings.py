"""The text index's postings kept in this process, so that BM25 on PostgreSQL scores in numpy.

GIN finds the memories that hold a term but keeps no term frequencies, so the server must score every
memory holding a query word before it can rank: a query of common words took 0.9 s at 1M memories.
``TextPostings`` holds the same terms (``memory_terms.term_list``) in ``robotmem.query.bm25.LexicalIndex``
and scores them with FTS5's formula and the server's own statistics (``fts_totals``, ``fts_terms``'
counts are the postings' lengths), so the scores are the SQL ranking's; the server then only checks the
filters on the best-ranked memories (``candidates.PgCandidates.text_scored``).

Keeping up with the server:

- Every write to a memory takes the next ``change_seq`` number in ``memory_changes`` while it holds the
  store's write lock, so numbers commit in order: a sync reads the memories changed after the last
  number it applied and reloads their rows.
- A sync runs inside a recall's REPEATABLE READ snapshot, never in a write transaction (whose rows may
  still roll back). A snapshot older than what another thread already applied changes nothing; the
  filters' check on the server then skips memories that snapshot cannot see.
- ``text_index.rebuild`` (a repair) writes no memory row: it bumps ``meta.fts_epoch``, and a new epoch
  loads everything again. After applying changes, the rows and tokens held are compared with
  ``fts_totals`` of the same snapshot; any difference (a write that bypassed the log) loads everything.
- Memory ids index numpy arrays: a store whose ids are far sparser than its rows is not mirrored
  (``usable`` is false) and recall ranks in SQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from robotmem.query.bm25 import LexicalIndex
from robotmem.store.postgres import changes

_BATCH = 20_000
_ROWS = "SELECT memory_id, collection, term_count, array_to_string(term_list, ' ') FROM memory_terms"


@dataclass(frozen=True, slots=True)
class Ranking:
    """The memories of one collection that match a query, with their BM25 scores (unordered)."""

    ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.ids)

    def best(self, k: int) -> list[tuple[int, float]]:
        """The ``k`` best, best first, ties by smaller id (the SQL ranking's order)."""
        ids, scores = self.ids, self.scores
        if k <= 0 or len(ids) == 0:
            return []
        if len(ids) > k:
            ids, scores = _narrowed(ids, scores, k)
        if len(ids) > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            above = np.flatnonzero(scores > kth)
            tied = np.flatnonzero(scores == kth)
            wanted = k - len(above)
            if len(tied) > wanted:  # the ties at the k-th score with the smallest ids
                tied = tied[np.argpartition(ids[tied], wanted - 1)[:wanted]]
            head = np.concatenate([above, tied])
            ids, scores = ids[head], scores[head]
        order = np.lexsort((ids, -scores))[:k]
        return list(zip(ids[order].tolist(), scores[order].tolist(), strict=True))

    def best_with_ties(self, k: int) -> list[tuple[int, float]]:
        """``best(k)``, and every other memory scoring as the ``k``-th, in the same order."""
        found = self.best(k)
        if len(found) < k:
            return found
        return self.at_least(found[-1][1])

    def at_least(self, score: float) -> list[tuple[int, float]]:
        """Every memory scoring ``score`` or more, best first, ties by smaller id."""
        head = self.scores >= score
        ids, scores = self.ids[head], self.scores[head]
        order = np.lexsort((ids, -scores))
        return list(zip(ids[order].tolist(), scores[order].tolist(), strict=True))

    def passing(self, allowed: npt.NDArray[np.bool_]) -> Ranking:
        """The memories of this ranking that ``allowed`` (a mask over ids; past its end: none) lets pass."""
        inside = self.ids < len(allowed)
        keep = np.zeros(len(self.ids), dtype=np.bool_)
        keep[inside] = allowed[self.ids[inside]]
        return Ranking(self.ids[keep], self.scores[keep])


def _narrowed(
    ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The memories scoring at least a bound that at least ``k`` of them reach (so every one of the ``k``
    best, and every tie at the ``k``-th score, is kept), or all of them when no such bound is found.

    The bound comes from an evenly strided sample: its score that about ``4k`` memories of the whole
    should reach. Selecting the best of 300k scores costs 3 ms; of the few thousand kept, 0.1 ms.
    """
    step = len(scores) // (64 * k)
    if step < 4:
        return ids, scores
    sample = scores[::step]
    rank = min(len(sample), -(-4 * k // step))  # ceil(4k / step): the sample's rank-th best
    bound = np.partition(sample, len(sample) - rank)[len(sample) - rank]
    at = np.flatnonzero(scores >= bound)
    if len(at) < k:
        return ids, scores
    return ids.take(at), scores.take(at)


class TextPostings:
    """This process's copy of one store's ``memory_terms``, synced from the change log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index = LexicalIndex()
        self._seen = -1  # the last change number applied; -1: nothing loaded
        self._epoch: str | None = None
        self._collections: dict[str, int] = {}
        self._collection: npt.NDArray[np.int32] = np.full(0, -1, dtype=np.int32)
        self._length: npt.NDArray[np.int64] = np.full(0, -1, dtype=np.int64)  # -1: no row
        self._rows = 0
        self._tokens = 0
        self.usable = True

    # ---- keeping up -------------------------------------------------------------------------------

    def sync(self, conn: psycopg.Connection) -> bool:
        """Apply what changed since the last sync (inside a read snapshot); return ``usable``."""
        with self._lock:
            self._sync(conn)
            return self.usable

    def _sync(self, conn: psycopg.Connection) -> None:
        row = conn.execute(
            f"SELECT {changes.HEAD_COLUMNS}, docs, tokens, (SELECT COALESCE(MAX(memory_id), 0) FROM memory_terms) "
            "FROM fts_totals"
        ).fetchone()
        assert row is not None
        head, epoch = changes.as_head(row[0], row[1])
        docs, tokens, top = int(row[2]), int(row[3]), int(row[4])
        self.usable = not changes.too_sparse(top, docs)
        if not self.usable:
            self._clear()
            return
        if self._seen >= 0 and epoch == self._epoch and head <= self._seen:
            return  # nothing new, or this snapshot is older than one already applied
        changed = changes.to_apply(conn, self._seen, self._epoch, epoch, max(2048, self._rows // 8))
        if changed is None:
            self._load(conn, top)
        else:
            self._apply(conn, changed, top)
            if (self._rows, self._tokens) != (docs, tokens):
                self._load(conn, top)  # the index changed without the log: start again
        self._seen, self._epoch = head, epoch

    def _clear(self) -> None:
        self._index = LexicalIndex()
        self._collection = np.full(0, -1, dtype=np.int32)
        self._length = np.full(0, -1, dtype=np.int64)
        self._rows = self._tokens = 0
        self._seen, self._epoch = -1, None

    def _reserve(self, top: int) -> None:
        if top < len(self._length):
            return
        size = max(1024, top + 1, 2 * len(self._length))
        grow = size - len(self._length)
        self._collection = np.concatenate([self._collection, np.full(grow, -1, dtype=np.int32)])
        self._length = np.concatenate([self._length, np.full(grow, -1, dtype=np.int64)])

    def _note(self, memory_id: int, collection: str, length: int) -> None:
        self._collection[memory_id] = self._collections.setdefault(collection, len(self._collections))
        self._length[memory_id] = length
        self._rows += 1
        self._tokens += length

    def _load(self, conn: psycopg.Connection, top: int) -> None:
        self._clear()
        self._reserve(top)
        index = LexicalIndex()
        cursor = conn.cursor(name="robotmem_postings")  # server-side: rows arrive in batches
        cursor.itersize = _BATCH

        def documents(target: LexicalIndex) -> Iterable[tuple[int, list[int]]]:
            term_ids: dict[str, int] = {}
            cursor.execute(_ROWS)
            for memory_id, collection, length, text in cursor:
                doc = int(memory_id)
                self._note(doc, str(collection), int(length))
                ids = []
                for term in str(text).split(" ") if text else ():
                    found = term_ids.get(term)
                    if found is None:
                        found = term_ids[term] = target.term_id(term)
                    ids.append(found)
                yield doc, ids

        try:
            index.build_ids(documents)
        finally:
            cursor.close()
        self._index = index

    def _apply(self, conn: psycopg.Connection, changed: Sequence[int], top: int) -> None:
        self._reserve(top)
        for memory_id in changed:
            if memory_id < len(self._length) and self._length[memory_id] >= 0:
                self._rows -= 1
                self._tokens -= int(self._length[memory_id])
                self._length[memory_id] = -1
                self._collection[memory_id] = -1
            self._index.remove(memory_id)
        rows = conn.execute(_ROWS + " WHERE memory_id = ANY(%s)", (list(changed),))
        for memory_id, collection, length, text in rows:
            doc = int(memory_id)
            self._note(doc, str(collection), int(length))
            self._index.add(doc, str(text).split(" ") if text else [])
        if self._index.needs_merge():
            self._index.merge()

    # ---- ranking ----------------------------------------------------------------------------------

    def rank(
        self,
        terms: Sequence[str],
        collection: str,
        min_coverage: float,
        k1: float,
        b: float,
        allowed: npt.NDArray[np.bool_] | None = None,
        best: int | None = None,
    ) -> Ranking:
        """Score the memories of ``collection`` holding any of ``terms`` (each listed term counts, as in
        ``candidates.bm25``) with the statistics of every indexed memory; only those ``allowed`` (a mask
        over ids, of memories of ``collection``) lets pass when given. With ``best``, only memories that
        may be among the ``best`` highest scores need be in the ranking (``LexicalIndex.score_best``)."""
        with self._lock:
            code = self._collections.get(collection)
            if code is None or not terms:
                return Ranking(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
            totals = (self._rows, float(self._tokens))
            if best is not None and allowed is not None:  # only allowed memories are scored
                return Ranking(
                    *self._index.score_best(list(terms), best, min_coverage, k1, b, totals, allowed)
                )
            scores, matched = self._index.score(list(terms), min_coverage, k1, b, totals, allowed)
            if allowed is not None:
                held = matched  # only allowed memories were scored
                size = len(matched)
            else:
                size = min(len(matched), len(self._collection))
                held = matched[:size] & (self._collection[:size] == code)
            ids = np.flatnonzero(held).astype(np.int64)
            return Ranking(ids, scores[ids])

    def coverage(self, terms: Sequence[str], ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """``LexicalIndex.coverage`` of ``terms`` for ``ids``, with the statistics of every indexed memory."""
        with self._lock:
            return self._index.coverage(list(terms), ids, (self._rows, float(self._tokens)))

    def stats(self) -> dict[str, Any]:
        """What is held: rows, tokens and the last change applied (for tests and diagnostics)."""
        with self._lock:
            return {
                "rows": self._rows,
                "tokens": self._tokens,
                "seen": self._seen,
                "usable": self.usable,
                "bytes": self._index.nbytes + int(self._collection.nbytes) + int(self._length.nbytes),
            }
