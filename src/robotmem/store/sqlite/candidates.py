"""The recall channels on SQLite: from the in-process mirror, or straight from SQL.

Both sources answer the same questions (``robotmem.store.protocol.CandidateSource``) over a scope, on the
recall's read snapshot, and give the same candidates (``tests/store/sqlite/test_candidates.py`` compares
them). ``SqlCandidates`` compiles the scope into the SQL of each question — for a robot short of memory
(``recall_mirror = false``). ``MirrorCandidates`` turns the scope into one numpy mask by memory id and
answers from the mirror, handing the few questions the mirror cannot answer to an ``SqlCandidates`` of
the same scope.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import numpy as np

from robotmem.query import bm25
from robotmem.query.spatial import SpatialSort, coordinates_at, distance
from robotmem.store.protocol import EVERY, ChannelQuery, Marks, NamedValues, Ranked, RecallScope, VectorQuery
from robotmem.store.sqlite import regions, search, values
from robotmem.store.sqlite.filters import to_sql
from robotmem.store.sqlite.mirror import BoolArray, RecallMirror
from robotmem.store.sqlite.vectors import MirroredIndex
from robotmem.text.tokens import or_match

Scored = list[tuple[int, float]]
IndexFor = Callable[[str, int], MirroredIndex]
# Up to this many memories passing the mirror's mask, ``listed`` orders them by id list rather than asking
# SQL to evaluate the scope on every row.
_FEW_TO_ORDER = 5000
# A scope of fewer than 1 / _FEW_TO_GATHER of the indexed vectors is scored row by row (a gather).
_FEW_TO_GATHER = 8
_ORDERS = {
    "id": "m.id",
    "oldest": "m.created_at ASC, m.id ASC",
    "newest": "m.created_at DESC, m.id DESC",
    "recent": "m.observed_at DESC, m.id DESC",
}


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


def top_scored(ids: np.ndarray, scores: np.ndarray, depth: int) -> Scored:
    """Return up to ``depth`` ``(id, score)`` of ``ids`` by score, best first (ties by smaller id)."""
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


def nearest_of(found: dict[int, float], n: int) -> dict[int, float]:
    """Return the ``n`` nearest of id → distance ``found``, with every tie at the n-th distance."""
    if len(found) <= n:
        return found
    nth = sorted(found.values())[n - 1]
    return {m: d for m, d in found.items() if d <= nth}


class SqlCandidates:
    """Every question as SQL over the scope's compiled predicate (and the vector indexes for cosine)."""

    def __init__(
        self, conn: sqlite3.Connection, scope: RecallScope, index_for: IndexFor, episode_index_for: IndexFor
    ) -> None:
        self._conn = conn
        self.index_for = index_for
        self.episode_index_for = episode_index_for
        self.collection = scope.collection
        self._scope = scope
        self._predicate: tuple[str, dict[str, Any]] | None = None
        self._matches: dict[tuple[tuple[str, ...], float], set[int]] = {}

    @property
    def where(self) -> str:
        """The scope's SQL predicate over ``memories m`` (with ``params``), compiled on first use."""
        return self._compiled()[0]

    @property
    def params(self) -> dict[str, Any]:
        return self._compiled()[1]

    def _compiled(self) -> tuple[str, dict[str, Any]]:
        if self._predicate is None:
            where, params = predicate(self._scope)
            region = self._scope.region
            if region is not None:
                # The region's memories, from the spatial index: one more condition of every question.
                where += " AND m.id IN (SELECT value FROM json_each(:p_region))"
                params["p_region"] = json.dumps(regions.within(self._conn, region).tolist())
            self._predicate = where, params
        return self._predicate

    def ranked(self, query: ChannelQuery) -> Ranked:
        text = self.text_scored(query.words, query.depth, query.min_coverage, query.k1, query.b)
        if query.vector is None:
            return Ranked(text)
        episode = (
            self._cosine(query.vector, query.depth, self.episode_index_for) if query.episode_vectors else []
        )
        return Ranked(text, self._cosine(query.vector, query.depth, self.index_for), episode)

    def text_scored(
        self, words: Sequence[str], depth: int, min_coverage: float, k1: float, b: float
    ) -> Scored:
        """The text channel: FTS5's ranking, or its matches scored here with other constants or a coverage."""
        match = or_match(words)
        if match is None:
            return []
        if (k1, b) != (bm25.K1, bm25.B) or min_coverage > 0:
            scored = search.bm25_matches(self._conn, words, self.where, self.params, k1, b, min_coverage)
            if scored is not None:
                ids = np.fromiter(scored, dtype=np.int64, count=len(scored))
                return top_scored(
                    ids, np.fromiter(scored.values(), dtype=np.float64, count=len(scored)), depth
                )
        return [
            (m, -rank) for m, rank in search.search_fts(self._conn, match, self.where, self.params, depth)
        ]

    def text_matches(self, words: Sequence[str], min_coverage: float, ids: Collection[int]) -> set[int]:
        wanted = set(ids)
        if not wanted:
            return set()
        # Every match, ranked once per recall: the gate asks about a few more memories at a time.
        key = (tuple(words), min_coverage)
        if key not in self._matches:
            matches = self.ranked(ChannelQuery(words, depth=EVERY, min_coverage=min_coverage)).text
            self._matches[key] = {m for m, _ in matches}
        return wanted & self._matches[key]

    def text_coverage(self, words: Sequence[str], ids: Collection[int]) -> dict[int, float] | None:
        return None  # FTS5 gives matches, not each memory's share: ``text_matches`` answers

    def synced(self, index_for: IndexFor, query: VectorQuery) -> MirroredIndex:
        """The index of ``index_for`` for the query's model, synced on this snapshot."""
        index = index_for(query.model_id, query.dim)
        index.sync(self._conn)  # inside this snapshot: vectors written since the last recall count
        return index

    def _cosine(self, query: VectorQuery, depth: int, index_for: IndexFor) -> Scored:
        ids, scores = self.synced(index_for, query).index.similarities(query.vector)
        total = len(ids)
        found: Scored = []
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
        return nearest_of(found, n)

    def listed(self, limit: int | None, *, order: str, exclude: Collection[int] = ()) -> list[int]:
        sql = f"SELECT m.id FROM memories m WHERE {self.where} ORDER BY {_ORDERS[order]}"
        bound = dict(self.params)
        if limit is not None:
            sql += " LIMIT :listed_limit"
            bound["listed_limit"] = limit + len(exclude)
        ids = (int(r[0]) for r in self._conn.execute(sql, bound))
        return list(itertools.islice((m for m in ids if m not in exclude), limit))

    def marks(self, ids: Iterable[int], robot_id: str | None) -> Marks:
        real: set[int] = set()
        own: set[int] = set()
        for marks, keyed in search.id_chunks(list(ids)):  # both questions in one pass over the rows
            rows = self._conn.execute(
                "SELECT m.id, json_extract(m.context, '$.env.sim_or_real') = 'real', m.robot_id = :robot "
                f"FROM memories m WHERE m.id IN ({marks})",
                {**keyed, "robot": robot_id},
            )
            for memory_id, is_real, is_own in rows:
                real.update((int(memory_id),) if is_real else ())
                own.update((int(memory_id),) if is_own else ())
        return Marks(real, own)

    def own(self, ids: list[int], robot_id: str | None) -> set[int]:
        """The memories of ``ids`` that ``robot_id`` wrote (none for None): the robot_id column alone, no
        context read."""
        if robot_id is None:
            return set()
        return search.passing(self._conn, ids, "m.robot_id = :robot", {"robot": robot_id})

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        return search.session_members(self._conn, list(ids), self.where, self.params)

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        return self.named(
            candidates,
            max_share,
            lambda: values.collection_size(self._conn, self.collection),
            lambda kept: values.carriers(self._conn, self.collection, kept, self.where, self.params),
        )

    def named(
        self,
        candidates: Collection[str],
        max_share: float,
        size: Callable[[], int],
        carriers: Callable[[Collection[str]], Iterable[tuple[int, str]]],
    ) -> NamedValues:
        """``named_values`` with the collection's ``size`` and the scope's ``carriers`` of some values
        asked of the caller (the mirror answers both from its columns and mask)."""
        counts = values.carried_counts(self._conn, candidates, self.collection)
        if not counts:
            return NamedValues()
        total = size()
        kept = {value: count for value, count in counts.items() if count <= max_share * total}
        carried: dict[int, set[str]] = {}
        for memory_id, value in carriers(kept):
            carried.setdefault(memory_id, set()).add(value)
        return NamedValues(total, kept, {m: frozenset(v) for m, v in carried.items()})


