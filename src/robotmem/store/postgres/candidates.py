"""The recall channels on PostgreSQL (``robotmem.store.protocol.CandidateSource``).

Every channel runs as SQL over the scope's predicate, so a filter is applied inside the channel, before
any limit. BM25 scores FTS5's formula on the narrow index rows (``text_index``) and applies the filters
to the best of them, in ranked blocks, until ``depth`` pass (a window that grows while too few pass).
MaxScore avoids scoring every memory that shares a common word: query terms are taken rarest first,
only memories holding one of the terms taken so far are scored (fully, on every query term), and the
loop stops as soon as the ``depth``-th best passing score beats the most the remaining, commoner terms
could add to a memory holding none of the others. The answer is the same as scoring every match.

In a read snapshot with the process's postings (``postings.TextPostings``), BM25 ranks there instead,
with the same formula and statistics, and the server checks the filters on the best-ranked memories
in windows sized by the pass rate seen so far; past ``_MOST_CHECKED`` checked memories the filters pass
too few, and the SQL ranking over the passing memories answers.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from robotmem.query.bm25 import K1, B
from robotmem.query.filters import UNCACHED_FIELDS, All, Condition, Node, reads_volatile
from robotmem.query.spatial import SpatialSort, coordinates_at, distance
from robotmem.store.postgres import changes, regions, text_index
from robotmem.store.postgres.episodes import SessionMembers
from robotmem.store.postgres.filters import PgFilter
from robotmem.store.postgres.passing import BoolArray, PassingMasks
from robotmem.store.postgres.points import SpatialPoints
from robotmem.store.postgres.postings import Ranking, TextPostings
from robotmem.store.postgres.vectors import (
    as_vector,
    is_short_window,
    search_episode_vectors,
    search_vectors,
)
from robotmem.store.protocol import ChannelQuery, Marks, NamedValues, Ranked, RecallScope, VectorQuery
from robotmem.text.tokens import query_tokens, word_set


def predicate(scope: RecallScope) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` for every condition of ``scope``."""
    where, params, _ = predicate_with_hint(scope)
    return where, params


def predicate_with_hint(scope: RecallScope) -> tuple[str, dict[str, Any], str | None]:
    """``predicate``, and the filter's index hint (``PgFilter.index_hint``) with its parameters in the same dict."""
    parts = ["m.status = 'active'", "m.collection = %(p_collection)s", "m.confidence >= %(p_min_confidence)s"]
    params: dict[str, Any] = {"p_collection": scope.collection, "p_min_confidence": scope.min_confidence}
    if scope.session_id is not None:
        parts.append("m.session_id = %(p_session)s")
        params["p_session"] = scope.session_id
    if scope.exclude_session is not None:
        parts.append("(m.session_id IS NULL OR m.session_id != %(p_exclude)s)")
        params["p_exclude"] = scope.exclude_session
    hint = None
    if scope.filter is not None:
        builder = PgFilter()
        parts.append(builder.compile(scope.filter))
        hint = builder.index_hint(scope.filter)
        params.update(builder.params)
    return " AND ".join(parts), params, hint


def bm25(
    conn: psycopg.Connection,
    words: Sequence[str],
    where: str,
    params: dict[str, Any],
    depth: int,
    *,
    collection: str,
    k1: float = K1,
    b: float = B,
    min_coverage: float = 0.0,
    required: Sequence[str] = (),
) -> list[tuple[int, float]]:
    """Return up to ``depth`` ``(id, BM25)`` of rows of ``collection`` passing ``where`` that hold a query
    word, best first (ties by smaller id), scored as FTS5's ``bm25()`` with constants ``k1`` and ``b``.

    ``min_coverage`` > 0 leaves out rows whose words carry less than that share of the query's IDF;
    ``required`` (terms) keeps only rows holding one of them.
    """
    terms = text_index.query_terms(words)
    if not terms or depth <= 0:
        return []
    stats = text_index.statistics(conn, terms)
    if stats.documents == 0:
        return []
    weight = _weights(terms, stats)
    distinct = list(weight)
    least = _least(weight, min_coverage)
    bound = {t: w * (k1 + 1.0) for t, w in weight.items()}  # the most a term adds, at any frequency
    order = sorted(distinct, key=lambda t: (-stats.idf[t], t))
    extra = "AND t.terms @@ %(q_required)s::tsquery " if required else ""
    scored, ranking = _scored(weight, least, stats, collection, k1, b, extra)
    if required:
        ranking["q_required"] = text_index.or_query(required)
    ranked_sql = f"{scored} ORDER BY score DESC, t.memory_id LIMIT %(q_window)s"
    # The same ranking over the rows that pass the filters, for when the best rows mostly do not.
    filtered_sql = (
        f"SELECT r.memory_id, r.score FROM ({scored}) r JOIN memories m ON m.id = r.memory_id "
        f"WHERE {where} ORDER BY r.score DESC, r.memory_id LIMIT %(q_window)s"
    )
    taken = 1
    selective = False  # set once the best rows of a round mostly failed the filters
    while True:
        essential, rest = order[:taken], order[taken:]
        match = {**ranking, "q_match": text_index.or_query(essential)}
        if selective:
            found = conn.execute(filtered_sql, {**params, **match, "q_window": depth})
            rows = [(int(m), float(score)) for m, score in found]
        else:
            rows, selective = _passing_best(conn, (ranked_sql, filtered_sql), match, where, params, depth)
        if not rest:
            break
        # A row holding none of the terms taken scores at most the rest's bounds and covers at most
        # their weight: once that cannot reach the depth-th score (or the coverage), nothing is missed.
        ceiling = sum(bound[t] for t in rest)
        if sum(weight[t] for t in rest) < least or (len(rows) >= depth and rows[-1][1] > ceiling):
            break
        taken += 1
    return rows


