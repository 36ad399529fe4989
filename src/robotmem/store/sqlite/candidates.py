"""The recall channels on SQLite: from the in-process mirror, or straight from SQL.

Both sources answer the same questions (``robotmem.store.protocol.CandidateSource``) over a scope, on the
recall's read snapshot, and give the same candidates (``tests/store/sqlite/test_candidates.py`` compares
them). ``MirrorCandidates`` turns the scope into one numpy mask by memory id and scores BM25 from the
mirrored postings; ``SqlCandidates`` compiles the scope into the SQL of each channel — for a robot short
of memory (``recall_mirror = false``).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import numpy as np

from robotmem.query import bm25
from robotmem.query.spatial import SpatialSort, coordinates_at, distance
from robotmem.store.protocol import EVERY, NamedValues, RecallScope, VectorQuery
from robotmem.store.sqlite import search, values
from robotmem.store.sqlite.filters import to_sql
from robotmem.store.sqlite.mirror import BoolArray, RecallMirror
from robotmem.store.sqlite.vectors import MirroredIndex
from robotmem.text.tokens import or_match


def predicate(scope: RecallScope) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` for every condition of ``scope``."""
    parts = ["m.status = 'active'", "m.collection = :p_collection", "m.confidence >= :p_min_confidence"]
    params: dict[str, Any] = {"p_collection": scope.collection, "p_min_confidence": scope.min_confidence}
    if scope.session_id is not None:
        parts.append("m.session_id = :p_session")
        params["p_session"] = scope.session_id
    if scope.exclude_session is not None:
        parts.append("(m.session_id IS NULL OR m.session_id != :p_exclude)")
        params["p_exclude"] = scope.exclude_session
    if scope.filter is not None:
        sql, filter_params = to_sql(scope.filter)
        parts.append(sql)
        params.update(filter_params)
    return " AND ".join(parts), params


def top(ids: np.ndarray, scores: np.ndarray, depth: int) -> list[int]:
    """Return up to ``depth`` of ``ids`` by score, best first (ties by smaller id)."""
    return [m for m, _ in top_scored(ids, scores, depth)]