class MirrorCandidates:
    """Every question from the recall mirror's mask, postings, points and columns.

    What the mirror does not hold is handed to ``self.sql``, an ``SqlCandidates`` of the same scope:
    BM25 of a query token FTS5 splits into several terms (the postings hold one term per token), time
    order (``created_at`` as stored text, which the mirror's day numbers cannot order to the microsecond),
    whose robot a memory is, and the named values' index (the mirror gives the collection's size and the
    scope's mask). Vectors come from the same synced indexes as the SQL source's.
    """

    def __init__(self, sql: SqlCandidates, scope: RecallScope, mirror: RecallMirror) -> None:
        self.sql = sql
        self._conn = sql._conn
        self._mirror = mirror
        mirror.sync(self._conn)
        self.allowed = mirror.allowed(
            self._conn,
            collection=scope.collection,
            min_confidence=scope.min_confidence,
            session_id=scope.session_id,
            exclude_session=scope.exclude_session,
            filter=scope.filter,
        )
        if scope.region is not None:
            self.allowed = mirror.within(self._conn, scope.region, self.allowed)
        self._matches: dict[tuple[tuple[str, ...], float], set[int]] = {}

    def ranked(self, query: ChannelQuery) -> Ranked:
        text = self._text(query.words, query.depth, query.min_coverage, query.k1, query.b)
        if query.vector is None:
            return Ranked(text)
        episode = (
            self._cosine(query.vector, query.depth, self.sql.episode_index_for)
            if query.episode_vectors
            else []
        )
        return Ranked(text, self._cosine(query.vector, query.depth, self.sql.index_for), episode)

    def _text(self, words: Sequence[str], depth: int, min_coverage: float, k1: float, b: float) -> Scored:
        scored = self._mirror.bm25(words, min_coverage, k1, b) if words else None
        if scored is None:  # no words, or a token FTS5 splits into several terms
            return self.sql.text_scored(words, depth, min_coverage, k1, b)
        scores, matched = scored
        size = min(len(matched), len(self.allowed))
        ids = np.flatnonzero(matched[:size] & self.allowed[:size])
        return top_scored(ids, scores[ids], depth)

    def text_matches(self, words: Sequence[str], min_coverage: float, ids: Collection[int]) -> set[int]:
        wanted = set(ids)
        if not wanted:
            return set()
        key = (tuple(words), min_coverage)  # every match, ranked once per recall
        if key not in self._matches:
            self._matches[key] = {m for m, _ in self._text(words, EVERY, min_coverage, bm25.K1, bm25.B)}
        return wanted & self._matches[key]

    def text_coverage(self, words: Sequence[str], ids: Collection[int]) -> dict[int, float] | None:
        wanted = np.fromiter(ids, dtype=np.int64, count=len(ids))
        shares = self._mirror.coverage(words, wanted) if words else None
        return None if shares is None else dict(zip(wanted.tolist(), shares.tolist(), strict=True))

    def _cosine(self, query: VectorQuery, depth: int, index_for: IndexFor) -> Scored:
        index = self.sql.synced(index_for, query).index
        passing = np.flatnonzero(self.allowed)
        if len(passing) * _FEW_TO_GATHER < len(index):  # a narrow scope: score its rows alone
            ids, scores = index.similarities_among(query.vector, passing)
            return top_scored(ids, scores, depth)
        ids, scores = index.similarities(query.vector)
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

    def listed(self, limit: int | None, *, order: str, exclude: Collection[int] = ()) -> list[int]:
        passing = np.flatnonzero(self.allowed)
        first = None if limit is None else limit + len(exclude)
        ordered = passing if order == "id" else None
        if order == "recent":
            ordered = self._mirror.by_observed(passing, first)
        if ordered is not None:  # by id, or newest observed first, from the mirror's columns
            spare: list[int] = ordered.tolist()
            if exclude:
                spare = [m for m in spare if m not in exclude]
            return spare[:limit] if limit is not None else spare
        if len(passing) > _FEW_TO_ORDER:
            return self.sql.listed(limit, order=order, exclude=exclude)
        spare = [m for m in passing.tolist() if m not in exclude]
        # Few memories pass: order them by their rows (no filter evaluated again on every row). For the first
        # few of many, walking the time index until enough of them appear reads fewer rows than sorting them
        # all (``+m.id`` keeps SQLite from looking each id up instead); the created_at and observed_at
        # indexes start with the collection.
        walk = limit is not None and limit * len(self.allowed) < len(spare) * len(spare)
        member = "+m.id" if walk else "m.id"
        within = " AND m.collection = :collection" if walk else ""
        sql = (
            f"SELECT m.id FROM memories m WHERE {member} IN (SELECT value FROM json_each(:ids)){within} "
            f"ORDER BY {_ORDERS[order]}"
        )
        bound: dict[str, Any] = {"ids": json.dumps(spare), "collection": self.sql.collection}
        if limit is not None:
            sql += " LIMIT :listed_limit"
            bound["listed_limit"] = limit
        return [int(r[0]) for r in self._conn.execute(sql, bound)]

    def marks(self, ids: Iterable[int], robot_id: str | None) -> Marks:
        wanted = list(ids)
        return Marks(self._mirror.real_world(wanted), self.sql.own(wanted, robot_id))

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        return self._mirror.session_members(ids, self.allowed)

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        collection, allowed = self.sql.collection, self.allowed

        def in_scope(kept: Collection[str]) -> list[tuple[int, str]]:
            found = values.carriers(self._conn, collection, kept)
            return [(m, v) for m, v in found if m < len(allowed) and allowed[m]]

        return self.sql.named(
            candidates, max_share, lambda: self._mirror.collection_size(collection), in_scope
        )