def matching(
    conn: psycopg.Connection,
    words: Sequence[str],
    ids: Sequence[int],
    *,
    collection: str,
    min_coverage: float,
) -> set[int]:
    """Of ``ids``, those ``bm25`` with no depth limit would return over ``collection`` (a query term held,
    and ``min_coverage`` of the query's IDF), asked of their own rows of the text index."""
    terms = text_index.query_terms(words)
    if not terms or not ids:
        return set()
    stats = text_index.statistics(conn, terms)
    if stats.documents == 0:
        return set()
    weight = _weights(terms, stats)
    scored, ranking = _scored(
        weight, _least(weight, min_coverage), stats, collection, K1, B, "AND t.memory_id = ANY(%(q_ids)s) "
    )
    rows = conn.execute(scored, {**ranking, "q_match": text_index.or_query(list(weight)), "q_ids": list(ids)})
    return {int(r[0]) for r in rows}


def _weights(terms: Sequence[str], stats: text_index.Statistics) -> dict[str, float]:
    """Each distinct query term's weight: its IDF, once for each time the query lists it (as in FTS5)."""
    weight: dict[str, float] = {}
    for term in terms:
        weight[term] = weight.get(term, 0.0) + stats.idf[term]
    return weight


def _least(weight: dict[str, float], min_coverage: float) -> float:
    """The least weight a match's terms must carry for ``min_coverage`` of the query's."""
    return min_coverage * sum(weight.values()) - 1e-12 if min_coverage > 0 else 0.0


def _scored(
    weight: dict[str, float],
    least: float,
    stats: text_index.Statistics,
    collection: str,
    k1: float,
    b: float,
    extra: str,
) -> tuple[str, dict[str, Any]]:
    """SQL of ``(memory_id, score)`` for the rows ``t`` of the text index in ``collection`` that match
    ``%(q_match)s`` (and ``extra``) and carry at least ``least`` of the terms' weight, scored as FTS5's
    ``bm25()``; and its parameters but ``q_match``."""
    ranking: dict[str, Any] = {
        "q_k1": k1,
        "q_b": b,
        "q_avgdl": max(stats.average_length, 1e-9),
        "q_least": least,
        "q_collection": collection,
    }
    frequencies, score_parts, cover_parts = [], [], []
    for i, term in enumerate(weight):
        ranking[f"q_t{i}"] = term
        ranking[f"q_w{i}"] = weight[term]
        frequencies.append(f"cardinality(array_positions(t.term_list, %(q_t{i})s))::float8 AS tf{i}")
        score_parts.append(
            f"%(q_w{i})s * f.tf{i} * (%(q_k1)s + 1) / (f.tf{i} + %(q_k1)s * "
            "(1 - %(q_b)s + %(q_b)s * t.term_count / %(q_avgdl)s))"
        )
        cover_parts.append(f"(CASE WHEN f.tf{i} > 0 THEN %(q_w{i})s ELSE 0 END)")
    scored = (
        f"SELECT t.memory_id, {' + '.join(score_parts)} AS score FROM memory_terms t "
        f"CROSS JOIN LATERAL (SELECT {', '.join(frequencies)}) f "
        f"WHERE t.terms @@ %(q_match)s::tsquery {extra}AND t.collection = %(q_collection)s "
        f"AND {' + '.join(cover_parts)} > 0 AND {' + '.join(cover_parts)} >= %(q_least)s"
    )
    return scored, ranking


def _passing_best(
    conn: psycopg.Connection,
    queries: tuple[str, str],
    ranking: dict[str, Any],
    where: str,
    params: dict[str, Any],
    depth: int,
) -> tuple[list[tuple[int, float]], bool]:
    """The ``depth`` best of the ranked rows that pass ``where``, in rank order, and whether the filtered
    ranking was needed.

    Ranks a window of the best rows and keeps those passing the filter. When too few pass and more
    rows rank, ranks again over the passing rows only (``queries``: the window's ranking, the filtered
    one): scoring the matching rows is most of a ranking's cost, so one filtered ranking costs less
    than widening the window again and again.
    """
    ranked_sql, filtered_sql = queries
    window = min(max(4 * depth, 64), 2**62)
    ranked = [
        (int(m), float(score)) for m, score in conn.execute(ranked_sql, {**ranking, "q_window": window})
    ]
    passing: set[int] = set()
    if ranked:
        passing = {
            int(r[0])
            for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id = ANY(%(r_ids)s) AND {where}",
                {**params, "r_ids": [m for m, _ in ranked]},
            )
        }
    kept = [(m, score) for m, score in ranked if m in passing]
    if len(kept) >= depth or len(ranked) < window:
        return kept[:depth], False
    rows = conn.execute(filtered_sql, {**params, **ranking, "q_window": depth})
    return [(int(m), float(score)) for m, score in rows], True