def top_scored(ids: np.ndarray, scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """``top`` with each id's score."""
    if len(ids) > depth:
        head = np.argpartition(-scores, depth - 1)[:depth]
        ids, scores = ids[head], scores[head]
    order = np.lexsort((ids, -scores))
    return list(zip(ids[order].tolist(), scores[order].astype(np.float64).tolist(), strict=True))


def allowed_among(ids: np.ndarray, allowed: BoolArray) -> BoolArray:
    """Return, for each of ``ids``, whether ``allowed`` passes it.

    An id beyond the mask (written after the snapshot the mask was made on) does not pass.
    """
    known = ids < len(allowed)
    passing = np.zeros(len(ids), dtype=np.bool_)
    passing[known] = allowed[ids[known]]
    return passing


class SqlCandidates:
    """Every channel as SQL over the scope's compiled predicate (and the vector index for cosine)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        scope: RecallScope,
        index_for: Callable[[str, int], MirroredIndex],
        episode_index_for: Callable[[str, int], MirroredIndex] | None = None,
    ) -> None:
        self._conn = conn
        self._index_for = index_for
        self._episode_index_for = episode_index_for
        self.collection = scope.collection
        self.where, self.params = predicate(scope)
        self._matches: dict[tuple[tuple[str, ...], float], set[int]] = {}

    def _index(self, query: VectorQuery, episode: bool = False) -> MirroredIndex | None:
        index_for = self._episode_index_for if episode else self._index_for
        if index_for is None:
            return None
        index = index_for(query.model_id, query.dim)
        index.sync(self._conn)  # inside this snapshot: vectors written since the last recall count
        return index

    def text(self, words: Sequence[str], depth: int, min_coverage: float) -> list[int]:
        return [m for m, _ in self.text_scored(words, depth, min_coverage)]

    def text_matches(self, words: Sequence[str], min_coverage: float, ids: Collection[int]) -> set[int]:
        wanted = set(ids)
        if not wanted:
            return set()
        # Every match, ranked once per recall: the gate asks about a few more memories at a time.
        key = (tuple(words), min_coverage)
        if key not in self._matches:
            self._matches[key] = set(self.text(words, EVERY, min_coverage))
        return wanted & self._matches[key]

    def text_scored(
        self, words: Sequence[str], depth: int, min_coverage: float, k1: float = 1.2, b: float = 0.75
    ) -> list[tuple[int, float]]:
        match = or_match(words)
        if match is None:
            return []
        if (k1, b) != (bm25.K1, bm25.B) or min_coverage > 0:
            # FTS5's bm25() has its constants built in and knows no coverage: score its matches here.
            scored = search.bm25_matches(self._conn, words, self.where, self.params, k1, b, min_coverage)
            if scored is not None:
                ids = np.fromiter(scored, dtype=np.int64, count=len(scored))
                return top_scored(
                    ids, np.fromiter(scored.values(), dtype=np.float64, count=len(scored)), depth
                )
        return [
            (m, -rank) for m, rank in search.search_fts(self._conn, match, self.where, self.params, depth)
        ]

    def vectors(self, query: VectorQuery, depth: int) -> list[int]:
        return [m for m, _ in self.vectors_scored(query, depth)]

    def vectors_scored(self, query: VectorQuery, depth: int) -> list[tuple[int, float]]:
        return self._cosine(query, depth, episode=False)

    def episode_vectors_scored(self, query: VectorQuery, depth: int) -> list[tuple[int, float]]:
        return self._cosine(query, depth, episode=True)

    def text_and_vectors_scored(
        self,
        words: Sequence[str],
        vector: VectorQuery | None,
        depth: int,
        min_coverage: float,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        text = self.text_scored(words, depth, min_coverage, k1, b) if words else []
        return text, self.vectors_scored(vector, depth) if vector is not None else []

    def _cosine(self, query: VectorQuery, depth: int, *, episode: bool) -> list[tuple[int, float]]:
        index = self._index(query, episode)
        if index is None:
            return []
        ids, scores = index.index.similarities(query.vector)
        total = len(ids)
        found: list[tuple[int, float]] = []
        checked, size = 0, max(2 * depth, 64)
        remaining = scores.astype(np.float32, copy=True)
        while checked < total and len(found) < depth:
            size = min(size, total - checked)
            # Sort only the best ``size`` unchecked scores (argpartition), not the whole index.
            head = (
                np.argpartition(-remaining, size - 1)[:size]
                if size < total - checked
                else np.flatnonzero(remaining > -np.inf)
            )
            head = head[np.argsort(-remaining[head], kind="stable")]
            remaining[head] = -np.inf
            chunk = [int(m) for m in ids[head]]
            allowed = search.passing(self._conn, chunk, self.where, self.params)
            found.extend((m, float(v)) for m, v in zip(chunk, scores[head], strict=True) if m in allowed)
            checked += len(chunk)
            # Size the next block from the share of rows that passed so far (at most four times what was
            # checked, as a small sample misjudges a selective filter).
            share = max(len(found), 1) / checked
            size = min(max(int(1.5 * (depth - len(found)) / share), 64), 4 * checked)
        return found[:depth]

    def nearest(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        found: dict[int, float] = {}
        for memory_id, raw in search.coordinates(self._conn, spatial.path, self.where, self.params).items():
            far = distance(coordinates_at({"v": raw}, ("v",)), spatial.target)
            if far is not None and (spatial.max_distance is None or far <= spatial.max_distance):
                found[memory_id] = far
        if len(found) <= n:
            return found
        nth = sorted(found.values())[n - 1]
        return {m: d for m, d in found.items() if d <= nth}

    def first(self, n: int, exclude: Collection[int]) -> list[int]:
        ids = search.first_ids(self._conn, self.where, self.params, n + len(exclude))
        return [m for m in ids if m not in exclude][:n]

    def in_time_order(self, *, newest_first: bool, limit: int | None) -> list[int]:
        return search.select_ids(self._conn, self.where, self.params, newest_first=newest_first, limit=limit)

    def real_world(self, ids: Iterable[int]) -> set[int]:
        return search.real_world(self._conn, list(ids))

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        return search.session_members(self._conn, list(ids), self.where, self.params)

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        counts = values.carried_counts(self._conn, candidates, self.collection)
        if not counts:
            return NamedValues()
        return self._carried(counts, self._collection_size(), max_share)

    def _collection_size(self) -> int:
        return values.collection_size(self._conn, self.collection)

    def _carriers(self, kept: Collection[str]) -> list[tuple[int, str]]:
        return values.carriers(self._conn, self.collection, kept, self.where, self.params)

    def _carried(self, counts: dict[str, int], total: int, max_share: float) -> NamedValues:
        kept = {value: count for value, count in counts.items() if count <= max_share * total}
        carried: dict[int, set[str]] = {}
        for memory_id, value in self._carriers(kept):
            carried.setdefault(memory_id, set()).add(value)
        return NamedValues(total, kept, {m: frozenset(v) for m, v in carried.items()})

    def from_robot(self, ids: Iterable[int], robot_id: str) -> set[int]:
        return search.from_robot(self._conn, list(ids), robot_id)


class MirrorCandidates(SqlCandidates):
    """The channels from the recall mirror's mask and postings; SQL only for time order and FTS5's odd tokens."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        scope: RecallScope,
        index_for: Callable[[str, int], MirroredIndex],
        mirror: RecallMirror,
        episode_index_for: Callable[[str, int], MirroredIndex] | None = None,
    ) -> None:
        super().__init__(conn, scope, index_for, episode_index_for)
        self._mirror = mirror
        mirror.sync(conn)
        self.allowed = mirror.allowed(
            conn,
            collection=scope.collection,
            min_confidence=scope.min_confidence,
            session_id=scope.session_id,
            exclude_session=scope.exclude_session,
            filter=scope.filter,
        )

    def text_scored(
        self, words: Sequence[str], depth: int, min_coverage: float, k1: float = 1.2, b: float = 0.75
    ) -> list[tuple[int, float]]:
        scored = self._mirror.bm25(words, min_coverage, k1, b) if words else None
        if scored is None:  # a token FTS5 splits into several terms: FTS5 answers
            return super().text_scored(words, depth, min_coverage)
        scores, matched = scored
        size = min(len(matched), len(self.allowed))
        ids = np.flatnonzero(matched[:size] & self.allowed[:size])
        return top_scored(ids, scores[ids], depth)

    def _cosine(self, query: VectorQuery, depth: int, *, episode: bool) -> list[tuple[int, float]]:
        index = self._index(query, episode)
        if index is None:
            return []
        ids, scores = index.index.similarities(query.vector)
        rows = np.flatnonzero(allowed_among(ids, self.allowed))
        return top_scored(ids[rows], scores[rows], depth)

    def nearest(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        ids, far = self._mirror.distances(self._conn, spatial.path, spatial.target)
        keep = allowed_among(ids, self.allowed)
        if spatial.max_distance is not None:
            keep &= far <= spatial.max_distance
        ids, far = ids[keep], far[keep]
        if len(ids) > n:
            nth = np.partition(far, n - 1)[n - 1]
            ids, far = ids[far <= nth], far[far <= nth]
        return {int(m): float(d) for m, d in zip(ids, far, strict=True)}

    def first(self, n: int, exclude: Collection[int]) -> list[int]:
        spare = (int(m) for m in np.flatnonzero(self.allowed) if int(m) not in exclude)
        return list(itertools.islice(spare, n))

    def real_world(self, ids: Iterable[int]) -> set[int]:
        return self._mirror.real_world(ids)

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        return self._mirror.session_members(ids, self.allowed)

    def _collection_size(self) -> int:
        return self._mirror.collection_size(self.collection)

    def _carriers(self, kept: Collection[str]) -> list[tuple[int, str]]:
        found = values.carriers(self._conn, self.collection, kept)
        return [(m, v) for m, v in found if m < len(self.allowed) and self.allowed[m]]