# The SQL comparison of each filter operator that bounds ``observed_at`` (``_time_bounds``).
_COMPARED = {"$gte": ">=", "$gt": ">", "$lte": "<=", "$lt": "<"}


def _time_bounds(node: Node | None) -> list[Condition]:
    """The conditions bounding ``observed_at`` that every passing memory meets (parts of an ``All``)."""
    if isinstance(node, Condition):
        bounded = node.path == ("observed_at",) and node.operator in ("$gte", "$gt", "$lte", "$lt")
        return [node] if bounded else []
    if isinstance(node, All):
        return [bound for part in node.parts for bound in _time_bounds(part)]
    return []


def _without(node: Node | None, dropped: Collection[Condition]) -> Node | None:
    """``node`` without the conditions of ``dropped`` among the parts of its ``All`` (as ``_time_bounds``
    finds them; None when nothing is left)."""
    if node is None or (isinstance(node, Condition) and node in dropped):
        return None
    if isinstance(node, All):
        kept = tuple(part for part in (_without(p, dropped) for p in node.parts) if part is not None)
        return All(kept) if kept else None
    return node


# Whether a memory is real-world experience, and whether it is a robot's own (``marks``): predicates over
# ``memories m``, held as masks in the process when it holds masks.
REAL_WORLD = "m.context -> 'env' -> 'sim_or_real' = '\"real\"'::jsonb"
OWN_ROBOT = "m.robot_id = %(own_robot)s"


def _marked(mask: BoolArray, ids: list[int]) -> set[int]:
    """The ids ``mask`` marks (ids past its end: none)."""
    return {m for m in ids if 0 <= m < len(mask) and mask[m]}


_ORDERS = {
    "id": "m.id",
    "oldest": "m.created_at ASC, m.id ASC",
    "newest": "m.created_at DESC, m.id DESC",
    "recent": "m.observed_at DESC, m.id DESC",
}
# A region within a time window is listed (``PgCandidates._lists_scope``) when the planner counts fewer of
# the frame's positions in the window than this: reading them costs ~1 µs each (1M sightings, a 6-hour
# window: ~40,000), where walking the vector index with so selective a filter cost 100-560 ms.
_LISTED_BELOW = 200_000
# Ranked memories checked against the filters on the server before ranking there is cheaper.
_MOST_CHECKED = 20_000
# A region whose box holds this share of its collection's memories (at most this many positions counted)
# is listed newest first by walking the order's index: about limit / share rows read (2,000 for 50).
_WIDE_SHARE = 0.025
_WIDE_MOST = 5_000
# Where the process ranks BM25 while the server searches the vectors of the same recall: (pid, pool).
_beside: tuple[int, ThreadPoolExecutor] | None = None
_beside_lock = threading.Lock()


def _beside_pool() -> ThreadPoolExecutor:
    """The threads that rank beside the server, made anew in a forked child (whose copy of the pool
    would count threads that did not survive the fork, and never run what it is given)."""
    global _beside
    with _beside_lock:
        if _beside is None or _beside[0] != os.getpid():
            _beside = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="robotmem-bm25"))
        return _beside[1]


def _passing_ranked(
    conn: psycopg.Connection,
    ranking: Ranking,
    where: str,
    params: dict[str, Any],
    depth: int,
    *,
    ties: bool = False,
) -> list[tuple[int, float]] | None:
    """The ``depth`` best of ``ranking`` that pass ``where``, best first (with ``ties``, also every one
    scoring as the ``depth``-th); None when more than ``_MOST_CHECKED`` ranked memories would have to
    be checked (the filters pass few of them: ranking on the server over the passing memories is then
    the cheaper way)."""
    kept: list[tuple[int, float]] = []
    checked = 0
    window = max(4 * depth, 64)
    while checked < len(ranking):
        if checked >= _MOST_CHECKED:
            return None
        chunk = ranking.best(checked + window)[checked:]
        passing = {
            int(r[0])
            for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id = ANY(%(r_ids)s) AND {where}",
                {**params, "r_ids": [m for m, _ in chunk]},
            )
        }
        kept.extend(row for row in chunk if row[0] in passing)
        checked += len(chunk)
        # Done once depth pass, and (with ties) the last checked scores below the depth-th.
        if len(kept) >= depth and (not ties or chunk[-1][1] < kept[depth - 1][1]):
            break
        # The next window holds what the pass rate so far says is missing, with room to spare: the
        # best memories of a query often fail its filter together (the slips of a grasp are its failures).
        missing = max(depth - len(kept), 1)
        window = max(2 * window, int(1.5 * missing * checked / max(len(kept), 1)) + 1)
    if len(kept) <= depth or not ties:
        return kept[:depth]
    return [row for row in kept if row[1] >= kept[depth - 1][1]]


def jaccard_candidates(
    conn: psycopg.Connection,
    text: str,
    where: str,
    params: dict[str, Any],
    limit: int,
    threshold: float,
    *,
    collection: str,
) -> list[int]:
    """Return up to ``limit`` rows passing ``where`` that share words with ``text``, best BM25 first, among
    which every row with word Jaccard ≥ ``threshold`` to ``text`` is found (see the SQLite engine's
    ``search.jaccard_candidates``: such a row holds one of the rarest ⌊(1 − threshold)·|W|⌋ + 1 words)."""
    ranked = query_tokens(text)
    words = sorted(word_set(text))
    if not ranked or not words:
        return []
    terms_of = {w: text_index.query_terms([w]) for w in words}
    needed = math.floor((1.0 - threshold) * len(words)) + 1
    probes = {w: t[0] for w, t in terms_of.items() if len(t) == 1}
    required: list[str] = []
    if 0.0 < threshold <= 1.0 and len(probes) >= needed:
        counts = text_index.document_counts(conn, list(probes.values()))
        rarest = sorted(probes, key=lambda w: (counts[probes[w]], w))[:needed]
        if all(counts[probes[w]] == 0 for w in rarest):
            return []
        required = [probes[w] for w in rarest]
    return [m for m, _ in bm25(conn, ranked, where, params, limit, collection=collection, required=required)]


class PgCandidates:
    """Every channel as SQL over the scope's compiled predicate; BM25 from this process's postings
    and nearest-first from its points (``postings``, ``points``: synced on the reading snapshot) when
    given, checking the filters with the process's mask of the scope (``masks``) when it has one, else
    on the server; the episodes of the best candidates from the process's copy of the sessions' members
    (``members``) with that mask."""

    def __init__(
        self,
        conn: psycopg.Connection,
        scope: RecallScope,
        postings: TextPostings | None = None,
        points: SpatialPoints | None = None,
        masks: PassingMasks | None = None,
        members: SessionMembers | None = None,
    ) -> None:
        self._conn = conn
        self._members = members
        self._scope = scope
        self._collection = scope.collection
        self._postings = postings
        self._postings_synced = False
        self._points = points
        self._masks = None if reads_volatile(scope.filter, UNCACHED_FIELDS) else masks
        self._marks_masks = masks  # the marks' masks (``marks``) are held whatever the scope's filter
        self._head: tuple[int, str] | None = None  # ``changes.head`` of this snapshot, once read
        self._allowed: BoolArray | None = None
        self._matches: dict[tuple[tuple[str, ...], float], npt.NDArray[np.int64]] = {}
        self._sorted_matches: dict[tuple[tuple[str, ...], float], npt.NDArray[np.int64]] = {}
        self.where, self.params, self.hint = predicate_with_hint(scope)
        # The process's masks are kept per predicate without the region (a region is new at every call):
        # a held mask is narrowed by the region's memories, read from the spatial index; in SQL the region
        # is a condition like the others, so the server reads only the positions the plan needs.
        self._mask_where, self._mask_params = self.where, dict(self.params)
        self._window = _time_bounds(scope.filter)
        self._region = scope.region
        self._is_narrow: bool | None = None
        self._listing: bool | None = None
        self._listed: npt.NDArray[np.int64] | None = None
        self._listed_times: list[str] = []
        self._newest: list[int] | None = None
        # The listed memories with a vector of the query's model, most similar first, and their cosines.
        self._listed_cosines: tuple[VectorQuery, npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None
        # The window's bounds a region's positions are listed by (stored times; ``regions.listing``).
        self._listed_window = [c for c in self._window if isinstance(c.operand, str)]
        self._region_window = [(_COMPARED[c.operator], c.operand) for c in self._listed_window]
        self._probed_where: str | None = None  # the region probed by id only (``listed`` with a limit)
        if scope.region is not None:
            # A time window (``observed_at``) names fewer memories than a room, and the planner cannot
            # tell (``regions.predicate``): with one, the region is checked on the window's memories.
            windowed = reads_volatile(scope.filter, UNCACHED_FIELDS)
            inside, bound = regions.predicate(scope.region, indexed=not windowed)
            if not windowed:
                probed, _ = regions.predicate(scope.region, indexed=False)
                self._probed_where = f"{self.where} AND {probed}"
            self.where += f" AND {inside}"
            self.params.update(bound)

    def _narrow(self) -> bool:
        """Whether the scope's time window holds few enough memories to search their vectors exactly
        (asked of the planner once per recall)."""
        if self._is_narrow is None:
            builder = PgFilter("w")
            where = builder.compile(All(tuple(self._window))) if self._window else ""
            self._is_narrow = bool(where) and is_short_window(
                self._conn, self._collection, where, builder.params
            )
        return self._is_narrow

    def _lists_scope(self) -> bool:
        """Whether this recall lists its scope once and ranks only those memories: a region within a time
        window whose positions, by the planner's count of the frame's positions in the window, number
        fewer than ``_LISTED_BELOW`` (asked once per recall)."""
        if self._listing is None:
            window = self._region_window
            self._listing = (
                self._region is not None
                and bool(window)
                and regions.positions_in_window(self._conn, self._region.frame, window) < _LISTED_BELOW
            )
        return self._listing

    def _listed_scope(self, vector: VectorQuery | None = None) -> npt.NDArray[np.int64] | None:
        """The ids of the scope's memories when it is listed (``_lists_scope``; else None), read once per
        recall from the window's positions in the region's frame (``regions.listing``), with each one's
        cosine to ``vector`` when one is given (the vector channel is then these memories, exactly, and
        BM25 ranks them in this process with their mask) and its ``observed_at`` (``listed`` newest first
        then needs no server)."""
        if self._listed is None and self._lists_scope():
            listed, distances, self._listed_times = self._list_scope(vector)
            self._listed = np.asarray(listed, dtype=np.int64)
            if vector is not None:
                far = np.array(distances, dtype=np.float64)  # None (no vector of the model): NaN
                held = ~np.isnan(far)
                ids, cosines = self._listed[held], 1.0 - far[held]
                order = np.lexsort((ids, -cosines))  # the order of ``search_vectors``: ties by id
                self._listed_cosines = (vector, ids[order], cosines[order])
        return self._listed

    def _list_scope(self, vector: VectorQuery | None) -> tuple[list[int], list[float | None], list[str]]:
        """``_listed_scope``'s statement: the listed memories' ids, cosine distances to ``vector`` (None: no
        vector of its model) and ``observed_at``, as three arrays in one row (newest first is sorted in this
        process: on the server it cost more). The positions' ids are one sorted array handed to the primary
        key, a plan the planner cannot turn into a scan of the window's memories joined by id (its
        statistics lag a robot still writing: it has put the last hour's memories at 24 of 8,000 and looped
        over them for each position). The window bounds the positions as it bounds their memories
        (``regions.listing``), so the memories are checked against the rest of the scope only."""
        assert self._region is not None
        cosine, bound = "NULL::float8", {}
        if vector is not None:
            cosine = (
                f"CASE WHEN m.embedding_model = %(l_model)s AND vector_dims(m.embedding) = {int(vector.dim)} "
                "THEN m.embedding <=> %(l_query)s END"
            )
            bound = {"l_model": vector.model_id, "l_query": as_vector(vector.vector)}
        where, params = predicate(
            replace(self._scope, filter=_without(self._scope.filter, self._listed_window))
        )
        positions, inside = regions.listing(self._region, self._region_window, prefix="ls")
        with self._conn.cursor(binary=True) as cursor:
            row = cursor.execute(
                f"SELECT array_agg(m.id), array_agg({cosine}), array_agg(m.observed_at) FROM memories m "
                f"WHERE m.id = ANY(ARRAY({positions} ORDER BY 1)) AND {where}",
                {**params, **bound, **inside},
            ).fetchone()
        return (row[0], row[1], row[2]) if row is not None and row[0] is not None else ([], [], [])

    def _scope_mask(self) -> BoolArray | None:
        """The memories passing the scope, as a mask over ids read once per recall (None: not held)."""
        if self._masks is not None:
            allowed = self._masks.allowed(
                self._conn, self._mask_where, self._mask_params, self._snapshot_head()
            )
            if allowed is not None and self._region is not None:
                ids = regions.within(self._conn, self._region)
                inside = np.zeros(len(allowed), dtype=np.bool_)
                inside[ids[ids < len(inside)]] = True
                allowed = allowed & inside
            self._allowed = allowed
            self._masks = None
        elif self._allowed is None and (listed := self._listed_scope()) is not None:
            top = int(listed.max()) if len(listed) else -1
            if not changes.too_sparse(top, len(listed)):  # else no mask: the server checks the scope
                self._allowed = np.zeros(top + 1, dtype=np.bool_)
                self._allowed[listed] = True
        return self._allowed

    def _held_mask(self, where: str, params: dict[str, Any]) -> BoolArray | None:
        """The process's mask of a predicate over ``memories m`` that no scope condition narrows (None:
        not held, or not readable in this snapshot)."""
        masks = self._marks_masks
        return masks.allowed(self._conn, where, params, self._snapshot_head()) if masks is not None else None

    def _snapshot_head(self) -> tuple[int, str]:
        """``changes.head`` of this recall's snapshot, read once: the process's copies ask it to know
        whether they hold this snapshot."""
        if self._head is None:
            self._head = changes.head(self._conn)
        return self._head

    def _best_passing(
        self, ranking: Ranking, depth: int, *, ties: bool = False
    ) -> list[tuple[int, float]] | None:
        """``_passing_ranked`` with the scope's mask when there is one (no server check), else on the server."""
        allowed = self._scope_mask()
        if allowed is None:
            return _passing_ranked(self._conn, ranking, self.where, self.params, depth, ties=ties)
        passing = ranking.passing(allowed)
        return passing.best_with_ties(depth) if ties else passing.best(depth)

    def _synced_postings(self) -> TextPostings | None:
        """The process's postings, synced once on this recall's snapshot (None: none, or not usable)."""
        if self._postings is not None and not self._postings_synced:
            self._postings_synced = True
            if not self._postings.sync(self._conn):
                self._postings = None
        return self._postings

    def ranked(self, query: ChannelQuery) -> Ranked:
        if self._lists_scope():
            return self._ranked_listed(query)
        words, vector, depth = query.words, query.vector, query.depth
        postings = self._synced_postings() if words and vector is not None and depth > 0 else None
        allowed = self._scope_mask() if postings is not None else None
        if postings is None or allowed is None or vector is None:
            text = self._text(words, depth, query.min_coverage, query.k1, query.b) if words else []
            return Ranked(text, *self._cosine(query))
        # With the scope's mask the text ranking needs no server: this process ranks (numpy, which lets
        # go of the GIL) while the server walks the vectors, on the two cores instead of one after the other.
        ranked = _beside_pool().submit(
            self._ranked_here, postings, allowed, words, depth, query.min_coverage, query.k1, query.b
        )
        try:
            vectors, episode = self._cosine(query)
        finally:
            text = ranked.result()
        return Ranked(text, vectors, episode)

    def _ranked_listed(self, query: ChannelQuery) -> Ranked:
        """Both channels over a listed scope: this process ranks every BM25 match of the collection while
        the server lists the scope with each memory's cosine; the matches are then kept to the listed."""
        words, depth = query.words, query.depth
        postings = self._synced_postings() if words and depth > 0 else None
        matching = None
        if postings is not None:
            terms = text_index.query_terms(words)
            matching = _beside_pool().submit(
                postings.rank, terms, self._collection, query.min_coverage, query.k1, query.b
            )
        try:
            self._listed_scope(query.vector)
        finally:
            matches = matching.result() if matching is not None else None
        allowed = self._scope_mask()
        if matches is not None and allowed is not None:
            self._matches.setdefault((tuple(words), query.min_coverage), matches.ids)  # ``text_matches``
            text = matches.passing(allowed).best(depth)
        else:
            text = self._text(words, depth, query.min_coverage, query.k1, query.b) if words else []
        return Ranked(text, *self._cosine(query))

    def _cosine(self, query: ChannelQuery) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The vector channel and, when asked, the episode vectors' (both empty without a query vector)."""
        vector = query.vector
        if vector is None:
            return [], []
        listed = self._listed_scope(vector)
        if listed is not None and self._listed_cosines is not None and self._listed_cosines[0] is vector:
            _, ids, cosines = self._listed_cosines
            found = list(zip(ids[: query.depth].tolist(), cosines[: query.depth].tolist(), strict=True))
        elif listed is not None:
            found = search_vectors(
                self._conn,
                vector,
                "m.id = ANY(%(s_ids)s)",
                {"s_ids": listed.tolist()},
                query.depth,
                exact=True,
            )
        else:
            found = search_vectors(
                self._conn, vector, self.where, self.params, query.depth, hint=self.hint, exact=self._narrow()
            )
        if not query.episode_vectors:
            return found, []
        return found, search_episode_vectors(self._conn, vector, self.where, self.params, query.depth)

    def text_coverage(self, words: Sequence[str], ids: Collection[int]) -> dict[int, float] | None:
        postings = self._synced_postings() if words else None
        if postings is None:
            return None
        wanted = np.fromiter(ids, dtype=np.int64, count=len(ids))
        shares = postings.coverage(text_index.query_terms(words), wanted)
        return dict(zip(wanted.tolist(), shares.tolist(), strict=True))

    def text_matches(self, words: Sequence[str], min_coverage: float, ids: Collection[int]) -> set[int]:
        wanted = np.fromiter(ids, dtype=np.int64)
        if len(wanted) == 0:
            return set()
        # Every match, found once per recall: the gate asks about a few more memories at a time.
        key = (tuple(words), min_coverage)
        matched = self._matches.get(key)
        if matched is None:
            postings = self._synced_postings()
            if postings is None:  # the server asked about these memories alone (``ids`` pass the scope)
                return matching(
                    self._conn, words, wanted.tolist(), collection=self._collection, min_coverage=min_coverage
                )
            # Every memory the copy matches, unfiltered: ``ids`` already pass the scope.
            terms = text_index.query_terms(words)
            matched = self._matches[key] = postings.rank(terms, self._collection, min_coverage, K1, B).ids
        ordered = self._sorted_matches.get(key)
        if ordered is None:  # sorted once: asked again and again (the gate, a time order's walk)
            ordered = self._sorted_matches[key] = np.sort(matched)
        if len(ordered) == 0:
            return set()
        at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
        return {int(m) for m in wanted[ordered[at] == wanted]}

    def _text(
        self, words: Sequence[str], depth: int, min_coverage: float, k1: float, b: float
    ) -> list[tuple[int, float]]:
        """The text channel: ranked in this process (checked with the mask, or on the server), else in SQL."""
        postings = self._synced_postings() if depth > 0 else None
        if postings is not None:
            allowed = self._scope_mask()
            if allowed is not None:
                return self._ranked_here(postings, allowed, words, depth, min_coverage, k1, b)
            ranking = postings.rank(text_index.query_terms(words), self._collection, min_coverage, k1, b)
            found = _passing_ranked(self._conn, ranking, self.where, self.params, depth)
            if found is not None:
                return found
        return bm25(
            self._conn,
            words,
            self.where,
            self.params,
            depth,
            collection=self._collection,
            k1=k1,
            b=b,
            min_coverage=min_coverage,
        )

    def _ranked_here(
        self,
        postings: TextPostings,
        allowed: BoolArray,
        words: Sequence[str],
        depth: int,
        min_coverage: float,
        k1: float,
        b: float,
    ) -> list[tuple[int, float]]:
        """The ``depth`` best BM25 matches of the scope, ranked in this process with its mask: no server."""
        terms = text_index.query_terms(words)
        return postings.rank(terms, self._collection, min_coverage, k1, b, allowed, depth).best(depth)

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        wanted = list(ids)
        if not wanted:
            return []
        allowed = self._scope_mask() if self._members is not None else None
        if self._members is not None and allowed is not None:
            held = self._members.episodes(self._conn, wanted, allowed, self._snapshot_head())
            if held is not None:
                return held
        rows = self._conn.execute(
            "SELECT m.id, m.session_id FROM memories m WHERE m.session_id IN "
            "(SELECT DISTINCT session_id FROM memories WHERE id = ANY(%(e_ids)s) AND session_id IS NOT NULL) "
            f"AND {self.where} ORDER BY m.session_id, m.created_at, m.id",
            {**self.params, "e_ids": wanted},
        )
        members: dict[str, list[int]] = {}
        for memory_id, session in rows:
            members.setdefault(str(session), []).append(int(memory_id))
        return sorted(members.values(), key=min)

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        if not candidates:
            return NamedValues()
        # The counts kept by schema v3's triggers, and the collection's size, in one round trip.
        rows = self._conn.execute(
            "SELECT value, memories, (SELECT memories FROM collection_sizes WHERE collection = %(c)s) "
            "FROM context_value_counts WHERE collection = %(c)s AND value = ANY(%(v)s) AND memories > 0",
            {"c": self._collection, "v": sorted(candidates)},
        ).fetchall()
        if not rows:
            return NamedValues()
        counts = {str(value): int(count) for value, count, _ in rows}
        total = int(rows[0][2] or 0)
        kept = {value: count for value, count in counts.items() if count <= max_share * total}
        carried: dict[int, set[str]] = {}
        if kept:
            allowed = self._scope_mask()
            bound = {**self.params, "cv_collection": self._collection, "cv_values": sorted(kept)}
            select = "SELECT v.memory_id, v.value FROM context_values v "
            where = "WHERE v.collection = %(cv_collection)s AND v.value = ANY(%(cv_values)s)"
            if allowed is None:
                found = self._conn.execute(
                    f"{select}JOIN memories m ON m.id = v.memory_id {where} AND {self.where}", bound
                )
            else:
                found = self._conn.execute(select + where, bound)  # no memory row read: the mask checks
            for memory_id, value in found:
                if allowed is None or (memory_id < len(allowed) and allowed[memory_id]):
                    carried.setdefault(int(memory_id), set()).add(str(value))
        return NamedValues(total, kept, {m: frozenset(v) for m, v in carried.items()})

    def nearest(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        if n <= 0:
            return {}
        points = self._points
        found = points.nearest(self._conn, spatial.path, spatial.target, self._collection) if points else None
        if found is not None:
            ids, apart = found
            if spatial.max_distance is not None:
                near = apart <= spatial.max_distance
                ids, apart = ids[near], apart[near]
            # Nearest first is highest first of the negated distance, ties by id as rank() would list them.
            closest = self._best_passing(Ranking(ids, -apart), n, ties=True)
            if closest is not None:
                return {m: -score for m, score in closest}
        if any(abs(t) >= 4e307 for t in spatial.target):
            return self._nearest_in_python(spatial, n)
        builder = PgFilter("s")
        dims = len(spatial.target)
        # The value at the path once per row (OFFSET 0 keeps the subquery from being pulled up, which
        # would compute it again at every use), then its coordinates: an array of ``dims`` numbers.
        value = f"rm_value({builder.json_at(spatial.path)})"
        coordinates = ", ".join(f"rm_coordinate(x.v -> {k})" for k in range(dims))
        point = (
            f"CROSS JOIN LATERAL (SELECT {value} AS v OFFSET 0) x "
            f"CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(x.v) = 'array' AND jsonb_array_length(x.v) = {dims} "
            f"THEN ARRAY[{coordinates}] END AS p OFFSET 0) y"
        )
        # spatial.distance's expression in its order (offsets over the largest, squared, summed left to
        # right, square root, times the largest): the same float8 operations give the same distances.
        offsets = [f"(y.p[{k + 1}] - {float(t)!r}::float8)" for k, t in enumerate(spatial.target)]
        scale = "GREATEST(" + ", ".join(f"abs({o})" for o in offsets) + ")"
        # A ratio under 1e-9 squares to under 2^-59, which no sum of at most 16 terms holding a 1 can
        # feel: 0 gives the same distance, and the server (which raises on float8 underflow) is spared.
        squares = " + ".join(
            f"(CASE WHEN abs({o}) < {scale} / 1e9 THEN 0::float8 ELSE ({o} / {scale}) ^ 2 END)"
            for o in offsets
        )
        far = f"(CASE WHEN {scale} = 0 THEN 0::float8 ELSE {scale} * sqrt({squares}) END)"
        reach = ""
        params = {**self.params, **builder.params, "s_limit": n}
        if spatial.max_distance is not None:
            reach = "AND d.far <= %(s_reach)s "
            params["s_reach"] = spatial.max_distance
        # The n nearest with every tie at the n-th distance: the rows ranked n or better.
        select = (
            "SELECT z.id, z.far FROM (SELECT d.id, d.far, rank() OVER (ORDER BY d.far) AS r FROM "
            f"(SELECT m.id, {far} AS far FROM memories m {point} WHERE {self.where} "
            "AND y.p IS NOT NULL AND array_position(y.p, NULL) IS NULL) d "
            f"WHERE d.far IS NOT NULL {reach}) z WHERE z.r <= %(s_limit)s"
        )
        try:
            with self._conn.transaction():  # a savepoint: an out-of-range float8 leaves the snapshot usable
                rows = self._conn.execute(select, params).fetchall()
        except psycopg.errors.NumericValueOutOfRange:
            return self._nearest_in_python(spatial, n)
        return {int(m): float(d) for m, d in rows}

    def _nearest_in_python(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        """``nearest`` computed here, for a target so far out that the server's float8 could overflow."""
        builder = PgFilter("s")
        point = builder.json_at(spatial.path)
        found: dict[int, float] = {}
        rows = self._conn.execute(
            f"SELECT m.id, ({point})::text FROM memories m WHERE {self.where} "
            f"AND jsonb_typeof({point}) IN ('array', 'object')",
            {**self.params, **builder.params},
        )
        for memory_id, raw in rows:
            try:
                value = json.loads(raw)
            except (TypeError, ValueError):
                continue
            far = distance(coordinates_at({"v": value}, ("v",)), spatial.target)
            if far is not None and (spatial.max_distance is None or far <= spatial.max_distance):
                found[int(memory_id)] = far
        if len(found) <= n:
            return found
        nth = sorted(found.values())[n - 1]
        return {m: d for m, d in found.items() if d <= nth}

    def listed(self, limit: int | None, *, order: str, exclude: Collection[int] = ()) -> list[int]:
        if order in ("recent", "id") and self._listed is not None:  # the scope listed for a query
            listed = self._newest_listed() if order == "recent" else np.sort(self._listed).tolist()
            if not exclude:
                return listed[:limit]
            return list(itertools.islice((m for m in listed if m not in exclude), limit))
        # A full listing reads every passing memory: the filter's index hint lets the server find those
        # of a selective equality (an object's sightings) through the context's GIN index instead of
        # testing every memory of the collection. With a limit, the order's own index walk stops early;
        # the hint then only asks once whether any memory holds the value at all (an uncorrelated
        # EXISTS, decided before the walk), so a value nothing holds does not walk the whole index.
        # A limited listing of a wide region walks the order's index and probes each memory's position
        # (it stops after about limit / the region's share of the collection rows); of a small one, the
        # GiST box finds its few positions first.
        wide = limit is not None and self._probed_where is not None and self._region_is_wide()
        where = self._probed_where if wide and self._probed_where is not None else self.where
        if self.hint:
            where += (
                f" AND {self.hint}"
                if limit is None
                else f" AND EXISTS (SELECT 1 FROM memories m WHERE {self.hint})"
            )
        sql = f"SELECT m.id FROM memories m WHERE {where} ORDER BY {_ORDERS[order]}"
        bound = dict(self.params)
        if limit is not None:
            sql += " LIMIT %(listed_limit)s"
            bound["listed_limit"] = limit + len(exclude)
        ids = [int(r[0]) for r in self._conn.execute(sql, bound).fetchall()]
        return list(itertools.islice((m for m in ids if m not in exclude), limit))

    def _newest_listed(self) -> list[int]:
        """The listed scope, newest ``observed_at`` first (ties: larger id first), sorted once per recall."""
        if self._newest is None:
            assert self._listed is not None
            order = np.lexsort((self._listed, np.asarray(self._listed_times)))[::-1]
            self._newest = self._listed[order].tolist()
        return self._newest

    def _region_is_wide(self) -> bool:
        """Whether the region's box holds at least ``_WIDE_SHARE`` of the collection's memories (counted
        up to ``_WIDE_MOST`` positions, any collection: an estimate for the plan, not an answer)."""
        row = self._conn.execute(
            "SELECT count(*) >= c.cap FROM (SELECT LEAST((COALESCE(MAX(memories), 0) * %(share)s)::bigint, %(most)s) "
            "AS cap FROM collection_sizes WHERE collection = %(p_collection)s) c, "
            "LATERAL (SELECT 1 FROM memory_positions p WHERE p.frame = %(rg_f)s AND p.box && "
            "cube(ARRAY[hashtext(%(rg_f)s)::float8, %(rg_lo0)s, %(rg_lo1)s, %(rg_lo2)s], "
            "ARRAY[hashtext(%(rg_f)s)::float8, %(rg_hi0)s, %(rg_hi1)s, %(rg_hi2)s]) "
            "LIMIT GREATEST(c.cap, 1)) p GROUP BY c.cap",
            {**self.params, "share": _WIDE_SHARE, "most": _WIDE_MOST},
        ).fetchone()
        return bool(row and row[0])

    def marks(self, ids: Iterable[int], robot_id: str | None) -> Marks:
        wanted = list(ids)
        real_world = self._held_mask(REAL_WORLD, {})
        robots = self._held_mask(OWN_ROBOT, {"own_robot": robot_id}) if robot_id is not None else None
        if real_world is not None and (robot_id is None or robots is not None):  # the process's masks
            return Marks(
                _marked(real_world, wanted), _marked(robots, wanted) if robots is not None else set()
            )
        rows = self._conn.execute(
            f"SELECT m.id, {REAL_WORLD}, m.robot_id = %s FROM memories m WHERE m.id = ANY(%s)",
            (robot_id, wanted),
        )
        real: set[int] = set()
        own: set[int] = set()
        for memory_id, is_real, is_own in rows:
            real.update((int(memory_id),) if is_real else ())
            own.update((int(memory_id),) if is_own else ())
        return Marks(real, own)
